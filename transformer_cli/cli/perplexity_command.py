"""`tfm perplexity`: a model's perplexity over a stream of tokens, as llama-perplexity computes it."""

from __future__ import annotations

from .common import (
    RUN_DTYPE,
    CtxOpt,
    DType,
    JsonOpt,
    MaxMemoryOpt,
    RunDTypeOpt,
    SeedOpt,
    SpecArg,
    StreamOpt,
    StreamPromptOpt,
    TextOpt,
    WeightsOpt,
    app,
    handled,
    load,
    out,
    print_json,
    say_mode,
    spec_json,
    weights_of,
)


@app.command()
def perplexity(
    spec_path: SpecArg = None,
    input_path: StreamOpt = None,
    text: TextOpt = None,
    prompt: StreamPromptOpt = None,
    ctx: CtxOpt = None,
    weights: WeightsOpt = None,
    seed: SeedOpt = 0,
    dtype: RunDTypeOpt = None,
    max_memory: MaxMemoryOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Measure the perplexity over a stream of tokens, with its uncertainty, as llama-perplexity does.

    The whole input is one sequence, every position scored on the next token; with --ctx C the input is cut into
    chunks of C tokens, each run alone, scoring positions C/2 .. C-2 (llama-perplexity's convention, without its
    BOS token at each chunk's start: the ids are run as given).

    \b
    Examples:
      tfm perplexity ./tiny-llama --input ids.npy
      tfm perplexity ./llama-folder --text wiki.test.raw --ctx 512
    """
    from ..api.models import Model
    from ..tasks.perplexity import perplexity as measure
    from ..tasks.perplexity import token_input
    from ..text import escaped as shown

    with handled(json_out):
        ids, where = token_input(spec_path, input_path, text, prompt)
        spec, source = load(spec_path, weights)
        weights = weights_of(spec_path, weights)
        dtype = dtype or (DType.float32 if weights is not None and weights.is_dir() else RUN_DTYPE)
        model = Model(spec, source, spec_path, weights, seed)
        result = measure(spec, model.held, ids, ctx, dtype.value, max_memory, where)
    say_mode(result.mode)
    data = spec_json(spec) | result.to_dict() | {"input": where, "dtype": dtype.value}
    if json_out:
        print_json(data)
        return
    value = result.perplexity
    out.print(f"perplexity {value.value:.6g} ± {value.err:.3g}", highlight=False)
    chunks = f"{result.chunks} chunk{'s' if result.chunks > 1 else ''}"
    out.print(f"{value.positions} of {result.tokens} tokens scored, {chunks}, {dtype.value}", highlight=False)
    out.print(f"scored: {shown(result.scored)}", highlight=False)

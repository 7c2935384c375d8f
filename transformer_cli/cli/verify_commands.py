"""`tfm verify` and the `verify-*` commands: one check each, or all of them against the theory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .common import (
    EXIT_CODES,
    RUN_DTYPE,
    DType,
    DTypeOpt,
    Expect,
    ExpectOpt,
    JsonOpt,
    MaxMemoryOpt,
    SeedOpt,
    SeqLenOpt,
    SpecArg,
    TolOpt,
    WeightsOpt,
    app,
    busy,
    handled,
    load,
    out,
    print_json,
    progress_bar,
    say_mode,
    spec_json,
    weights_of,
)

TrialsOpt = Annotated[
    int,
    typer.Option("--trials", "-k", min=0, max=10_000, help="Random permutations besides the fixed ones (distinct)."),
]
SamplesOpt = Annotated[
    int, typer.Option("--samples", min=100, max=10**8, help="Query/key pairs drawn per row (per head, summed).")
]


def _check(
    name: str,
    spec_path: Path | None,
    weights: Path | None,
    seed: int,
    dtype: DType,
    seq_len: int | None,
    tol: float | None,
    expect: Expect,
    json_out: bool,
    max_memory: str | None,
    **options: Any,
) -> None:
    """Shared body of the verify-* commands: build the setup, run one check, show it, exit with its code."""
    from .. import verify
    from ..tasks.runner import get_weights
    from ..tasks.sources import read_lazily
    from . import render

    with handled(json_out):
        spec, source = load(spec_path, weights)
        weights = weights_of(spec_path, weights)
        with busy(f"verify-{name}", json_out):
            lazy = weights is not None and read_lazily(weights)
            setup, _, w_source = verify.prepare(
                spec,
                lambda: get_weights(spec, weights, seed),
                seed,
                dtype.value,
                seq_len,
                tol,
                max_memory,
                lazy,
                [name],
            )
            say_mode(setup.mode)
            result = getattr(verify, f"check_{name}")(setup, expect=expect.value, **options)
    if json_out:
        mode = setup.mode.to_dict() if setup.mode is not None else None
        print_json(
            result.to_dict()
            | spec_json(spec)
            | {"source": source, "weights": w_source, "dtype": dtype.value, "weights_mode": mode}
        )
    else:
        out.print(render.check_table(result))
        out.print(render.summary_table(result))
    raise typer.Exit(int(result.exit_code))


@app.command("verify-equivariance", epilog=EXIT_CODES)
def verify_equivariance(
    spec_path: SpecArg = None,
    weights: WeightsOpt = None,
    trials: TrialsOpt = 8,
    seq_len: SeqLenOpt = None,
    seed: SeedOpt = 0,
    dtype: DTypeOpt = RUN_DTYPE,
    tol: TolOpt = None,
    expect: ExpectOpt = Expect.theory,
    max_memory: MaxMemoryOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Check Transformer(XP) = Transformer(X)P (seed property a) on random inputs.

    Tries the identity (error must be exactly 0), an adjacent swap, the reversal, a cyclic shift and random
    derangements, all distinct; error = max|T(XP) - T(X)P| / max|T(X)|. The tolerance follows the model's
    own rounding: at least 4 x the noise measured on these inputs (float32: against the same pass in
    float64). A control adds a position-dependent term and must break the property by 1000 x tol, or the
    verdict is INCONCLUSIVE.

    \b
    Example:
      tfm verify-equivariance examples/configs/seed-plain.yaml --trials 20 --dtype float32
    """
    _check("equivariance", spec_path, weights, seed, dtype, seq_len, tol, expect, json_out, max_memory, trials=trials)


def _sequence_check(name: str, doc: str) -> None:
    """Register `tfm verify-NAME`: a check over random sequences with the common options (causality, decoding)."""

    def command(
        spec_path: SpecArg = None,
        weights: WeightsOpt = None,
        seq_len: SeqLenOpt = None,
        seed: SeedOpt = 0,
        dtype: DTypeOpt = RUN_DTYPE,
        tol: TolOpt = None,
        expect: ExpectOpt = Expect.theory,
        max_memory: MaxMemoryOpt = None,
        json_out: JsonOpt = False,
    ) -> None:
        _check(name, spec_path, weights, seed, dtype, seq_len, tol, expect, json_out, max_memory)

    command.__doc__ = doc
    app.command(f"verify-{name}", epilog=EXIT_CODES)(command)


_sequence_check(
    "causality",
    """Check that output column t depends only on columns <= t, and that it does depend on them.

    For each t, changing the columns after t must leave columns 0..t unchanged; changing column 0 must
    move every output column (else INCONCLUSIVE). A spec without the causal mask shows where it leaks.

    \b
    Example:
      tfm verify-causality examples/configs/tiny-causal.yaml
    """,
)
_sequence_check(
    "decoding",
    """Check that decoding one column at a time with a key/value cache equals the parallel forward pass.

    Holds for causal specs (seed 001). Controls: a decoder whose cache misses one step, and one that
    encodes positions off by one, must both be caught.

    \b
    Example:
      tfm verify-decoding examples/configs/tiny-causal.yaml --seq-len 32
    """,
)


_sequence_check(
    "relative",
    """Check that shifting every position by the same amount leaves the output unchanged.

    Holds with rotary positions or none (scores depend on t - s only), breaks with absolute positions
    (sinusoidal, learned). The columns run at positions s.. for shifts s = 1, 5, 31; a control adds a
    sinusoidal term at the absolute positions and must be moved by a shift, or the check is INCONCLUSIVE.

    \b
    Example:
      tfm verify-relative examples/models/Llama-2-7b.yaml --seq-len 8
    """,
)


@app.command("verify-scaling", epilog=EXIT_CODES)
def verify_scaling(
    spec_path: SpecArg = None,
    weights: WeightsOpt = None,
    samples: SamplesOpt = 20000,
    seed: SeedOpt = 0,
    dtype: DTypeOpt = RUN_DTYPE,
    expect: ExpectOpt = Expect.theory,
    max_memory: MaxMemoryOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Check the variance of the scores the model computes: m * scale^2 for unit-variance queries and keys.

    Reads the model's own attention path: once driven by unit-variance q and k (seed 001: variance m, so
    1/sqrt(m) brings it to 1), then through each block's W_Q, W_K (and biases) on unit-variance inputs, where
    the variance follows from the weights. The band is 5 standard errors, measured from independent
    sequences; if the spec's scale is too close to 1 to tell, the verdict is INCONCLUSIVE.

    \b
    Example:
      tfm verify-scaling examples/configs/attention-is-all-you-need-base.yaml -w weights.npz
    """
    _check("scaling", spec_path, weights, seed, dtype, None, None, expect, json_out, max_memory, samples=samples)


@app.command(epilog=EXIT_CODES)
def verify(
    spec_path: SpecArg = None,
    weights: WeightsOpt = None,
    seq_len: SeqLenOpt = None,
    seed: SeedOpt = 0,
    dtype: DTypeOpt = RUN_DTYPE,
    tol: TolOpt = None,
    max_memory: MaxMemoryOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Run every check against what theory predicts for the spec: one table, one exit code (for CI).

    Checks: parameter count = closed form = stored arrays; softmax columns sum to 1; equivariance (holds
    iff no positions and no mask); causality with the receptive field and KV-cache decoding (hold iff
    causal); shifting every position (holds iff no absolute positions); score scaling.

    \b
    Example:
      tfm verify examples/configs/gpt2-small.yaml --seq-len 8
    """
    from .. import verify
    from ..tasks.runner import get_weights
    from ..tasks.sources import read_lazily
    from . import render

    with handled(json_out):
        spec, source = load(spec_path, weights)
        weights = weights_of(spec_path, weights)
        lazy = weights is not None and read_lazily(weights)
        setup, w, w_source = verify.prepare(
            spec, lambda: get_weights(spec, weights, seed), seed, dtype.value, seq_len, tol, max_memory, lazy
        )
        say_mode(setup.mode)
        with progress_bar(json_out) as progress:
            task = progress.add_task("verifying", total=len(verify.checks_of(setup, w)))
            results = verify.run_checks(setup, w, lambda name: progress.update(task, advance=1, description=name))
    verification = verify.Verification(results, source, w_source, dtype.value, setup.mode)  # (as Model.verify)
    if json_out:
        print_json(spec_json(spec) | verification.to_dict())
    else:
        out.print(render.verify_table(spec, results))
    raise typer.Exit(int(verification.exit_code))

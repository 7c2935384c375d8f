"""tfm beside torchinfo, fvcore and accelerate's memory estimate, on the same model (GPT-2-small-style stack).

    pip install torch==2.13.0 torchinfo fvcore accelerate
    python benchmarks/compare_tools.py

Every multiply-add figure of tfm is the one definition of tfm count: the matrix products' multiply-adds.

The model is built in PyTorch from the spec (nn.Linear, nn.LayerNorm, scaled_dot_product_attention), so the
three tools see a real nn.Module; tfm sees only the YAML spec. accelerate's `estimate-memory` command needs
the Hugging Face Hub, so its estimator (`calculate_maximum_sizes`) is called on the module directly.
"""

from __future__ import annotations

import io
import sys
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import torch
import torch.nn.functional as F
from rich.console import Console
from rich.table import Table
from torch import nn

from transformer_cli.analysis.costs import costs
from transformer_cli.analysis.params import count_params
from transformer_cli.spec.load import load_spec

SPEC = Path(__file__).resolve().parent.parent / "examples" / "configs" / "gpt2-small.yaml"


class Block(nn.Module):
    def __init__(self, d: int, H: int, m: int, r: int):
        super().__init__()
        self.H, self.m = H, m
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * H * m), nn.Linear(H * m, d)
        self.ff1, self.ff2 = nn.Linear(d, r), nn.Linear(r, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, self.H, self.m).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(b, n, self.H * self.m))
        return x + self.ff2(F.gelu(self.ff1(self.ln2(x)), approximate="tanh"))


class Stack(nn.Module):
    def __init__(self, N: int, d: int, H: int, m: int, r: int, max_len: int):
        super().__init__()
        self.P = nn.Parameter(torch.zeros(max_len, d))
        self.blocks = nn.ModuleList(Block(d, H, m, r) for _ in range(N))
        self.final = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.P[: x.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.final(x)


def main(n: int = 1024) -> None:
    spec = load_spec(SPEC)
    model = Stack(spec.N, spec.d, spec.H, spec.m, spec.r, spec.max_len).eval()
    x = torch.zeros(1, n, spec.d)
    ours = costs(spec, 1, n, "float32").to_dict()
    table = Table(title=f"{spec.label} at n = {n}: tfm (from the YAML) beside the PyTorch tools", title_justify="left")
    for col in ("figure", "tfm", "tool", "tool's figure", "note"):
        table.add_column(col, justify="right" if col in ("tfm", "tool's figure") else "left")

    import torchinfo

    with redirect_stdout(io.StringIO()):
        info = torchinfo.summary(model, input_data=x, verbose=0)
    table.add_row("parameters", f"{count_params(spec).total:,}", "torchinfo", f"{info.total_params:,}", "")
    macs = ours["multiply_adds"]["by_component"]  # one definition: the matrix products' multiply-adds
    table.add_row(
        "forward multiply-adds",
        f"{ours['multiply_adds']['total']:,}",
        "torchinfo",
        f"{info.total_mult_adds:,}",
        "torchinfo: close to the parameter count, not about n times it; no attention op",
    )

    from fvcore.nn import FlopCountAnalysis

    with warnings.catch_warnings(), redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        analysis = FlopCountAnalysis(model, x)
        analysis.unsupported_ops_warnings(False)
        total = analysis.total()
        skipped = dict(analysis.unsupported_ops())
    linear, attention = macs["linear layers"], macs["scores K^T Q"] + macs["weights x V"]
    table.add_row(
        "multiply-adds: linear layers",
        f"{linear:,}",
        "fvcore",
        f"{total:,}",
        "fvcore also adds 5 per layer-norm entry (98 M here)",
    )
    table.add_row(
        "multiply-adds: K^T Q and V A",
        f"{attention:,}",
        "fvcore",
        "not counted",
        f"fvcore skipped: {', '.join(f'{k} x{v}' for k, v in skipped.items()) or 'nothing'}",
    )
    table.add_row(
        "multiply-adds: whole forward",
        f"{linear + attention:,}",
        "fvcore",
        f"{total:,}",
        f"fvcore misses {attention / (linear + attention):.0%} of the products",
    )

    memory = ours["memory"]
    try:
        from accelerate.utils import calculate_maximum_sizes

        size = calculate_maximum_sizes(model)[0]
        tool = [f"{size:,}", f"{4 * size:,}", f"{4 * size // 2:,}"]  # estimate-memory: 4 x the model's size
    except ImportError:
        tool = ["not installed"] * 3
    table.add_row("weights, float32 (bytes)", f"{memory['weights']['float32']:,}", "accelerate", tool[0], "")
    table.add_row(
        "training with Adam, float32",
        f"{memory['training_adam']['float32']:,}",
        "accelerate",
        tool[1],
        "16 B/param: weights, gradients, two moments; no activations",
    )
    table.add_row(
        "training with Adam, bf16 mixed",
        f"{memory['training_adam']['bfloat16_mixed']:,}",
        "accelerate",
        tool[2],
        "tfm: + float32 master weights and moments; accelerate: 4 x bf16 size",
    )
    peak = memory["forward_peak"]
    table.add_row(
        f"forward peak at n = {n}, the model",
        f"{peak['model']:,}",
        "accelerate",
        "-",
        "float32 weights, activations, scores; not estimated by accelerate",
    )
    table.add_row(
        "  tfm's pass also holds",
        f"{peak['loaded'] + peak['input']:,}",
        "",
        "",
        "its float64 weights as loaded and the input as read",
    )
    Console(width=160).print(table)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1024)

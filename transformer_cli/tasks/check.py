"""`tfm check` as a library call: many spec files against budgets and the verify suite, one verdict each."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from ..analysis.kv_cache import kv_cache_bytes
from ..analysis.memory import estimate_pass, human, parse_size
from ..analysis.params import count_params
from ..analysis.serving import serving_memory
from ..analysis.training import training_memory
from ..errors import ExitCode, TfmError
from ..files import read_bounded
from ..spec.definition import Spec
from ..spec.load import load_spec
from ..spec.stacks import LAYER_KEYS, kind_of
from ..spec.validate import spec_from_mapping
from ..spec.yaml12 import read_yaml
from ..verify import overall_exit, verify_all

CHECK_KEYS = ("check", "verdict", "reason", "observation", "exit_code")  # of each verify check, in the JSON
SI = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "B": 10**9, "T": 10**12}


def parse_count(text: str) -> int:
    """'125M', '1.5B', '7000000', '1e6' -> a number of parameters (powers of 1000; B = G = 1e9)."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([KMGBT]?)\s*", text, re.IGNORECASE)
    if not match or not 0 < float(match.group(1)) < float("inf"):
        raise TfmError(f"--max-params: got '{text}', expected a count such as 125M, 1.5B, 1e6 or 7000000")
    return int(float(match.group(1)) * SI[match.group(2).upper()])


@dataclass(frozen=True)
class Budgets:
    """What `tfm check` holds each spec to, at b = 1 and context n; None: no budget. Serving: bfloat16 weights
    and cache with a fused attention kernel; training: Adam in mixed precision, one device, fused attention."""

    params: int | None = None
    memory: int | None = None  # a float32 forward pass's peak (the model's figure)
    kv_cache: int | None = None  # bfloat16
    serving: int | None = None
    training: int | None = None

    @classmethod
    def parse(
        cls,
        params: str | None = None,
        memory: str | None = None,
        kv_cache: str | None = None,
        serving: str | None = None,
        training: str | None = None,
    ) -> Budgets:
        """From the options' text: counts such as 125M, sizes such as 4G (errors name the option)."""
        size = {
            "memory": ("--max-memory", memory),
            "kv_cache": ("--max-kv-cache", kv_cache),
            "serving": ("--max-serving-memory", serving),
            "training": ("--max-training-memory", training),
        }
        return cls(
            parse_count(params) if params else None,
            **{k: parse_size(text, option) if text else None for k, (option, text) in size.items()},
        )


@dataclass
class SpecCheck:
    """One spec file's outcome: its figures, the budgets it broke, and its verify verdict."""

    path: str
    name: str = ""
    error: str = ""
    params: int | None = None
    memory: int | None = None
    spec: dict[str, Any] | None = None
    over_budget: list[str] = field(default_factory=list)
    verify: str = "skipped"  # PASS, FAIL, INCONCLUSIVE or skipped
    verified_on: dict[str, Any] | None = None  # the scaled-down copy the properties ran on, if not the spec itself
    verify_code: int = 0
    checks: list[dict[str, Any]] = field(default_factory=list)  # each check's verdict and reason

    @property
    def exit_code(self) -> ExitCode:
        if self.error:
            return ExitCode.BAD_INPUT
        if self.over_budget or self.verify_code == ExitCode.VIOLATED:
            return ExitCode.VIOLATED
        return ExitCode(self.verify_code)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "name": self.name,
            "spec": self.spec,
            "error": self.error or None,
            "params": self.params,
            "forward_memory": self.memory,
            "over_budget": self.over_budget,
            "verify": self.verify,
            "verified_on": self.verified_on,
            "checks": self.checks,
            "exit_code": int(self.exit_code),
        }

    def failed_checks(self) -> list[str]:
        """The checks that did not pass, each with its verdict and reason, for the table."""
        return [f"{c['check']} {c['verdict']}: {c['reason']}" for c in self.checks if c["verdict"] != "PASS"]


def check_spec(path: Path, budgets: Budgets, seq_len: int, verify_len: int | None) -> SpecCheck:
    """Load one spec, hold it to the budgets, and run the verify suite on it (unless verify_len is None)."""

    result = SpecCheck(str(path))
    try:
        spec = _load(path)
        result.name, result.spec = spec.label, spec.to_dict()
        result.params = params = count_params(spec).total
        result.memory = memory = estimate_pass(spec, 1, seq_len, "float32").model  # the model's, not tfm's copies
        if budgets.params is not None and params > budgets.params:
            result.over_budget.append(f"{params:,} parameters > {budgets.params:,}")
        n = seq_len
        sizes = [
            ("memory", f"forward at n = {n}", lambda: memory),
            ("kv_cache", f"KV cache at n = {n} (bfloat16)", lambda: kv_cache_bytes(spec, 1, n, "bfloat16")),
            ("serving", f"serving at n = {seq_len}", lambda: serving_memory(spec, 1, seq_len).total),
            (
                "training",
                f"training at n = {seq_len} (Adam, mixed precision)",
                lambda: training_memory(spec, params, 1, seq_len).total["fused_attention"],
            ),
        ]
        for key, what, figure in sizes:
            budget = getattr(budgets, key)
            if budget is not None and figure() > budget:
                result.over_budget.append(f"{what}: {human(figure())} > {human(budget)}")
        if verify_len is not None:
            small = scaled_down(spec) if result.params > SCALE_DOWN_ABOVE else spec
            result.verified_on = small.to_dict() if small is not spec else None
            checks = verify_all(small, n=min(verify_len, small.max_len or verify_len))
            result.verify_code = int(overall_exit(checks))
            result.verify = {0: "PASS", 1: "FAIL", 3: "INCONCLUSIVE"}[result.verify_code]
            result.checks = [{k: c.to_dict()[k] for k in CHECK_KEYS} for c in checks]
    except TfmError as exc:
        result.error = str(exc)
    return result


SCALE_DOWN_ABOVE = 10**8  # parameters: a larger model's properties are checked on a scaled-down copy
SMALL = {
    "N": 2,
    "N_enc": 2,
    "d": 64,
    "r": 128,
    "m": 16,
    "cross_m": 16,
    "V": 256,
    "V_src": 256,
    "expert_r": 128,
    "shared_r": 128,
    "kv_rank": 64,
    "q_rank": 64,
    "v_m": 16,
}


def scaled_down(spec: Spec) -> Spec:
    """The same model in structure (heads, groups, experts, norms, positions, mask, window, every variant) with
    at most 2 blocks a stack and small sizes: the properties tfm verifies follow from the structure, and the
    weights are seeded either way, so a 1B model's are checked in a moment instead of minutes and gigabytes."""

    data = spec.to_dict()
    small = data | {k: min(v, data[k]) for k, v in SMALL.items() if data.get(k)} | _blocks_of_each_kind(spec)
    if data.get("rope_m"):  # latent attention turns the last rope_m of each head: fewer than m, even
        small["rope_m"] = min(data["rope_m"], small["m"] // 4 * 2)
    return spec_from_mapping(small | _factors_of_the_pairs_kept(spec, small), f"{spec.label} (scaled down)")


def _blocks_of_each_kind(spec: Spec) -> dict[str, Any]:
    """The per-layer kinds (attention_layers, feedforward_layers) cut to one block of each kind of block the
    stack has, in the order they first appear: DeepSeek-V3's 61 become a dense block and a routed one."""

    patterns = {key: getattr(spec, key) for key in LAYER_KEYS if getattr(spec, key) is not None}
    if not patterns:
        return {}
    first: dict[tuple[str, ...], int] = {}
    for i in range(min(spec.N, math.lcm(*(len(p) for p in patterns.values())))):  # (the patterns repeat)
        first.setdefault(tuple(kind_of(p, i, "") for p in patterns.values()), i)
    blocks = sorted(first.values())
    return {"N": len(blocks)} | {key: [kind_of(p, i, "") for i in blocks] for key, p in patterns.items()}


def _factors_of_the_pairs_kept(spec: Spec, small: dict[str, Any]) -> dict[str, Any]:
    """LongRoPE's factors (one per rotated pair) for the smaller head: pair j of its p turns at the frequency of
    pair j * P / p of the P the full head turns, and keeps that pair's factor (Phi-3-mini-128k's 48 become 8)."""
    factors = {key: getattr(spec, key) for key in ("rope_short_factor", "rope_long_factor") if getattr(spec, key)}
    if not factors:
        return {}
    rotated = replace(spec, m=small["m"], rope_m=small.get("rope_m")).rotated_dims  # (its attention's own)
    pairs = max(int(rotated or 0) // 2, 1)
    return {key: [values[j * len(values) // pairs] for j in range(pairs)] for key, values in factors.items()}


def _load(path: Path) -> Spec:
    """A YAML spec, or a Hugging Face model (its folder or config.json), whose checkpoint, if the folder holds
    one, must fit its config (checked from the headers); or a GGUF file, whose tensors must fit its metadata."""
    if path.suffix.lower() == ".gguf":
        from ..gguf.model import GGUFWeights, spec_from_gguf

        spec = spec_from_gguf(path)
        GGUFWeights(path, spec)  # (the fit, from the header)
        return spec
    if not (path.is_dir() or path.suffix.lower() == ".json"):
        return load_spec(path)
    from ..hf.checkpoint import has_checkpoint
    from ..hf.config import spec_from_config
    from ..hf.folder import summary

    spec = spec_from_config(path)
    folder = path if path.is_dir() else path.parent
    if has_checkpoint(folder):
        summary(folder, spec)
    return spec


def find_specs(paths: list[Path], exclude: tuple[str, ...] = ()) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The specs to check, and the files a folder's search skipped with the reason.

    Each path as given is checked (a Hugging Face folder counts as one). Each other folder is searched
    recursively, skipping hidden folders and files (.git, .github) and those matching an `exclude` pattern (a
    glob on the path below the folder, or on the name), for tfm specs (*.yaml, *.yml holding a mapping with
    one of the keys N, H, m, d, r; one that cannot be read is checked, to report why) and for Hugging Face
    folders (a config.json with a model_type) and GGUF files; anything else found is skipped, saying why."""
    found: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for path in paths:
        if not (path.is_dir() and not (path / "config.json").is_file()):
            found.append(path)
            continue
        inside = []
        for candidate in sorted(path.rglob("*")):
            relative = candidate.relative_to(path)
            wanted = candidate.suffix.lower() in (".yaml", ".yml", ".gguf") or candidate.name == "config.json"
            if not wanted or not candidate.is_file() or any(part.startswith(".") for part in relative.parts):
                continue
            if any(fnmatch(relative.as_posix(), pattern) or fnmatch(candidate.name, pattern) for pattern in exclude):
                skipped.append((candidate, "excluded"))
                continue
            why = _not_a_spec(candidate)
            if why:
                skipped.append((candidate, why))
            else:
                inside.append(candidate.parent if candidate.name == "config.json" else candidate)
        if not inside:
            raise TfmError(f"{path}: a folder with no tfm spec (.yaml, .yml) and no Hugging Face config.json in it")
        found += inside
    return list(dict.fromkeys(found)), skipped


def _not_a_spec(path: Path) -> str:
    """Why a file a folder's search found is not a spec ('' if it is one, or cannot be read: then it is checked)."""

    if path.suffix.lower() == ".gguf":
        return ""

    try:
        raw = read_bounded(path, 1 << 20, "a spec file").decode("utf-8")
        data = json.loads(raw) if path.name == "config.json" else read_yaml(raw, str(path))
    except (TfmError, ValueError):
        return ""
    if path.name == "config.json":
        return "" if isinstance(data, dict) and "model_type" in data else "a config.json without model_type"
    if not isinstance(data, dict) or not any(key in data for key in ("N", "H", "m", "d", "r")):
        return "YAML without the spec keys N, H, m, d, r"
    return ""


def check_specs(
    paths: list[Path],
    budgets: Budgets = Budgets(),
    seq_len: int = 512,
    verify_len: int | None = 8,
    progress: Callable[[str], None] | None = None,
) -> list[SpecCheck]:
    """Every spec's outcome, in order."""
    results = []
    for path in paths:
        if progress:
            progress(str(path))
        results.append(check_spec(path, budgets, seq_len, verify_len))
    return results


def overall(results: list[SpecCheck]) -> ExitCode:
    """2 if any spec is unusable, else 1 if any broke a budget or a property, else 3 if any was inconclusive."""
    codes = {r.exit_code for r in results}
    for code in (ExitCode.BAD_INPUT, ExitCode.VIOLATED, ExitCode.INCONCLUSIVE):
        if code in codes:
            return code
    return ExitCode.OK

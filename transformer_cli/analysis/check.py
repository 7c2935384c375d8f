"""`tfm check` as a library call: many spec files against budgets and the verify suite, one verdict each."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ExitCode, TfmError
from ..spec.definition import Spec, load_spec
from .kv_cache import kv_cache_bytes
from .memory import estimate_encoder_decoder, estimate_forward, parse_size
from .params import count_params

CHECK_KEYS = ("check", "verdict", "reason", "observation", "exit_code")  # of each verify check, in the JSON
SI = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "B": 10**9, "T": 10**12}


def parse_count(text: str) -> int:
    """'125M', '1.5B', '7000000', '1e6' -> a number of parameters (powers of 1000; B = G = 1e9)."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([KMGBT]?)\s*", text, re.IGNORECASE)
    if not match or not 0 < float(match.group(1)) < float("inf"):
        raise TfmError(f"--max-params: got '{text}', expected a count such as 125M, 1.5B, 1e6 or 7000000")
    return int(float(match.group(1)) * SI[match.group(2).upper()])


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
        return {"path": self.path, "name": self.name, "spec": self.spec, "error": self.error or None,
                "params": self.params, "forward_memory": self.memory, "over_budget": self.over_budget,
                "verify": self.verify, "checks": self.checks, "exit_code": int(self.exit_code)}  # fmt: skip

    def failed_checks(self) -> list[str]:
        """The checks that did not pass, each with its verdict and reason, for the table."""
        return [f"{c['check']} {c['verdict']}: {c['reason']}" for c in self.checks if c["verdict"] != "PASS"]


def check_spec(
    path: Path,
    max_params: int | None,
    max_memory: int | None,
    seq_len: int,
    verify_len: int | None,
    max_kv_cache: int | None = None,
) -> SpecCheck:
    """Load one spec, hold it to the budgets, and run the verify suite on it (unless verify_len is None)."""
    from ..verify import overall_exit, verify_all
    from .memory import human

    result = SpecCheck(str(path))
    try:
        spec = _load(path)
        result.name, result.spec = spec.label, spec.to_dict()
        result.params = count_params(spec).total
        if spec.N_enc:  # sources and targets of seq_len
            result.memory = estimate_encoder_decoder(spec, 1, seq_len, seq_len, "float32").model
        else:
            result.memory = estimate_forward(spec, 1, seq_len, "float32").model  # the model's, not tfm's copies
        if max_params is not None and result.params > max_params:
            result.over_budget.append(f"{result.params:,} parameters > {max_params:,}")
        if max_memory is not None and result.memory > max_memory:
            result.over_budget.append(f"forward at n = {seq_len}: {human(result.memory)} > {human(max_memory)}")
        kv = kv_cache_bytes(spec, 1, seq_len, "bfloat16")  # decoding one sequence at context n, as deployed
        if max_kv_cache is not None and kv > max_kv_cache:
            result.over_budget.append(f"KV cache at n = {seq_len} (bfloat16): {human(kv)} > {human(max_kv_cache)}")
        if verify_len is not None:
            checks = verify_all(spec, n=min(verify_len, spec.max_len or verify_len))
            result.verify_code = int(overall_exit(checks))
            result.verify = {0: "PASS", 1: "FAIL", 3: "INCONCLUSIVE"}[result.verify_code]
            result.checks = [{k: c.to_dict()[k] for k in CHECK_KEYS} for c in checks]
    except TfmError as exc:
        result.error = str(exc)
    return result


def _load(path: Path) -> Spec:
    """A YAML spec, or a Hugging Face model (its folder or config.json), whose checkpoint, if the folder holds
    one, must fit its config (checked from the headers)."""
    if not (path.is_dir() or path.suffix.lower() == ".json"):
        return load_spec(path)
    from ..hf.checkpoint import has_checkpoint
    from ..hf.config import spec_from_config
    from ..hf.weights import summary

    spec = spec_from_config(path)
    folder = path if path.is_dir() else path.parent
    if has_checkpoint(folder):
        summary(folder, spec)
    return spec


def find_specs(paths: list[Path]) -> list[Path]:
    """The specs to check: each path as given (a Hugging Face folder counts as one), each other folder searched
    recursively for *.yaml and *.yml files and for Hugging Face folders (those holding config.json), sorted."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir() and not (path / "config.json").is_file():
            wanted = [p for p in path.rglob("*") if p.suffix.lower() in (".yaml", ".yml") or p.name == "config.json"]
            inside = sorted(p.parent if p.name == "config.json" else p for p in wanted if p.is_file())
            if not inside:
                raise TfmError(f"{path}: a folder with no .yaml or .yml spec files and no config.json in it")
            found += inside
        else:
            found.append(path)
    return list(dict.fromkeys(found))


def check_specs(
    paths: list[Path],
    max_params: str | None = None,
    max_memory: str | None = None,
    seq_len: int = 512,
    verify_len: int | None = 8,
    progress: Callable[[str], None] | None = None,
    max_kv_cache: str | None = None,
) -> list[SpecCheck]:
    """Every spec's outcome, in order."""
    params_budget = parse_count(max_params) if max_params else None
    memory_budget = parse_size(max_memory) if max_memory else None
    kv_budget = parse_size(max_kv_cache) if max_kv_cache else None
    results = []
    for path in paths:
        if progress:
            progress(str(path))
        results.append(check_spec(path, params_budget, memory_budget, seq_len, verify_len, kv_budget))
    return results


def overall(results: list[SpecCheck]) -> ExitCode:
    """2 if any spec is unusable, else 1 if any broke a budget or a property, else 3 if any was inconclusive."""
    codes = {r.exit_code for r in results}
    for code in (ExitCode.BAD_INPUT, ExitCode.VIOLATED, ExitCode.INCONCLUSIVE):
        if code in codes:
            return code
    return ExitCode.OK

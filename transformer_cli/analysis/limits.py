"""How much more memory this process may allocate, and which limit says so (Linux; elsewhere: unknown).

Three limits can stop a process, and the tightest one applies:
- the memory the system has available now (MemAvailable in /proc/meminfo);
- its memory cgroup's limit less what the cgroup already uses, at every level up to the root (a container
  or `systemd-run -p MemoryMax=`): past it the kernel kills the process (exit 137) without a word;
- its address-space limit (`ulimit -v`, RLIMIT_AS) less the address space it already maps (VmSize):
  past it every allocation fails.
Each reader takes the filesystem root, so tests can hand it a fake /proc and /sys.
"""

from __future__ import annotations

import resource
from dataclasses import dataclass
from pathlib import Path

from .units import human

UNLIMITED = 1 << 60  # cgroup v1 writes "no limit" as 2^63 rounded down to a page; anything this large is none
FIX = "lower the batch or the sequence length"


@dataclass(frozen=True)
class Limit:
    """Bytes this process may still allocate under one limit, what that limit is, and what can be done about it."""

    kind: str  # "available", "cgroup", "ulimit" or "--max-memory"
    free: int
    name: str  # reads after "more than": "the available memory of 1.2 GiB"
    advice: str


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None  # "max" (cgroup v2: no limit) or something unreadable


def available_memory(root: Path = Path("/")) -> int | None:
    """MemAvailable in bytes, or None if unknown."""
    for line in (_read(root / "proc/meminfo") or "").splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return None


def _cgroup_paths(root: Path) -> dict[str, str]:
    """This process's cgroup path per hierarchy: {"v2": "/a/b"} and/or {"v1": "/c"} (v1: the memory controller)."""
    paths = {}
    for line in (_read(root / "proc/self/cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            paths["v2"] = parts[2]
        elif "memory" in parts[1].split(","):
            paths["v1"] = parts[2]
    return paths


# where each hierarchy is mounted, and the names of its limit and usage files
HIERARCHIES = {
    "v2": (("sys/fs/cgroup", "sys/fs/cgroup/unified"), "memory.max", "memory.current"),
    "v1": (("sys/fs/cgroup/memory",), "memory.limit_in_bytes", "memory.usage_in_bytes"),
}


def cgroup_room(root: Path = Path("/")) -> tuple[int, int, int] | None:
    """(room left, limit, usage) of the tightest memory cgroup this process is in, or None without a limit.

    The process's own cgroup and each of its parents are read (a parent's limit binds its children too);
    in a container the process's path may not exist under the mount, and the mount's own files are read.
    """
    tightest = None
    for version, path in _cgroup_paths(root).items():
        mounts, limit_file, usage_file = HIERARCHIES[version]
        for mount in (root / m for m in mounts):
            if not (mount / "cgroup.procs").exists():
                continue
            folder = mount / path.strip("/")
            if ".." in path or not folder.is_dir():
                folder = mount
            for level in [folder, *folder.parents]:
                limit, usage = _int(_read(level / limit_file)), _int(_read(level / usage_file))
                if limit is not None and usage is not None and limit < UNLIMITED:
                    room = max(limit - usage, 0)
                    if tightest is None or room < tightest[0]:
                        tightest = (room, limit, usage)
                if level == mount:
                    break
            break
    return tightest


def address_space_limit() -> int | None:
    """The soft RLIMIT_AS in bytes (ulimit -v), or None if unlimited."""
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    return None if soft == resource.RLIM_INFINITY else soft


def mapped(root: Path = Path("/")) -> int:
    """The address space this process maps now (VmSize), in bytes; 0 if unknown."""
    for line in (_read(root / "proc/self/status") or "").splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def memory_limits(root: Path = Path("/")) -> list[Limit]:
    """Every limit that is known here; the one with the least room applies."""
    found = []
    available = available_memory(root)
    if available is not None:
        found.append(Limit("available", available, f"the available memory of {human(available)}", f"{FIX}"))
    cgroup = cgroup_room(root)
    if cgroup is not None:
        room, limit, usage = cgroup
        name = f"the room left in this memory cgroup, {human(room)} (limit {human(limit)}, {human(usage)} used)"
        found.append(Limit("cgroup", room, name, f"{FIX}, or run with a larger cgroup limit"))
    soft = address_space_limit()
    if soft is not None:
        room = max(soft - mapped(root), 0)
        name = f"the address-space limit (ulimit -v) of {human(soft)}, {human(room)} of it unmapped"
        found.append(Limit("ulimit", room, name, f"{FIX}, or raise ulimit -v"))
    return found


def tightest_limit(root: Path = Path("/")) -> Limit | None:
    """The limit with the least room, or None if none is known."""
    return min(memory_limits(root), key=lambda limit: limit.free, default=None)

"""The CPU memory this process may still take: the least of the machine's, its cgroup's and its address space's."""

from __future__ import annotations

import os
from pathlib import Path


def _meminfo_available() -> float | None:
    """``MemAvailable`` of ``/proc/meminfo`` (B): free memory plus the caches the kernel can drop."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_available() -> float | None:
    """What the cgroup (v2) this process runs in still allows (B); None without a limit."""
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text(encoding="ascii").strip()
        used = Path("/sys/fs/cgroup/memory.current").read_text(encoding="ascii").strip()
        return None if limit == "max" else float(int(limit) - int(used))
    except (OSError, ValueError):
        return None


def _address_space_available() -> float | None:
    """What ``RLIMIT_AS`` leaves this process beyond the address space it holds (B); None without a limit."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/status", encoding="ascii") as handle:
            held = next(float(line.split()[1]) * 1024 for line in handle if line.startswith("VmSize:"))
        return float(soft) - held
    except (ImportError, OSError, ValueError, StopIteration):
        return None


def cpu_free_bytes() -> float:
    """Memory this process may still take (B): the least of the machine's, its cgroup's and its address space's."""
    found = [x for x in (_meminfo_available(), _cgroup_available(), _address_space_available()) if x is not None]
    if not found:
        try:
            found = [float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))]
        except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX systems
            found = [8.0 * 2**30]
    return max(0.0, min(found))

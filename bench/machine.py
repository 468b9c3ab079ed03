"""What every bench prints about the machine it ran on.

A figure from a shared 2-core VM means little without the CPU, the core count and the load average
at the time, so every bench prints `machine()` before and after and `load()` beside its steps, in
one format.
"""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what `platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def load() -> str:
    """The 1, 5 and 15-minute load averages, e.g. "1.2 1.4 1.9"."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine(*packages: str) -> str:
    """One line: CPU, cores, OS, Python, the named packages' versions, nice and load average."""
    versions = "".join(f", {name} {_version(name)}" for name in packages)
    return (f"{cpu_model()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; "
            f"Python {platform.python_version()}{versions}; nice {os.nice(0)}; load average {load()}")

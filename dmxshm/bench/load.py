"""CPU-bound processes beside a benchmark (``--background-load N``): the machine as a
user's busy desktop or a shared CI runner has it, measured on purpose rather than by
chance. Each is a Python interpreter spinning in a loop, started before the
measurements and stopped (killed if it must be, waited for) when they end, however
they end."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

SPIN = "while True:\n    pass\n"
STOP_WAIT_S = 5.0


@contextmanager
def background_load(n: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``n`` spinning processes while the block runs (none for 0)."""
    if n < 0:
        raise ValueError(f"background load must be >= 0 processes, not {n}")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(n):
            procs.append(subprocess.Popen([sys.executable, "-c", SPIN],
                                          stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
        yield procs
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(STOP_WAIT_S)

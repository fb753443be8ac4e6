"""CPU-bound processes beside a benchmark (``--background-load N``): the machine as a
user's busy desktop or a shared CI runner has it, measured on purpose rather than by
chance. Each is a child spinning in a loop, started before the measurements and
stopped (SIGTERM, then SIGKILL) when they end, however they end
(:class:`~dmxshm.proc.supervisor.Supervisor`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


def spin() -> None:
    """Take a core until stopped."""
    while True:
        pass


@contextmanager
def background_load(n: int) -> Iterator[int]:
    """``n`` spinning children while the block runs (none for 0); yields ``n``."""
    if n < 0:
        raise ValueError(f"background load must be >= 0 processes, not {n}")
    if n == 0:
        yield 0
        return
    from dmxshm.proc.supervisor import Supervisor

    with Supervisor() as sup:
        for k in range(n):
            sup.start(f"load-{k}", spin)
        yield n

"""``--background-load N``: N children take a core each while the block runs, and none
is left after it, however it ends."""

from __future__ import annotations

import time

import psutil
import pytest

from dmxshm.bench.load import background_load


def loads() -> list[psutil.Process]:
    out = []
    for c in psutil.Process().children(recursive=True):
        try:
            if c.name().startswith("dmx-load"):
                out.append(c)
        except psutil.NoSuchProcess:
            pass
    return out


def until(check, timeout_s: float = 20.0):  # noqa: ANN001, ANN201
    """``check()`` once it is truthy (a child names itself once it runs), polled."""
    deadline = time.monotonic() + timeout_s
    while not (value := check()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
    return value


@pytest.mark.timeout(60)
def test_load_spins_and_is_gone_after() -> None:
    with background_load(2) as n:
        assert n == 2
        procs = until(lambda: len(loads()) == 2 and loads())
        # each takes CPU time: it spins
        until(lambda: all(p.cpu_times().user > 0.05 for p in procs))
    gone, alive = psutil.wait_procs(procs, timeout=10)
    assert not alive and len(gone) == 2 and loads() == []


@pytest.mark.timeout(60)
def test_load_is_stopped_when_the_block_raises() -> None:
    with pytest.raises(KeyError), background_load(1):
        procs = until(loads)
        raise KeyError("the benchmark failed")
    gone, alive = psutil.wait_procs(procs, timeout=10)
    assert not alive and loads() == []


def test_no_load_starts_nothing_and_a_negative_one_is_refused() -> None:
    with background_load(0) as n:
        assert n == 0 and loads() == []
    with pytest.raises(ValueError, match=">= 0"), background_load(-1):
        pass

"""A spine's CPUs are checked against the affinity this process has, not the machine's."""

from __future__ import annotations

import os

import pytest

from dmxshm.spine.config import SpineConfig, SpineError

USABLE = sorted(os.sched_getaffinity(0))


@pytest.mark.skipif(len(USABLE) < 2, reason="needs 2 usable CPUs: one to keep in the "
                                            "affinity, one to leave out of it")
@pytest.mark.parametrize("setting", ["cpu", "bus_cpu"])
def test_a_cpu_outside_the_affinity_is_refused_with_the_usable_ones(setting: str) -> None:
    kept, left_out = USABLE[0], USABLE[1]  # left_out exists: it is in today's affinity
    before = os.sched_getaffinity(0)
    # Pins this thread only (Linux affinity is per thread), and the check reads it.
    os.sched_setaffinity(0, {kept})
    try:
        with pytest.raises(SpineError) as info:
            SpineConfig(**{setting: left_out})
        SpineConfig(**{setting: kept})  # one that may be used is taken
    finally:
        os.sched_setaffinity(0, before)
    message = str(info.value)
    assert f"CPU {left_out} " in message and f"allows CPUs {kept} only" in message
    assert "affinity" in message


def test_a_cpu_that_does_not_exist_is_refused() -> None:
    with pytest.raises(SpineError, match=f"CPU 4096 .* allows CPUs {USABLE[0]}"):
        SpineConfig(cpu=4096)

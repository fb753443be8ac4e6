"""``dmxshm bench agents`` measures what it says (not how fast: that is the benchmark's)."""

from __future__ import annotations

import pytest

from dmxshm.bench import agents

pytestmark = pytest.mark.timeout(180)


def test_the_agents_bench_times_both_kinds_and_compares_their_digests() -> None:
    res = agents.run(pairs=1, steps=60, duration_s=1.0)
    assert len(res.built_in_steps_per_s) == len(res.outside_steps_per_s) == 1
    assert all(v > 0 for v in (*res.built_in_steps_per_s, *res.outside_steps_per_s))
    assert res.same_digest == [True]  # the same policy, inside or out: the same run
    assert res.ratio == pytest.approx(res.pair_ratios[0])
    assert {"agent-0", "slot-0"} <= set(res.latency)
    # The built-in agent answers from the run's start; the outside one from when its
    # fresh interpreter has connected, which a loaded machine may make late in the
    # realtime run's second: it is measured, over however many commands it sent.
    assert res.latency["agent-0"]["n"] > 10
    assert res.latency["slot-0"]["n"] > 0
    (target,) = res.targets()
    assert target[1] == res.ratio

"""The asynchronous batch's wake-up protocol, step by step, in every interleaving.

The parent's ``ready_for`` and a worker's ``announce`` are each a store, a
full fence and loads; with the fences, each process's steps happen in
order and the steps of all processes interleave. Hypothesis explores the
interleavings; a parent asleep when every env it waits for was announced,
with no post to wake it, is the bug that hung one recv() in 20 000.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dmxshm.batch.completions import Announcer, Collector


class Sem:
    def __init__(self) -> None:
        self.value = 0

    def release(self) -> None:
        self.value += 1


def views(n: int, workers: int) -> dict[str, np.ndarray]:
    return {"done_ids": np.zeros(n, np.int64), "done_count": np.zeros(workers, np.int64),
            "need": np.zeros(1, np.int64), "t_env": np.zeros(n, np.float64)}


@settings(max_examples=400, deadline=None)
@given(sizes=st.lists(st.integers(1, 3), min_size=1, max_size=4), data=st.data())
def test_a_parent_waiting_for_announced_envs_is_always_woken(sizes: list[int],
                                                              data: st.DataObject) -> None:
    n = sum(sizes)
    bounds, lo = [], 0
    for size in sizes:
        bounds.append((lo, lo + size))
        lo += size
    v, ready = views(n, len(sizes)), Sem()
    collector = Collector(v, bounds)
    announcers = [Announcer(w, a, b, v, ready) for w, (a, b) in enumerate(bounds)]
    k = data.draw(st.integers(1, n), label="batch_size")
    # Each worker announces its envs in groups (a scan each): publish, then wake.
    steps: dict[int, list[tuple[str, list[int]]]] = {}
    for w, (a, b) in enumerate(bounds):
        envs = list(range(a, b))
        cuts = sorted(data.draw(st.sets(st.integers(1, max(len(envs) - 1, 1)), max_size=2),
                                label=f"scans of worker {w}"))
        ends = zip([0, *cuts], [*cuts, len(envs)], strict=True)
        groups = [envs[i:j] for i, j in ends if envs[i:j]]
        steps[w] = [(kind, g) for g in groups for kind in ("publish", "wake")]
    parent = ["holds", "publish_need", "holds_again"]  # ready_for, then sleep
    asleep = False
    while True:
        actors = [w for w in steps if steps[w]]
        if not asleep and parent:
            actors.append(-1)
        if asleep and ready.value:
            actors.append(-2)  # the parent wakes: ready_for again
        if not actors:
            break
        actor = data.draw(st.sampled_from(actors), label="next")
        if actor >= 0:
            kind, group = steps[actor].pop(0)
            if kind == "publish":
                announcers[actor].publish(group)
            else:
                announcers[actor].wake_if_needed()
        elif actor == -2:
            ready.value -= 1
            asleep, parent = False, ["holds", "publish_need", "holds_again"]
        else:
            step = parent.pop(0)
            if step == "publish_need":
                collector.publish_need(k)
            elif collector.holds(k):
                collector.stop_waiting()
                parent = []  # recv() returns
                break
            elif step == "holds_again":
                asleep = True
    if asleep:
        collector.gather()
        assert len(collector.finished) < k, (
            f"the parent sleeps with {len(collector.finished)} of {k} envs announced "
            "and no post to wake it")


def test_the_remainder_bug_is_what_this_catches() -> None:
    """Three workers, one env each, k = 3: two announce without a post (nobody
    waits), the parent publishes its need and gathers those two on its last look,
    then sleeps; the third worker's announcement must post."""
    v, ready = views(3, 3), Sem()
    collector = Collector(v, [(0, 1), (1, 2), (2, 3)])
    a, b, c = (Announcer(w, w, w + 1, v, ready) for w in range(3))
    assert not collector.holds(3)
    a.announce([0])
    b.announce([1])
    assert ready.value == 0  # nobody waited
    collector.publish_need(3)
    assert not collector.holds(3)  # gathers envs 0 and 1: two of three
    c.announce([2])
    assert ready.value == 1
    assert collector.holds(3) and collector.take(3).tolist() in ([0, 1, 2],)

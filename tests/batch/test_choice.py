"""``make_vec(..., num_workers="auto")``, the default: a batch whose step is cheaper
than the handoff to workers stays in the caller, one whose step is dear goes to one
worker per usable CPU; the batch says what it picked and why, and the measurement
leaves the batch's own envs untouched."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dmxshm
from dmxshm import settings
from dmxshm.batch import choice
from dmxshm.batch.choice import choose, handoff_s

VEC_TIMEOUT_S = 120


def test_the_rule() -> None:
    assert choose(100e-6, 16, handoff=150e-6, cores=2).num_workers == 0
    assert choose(400e-6, 16, handoff=150e-6, cores=2).num_workers == 2
    assert choose(299e-6, 16, handoff=150e-6, cores=2).num_workers == 0  # 149.5 + 150
    assert choose(301e-6, 16, handoff=150e-6, cores=2).num_workers == 2
    assert choose(1.0, 1, handoff=150e-6, cores=8).num_workers == 0  # one world: no split
    assert choose(1.0, 3, handoff=150e-6, cores=8).cores == 3


def test_the_handoff_can_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    assert handoff_s() == settings.BATCH_HANDOFF_US * 1e-6
    monkeypatch.setenv(settings.HANDOFF_ENV, "1000")
    assert handoff_s() == 1e-3
    monkeypatch.setenv(settings.HANDOFF_ENV, "fast")
    with pytest.raises(ValueError, match="DMXSHM_HANDOFF_US"):
        handoff_s()


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_cheap_steps_stay_in_process_dear_ones_go_to_workers(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    # The rule is the batch's own measured step against the handoff: a handoff of an
    # hour keeps any batch here, one of nothing sends any batch of 2+ worlds out.
    monkeypatch.setenv(settings.HANDOFF_ENV, "3.6e9")
    envs = dmxshm.make_vec(4, version="v1", physics="db18")
    try:
        assert envs.num_workers == 0 and envs.worker_choice is not None
        assert envs.worker_choice.step_s > 0 and envs.worker_choice.num_workers == 0
    finally:
        envs.close()
    monkeypatch.setenv(settings.HANDOFF_ENV, "0")
    envs = dmxshm.make_vec(4, version="v1", physics="db18")
    try:
        assert envs.num_workers == envs.worker_choice.cores >= 1
    finally:
        envs.close()


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_measuring_leaves_the_batch_as_a_chosen_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(settings.HANDOFF_ENV, "3.6e9")  # in-process either way
    rows = []
    for workers in ("auto", 0):
        envs = dmxshm.make_vec(3, num_workers=workers, version="v1", physics="db18", seed=4)
        try:
            rows.append(envs.reset())
            rows.append(envs.step(np.full((3, 2), 0.4, np.float32))[0])
            rows.append(envs.trajectory_digest)
        finally:
            envs.close()
    assert np.array_equal(rows[0][0], rows[3][0]) and np.array_equal(rows[1], rows[4])
    assert rows[2] == rows[5]
    assert dmxshm.make_vec.__defaults__[0] == "auto"


def test_another_word_is_refused_naming_auto() -> None:
    with pytest.raises(ValueError, match="'auto'"):
        dmxshm.make_vec(2, num_workers="four")


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_multi_robot_db18_worlds_are_measured_as_the_batch_steps_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # As arrays (the multi-robot array shard), not a world's step times the worlds.
    from dmxshm.batch import vector

    calls: list[dict[str, Any]] = []

    def spy(*args: Any, **kwargs: Any) -> float:
        calls.append(kwargs)
        return choice.in_process_step_s(*args, **kwargs)

    monkeypatch.setattr(vector, "in_process_step_s", spy)
    envs = dmxshm.make_vec(8, robots_per_world=4, map="loop", physics="db18")
    try:
        assert [c["robots_per_world"] for c in calls] == [4]
        assert envs.worker_choice is not None and envs.worker_choice.step_s > 0
    finally:
        envs.close()

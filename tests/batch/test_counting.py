"""Autoreset and info semantics on the counting world (tests/batch/counting.py), over
both backends: a row's observation is its step count, so each expectation below is
the semantics itself, row by row, and a run costs milliseconds, not a simulation.

Each mode is also gymnasium's ``SyncVectorEnv`` over the same env bit for bit (infos,
``final_obs`` and ``final_info`` included), through ``step`` and through
``send``/``recv``."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import dmxshm
from dmxshm.batch import kinds
from dmxshm.errors import DmxError
from tests.batch.counting import CountingEnv
from tests.batch.rows import BACKENDS, IN_PROCESS, assert_same, in_env_order

VEC_TIMEOUT_S = 60
N, EVERY = 4, 3


def make(backend: int, mode: AutoresetMode | str, every: int = EVERY, **kwargs: Any) -> Any:
    """A batch of N counting worlds, seeded 0..N-1: their counts start at ``i % every``
    (0, 1, 2, 0 by default)."""
    return dmxshm.make_vec(N, num_workers=backend, version=CountingEnv, seed=0,
                           autoreset_mode=mode, every=every, **kwargs)


def actions(k: int) -> np.ndarray:
    """Step ``k``'s actions: row i's first element is ``k + i / 10`` (its reward)."""
    a = np.zeros((N, 2), np.float32)
    a[:, 0] = k + np.arange(N) / 10
    return a


def counts(obs: np.ndarray) -> list[int]:
    return obs[:, 0].tolist()


@pytest.mark.timeout(VEC_TIMEOUT_S)
@pytest.mark.parametrize("backend", BACKENDS)
def test_next_step_resets_an_ended_row_at_its_next_step(backend: int) -> None:
    envs = make(backend, AutoresetMode.NEXT_STEP)
    try:
        obs, info = envs.reset()
        assert counts(obs) == [0, 1, 2, 0]
        assert info["seed"].tolist() == [0, 1, 2, 3] and info["_seed"].all()
        assert "count" not in info  # no row's info has it: left out
        obs, reward, terminated, truncated, info = envs.step(actions(1))
        assert counts(obs) == [1, 2, 3, 1]
        assert terminated.tolist() == [False, False, True, False] and not truncated.any()
        assert reward.tolist() == actions(1)[:, 0].astype(np.float64).tolist()
        assert info["count"].tolist() == [1, 2, 3, 1] and "seed" not in info
        obs, reward, terminated, _, info = envs.step(actions(2))
        # row 2 ended: this step resets it (unseeded: count 0), its action ignored
        assert counts(obs) == [2, 3, 0, 2]
        assert terminated.tolist() == [False, True, False, False]
        assert reward[2] == 0.0
        assert info["_count"].tolist() == [True, True, False, True]
        assert info["_seed"].tolist() == [False, False, True, False]
        assert info["seed"][2] == -1
    finally:
        envs.close()


@pytest.mark.timeout(VEC_TIMEOUT_S)
@pytest.mark.parametrize("backend", BACKENDS)
def test_same_step_resets_in_the_step_and_keeps_the_last_row_apart(backend: int) -> None:
    envs = make(backend, AutoresetMode.SAME_STEP)
    try:
        envs.reset()
        obs, _, terminated, _, info = envs.step(actions(1))
        assert terminated.tolist() == [False, False, True, False]
        assert counts(obs) == [1, 2, 0, 1]  # row 2: the next episode's first
        assert info["_final_obs"].tolist() == [False, False, True, False]
        assert info["final_obs"][2].tolist() == [3] and info["final_obs"][0] is None
        final = info["final_info"]
        assert final["count"][2] == 3 and final["_count"].tolist() == [False, False, True,
                                                                       False]
        # the row's info is its reset's: a seed, no count
        assert info["_seed"].tolist() == [False, False, True, False]
        assert info["_count"].tolist() == [True, True, False, True]
    finally:
        envs.close()


@pytest.mark.timeout(VEC_TIMEOUT_S)
@pytest.mark.parametrize("backend", BACKENDS)
def test_disabled_refuses_an_ended_row_until_a_masked_reset(backend: int) -> None:
    envs = make(backend, AutoresetMode.DISABLED)
    try:
        envs.reset()
        _, _, terminated, _, _ = envs.step(actions(1))
        assert terminated.tolist() == [False, False, True, False]
        with pytest.raises(DmxError, match=r"env\(s\) \[2\] ended.*reset_mask"):
            envs.step(actions(2))
        obs, info = envs.reset(options={"reset_mask": terminated.copy()})
        assert counts(obs) == [1, 2, 0, 1]  # the others keep their last observation
        assert info["_seed"].tolist() == [False, False, True, False]
        obs, _, _, _, _ = envs.step(actions(2))
        assert counts(obs) == [2, 3, 1, 2]
        for bad, error in ((np.array([1, 0, 0, 0]), TypeError), (np.zeros(3, bool), ValueError),
                           (np.zeros(N, bool), ValueError), ([True] * N, TypeError)):
            with pytest.raises(error, match="reset_mask"):
                envs.reset(options={"reset_mask": bad})
    finally:
        envs.close()


def play(envs: Any, mode: AutoresetMode, steps: int = 10) -> list[Any]:
    out: list[Any] = [envs.reset(seed=0)]
    for k in range(steps):
        step = envs.step(actions(k))
        out.append(step)
        ended = step[2] | step[3]
        if mode == AutoresetMode.DISABLED and ended.any():
            out.append(envs.reset(options={"reset_mask": ended.copy()}))
    return out


@pytest.mark.timeout(VEC_TIMEOUT_S)
@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.name)
@pytest.mark.parametrize("backend", BACKENDS)
def test_each_mode_is_sync_vector_envs_bit_for_bit(backend: int, mode: AutoresetMode
                                                   ) -> None:
    # counts start at 0..3 and end at 5: some rows terminate, others are truncated
    ours = make(backend, mode, every=5, max_episode_steps=4)
    sync = gymnasium.vector.SyncVectorEnv(
        [lambda: CountingEnv(every=5, max_episode_steps=4)] * N, autoreset_mode=mode)
    try:
        mine, theirs = play(ours, mode), play(sync, mode)
    finally:
        ours.close()
        sync.close()
    assert_same(mine, theirs, "calls")
    steps = [t for t in theirs if len(t) == 5]
    assert sum(int(t[2].sum()) for t in steps) and sum(int(t[3].sum()) for t in steps)


def received(envs: Any) -> tuple[Any, ...]:
    """``recv()`` of every row, in env order, its ``env_id`` checked and taken out
    (``step()`` does not name its rows)."""
    got = envs.recv()
    obs, reward, terminated, truncated, info = in_env_order(got, got[4]["env_id"])
    assert info.pop("env_id").tolist() == list(range(N))
    return obs, reward, terminated, truncated, info


@pytest.mark.timeout(VEC_TIMEOUT_S)
@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.name)
@pytest.mark.parametrize("backend", BACKENDS)
def test_send_and_recv_give_each_row_what_step_gives_it(backend: int, mode: AutoresetMode
                                                        ) -> None:
    stepped, sent = make(IN_PROCESS, mode), make(backend, mode, batch_size=N)
    try:
        mine, theirs = [stepped.reset()], []
        sent.async_reset()
        obs, _, _, _, info = received(sent)
        theirs.append((obs, info))
        for k in range(8):
            mine.append(stepped.step(actions(k)))
            sent.send(actions(k), np.arange(N))
            theirs.append(received(sent))
            if mode == AutoresetMode.DISABLED and stepped._ended.any():
                mask = stepped._ended.copy()
                mine.append(stepped.reset(options={"reset_mask": mask}))
                theirs.append(sent.reset(options={"reset_mask": mask}))
        assert_same(mine, theirs, "calls")
    finally:
        stepped.close()
        sent.close()


def test_a_user_class_is_refused_what_it_does_not_take() -> None:
    with pytest.raises(TypeError, match="CountingEnv takes no colour"):
        dmxshm.make_vec(2, num_workers=IN_PROCESS, version=CountingEnv, colour="red")
    with pytest.raises(ValueError, match="leave make_vec's obs, camera and render_mode out"):
        dmxshm.make_vec(2, num_workers=IN_PROCESS, version=CountingEnv, obs="camera")
    with pytest.raises(ValueError, match="robots_per_world are DuckieLane-v1's"):
        dmxshm.make_vec(4, num_workers=IN_PROCESS, version=CountingEnv, robots_per_world=2)


class OneFloat(CountingEnv):
    def __init__(self) -> None:
        super().__init__()
        self.action_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)


def test_a_user_class_must_act_with_two_floats() -> None:
    with pytest.raises(ValueError, match="actions are 2 floats per row: OneFloat"):
        dmxshm.make_vec(2, num_workers=IN_PROCESS, version=OneFloat)


def test_a_registered_kind_is_a_batch_by_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    # The layers above the batch join its kinds by name (the drop-ins do, from
    # dmxshm/__init__.py); the workers get the class, not the name.
    monkeypatch.setattr(kinds, "KINDS", dict(kinds.KINDS))
    kinds.register("counting", "tests.batch.counting:CountingEnv")
    kinds.register("counting", "tests.batch.counting:CountingEnv")  # again: the same
    envs = dmxshm.make_vec(2, num_workers=1, version="counting", seed=0)
    try:
        assert envs.version == "counting"
        obs, _ = envs.reset(seed=0)
        before = counts(obs)
        obs, *_ = envs.step(actions(1)[:2])
        assert counts(obs) == [c + 1 for c in before]
    finally:
        envs.close()
    with pytest.raises(ValueError, match="registered already"):
        kinds.register("counting", "tests.batch.test_counting:OneFloat")
    with pytest.raises(ValueError, match="module:Name"):
        kinds.register("other", "tests.batch.counting")
    with pytest.raises(ValueError, match="v0, v1, duckietown, simulator, counting"):
        dmxshm.make_vec(2, num_workers=IN_PROCESS, version="v9")


def test_the_drop_ins_are_registered_by_the_package_above_the_batch() -> None:
    assert kinds.KINDS["duckietown"] == "dmxshm.duckietown:DuckietownEnv"
    assert kinds.env_class("simulator").__module__ == "dmxshm.duckietown"
    assert {"duckietown", "simulator"} <= kinds.DROP_INS

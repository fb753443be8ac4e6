"""Batch mode's three autoreset modes over DuckieLane, each against gymnasium's
SyncVectorEnv.

In-process (its rows are the workers' in every mode, tests/batch/test_serial.py);
over both backends where an env in flight ends or is dropped while others finish. The
semantics row by row (a refused step, a masked reset, ``final_obs`` through
``send``/``recv``) are tests/batch/test_counting.py's, on a world whose observation is
its step count."""

from __future__ import annotations

import os
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import dmxshm
from dmxshm.batch.env import DuckieLaneEnv
from dmxshm.batch.vector import parse_autoreset_mode
from dmxshm.errors import DmxError
from dmxshm.shm.names import list_entries
from tests.batch.rows import IN_PROCESS

VEC_TIMEOUT_S = 120
N, STEPS, EPISODE = 6, 60, 20


def actions() -> np.ndarray:
    """Even envs turn left hard and leave the road (terminated, after 15-19 steps);
    odd ones drive at random until they are truncated."""
    rng = np.random.default_rng(11)
    a = rng.uniform(-1, 1, (STEPS, N, 2))
    a[:, ::2] = [1.0, 0.5] + rng.uniform(-0.05, 0.05, (STEPS, (N + 1) // 2, 2))
    return a.astype(np.float32)


def assert_same(mine: Any, theirs: Any, where: str) -> None:
    """Bit for bit, dtypes and nesting included (final_info is a dict, final_obs an
    object array of observations and None)."""
    if isinstance(theirs, dict):
        assert isinstance(mine, dict) and set(mine) == set(theirs), (where, set(mine),
                                                                     set(theirs))
        for key in theirs:
            assert_same(mine[key], theirs[key], f"{where}.{key}")
        return
    if theirs is None:
        assert mine is None, where
        return
    theirs, mine = np.asarray(theirs), np.asarray(mine)
    assert mine.dtype == theirs.dtype and mine.shape == theirs.shape, (where, mine.dtype,
                                                                      theirs.dtype)
    if theirs.dtype == object:
        for k, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            assert_same(a, b, f"{where}[{k}]")
    else:
        assert np.array_equal(mine, theirs, equal_nan=theirs.dtype.kind == "f"), where


def play(env: Any, mode: AutoresetMode) -> list[tuple[Any, ...]]:
    """Reset, then STEPS steps; with DISABLED, the envs that ended are reset (mask)."""
    out: list[tuple[Any, ...]] = [env.reset(seed=5)]
    for a in actions():
        step = env.step(a)
        out.append(step)
        ended = step[2] | step[3]
        if mode == AutoresetMode.DISABLED and ended.any():
            out.append(env.reset(options={"reset_mask": ended.copy()}))
    return out


@pytest.mark.timeout(VEC_TIMEOUT_S)
@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.name)
def test_each_mode_is_sync_vector_envs_bit_for_bit(mode: AutoresetMode) -> None:
    ours = dmxshm.make_vec(N, num_workers=IN_PROCESS, max_episode_steps=EPISODE,
                           autoreset_mode=mode)
    sync = gymnasium.vector.SyncVectorEnv([lambda: DuckieLaneEnv(max_episode_steps=EPISODE)] * N,
                                          autoreset_mode=mode)
    try:
        assert ours.metadata["autoreset_mode"] == mode == sync.metadata["autoreset_mode"]
        mine, theirs = play(ours, mode), play(sync, mode)
    finally:
        ours.close()
        sync.close()
    assert len(mine) == len(theirs)
    for k, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        assert len(a) == len(b), k
        names = ("obs", "reward", "terminated", "truncated", "info") if len(a) == 5 else \
            ("obs", "info")  # a step, or a reset
        for name, x, y in zip(names, a, b, strict=True):
            assert_same(x, y, f"call {k} {name}")
    steps = [t for t in theirs if len(t) == 5]
    assert sum(int(t[2].sum()) for t in steps) and sum(int(t[3].sum()) for t in steps)
    if mode == AutoresetMode.SAME_STEP:
        assert sum("final_obs" in t[4] for t in steps) >= 2  # final_obs was compared
    assert [e for e in list_entries() if e.pid == os.getpid()] == []


def test_modes_are_named_as_gymnasium_names_them() -> None:
    assert parse_autoreset_mode("same_step") is AutoresetMode.SAME_STEP
    assert parse_autoreset_mode("NextStep") is AutoresetMode.NEXT_STEP
    assert parse_autoreset_mode(AutoresetMode.DISABLED) is AutoresetMode.DISABLED
    with pytest.raises(ValueError, match="autoreset_mode must be one of"):
        dmxshm.make_vec(2, autoreset_mode="sometimes")


@pytest.mark.timeout(VEC_TIMEOUT_S)
@pytest.mark.parametrize("backend", [pytest.param(IN_PROCESS, id="in-process"),
                                     pytest.param(1, id="a-worker")])  # envs in order
def test_disabled_keeps_an_end_that_a_reset_dropped(backend: int) -> None:
    # An env in flight whose step ends its episode, dropped by a masked reset
    # of another env, has still ended: stepping it is refused.
    env = dmxshm.make_vec(2, num_workers=backend, seed=0, max_episode_steps=1, batch_size=1,
                          autoreset_mode="disabled")
    try:
        env.async_reset()
        _, _, _, _, info = env.recv()
        x = int(info["env_id"][0])
        env.send(np.zeros((1, 2), np.float32), [x])  # ends x's episode (1 step)
        _, _, _, _, _ = env.recv()  # the other env's reset
        env.send(np.zeros((1, 2), np.float32), [1 - x])  # in flight, then dropped
        mask = np.zeros(2, bool)
        mask[1 - x] = True
        with pytest.raises(TypeError, match="reset_mask"):  # checked before anything drops
            env.reset(options={"reset_mask": [True, False]})
        env.reset(options={"reset_mask": mask})
        with pytest.raises(DmxError, match=rf"env\(s\) \[{x}\] ended"):
            env.step(np.zeros((2, 2), np.float32))
    finally:
        env.close()

"""The shard that steps multi-robot DB18 worlds as arrays
(:mod:`dmxshm.batch.multi_array_shard`) gives the rows the worlds give one by one, bit
for bit: observations, rewards, flags, infos and the batch's digest, through ``step``
and ``send``/``recv``, in the autoreset modes it serves, with robots that run into
each other; and the batches it does not serve step world by world."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import dmxshm
from dmxshm.batch import array_shard
from dmxshm.batch.multi_array_shard import MultiArrayShard
from tests.batch.rows import IN_PROCESS, WORKERS, assert_same, in_env_order

VEC_TIMEOUT_S = 120
STEPS = 80
BATCHES: dict[str, tuple[int, dict[str, Any]]] = {
    # eight robots a world on loop, at their own speeds: they catch up with each other
    "loop-8": (16, {"robots_per_world": 8, "map": "loop", "max_episode_steps": 60,
                    "physics": "db18"}),
    "grid-8-randomized": (16, {"robots_per_world": 8, "max_episode_steps": 60,
                               "randomize": True, "end_on_collision": False,
                               "physics": "db18"}),
    "loop-8-no-route-no-noise": (16, {"robots_per_world": 8, "map": "loop", "route": None,
                                     "noise": False, "max_episode_steps": 60,
                                     "physics": "db18"}),
}
MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED]


def drive(obs: np.ndarray, base: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Lane following at each row's own speed (some rows off the lane: the last
    world's steer the wrong way), with a little noise."""
    steer = -(3.0 * obs[:, 0] + 1.0 * obs[:, 1])
    steer[-len(obs) // 4:] *= -1.0
    a = np.stack([base - steer, base + steer], axis=1) + rng.normal(0.0, 0.05, (len(obs), 2))
    return np.clip(a, -1.0, 1.0).astype(np.float32)


def play(n: int, kwargs: dict[str, Any], mode: AutoresetMode, arrays: bool,
         monkeypatch: pytest.MonkeyPatch, workers: int = IN_PROCESS) -> list[Any]:
    """Everything a batch returns over reset, ``STEPS`` steps, an asynchronous reset
    and ``STEPS`` sends (DISABLED: the worlds that must be reset are reset by mask);
    then its digest."""
    monkeypatch.setattr(array_shard, "ENABLED", arrays)
    rng = np.random.default_rng(1)
    base = rng.uniform(0.1, 1.0, n)
    envs = dmxshm.make_vec(n, num_workers=workers, seed=3, autoreset_mode=mode, **kwargs)
    out: list[Any] = []
    try:
        if workers == IN_PROCESS:
            assert isinstance(envs._serial.shard, MultiArrayShard) == arrays
        out.append(envs.reset())
        obs = out[-1][0]
        for _ in range(STEPS):
            out.append(envs.step(drive(obs, base, rng)))
            obs = out[-1][0]
            if mode == AutoresetMode.DISABLED and envs._ended.any():
                out.append(envs.reset(options={"reset_mask": envs._ended.copy()}))
                obs = out[-1][0]
        envs.async_reset(seed=9)
        first = envs.recv()
        out.append(in_env_order(first, first[4]["env_id"]))
        obs = out[-1][0]
        for _ in range(STEPS):
            envs.send(drive(obs, base, rng), np.arange(n))
            got = envs.recv()
            out.append(in_env_order(got, got[4]["env_id"]))
            obs = out[-1][0]
            if mode == AutoresetMode.DISABLED and envs._ended.any():
                out.append(envs.reset(options={"reset_mask": envs._ended.copy()}))
                obs = out[-1][0]
        out.append(envs.trajectory_digest)
    finally:
        envs.close()
    return out


@pytest.mark.timeout(VEC_TIMEOUT_S)
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
@pytest.mark.parametrize("batch", list(BATCHES))
def test_array_rows_are_the_worlds_own_bit_for_bit(batch: str, mode: AutoresetMode,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    n, kwargs = BATCHES[batch]
    mine = play(n, kwargs, mode, True, monkeypatch)
    theirs = play(n, kwargs, mode, False, monkeypatch)
    for k, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        assert_same(a, b, f"call {k}")
    steps = [t for t in theirs if isinstance(t, tuple) and len(t) == 5]
    # what was compared: episodes that ended, contacts, and stopped rows
    assert sum(int(t[2].sum()) + int(t[3].sum()) for t in steps) >= 4
    assert sum(int(np.sum(t[4]["collided"])) for t in steps) >= 3
    assert sum(int(np.sum(~t[4]["active"])) for t in steps) >= 10


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_two_workers_stepping_as_arrays_give_the_in_process_rows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    n, kwargs = BATCHES["loop-8"]
    mine = play(n, kwargs, AutoresetMode.NEXT_STEP, True, monkeypatch, workers=WORKERS)
    theirs = play(n, kwargs, AutoresetMode.NEXT_STEP, True, monkeypatch)
    for k, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        assert_same(a, b, f"call {k}")


def pile_up(arrays: bool, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Robots 0 and 1 drive head-on into each other (both end: a collision ends an
    episode), then robot 2 runs into robot 0 from behind: a contact begun with a robot
    whose episode ended."""
    monkeypatch.setattr(array_shard, "ENABLED", arrays)
    envs = dmxshm.make_vec(3, num_workers=IN_PROCESS, robots_per_world=3, map="loop",
                           physics="db18", noise=False, route=None)
    try:
        envs.reset(seed=0)
        world = envs._serial.shard.worlds[0]
        x, y, yaw = world.world.road_map.start_poses(1, np.random.default_rng(0))[0]
        c, s = np.cos(yaw), np.sin(yaw)
        world.reset(poses=[(x, y, yaw), (x + 0.3 * c, y + 0.3 * s, yaw + np.pi),
                           (x - 0.35 * c, y - 0.35 * s, yaw)])
        if arrays:
            envs._serial.shard.adopt(0)
        return [envs.step(np.ones((3, 2), np.float32)) for _ in range(30)]
    finally:
        envs.close()


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_a_contact_with_an_ended_robot_counts_for_the_robot_still_driving(
        monkeypatch: pytest.MonkeyPatch) -> None:
    mine, theirs = pile_up(True, monkeypatch), pile_up(False, monkeypatch)
    for k, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        assert_same(a, b, f"step {k}")
    collided = np.array([t[4]["collided"] for t in theirs])
    active = np.array([t[4]["active"] for t in theirs])
    first = int(np.flatnonzero(collided[:, 0])[0])
    assert collided[first].tolist() == [True, True, False]  # head-on: both end
    assert active[first + 1].tolist() == [False, False, True]
    assert collided[first + 1:, 2].any()  # robot 2 reaches them, robot 0 counts none
    assert not collided[first + 1:, :2].any()

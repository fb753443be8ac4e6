"""The shard that steps DuckieLane DB18 envs as arrays (:mod:`dmxshm.batch.array_shard`)
gives the rows the envs give one by one, bit for bit: observations, rewards, flags,
infos and the batch's digest, through ``step`` and ``send``/``recv`` (a subset of
the envs), in the autoreset modes it serves; its kernels give the Python code's floats
(the lane pose, CPython's ``hypot``); and the batches it does not serve step env by
env."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import dmxshm
from dmxshm.batch import array_shard
from dmxshm.batch.array_shard import ArrayShard
from dmxshm.errors import DmxError
from dmxshm.sim import lane_kernels as lk
from dmxshm.world.maps import load_map
from tests.batch.rows import IN_PROCESS, assert_same, in_env_order
from tests.batch.test_serial import play

VEC_TIMEOUT_S = 120
BATCHES: dict[str, tuple[int, dict[str, Any]]] = {
    "v1": (4, {"version": "v1", "max_episode_steps": 12, "physics": "db18"}),
    "v1-randomized": (4, {"version": "v1", "max_episode_steps": 12, "randomize": True,
                          "physics": "db18"}),
    "v1-no-route-no-noise": (3, {"version": "v1", "route": None, "noise": False,
                                 "map": "loop", "max_episode_steps": 12,
                                 "physics": "db18"}),
    "v0": (4, {"max_episode_steps": 12, "physics": "db18"}),
    # cameras: each env's own camera code, drawn together by the batch renderer
    "v1-camera": (4, {"version": "v1", "obs": "camera", "camera": (32, 24),
                      "max_episode_steps": 12, "physics": "db18"}),
    "v1-both-randomized": (3, {"version": "v1", "obs": "both", "camera": (24, 16),
                               "max_episode_steps": 12, "randomize": True,
                               "physics": "db18"}),
}
MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED]


def shard_of(envs: Any) -> Any:
    return envs._serial.shard


@pytest.fixture
def env_by_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(array_shard, "ENABLED", False)


def played(n: int, kwargs: dict[str, Any], mode: AutoresetMode, arrays: bool,
           monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    monkeypatch.setattr(array_shard, "ENABLED", arrays)
    envs = dmxshm.make_vec(n, num_workers=IN_PROCESS, autoreset_mode=mode, **kwargs)
    try:
        assert isinstance(shard_of(envs), ArrayShard) == arrays
    finally:
        envs.close()
    return play(IN_PROCESS, n, kwargs, mode)


@pytest.mark.timeout(VEC_TIMEOUT_S)
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
@pytest.mark.parametrize("batch", list(BATCHES))
def test_array_rows_are_the_envs_own_bit_for_bit(batch: str, mode: AutoresetMode,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    n, kwargs = BATCHES[batch]
    mine = played(n, kwargs, mode, True, monkeypatch)
    theirs = played(n, kwargs, mode, False, monkeypatch)
    for k, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        assert_same(a, b, f"call {k}")
    steps = [t for t in theirs if isinstance(t, tuple) and len(t) == 5]
    assert sum(int(t[2].sum()) + int(t[3].sum()) for t in steps) >= 4  # episodes ended


def drive(arrays: bool, monkeypatch: pytest.MonkeyPatch, steps: int = 600) -> tuple[Any, ...]:
    """Four v1 robots on grid following their lanes (through intersections, with routes
    and noise) under a controller reading their observations."""
    monkeypatch.setattr(array_shard, "ENABLED", arrays)
    envs = dmxshm.make_vec(4, num_workers=IN_PROCESS, version="v1", physics="db18",
                           max_episode_steps=0)
    try:
        obs, _ = envs.reset(seed=5)
        seen, rewards = [obs], []
        for _ in range(steps):
            steer = -(1.5 * obs[:, 0] + 0.6 * obs[:, 1]) + 0.06 * obs[:, 11]
            action = np.stack([0.45 - steer, 0.45 + steer], axis=1).astype(np.float32)
            obs, reward, *_ = envs.step(action)
            seen.append(obs)
            rewards.append(reward)
        visits = sum(w.env._router._visits[0] for w in shard_of(envs).worlds)
        return np.array(seen), np.array(rewards), envs.trajectory_digest, visits
    finally:
        envs.close()


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_routes_through_intersections_are_the_envs_own(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    mine, theirs = drive(True, monkeypatch), drive(False, monkeypatch)
    obs, rewards, digest, visits = mine
    assert visits >= 4  # intersections were decided on the way
    assert (obs[:, :, 13] == 1.0).any() and (obs[:, :, 12] != 0.0).any()  # turns known
    assert np.array_equal(obs, theirs[0])
    assert np.array_equal(rewards, theirs[1])
    assert digest == theirs[2]


@pytest.mark.parametrize("name", ["grid", "loop"])
def test_lane_pose_kernel_is_the_maps_own(name: str) -> None:
    m = load_map(name)
    rng = np.random.default_rng(0)
    n = 3000
    w, h = m.size_m
    x, y = rng.uniform(-0.5, w + 0.5, n), rng.uniform(-0.5, h + 0.5, n)
    yaw = rng.uniform(-4.0, 4.0, n)
    out = np.empty((n, 4))
    lk.road_lanes(*lk.MapArrays(m).args(), x, y, yaw, out)
    for i in range(n):
        lane, curvature = m._lane(x[i], y[i], yaw[i])
        want = [lane.offset_m, lane.heading_err_rad, float(lane.on_road), curvature]
        assert np.array_equal(out[i], want, equal_nan=True), (i, out[i], want)
    assert (out[:, 3] != 0).sum() > 100  # curves were measured, not only straights


def test_hypot_is_pythons() -> None:
    assert lk.HYPOT_IS_PYTHONS
    rng = np.random.default_rng(7)
    for a, b in rng.normal(0.0, 3.0, (2000, 2)).tolist():
        assert lk.hypot(a, b) == math.hypot(a, b)


@pytest.mark.parametrize("kwargs", [
    {"physics": "bullet"},
    {"physics": "db18", "autoreset_mode": AutoresetMode.SAME_STEP},
], ids=["bullet", "same-step"])
def test_other_batches_step_env_by_env(kwargs: dict[str, Any]) -> None:
    envs = dmxshm.make_vec(2, num_workers=IN_PROCESS, version="v1", **kwargs)
    try:
        assert type(shard_of(envs)).__name__ == "Shard"
    finally:
        envs.close()


def test_cameras_and_objects_step_env_by_env(tmp_path: Any) -> None:
    from dmxshm.batch.env_v1 import DuckieLaneV1Env
    from dmxshm.batch.shard import NEXT_STEP, OneRobot

    plain = [OneRobot(DuckieLaneV1Env(physics="db18")) for _ in range(2)]
    camera = [OneRobot(DuckieLaneV1Env(physics="db18", obs="camera", camera=(16, 12),
                                       renderer="batch"))]  # (auto would measure)
    town = [OneRobot(DuckieLaneV1Env(physics="db18", map="town", route=None))]
    try:
        assert array_shard.eligible(plain, NEXT_STEP)
        assert not array_shard.eligible(camera, NEXT_STEP)
        assert town[0].env.world.road_map.objects and not array_shard.eligible(town, NEXT_STEP)
        assert not array_shard.eligible(plain + camera, NEXT_STEP)  # all or none
    finally:
        for world in plain + camera + town:
            world.close()


def halves(arrays: bool, monkeypatch: pytest.MonkeyPatch, steps: int = 60) -> list[Any]:
    """Four randomised v1 envs (drawn command delays among them) sent in halves: the
    array shard steps a subset of its envs at a time."""
    monkeypatch.setattr(array_shard, "ENABLED", arrays)
    envs = dmxshm.make_vec(4, num_workers=IN_PROCESS, version="v1", physics="db18",
                           randomize=True, max_episode_steps=25, batch_size=2, seed=2)
    rng = np.random.default_rng(3)
    out: list[Any] = []
    try:
        assert isinstance(shard_of(envs), ArrayShard) == arrays
        envs.async_reset(seed=2)
        for _ in range(steps):
            got = envs.recv()
            out.append(in_env_order(got, got[4]["env_id"]))
            envs.send(rng.uniform(-0.2, 1.0, (2, 2)).astype(np.float32), got[4]["env_id"])
        if arrays:  # its steps held unhashed: the digest is read with nothing in flight
            with pytest.raises(DmxError, match="in flight"):
                _ = envs.trajectory_digest
        for _ in range(2):
            got = envs.recv()
            out.append(in_env_order(got, got[4]["env_id"]))
        out.append(envs.trajectory_digest)
        delays = [w.env.world.model.params[0].delay_s for w in shard_of(envs).worlds]
        out.append(delays)
    finally:
        envs.close()
    return out


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_subsets_with_drawn_delays_are_the_envs_own(monkeypatch: pytest.MonkeyPatch) -> None:
    mine, theirs = halves(True, monkeypatch), halves(False, monkeypatch)
    assert any(d > 0 for d in theirs[-1])  # delays were drawn
    for k, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        assert_same(a, b, f"call {k}")

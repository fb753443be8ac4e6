"""Stable-Baselines3 over a dmxshm batch (the sb3 extra; skipped without it)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.vec_env import SubprocVecEnv, VecMonitor, VecNormalize  # noqa: E402

import dmxshm  # noqa: E402
from dmxshm.batch.env import DuckieLaneEnv  # noqa: E402
from dmxshm.sb3 import DmxSB3VecEnv, make_vec_env  # noqa: E402

TIMEOUT_S = 300


def _lane_env() -> DuckieLaneEnv:  # module level: SubprocVecEnv pickles it
    return DuckieLaneEnv(max_episode_steps=20)


@pytest.mark.timeout(TIMEOUT_S)
def test_the_same_steps_as_sb3s_subproc_vec_env() -> None:
    # Same seeds, same actions: observations, rewards, dones and infos
    # (terminal_observation and TimeLimit.truncated included) agree bit for bit.
    n, steps = 4, 50
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, (steps, n, 2)).astype(np.float32)
    actions[:, 0] = [1.0, 0.5]  # env 0 leaves the road: terminated, not truncated
    ours = make_vec_env(n, num_workers=2, seed=7, max_episode_steps=20)
    theirs = SubprocVecEnv([_lane_env] * n)
    theirs.seed(7)
    try:
        assert np.array_equal(ours.reset(), theirs.reset())
        assert ours.reset_infos == list(theirs.reset_infos)
        ended = {"terminated": 0, "truncated": 0}
        for a in actions:
            o1, r1, d1, i1 = ours.step(a)
            o2, r2, d2, i2 = theirs.step(a)
            assert np.array_equal(o1, o2) and np.array_equal(r1, r2) and np.array_equal(d1, d2)
            for mine, sub in zip(i1, i2, strict=True):
                assert set(mine) == set(sub)
                for key in sub:
                    assert np.array_equal(mine[key], sub[key]), key
                if "terminal_observation" in sub:
                    ended["truncated" if sub["TimeLimit.truncated"] else "terminated"] += 1
        assert ended["terminated"] and ended["truncated"]
    finally:
        ours.close()
        theirs.close()


@pytest.mark.timeout(TIMEOUT_S)
def test_ppo_learns_through_vec_normalize_and_vec_monitor() -> None:
    # 16 384 steps (about 10 s on 2 cores): the mean episode return of the
    # lane keeper rises (-0.93 to -0.39 m when this was written).
    venv = VecNormalize(VecMonitor(make_vec_env(8, num_workers=2, seed=0,
                                                max_episode_steps=100)))
    try:
        model = PPO("MlpPolicy", venv, n_steps=128, batch_size=256, n_epochs=4, seed=0,
                    device="cpu", verbose=0)
        model.learn(total_timesteps=2048)
        first = [e["r"] for e in model.ep_info_buffer]  # VecMonitor's whole episodes
        model.learn(total_timesteps=14 * 1024, reset_num_timesteps=False)
        last = [e["r"] for e in model.ep_info_buffer]
        assert len(first) >= 10 and len(last) == 100
        assert np.mean(last) > np.mean(first) + 0.25, (np.mean(first), np.mean(last))
        assert venv.obs_rms.count > 16 * 1024  # VecNormalize saw every observation
    finally:
        venv.close()


# -- many robots per world (make_vec's robots_per_world) -------------------------------

R, WORLDS, STEPS, SEED = 4, 2, 130, 40
MULTI = {"map": "loop", "max_episode_steps": 60}


def robot_actions() -> np.ndarray:
    """Robot 1 of each world curves off the road early (a stopped row while its world
    goes on); the others drive on at random, slowly, until they leave the road or the
    world is truncated at 60 steps."""
    rng = np.random.default_rng(3)
    a = rng.uniform(0.05, 0.35, (STEPS, WORLDS * R, 2))
    a[:, 1::R] = [0.5, 0.35]
    return a.astype(np.float32)


@pytest.mark.timeout(TIMEOUT_S)
def test_robot_rows_are_make_vecs_rows_bit_for_bit() -> None:
    # The same worlds through make_vec (SAME_STEP, SB3's autoreset) with the seeds
    # make_vec_env's docstring promises (world w: seed + w * R): observations, rewards,
    # dones, terminal observations and the rows' info agree bit for bit, stopped rows
    # included.
    n = WORLDS * R
    ours = make_vec_env(n, num_workers=2, seed=SEED, robots_per_world=R, **MULTI)
    theirs = dmxshm.make_vec(n, 2, robots_per_world=R, autoreset_mode="same_step", **MULTI)
    seen = {"stopped": 0, "terminated": 0, "truncated": 0, "back": 0}
    stopped = np.zeros(n, bool)
    try:
        obs, info = theirs.reset(seed=[SEED + w * R for w in range(WORLDS)])
        assert np.array_equal(ours.reset(), obs)
        assert [(i["world"], i["agent"]) for i in ours.reset_infos] == \
            [(w, a) for w in range(WORLDS) for a in range(R)]
        for a in robot_actions():
            o1, r1, d1, i1 = ours.step(a)
            o2, r2, term, trunc, info = theirs.step(a)
            assert np.array_equal(o1, o2) and np.array_equal(r1, r2)
            assert np.array_equal(d1, term | trunc)
            for row, mine in enumerate(i1):
                for key in ("world", "agent", "active", "collided"):
                    assert mine[key] == info[key][row], (row, key)
                assert ("terminal_observation" in mine) == bool(d1[row])
                if d1[row]:
                    assert np.array_equal(mine["terminal_observation"],
                                          info["final_obs"][row])
                    assert mine["TimeLimit.truncated"] == bool(trunc[row] and not term[row])
                    seen["terminated" if term[row] else "truncated"] += 1
                if not mine["active"]:  # a stopped row: nothing happens to it
                    assert r1[row] == 0 and not d1[row]
                    seen["stopped"] += 1
            # a stopped row active again: its world reset, with no done for it
            seen["back"] += int(np.count_nonzero(stopped & info["active"]))
            stopped = ~info["active"]
        assert all(seen.values()), seen
    finally:
        ours.close()
        theirs.close()


@pytest.mark.timeout(TIMEOUT_S)
def test_ppo_shares_one_policy_over_robot_rows() -> None:
    # Parameter sharing: SB3's PPO over 2 worlds x 4 robots, two iterations.
    n_steps, n = 64, 8
    venv = VecMonitor(make_vec_env(n, robots_per_world=4, num_workers=2, seed=0,
                                   max_episode_steps=50))
    try:
        assert venv.get_attr("spec")[0].id == "dmxshm/DuckieLane-v1"
        assert venv.get_attr("spec")[0].max_episode_steps == 50
        model = PPO("MlpPolicy", venv, n_steps=n_steps, batch_size=128, n_epochs=2, seed=0,
                    device="cpu", verbose=0)
        model.learn(total_timesteps=2 * n_steps * n)
        assert model.num_timesteps == 2 * n_steps * n
        assert model.ep_info_buffer  # VecMonitor saw robots' episodes end
    finally:
        venv.close()


@pytest.mark.timeout(TIMEOUT_S)
def test_a_nested_info_is_given_per_row() -> None:
    # randomize=True: the reset's info["randomization"] is a nested dict of arrays
    # (KeyError 0 before it was split per row)
    venv = make_vec_env(4, num_workers=1, seed=0, robots_per_world=2, randomize=True,
                        map="loop")
    try:
        venv.reset()
        draws = [info["randomization"] for info in venv.reset_infos]
        assert all(isinstance(d["friction"], float) for d in draws)
        assert len({d["friction"] for d in draws}) == 4  # a draw per robot
    finally:
        venv.close()


@pytest.mark.timeout(TIMEOUT_S)
def test_what_reaches_the_worlds_and_what_is_refused() -> None:
    venv = make_vec_env(2, num_workers=1)
    try:
        assert isinstance(venv, DmxSB3VecEnv)
        assert venv.get_attr("render_mode") == [None, None]
        assert venv.get_attr("observation_space", indices=[1]) == [venv.observation_space]
        assert venv.has_attr("spec") and not venv.has_attr("world")
        assert venv.get_attr("spec")[0].id == "dmxshm/DuckieLane-v0"
        with pytest.raises(AttributeError, match="worker processes"):
            venv.env_method("reset")
        with pytest.raises(AttributeError, match="make_vec_env"):
            venv.set_attr("max_episode_steps", 5)
        assert venv.env_is_wrapped(VecMonitor) == [False, False]
        with pytest.raises(ValueError, match="SAME_STEP"):
            DmxSB3VecEnv(2, autoreset_mode="next_step")
        with pytest.raises(ValueError, match="copy=False"):
            DmxSB3VecEnv(2, copy=False)
        venv.set_options({"x": 1})
        with pytest.raises(ValueError, match="no reset options"):
            venv.reset()
    finally:
        venv.close()


@pytest.mark.timeout(TIMEOUT_S)
def test_the_readme_example_trains(tmp_path) -> None:  # noqa: ANN001
    from tests.test_readme import _run_block

    _run_block(tmp_path, "dmxshm.sb3")

"""make_vec(num_envs, robots_per_world=R): a multi-agent batch whose rows are the robots
of num_envs / R worlds. Its rows equal dmxshm.parallel_env's robots, bit for bit, in each
autoreset mode, with a reference written here from the issue's rules (a stopped row:
reward 0, flags False, info active False and no progress, its last observation; a world
resets when all its robots ended or at truncation, and its rows then show no progress),
through both the step and the asynchronous API; bad input is refused before anything
starts.

Semantics run in-process (the multi-robot batch's rows are two workers' in every mode,
tests/batch/test_serial.py); the asynchronous API over both backends (worlds finish in
their own order across workers); worker counts, deaths and leaks with workers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import dmxshm
from dmxshm.batch.lanes import MultiLaneError
from dmxshm.errors import DmxError
from dmxshm.shm.names import list_entries
from tests.batch.rows import BACKENDS, IN_PROCESS

pytestmark = pytest.mark.timeout(300)
R, WORLDS, STEPS, SEED = 3, 2, 130, 40
KW: dict[str, Any] = {"map": "loop", "max_episode_steps": 60}


def actions() -> np.ndarray:
    """Robot 1 of each world curves off the road (ended after some 30 steps, its world
    going on); the others drive on at random, slowly, until they leave the road or are
    truncated at 60 steps."""
    rng = np.random.default_rng(3)
    a = rng.uniform(0.05, 0.35, (STEPS, WORLDS * R, 2))
    a[:, 1::R] = [0.5, 0.35]
    return a.astype(np.float32)


class Reference:
    """The rules of the issue, applied to one ``dmxshm.parallel_env`` per world."""

    FIELDS = ("obs", "reward", "terminated", "truncated", "active", "collided", "progress",
              "final")
    """What :meth:`step_world` gives each row."""

    def __init__(self, mode: AutoresetMode, worlds: int = WORLDS) -> None:
        self.mode = mode
        self.envs = [dmxshm.parallel_env(robots=R, **KW) for _ in range(worlds)]
        self.pending = [False] * worlds
        self.last: list[dict[str, np.ndarray]] = [{} for _ in range(worlds)]

    def reset(self, seeds: list[int | None]) -> np.ndarray:
        rows = []
        for w, env in enumerate(self.envs):
            obs, _ = env.reset(seed=seeds[w])
            self.last[w], self.pending[w] = dict(obs), False
            rows += [obs[a] for a in env.possible_agents]
        return np.stack(rows)

    def step(self, a: np.ndarray) -> dict[str, Any]:
        """Every world, ``a`` one row per robot."""
        out: dict[str, list[Any]] = {k: [] for k in self.FIELDS}
        for w in range(len(self.envs)):
            self.step_world(w, a[w * R:(w + 1) * R], out)
        return out

    def step_world(self, w: int, a: np.ndarray, out: dict[str, list[Any]]) -> None:
        env = self.envs[w]
        names = env.possible_agents
        if self.pending[w]:  # NEXT_STEP: the world resets, its actions ignored
            obs, _ = env.reset()
            self.last[w], self.pending[w] = dict(obs), False
            for agent in names:
                for key, value in (("obs", obs[agent]), ("reward", 0.0),
                                   ("terminated", False), ("truncated", False),
                                   ("active", True), ("collided", False), ("progress", None),
                                   ("final", None)):
                    out[key].append(value)
            return
        live = list(env.agents)
        obs, rewards, terms, truncs, infos = env.step(
            {agent: a[i] for i, agent in enumerate(names) if agent in live})
        self.last[w].update(obs)
        done = not env.agents
        reset_obs = None
        if done and self.mode == AutoresetMode.SAME_STEP:
            reset_obs, _ = env.reset()
        elif done and self.mode == AutoresetMode.NEXT_STEP:
            self.pending[w] = True
        for agent in names:
            acted = agent in live
            ended = acted and (terms[agent] or truncs[agent])
            out["reward"].append(rewards[agent] if acted else 0.0)
            out["terminated"].append(terms[agent] if acted else False)
            out["truncated"].append(truncs[agent] if acted else False)
            out["active"].append(acted)
            # a contact that began in this step (also where the world resets in it)
            out["collided"].append(bool(infos[agent]["collided"]) if acted else False)
            # progress: a robot that drove in this step, in a world that did not reset in it
            out["progress"].append(infos[agent]["progress_m"] if acted and reset_obs is None
                                   else None)
            out["final"].append(self.last[w][agent] if ended else None)
            out["obs"].append(reset_obs[agent] if reset_obs is not None
                              else self.last[w][agent])
        if reset_obs is not None:
            self.last[w] = dict(reset_obs)

    def close(self) -> None:
        for env in self.envs:
            env.close()


def _compare(mine: tuple, theirs: dict[str, Any], mode: AutoresetMode, k: int) -> None:
    obs, rewards, terminated, truncated, info = mine
    where = f"step {k}"
    np.testing.assert_array_equal(obs, np.stack(theirs["obs"]), err_msg=where)
    np.testing.assert_array_equal(rewards, np.array(theirs["reward"]), err_msg=where)
    np.testing.assert_array_equal(terminated, theirs["terminated"], err_msg=where)
    np.testing.assert_array_equal(truncated, theirs["truncated"], err_msg=where)
    np.testing.assert_array_equal(info["active"], theirs["active"], err_msg=where)
    np.testing.assert_array_equal(info["collided"], theirs["collided"], err_msg=where)
    shown = [p is not None for p in theirs["progress"]]  # no progress on a stopped row
    assert list(info.get("_progress_m", np.zeros(len(shown), bool))) == shown, where
    for row in np.flatnonzero(shown):
        assert info["progress_m"][row] == theirs["progress"][row], where
    for key in ("lane_offset_m", "on_road", "active", "collided"):  # every row has them
        assert info[f"_{key}"].all(), (where, key)
    if mode == AutoresetMode.SAME_STEP:
        final = [f is not None for f in theirs["final"]]
        assert list(info.get("_final_obs", np.zeros(len(final), bool))) == final, where
        for row in np.flatnonzero(final):
            np.testing.assert_array_equal(info["final_obs"][row], theirs["final"][row])


@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.name)
def test_rows_equal_the_parallel_env_robots_bit_for_bit(mode: AutoresetMode) -> None:
    a = actions()
    ref = Reference(mode)
    envs = dmxshm.make_vec(WORLDS * R, robots_per_world=R, num_workers=IN_PROCESS,
                           autoreset_mode=mode, **KW)
    stopped = world_resets = 0
    try:
        obs, info = envs.reset(seed=SEED)
        np.testing.assert_array_equal(obs, ref.reset([SEED + w for w in range(WORLDS)]))
        assert info["world"].tolist() == [0, 0, 0, 1, 1, 1]
        assert info["agent"].tolist() == [0, 1, 2, 0, 1, 2]
        for k in range(STEPS):
            out = envs.step(a[k])
            theirs = ref.step(a[k])
            _compare(out, theirs, mode, k)
            stopped += int(np.count_nonzero(~out[4]["active"]))
            if mode == AutoresetMode.DISABLED:
                going = out[4]["active"] & ~(out[2] | out[3])
                ended = ~going.reshape(WORLDS, R).any(axis=1)
                if ended.any():  # a world whose robots all ended: refused, then reset
                    with pytest.raises(DmxError, match="DISABLED"):
                        envs.step(a[k])
                    mask = np.repeat(ended, R)
                    obs, _ = envs.reset(options={"reset_mask": mask})
                    for w in np.flatnonzero(ended):
                        mine = obs[w * R:(w + 1) * R]
                        theirs_obs, _ = ref.envs[w].reset()
                        ref.last[w] = dict(theirs_obs)
                        np.testing.assert_array_equal(
                            mine, np.stack([theirs_obs[x] for x in ref.envs[w].possible_agents]))
                    world_resets += int(ended.sum())
            else:
                world_resets += sum(ref.pending) if mode == AutoresetMode.NEXT_STEP else 0
        assert stopped > 20, "no stopped rows: the test's actions no longer end robot 1 early"
        assert mode == AutoresetMode.SAME_STEP or world_resets >= 2
    finally:
        envs.close()
        ref.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_async_api_returns_whole_worlds_and_the_same_numbers(backend: int) -> None:
    a = actions()
    ref = Reference(AutoresetMode.NEXT_STEP, worlds=4)
    envs = dmxshm.make_vec(4 * R, robots_per_world=R, num_workers=backend, batch_size=R,
                           **KW)
    try:
        envs.async_reset(seed=SEED)
        first = ref.reset([SEED + w for w in range(4)])
        expected = {w: first[w * R:(w + 1) * R] for w in range(4)}
        seen = {w: 0 for w in range(4)}  # steps sent to each world
        for _ in range(60):
            obs, rewards, terminated, truncated, info = envs.recv()
            ids = info["env_id"]
            assert len(ids) == R and ids[0] % R == 0 and (np.diff(ids) == 1).all()
            w = int(ids[0]) // R
            assert (info["world"] == w).all() and info["agent"].tolist() == list(range(R))
            np.testing.assert_array_equal(obs, expected[w])
            step = a[seen[w] % STEPS, w % WORLDS * R:(w % WORLDS + 1) * R]
            envs.send(step, ids)
            out: dict[str, list[Any]] = {k: [] for k in Reference.FIELDS}
            ref.step_world(w, step, out)
            expected[w] = np.stack(out["obs"])
            seen[w] += 1
        # recv() returns whichever world finished first: on a loaded machine one
        # worker's worlds can take every turn (EnvPool's semantics), so no world is
        # promised a step; 60 steps were checked
        assert sum(seen.values()) == 60
        envs.recv()  # the worlds in flight: three left
        with pytest.raises(ValueError, match="whole worlds"):
            envs.send(a[0, :2], info["env_id"][:2])
    finally:
        envs.close()
        ref.close()


def test_the_digest_is_the_same_with_any_number_of_workers() -> None:
    a = actions()

    def digest(workers: int) -> str:
        envs = dmxshm.make_vec(WORLDS * R, robots_per_world=R, num_workers=workers, **KW)
        try:
            envs.reset(seed=SEED)
            for k in range(30):
                envs.step(a[k])
            return envs.trajectory_digest
        finally:
            envs.close()

    assert digest(1) == digest(2)


def test_seeds_per_world() -> None:
    envs = dmxshm.make_vec(2 * R, robots_per_world=R, num_workers=IN_PROCESS, map="loop")
    try:
        by_int, _ = envs.reset(seed=7)
        by_world, _ = envs.reset(seed=[7, 8])
        by_row, _ = envs.reset(seed=[7, None, None, 8, None, None])
        np.testing.assert_array_equal(by_int, by_world)
        np.testing.assert_array_equal(by_int, by_row)
        other, _ = envs.reset(seed=[8, 7])
        np.testing.assert_array_equal(other[:R], by_int[R:])
        with pytest.raises(ValueError, match="one per world"):
            envs.reset(seed=[1, 2, 3])
        with pytest.raises(ValueError, match="whole worlds"):
            envs.reset(options={"reset_mask": np.array([1, 0, 0, 0, 0, 0], bool)})
    finally:
        envs.close()


def test_bad_input_is_refused_before_anything_starts() -> None:
    import os

    def mine() -> set[object]:  # (another test worker's runs are not this one's)
        return {e for e in list_entries() if e.pid == os.getpid()}

    before = mine()
    with pytest.raises(ValueError, match="robots_per_world must be an integer >= 1"):
        dmxshm.make_vec(4, robots_per_world=0)
    with pytest.raises(ValueError, match="multiple of robots_per_world"):
        dmxshm.make_vec(10, robots_per_world=4)
    with pytest.raises(MultiLaneError, match="holds 16 robots, not 17"):
        dmxshm.make_vec(34, robots_per_world=17, map="loop")
    with pytest.raises(ValueError, match="batch_size must be a multiple"):
        dmxshm.make_vec(8, robots_per_world=4, batch_size=2)
    with pytest.raises(ValueError, match="DuckieLane-v1"):
        dmxshm.make_vec(8, robots_per_world=4, version="v0")
    with pytest.raises(ValueError, match="render"):
        dmxshm.make_vec(8, robots_per_world=4, render_mode="rgb_array")
    assert mine() == before


def test_a_bad_action_is_refused_a_killed_worker_named_and_nothing_leaks() -> None:
    import os
    import signal

    from dmxshm.batch.vector import WorkerError

    env = dmxshm.make_vec(2 * R, robots_per_world=R, num_workers=2, seed=SEED, **KW)
    try:
        env.reset()
        bad = np.zeros((2 * R, 2), np.float32)
        bad[R + 1] = np.nan  # world 1's second robot
        with pytest.raises(ValueError, match=r"sub-environment\(s\) \[4\] are not finite"):
            env.step(bad)  # refused in the parent: the worlds never saw it
        obs, *_ = env.step(np.zeros((2 * R, 2), np.float32))
        assert obs.shape[0] == 2 * R
    finally:
        env.close()
    assert not [e for e in list_entries() if e.pid == os.getpid()]
    env = dmxshm.make_vec(2 * R, robots_per_world=R, num_workers=2, seed=SEED, **KW)
    try:
        env.reset()
        proc = env._workers[1]
        env.timeout_s = 1e6  # only the liveness check can end the step
        os.kill(proc.pid, signal.SIGKILL)
        proc.popen.wait()
        with pytest.raises(WorkerError) as info:
            env.step(np.zeros((2 * R, 2), np.float32))
        assert f"pid {proc.pid}" in str(info.value) and "signal 9" in str(info.value)
    finally:
        env.close()
    assert not [e for e in list_entries() if e.pid == os.getpid()]


def test_a_reset_command_for_a_world_whose_robots_all_ended() -> None:
    # NEXT_STEP: a world whose robots all ended waits for its next step to reset; a
    # reset command (no seed: the world's generator goes on) that comes first resets
    # it once, as the reference does.
    a = actions()
    ref = Reference(AutoresetMode.NEXT_STEP)
    envs = dmxshm.make_vec(WORLDS * R, robots_per_world=R, num_workers=IN_PROCESS, **KW)
    try:
        envs.reset(seed=SEED)
        ref.reset([SEED + w for w in range(WORLDS)])
        for k in range(STEPS):
            envs.step(a[k])
            ref.step(a[k])
            if any(ref.pending):
                break
        assert any(ref.pending), "no world ended: the test's actions changed"
        obs, _ = envs.reset()
        np.testing.assert_array_equal(obs, ref.reset([None] * WORLDS))
        for k in range(30):  # and on, as the reference
            out = envs.step(a[k])
            _compare(out, ref.step(a[k]), AutoresetMode.NEXT_STEP, k)
    finally:
        envs.close()
        ref.close()

"""Batch mode: the shared-memory VectorEnv.

Semantics run in-process (``num_workers=0``, the worker's own code: its rows equal the
workers', tests/batch/test_serial.py); over both backends where worker processes
show something of their own (the shared views of ``copy=False``, the render
command); with workers alone for what only processes have (deaths, signals, stalls,
the per-worker breakdown, counts of workers)."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import dmxshm
from dmxshm.batch.env import DuckieLaneEnv
from dmxshm.batch.vector import DmxVectorEnv, WorkerError
from dmxshm.errors import DmxError, DmxTimeoutError
from dmxshm.shm.names import list_entries
from tests.batch.rows import BACKENDS, IN_PROCESS

VEC_TIMEOUT_S = 120
DETECT_S = 2.0


def actions(n: int, steps: int, seed: int = 7) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (steps, n, 2)).astype(np.float32)


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_shapes_dtypes_and_a_smoke_run() -> None:
    env = dmxshm.make_vec(4, num_workers=IN_PROCESS, seed=0)
    try:
        assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
        obs, info = env.reset()
        assert obs.shape == (4, 11) and obs.dtype == np.float32
        assert set(info) == {"lane_offset_m", "_lane_offset_m", "on_road", "_on_road"}
        assert info["on_road"].all() and info["lane_offset_m"].shape == (4,)
        for a in actions(4, 300):
            obs, reward, terminated, truncated, _ = env.step(a)
        assert reward.shape == (4,) and reward.dtype == np.float64
        assert terminated.dtype == np.bool_ and truncated.dtype == np.bool_
        assert env.observation_space.contains(obs)
    finally:
        env.close()


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_autoreset_happens_on_the_step_after_the_end() -> None:
    env = dmxshm.make_vec(2, num_workers=IN_PROCESS, seed=0, max_episode_steps=3)
    try:
        first, _ = env.reset()
        a = np.zeros((2, 2), np.float32)
        for _ in range(2):
            _, _, _, truncated, _ = env.step(a)
            assert not truncated.any()
        _, _, _, truncated, _ = env.step(a)
        assert truncated.all()  # the episode ended here...
        obs, reward, terminated, truncated, _ = env.step(a)  # ...and this step resets it
        assert (reward == 0).all() and not terminated.any() and not truncated.any()
        assert not np.array_equal(obs, first)  # a new episode: its own seeded start
    finally:
        env.close()


@pytest.mark.timeout(VEC_TIMEOUT_S)
@pytest.mark.parametrize("backend", BACKENDS)
def test_copy_semantics(backend: int) -> None:
    for copy in (True, False):
        env = dmxshm.make_vec(2, num_workers=backend, seed=0, copy=copy)
        try:
            obs0, _ = env.reset()
            kept = obs0.copy()
            env.step(np.ones((2, 2), np.float32))
            obs1, *_ = env.step(np.ones((2, 2), np.float32))
            if copy:
                assert np.array_equal(obs0, kept)  # ours: the next step cannot touch it
            else:
                assert np.shares_memory(obs0, obs1)  # a view of the shared arrays
                assert not np.array_equal(obs0, kept)
        finally:
            env.close()


SYNC = "sync"
"""``run``'s gymnasium ``SyncVectorEnv`` (else: ``num_workers`` of a batch)."""


def run(workers: int | str, seed: int = 3, infos: list | None = None,
        **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
    env: Any = (gymnasium.vector.SyncVectorEnv([lambda: DuckieLaneEnv(max_episode_steps=40)] * 6)
                if workers == SYNC else
                dmxshm.make_vec(6, num_workers=workers, seed=seed, max_episode_steps=40, **kwargs))
    try:
        obs, info = env.reset(seed=seed)
        all_obs, all_rew = [obs], []
        if infos is not None:
            infos.append(info)
        for a in actions(6, 100):
            obs, reward, _, _, info = env.step(a)
            all_obs.append(obs)
            all_rew.append(reward)
            if infos is not None:
                infos.append(info)
        return np.array(all_obs), np.array(all_rew)
    finally:
        env.close()


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_same_seed_same_batch_whatever_the_worker_count() -> None:
    # spin_us: the workers poll for the next command (the default sleeps at once)
    (o1, r1), (o2, r2), (o3, r3), (o4, r4) = run(1), run(2), run(2, spin_us=1000), run(3)
    assert np.array_equal(o1, o2) and np.array_equal(r1, r2)
    assert np.array_equal(o1, o3) and np.array_equal(r1, r3)
    assert np.array_equal(o1, o4) and np.array_equal(r1, r4)  # 6 envs in blocks of 2


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_the_same_batch_as_gymnasiums_sync_vector_env() -> None:
    # Same seeds, same actions, 100 steps with episodes of 40 (autoresets
    # included): every observation, reward and info agrees bit for bit.
    ours: list = []
    theirs: list = []
    (o1, r1), (o0, r0) = run(IN_PROCESS, infos=ours), run(SYNC, infos=theirs)
    assert np.array_equal(o1, o0) and np.array_equal(r1, r0)
    assert len(ours) == len(theirs) == 101
    for mine, sync in zip(ours, theirs, strict=True):
        assert set(mine) == set(sync) >= {"lane_offset_m", "_lane_offset_m", "on_road"}
        for key in mine:  # per-env arrays with gymnasium's _key masks, as SyncVectorEnv's
            assert np.array_equal(mine[key], sync[key]), key
            assert mine[key].dtype == np.asarray(sync[key]).dtype, key
    # An autoreset step has no progress for the envs that reset (none: no key at all).
    assert any("_progress_m" not in i or not i["_progress_m"].all() for i in ours[1:])


def test_bad_spin_is_refused() -> None:
    with pytest.raises(ValueError, match="spin_us"):
        dmxshm.make_vec(2, spin_us=-1)


@pytest.mark.parametrize("num_workers", [-1, 1.5, True])
def test_a_worker_count_that_is_not_zero_or_more_is_refused(num_workers: Any) -> None:
    # 0 once meant one worker per CPU, silently; None says that, and 0 is in-process.
    before = {e.name for e in list_entries()}
    with pytest.raises(ValueError, match=r"num_workers must be None \(one worker per usable "
                                         r"CPU, here \d+\), 0 \(the envs step in this "
                                         r"process\) or an integer >= 1"):
        dmxshm.make_vec(2, num_workers=num_workers)
    assert {e.name for e in list_entries()} <= before  # nothing was made


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_a_killed_worker_is_named_and_nothing_leaks() -> None:
    env = dmxshm.make_vec(4, num_workers=2, seed=0)
    try:
        env.reset()
        proc = env._workers[1]
        live = env._workers[0]
        # A wait that never times out: only the liveness check can end the step, so
        # a WorkerError (not a DmxTimeoutError) says the death was seen, not waited out.
        env.timeout_s = 1e6
        os.kill(proc.pid, signal.SIGKILL)
        proc.popen.wait()
        with pytest.raises(WorkerError) as info:
            env.step(np.zeros((4, 2), np.float32))
        assert f"pid {proc.pid}" in str(info.value) and "signal 9" in str(info.value)
        with pytest.raises(DmxError, match="close it"):  # nothing more can be trusted
            env.step(np.zeros((4, 2), np.float32))
    finally:
        env.close()
    # The live worker ended by itself or unwound when told to stop: not killed
    # after the stop's grace.
    assert live.popen.poll() not in (None, -signal.SIGKILL)
    assert not [e for e in list_entries() if e.pid == os.getpid()]


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_a_terminated_worker_unwinds_and_is_named_with_the_signal() -> None:
    env = dmxshm.make_vec(4, num_workers=2, seed=0)
    try:
        env.reset()
        proc = env._workers[0]
        os.kill(proc.pid, signal.SIGINT)  # Ctrl-C is the parent's: a worker ignores it
        os.kill(proc.pid, signal.SIGTERM)  # Terminated unwinds the worker, which reports it
        proc.popen.wait(DETECT_S)
        with pytest.raises(WorkerError) as info:
            env.step(np.zeros((4, 2), np.float32))
        message = str(info.value)
        assert f"batch worker 0 (pid {proc.pid})" in message
        assert "signal 15 (SIGTERM)" in message
        assert proc.outcome is not None and proc.outcome.cause.value == "signalled"
    finally:
        env.close()
    assert not [e for e in list_entries() if e.pid == os.getpid()]


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_a_stuck_worker_times_out_and_close_still_returns() -> None:
    env = dmxshm.make_vec(4, num_workers=2, seed=0)
    proc = env._workers[1]
    try:
        env.reset()  # under the default timeout: the workers' start may be slow on a busy host
        env.timeout_s = 0.5
        os.kill(proc.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        with pytest.raises(DmxTimeoutError, match="batch worker 1"):
            env.step(np.zeros((4, 2), np.float32))
        # Not before its timeout (an ordering against the recorded instant; how
        # much later is the fault suite's figure, not a test's).
        assert time.monotonic() - t0 >= 0.5
        os.kill(proc.pid, signal.SIGCONT)  # it answers late: that answer must not be read
        with pytest.raises(DmxError, match="close it"):
            env.reset()
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        env.close()
    assert not [e for e in list_entries() if e.pid == os.getpid()]


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_bad_actions_are_refused_and_the_batch_goes_on() -> None:
    env = dmxshm.make_vec(3, num_workers=IN_PROCESS, seed=0)
    try:
        env.reset()
        bad = np.zeros((3, 2), np.float32)
        bad[1, 0] = np.nan
        with pytest.raises(ValueError, match=r"sub-environment\(s\) \[1\]"):
            env.step(bad)
        with pytest.raises(ValueError, match="shape"):
            env.step(np.zeros((2, 2), np.float32))
        obs, *_ = env.step(np.zeros((3, 2), np.float32))
        assert obs.shape == (3, 11)
    finally:
        env.close()


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_gymnasium_make_vec_and_wrappers() -> None:
    # The registered vector entry point gives our VectorEnv under a Gymnasium
    # wrapper, and RecordEpisodeStatistics sees each episode it ends, with the
    # length and return counted here. Robot 0 turns off the road (terminated,
    # at its own times), robot 1 stands still until it is truncated.
    num_envs, episode_steps, steps = 2, 40, 100
    env = gymnasium.make_vec("dmxshm/DuckieLane-v0", num_envs=num_envs,
                             vectorization_mode="vector_entry_point", num_workers=IN_PROCESS,
                             max_episode_steps=episode_steps)
    env = gymnasium.wrappers.vector.RecordEpisodeStatistics(env)
    try:
        assert type(env.unwrapped) is DmxVectorEnv and env.unwrapped.num_envs == num_envs
        env.reset(seed=0)
        a = np.array([[1.0, 0.6], [0.0, 0.0]], np.float32)
        returns, lengths = np.zeros(num_envs), np.zeros(num_envs, np.int64)
        resetting = np.zeros(num_envs, np.bool_)  # next-step autoreset: a step that only resets
        ended: list[tuple[int, float]] = []  # (length, return) of each episode, in order
        terminations = truncations = uneven_ends = 0
        for _ in range(steps):
            _, reward, terminated, truncated, info = env.step(a)
            returns[resetting], lengths[resetting] = 0.0, 0
            returns[~resetting] += reward[~resetting]
            lengths[~resetting] += 1
            done = terminated | truncated
            if done.any():
                assert np.array_equal(info["_episode"], done)
                assert np.array_equal(info["episode"]["l"][done], lengths[done])
                np.testing.assert_allclose(info["episode"]["r"][done], returns[done])
                ended += [(int(lengths[i]), float(returns[i])) for i in np.flatnonzero(done)]
                terminations += int(terminated.sum())
                truncations += int(truncated.sum())
                uneven_ends += int(not done.all())
            else:
                assert "episode" not in info
            resetting = done
        assert terminations and truncations and uneven_ends  # both kinds of end, at own times
        assert env.episode_count == len(ended)
        assert list(env.length_queue) == [n for n, _ in ended]
        np.testing.assert_allclose(list(env.return_queue), [r for _, r in ended])
    finally:
        env.close()


@pytest.mark.timeout(VEC_TIMEOUT_S)
@pytest.mark.parametrize("backend", BACKENDS)
def test_render_tiles_the_first_sub_environments_camera_images(backend: int) -> None:
    camera = (32, 24)
    env = dmxshm.make_vec(5, num_workers=backend, seed=7, camera=camera,
                          render_mode="rgb_array")
    singles = [DuckieLaneEnv(camera=camera, render_mode="rgb_array") for _ in range(4)]
    try:
        env.reset()
        tiles = env.render()
        assert tiles is not None and tiles.shape == (2 * 24, 2 * 32, 3)
        for i, single in enumerate(singles):  # sub-environment i is seeded with seed + i
            single.reset(seed=7 + i)
            r, c = divmod(i, 2)
            assert np.array_equal(tiles[r * 24:(r + 1) * 24, c * 32:(c + 1) * 32],
                                  single.render())
    finally:
        env.close()
        for single in singles:
            single.close()
    plain = dmxshm.make_vec(2, num_workers=backend, seed=0)
    try:
        plain.reset()
        assert plain.render() is None  # no render mode asked for
    finally:
        plain.close()


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_the_breakdown_splits_each_step_exactly_from_recorded_instants() -> None:
    env = dmxshm.make_vec(6, num_workers=2, seed=0, breakdown=True)
    try:
        env.reset()
        plain = dmxshm.make_vec(1, num_workers=1)
        try:
            with pytest.raises(DmxError, match="breakdown=True"):
                plain.breakdown()
        finally:
            plain.close()
        env.breakdown(reset=True)  # the reset above is no step
        for a in actions(6, 40):
            env.step(a)
            views = env._arrays.views
            assert (views["t_start"] <= views["t_done"]).all()  # each worker started, then ended
        b = env.breakdown()
    finally:
        env.close()
    assert b.steps == 40 and len(b.busy_us) == len(b.idle_us) == 2
    # The parts are read from the same instants as the whole: they add up exactly.
    assert b.handoff_out_us + b.span_us + b.handoff_back_us == pytest.approx(b.step_us)
    assert min(b.handoff_out_us, b.handoff_back_us) >= 0  # sent before any start; after all ends
    assert all(busy + idle == pytest.approx(b.step_us)
               for busy, idle in zip(b.busy_us, b.idle_us, strict=True))
    assert max(b.busy_us) <= b.span_us + 1e-6 and b.barrier_us >= 0


OWNER = """
import os, sys
import dmxshm
env = dmxshm.make_vec(4, num_workers={workers}, seed=0)
env.reset()
print(" ".join(str(w.pid) for w in env._workers), flush=True)
sys.stdin.read()  # until killed
"""


@pytest.mark.timeout(VEC_TIMEOUT_S)
@pytest.mark.parametrize("workers", [1, 2])
def test_a_killed_owner_leaves_nothing_in_dev_shm(workers: int) -> None:
    # What Ray does to an actor that holds a batch: SIGKILL. The owner cannot
    # unlink; its workers get their death signal and unlink the batch's objects.
    import subprocess
    import sys

    import psutil

    with subprocess.Popen([sys.executable, "-c", OWNER.format(workers=workers)],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as owner:
        try:
            assert owner.stdout is not None
            pids = [int(p) for p in owner.stdout.readline().split()]
            assert len(pids) == workers
            assert [e for e in list_entries() if e.pid == owner.pid]  # the batch's objects
            workers_ = [psutil.Process(p) for p in pids]
            owner.kill()
            owner.wait(10)
            # The workers are not our children: nothing to wait on but their
            # exit, seen as gone or as a zombie (whoever inherited them may
            # reap them late).
            def ended(proc: psutil.Process) -> bool:
                try:
                    return proc.status() == psutil.STATUS_ZOMBIE
                except psutil.NoSuchProcess:
                    return True
            deadline = time.monotonic() + DETECT_S
            while not all(ended(p) for p in workers_) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert all(ended(p) for p in workers_), [p.pid for p in workers_ if not ended(p)]
            assert [e.path for e in list_entries() if e.pid == owner.pid] == []
        finally:
            if owner.poll() is None:
                owner.kill()


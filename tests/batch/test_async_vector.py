"""Batch mode's asynchronous API: async_reset, send(actions, env_ids), recv().

Semantics run in-process (its rows are the workers', tests/batch/test_serial.py);
worker processes where they finish in their own order (the sends of several
workers, a same-step end) or die, and for the parent's wake-up."""

from __future__ import annotations

import os
import signal
from typing import Any

import numpy as np
import pytest

import dmxshm
from dmxshm.batch.vector import WorkerError
from dmxshm.errors import DmxError
from dmxshm.shm.names import list_entries
from tests.batch.rows import IN_PROCESS

VEC_TIMEOUT_S = 120
DETECT_S = 2.0
EPISODE = 12  # short episodes: every env ends and autoresets several times


def policy(env_id: int, k: int) -> np.ndarray:
    """The action of env ``env_id`` at its ``k``-th send: the same whatever the order."""
    return np.random.default_rng([env_id, k]).uniform(-1, 1, 2).astype(np.float32)


def sync_trajectories(n: int, steps: int) -> list[list[tuple[Any, ...]]]:
    """What ``step()`` returns env by env: reset, then ``steps`` steps of :func:`policy`
    (in-process: the same rows as any number of workers)."""
    env = dmxshm.make_vec(n, num_workers=IN_PROCESS, seed=3, max_episode_steps=EPISODE)
    try:
        obs, _ = env.reset()
        out: list[list[tuple[Any, ...]]] = [[(obs[i], 0.0, False, False)] for i in range(n)]
        for k in range(steps):
            obs, rew, term, trunc, _ = env.step(np.stack([policy(i, k) for i in range(n)]))
            for i in range(n):
                out[i].append((obs[i], rew[i], term[i], trunc[i]))
        return out
    finally:
        env.close()


@pytest.mark.timeout(VEC_TIMEOUT_S)
@pytest.mark.parametrize(("n", "workers", "batch_size"), [(6, 2, 3), (5, 3, 2), (4, 1, 4),
                                                             (5, IN_PROCESS, 2)])
def test_every_send_returns_once_with_its_env_id_and_the_sync_numbers(
        n: int, workers: int, batch_size: int) -> None:
    steps = 3 * EPISODE
    expected = sync_trajectories(n, steps)
    env = dmxshm.make_vec(n, num_workers=workers, seed=3, max_episode_steps=EPISODE,
                          batch_size=batch_size)
    got: list[list[tuple[Any, ...]]] = [[] for _ in range(n)]
    sends = np.zeros(n, dtype=int)
    try:
        env.async_reset()
        sends[:] = 1  # the reset counts as the first
        while min(len(g) for g in got) <= steps:
            obs, rew, term, trunc, info = env.recv()
            ids = info["env_id"]
            assert ids.dtype == np.int32 and len(ids) == batch_size == len(set(ids.tolist()))
            assert obs.shape == (batch_size, 11) and rew.shape == (batch_size,)
            for row, i in enumerate(ids.tolist()):
                got[i].append((obs[row], rew[row], term[row], trunc[row]))
                assert len(got[i]) == sends[i]  # one return per send, none lost or doubled
            env.send(np.stack([policy(i, sends[i] - 1) for i in ids.tolist()]), ids)
            sends[ids] += 1
    finally:
        env.close()
    for i in range(n):
        for k in range(steps + 1):
            o, r, te, tr = got[i][k]
            eo, er, ete, etr = expected[i][k]
            assert np.array_equal(o, eo) and r == er and te == ete and tr == etr, (i, k)
    ended = sum(bool(te or tr) for g in expected for _, _, te, tr in g)
    assert ended >= n * 2  # autoreset was exercised


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_send_defaults_to_the_envs_of_the_last_recv_and_info_is_per_env() -> None:
    env = dmxshm.make_vec(4, num_workers=IN_PROCESS, seed=0, batch_size=2)
    try:
        env.async_reset(seed=5)
        _, _, _, _, info = env.recv()
        assert set(info) >= {"env_id", "lane_offset_m", "_lane_offset_m", "on_road"}
        assert "progress_m" not in info  # a reset's info has none
        first = info["env_id"].copy()
        env.send(np.zeros((2, 2), np.float32))  # to the envs just returned
        assert env._in_flight.sum() == 4
        seen: list[int] = []
        for _ in range(2):
            _, _, _, _, info = env.recv()
            seen += info["env_id"].tolist()
        assert sorted(seen) == [0, 1, 2, 3]
        steps = [i for i in seen if i in first.tolist()]
        assert len(steps) == 2
    finally:
        env.close()


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_misuse_is_refused_with_what_to_do() -> None:
    env = dmxshm.make_vec(4, num_workers=IN_PROCESS, seed=0, batch_size=2)
    try:
        with pytest.raises(DmxError, match="send\\(\\) to more envs first"):
            env.recv()
        env.async_reset()
        with pytest.raises(DmxError, match="in flight: recv\\(\\) them before sending"):
            env.send(np.zeros((1, 2)), [0])
        with pytest.raises(DmxError, match="recv\\(\\) them before step\\(\\)"):
            env.step(np.zeros((4, 2)))
        _, _, _, _, info = env.recv()
        with pytest.raises(ValueError, match="distinct"):
            env.send(np.zeros((2, 2)), [info["env_id"][0]] * 2)
        with pytest.raises(ValueError, match="in \\[0, 4\\)"):
            env.send(np.zeros((1, 2)), [7])
        with pytest.raises(ValueError, match="shape \\(2, 2\\)"):
            env.send(np.zeros((3, 2)), info["env_id"])
        with pytest.raises(ValueError, match="not finite"):
            env.send(np.full((2, 2), np.nan), info["env_id"])
        # reset() waits for what is in flight, drops it, and the sync API works again
        obs, _ = env.reset(seed=0)
        assert obs.shape == (4, 11)
        env.step(np.zeros((4, 2)))
    finally:
        env.close()
    with pytest.raises(ValueError, match="batch_size"):
        dmxshm.make_vec(4, batch_size=5)


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_a_killed_worker_during_recv_is_named_and_nothing_leaks() -> None:
    env = dmxshm.make_vec(4, num_workers=2, seed=0, batch_size=4)
    try:
        env.async_reset()
        env.recv()
        proc = env._workers[1]
        os.kill(proc.pid, signal.SIGSTOP)  # it cannot answer the send below
        env.send(np.zeros((4, 2), np.float32), np.arange(4))
        os.kill(proc.pid, signal.SIGKILL)
        proc.popen.wait()
        env.timeout_s = 1e6  # only the liveness check can end recv(): WorkerError says so
        with pytest.raises(WorkerError) as info:
            env.recv()
        assert f"batch worker 1 (pid {proc.pid})" in str(info.value)
        with pytest.raises(DmxError, match="close it"):
            env.recv()
    finally:
        env.close()
    assert not [e for e in list_entries() if e.pid == os.getpid()]


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_close_with_sends_in_flight_returns_and_leaves_nothing() -> None:
    env = dmxshm.make_vec(6, num_workers=2, seed=0, batch_size=3, obs="camera",
                          camera=(64, 64))
    env.async_reset()
    env.recv()
    env.send(np.zeros((3, 2), np.float32))
    env.close()
    assert all(not child.alive() for child in env._supervisor.children)
    # Each worker ended by itself or unwound when told to stop: none was killed
    # after the stop's grace.
    codes = [c.popen.poll() for c in env._supervisor.children]
    assert all(code not in (None, -signal.SIGKILL) for code in codes), codes
    assert not [e for e in list_entries() if e.pid == os.getpid()]
    with pytest.raises(DmxError, match="closed"):
        env.send(np.zeros((3, 2), np.float32))


@pytest.mark.timeout(VEC_TIMEOUT_S)
@pytest.mark.parametrize(("n", "batch_size"), [(6, 1), (3, 3), (3, 2)])
def test_a_waiting_parent_is_always_woken(n: int, batch_size: int) -> None:
    """Many short recv() calls, each a race between the parent going to sleep and a
    worker announcing: a missed wake-up would show as a timeout."""
    env = dmxshm.make_vec(n, num_workers=3, seed=0, batch_size=batch_size, timeout_s=5.0)
    try:
        env.async_reset()
        returned = np.zeros(n, dtype=int)
        calls = 0
        # 1500 calls, then on until every env came back at least once: a worker
        # still starting (a fresh interpreter, slow on a busy machine) returns
        # its envs later, never loses them (seen: 1500 calls done before two
        # of three workers had started).
        while calls < 1500 or not (returned > 0).all():
            _, _, _, _, info = env.recv()
            returned[info["env_id"]] += 1
            env.send(np.zeros((batch_size, 2), np.float32))
            calls += 1
        assert returned.sum() == calls * batch_size
    finally:
        env.close()

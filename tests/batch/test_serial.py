"""The in-process batch (``make_vec(..., num_workers=0)``, :mod:`dmxshm.batch.serial`):
its rows are two workers' bit for bit (observations, rewards, terminations,
truncations, infos, and the batch's digest), in every autoreset mode, through
``step`` and through ``send``/``recv``, for state and camera observations, v0 and v1,
and the multi-robot batch; it starts no process and puts nothing in ``/dev/shm``."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import psutil
import pytest
from gymnasium.vector import AutoresetMode

import dmxshm
from dmxshm.batch.serial import Serial
from dmxshm.shm.names import list_entries
from tests.batch.rows import IN_PROCESS, WORKERS, assert_same, in_env_order

VEC_TIMEOUT_S = 120
STEPS = 40
BATCHES: dict[str, tuple[int, dict[str, Any]]] = {
    "v0-state": (4, {"max_episode_steps": 12}),
    "v0-camera": (4, {"obs": "camera", "camera": (16, 12), "max_episode_steps": 12}),
    "v1-state": (4, {"version": "v1", "max_episode_steps": 12, "randomize": True}),
    "v1-camera": (4, {"version": "v1", "obs": "camera", "camera": (16, 12),
                      "max_episode_steps": 12}),
    "multi-robot": (6, {"robots_per_world": 3, "map": "loop", "max_episode_steps": 20}),
    "v1-db18": (4, {"version": "v1", "max_episode_steps": 12, "randomize": True,
                    "physics": "db18"}),
    "multi-db18": (6, {"robots_per_world": 3, "map": "loop", "max_episode_steps": 20,
                       "physics": "db18"}),
}
"""Each batch: its rows and make_vec's arguments (short episodes: every mode's
autoreset happens several times in :data:`STEPS`)."""


def play(workers: int, n: int, kwargs: dict[str, Any], mode: AutoresetMode
         ) -> list[Any]:
    """Everything a batch returns over reset, ``STEPS`` steps, an asynchronous reset
    and ``STEPS`` sends (DISABLED: the envs that must be reset are reset by mask);
    then its digest."""
    rng = np.random.default_rng(1)
    envs = dmxshm.make_vec(n, num_workers=workers, seed=3, autoreset_mode=mode, **kwargs)
    out: list[Any] = []
    try:
        out.append(envs.reset())
        for _ in range(STEPS):
            out.append(envs.step(rng.uniform(-1, 1, (n, 2)).astype(np.float32)))
            if mode == AutoresetMode.DISABLED and envs._ended.any():
                out.append(envs.reset(options={"reset_mask": envs._ended.copy()}))
        envs.async_reset(seed=9)
        first = envs.recv()
        out.append(in_env_order(first, first[4]["env_id"]))
        for _ in range(STEPS):
            envs.send(rng.uniform(-1, 1, (n, 2)).astype(np.float32), np.arange(n))
            got = envs.recv()
            out.append(in_env_order(got, got[4]["env_id"]))
            if mode == AutoresetMode.DISABLED and envs._ended.any():
                out.append(envs.reset(options={"reset_mask": envs._ended.copy()}))
        out.append(envs.trajectory_digest)
    finally:
        envs.close()
    return out


@pytest.mark.timeout(VEC_TIMEOUT_S)
@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.name)
@pytest.mark.parametrize("batch", list(BATCHES))
def test_in_process_rows_are_two_workers_bit_for_bit(batch: str, mode: AutoresetMode
                                                     ) -> None:
    n, kwargs = BATCHES[batch]
    mine, theirs = play(IN_PROCESS, n, kwargs, mode), play(WORKERS, n, kwargs, mode)
    assert len(mine) == len(theirs)
    for k, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        assert_same(a, b, f"call {k}")
    steps = [t for t in theirs if isinstance(t, tuple) and len(t) == 5]
    assert sum(int(t[2].sum()) + int(t[3].sum()) for t in steps) >= 4  # episodes ended
    if mode == AutoresetMode.SAME_STEP:
        assert sum("final_obs" in t[4] for t in steps) >= 2  # final_obs was compared


@pytest.mark.timeout(VEC_TIMEOUT_S)
def test_in_process_starts_no_process_and_leaves_nothing_in_dev_shm() -> None:
    before = {c.pid for c in psutil.Process().children(recursive=True)}
    envs = dmxshm.make_vec(3, num_workers=0, seed=0, batch_size=2)
    try:
        assert envs.num_workers == 0 and isinstance(envs._serial, Serial)
        assert {c.pid for c in psutil.Process().children(recursive=True)} == before
        assert [e for e in list_entries() if e.pid == os.getpid()] == []
        envs.reset()
        envs.step(np.zeros((3, 2), np.float32))
        envs.async_reset()
        envs.recv()
    finally:
        envs.close()
    assert envs.closed

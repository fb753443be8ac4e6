"""A batch's trajectory digest covers what every env did, and not how they were split."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import dmxshm
from tests.batch.rows import IN_PROCESS

TIMEOUT_S = 120


def digest(workers: int, nudge: bool = False, obs: str = "camera",
           mode: AutoresetMode = AutoresetMode.NEXT_STEP) -> str:
    envs = dmxshm.make_vec(4, num_workers=workers, obs=obs, camera=(16, 12),
                           max_episode_steps=15, autoreset_mode=mode)
    rng = np.random.default_rng(0)
    try:
        envs.reset(seed=2)
        for k in range(40):  # two autoresets of every env
            actions = rng.uniform(-1, 1, (4, 2)).astype(np.float32)
            if nudge and k == 30:
                actions[3, 1] = np.nextafter(actions[3, 1], np.float32(2))
            envs.step(actions)
        return envs.trajectory_digest
    finally:
        envs.close()


@pytest.mark.timeout(TIMEOUT_S)
@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_the_same_with_one_or_two_workers_and_not_with_one_action_changed(
        mode: AutoresetMode) -> None:
    one = digest(IN_PROCESS, mode=mode)  # one shard of all four
    assert digest(2, mode=mode) == one
    assert digest(IN_PROCESS, nudge=True, mode=mode) != one


@pytest.mark.timeout(TIMEOUT_S)
def test_state_and_camera_observations_give_different_digests() -> None:
    assert digest(IN_PROCESS, obs="state") != digest(IN_PROCESS, obs="camera")

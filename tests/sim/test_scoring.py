"""The engine's scoring: one rule for every loop."""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np
import pytest

import dmxshm
from dmxshm.matrix.sensors import ENCODER_TICKS_PER_REV
from dmxshm.network import Network, NetworkConfig
from dmxshm.network.client import NetworkEnded
from dmxshm.world.robot import WHEEL_RADIUS_M

pytestmark = pytest.mark.timeout(60)

FORWARD_RAD_S = 8.0
"""Both wheels' speed while the client drives: about 0.25 m/s, straight ahead."""


def _drive_reset_stand(name: str, mode: str, out: dict[str, Any]) -> None:
    """An outside agent: drives straight ahead, asks for a reset (its robot back at its
    start pose), then stands still. ``out["path_m"]``: the path its encoders measured
    before the reset."""
    try:
        with dmxshm.connect(name, timeout_s=30) as agent:
            forward = np.full((1, 2), FORWARD_RAD_S)
            obs = agent.observe(timeout_s=20)
            start_ticks = obs["encoders"][0].copy()
            for _ in range(30 if mode == "gym" else 10**6):
                if mode == "realtime" and obs["sim_time_s"][0] > 1.0:
                    break
                agent.act(forward)
                obs = agent.observe(timeout_s=20)
            turns = (obs["encoders"][0] - start_ticks) / ENCODER_TICKS_PER_REV
            out["path_m"] = float(np.mean(turns)) * 2 * math.pi * WHEEL_RADIUS_M
            agent.act(np.zeros((1, 2)), reset=True)
            while True:
                agent.observe(timeout_s=20)
                agent.act(np.zeros((1, 2)))
    except NetworkEnded:
        pass
    except BaseException as exc:  # the test's thread: the test reads it
        out["error"] = exc


@pytest.mark.parametrize("mode", ["gym", "realtime"])
def test_a_reset_is_no_distance_driven_in_either_mode(mode: str) -> None:
    """A gym and a realtime reset count ``distance_m`` alike: the jump back to the start
    is not driven (the realtime loop once skipped it and counted the jump)."""
    name = f"scoring-reset-{mode}"
    kw: dict[str, Any] = (dict(steps=60, episodes=True, connect_timeout_s=30.0)
                          if mode == "gym" else dict(duration_s=2.0))
    cfg = NetworkConfig(mode=mode, robots=1, agents=0, external_agents=1, camera=(0, 0),
                        noise=False, name=name, wait_timeout_s=20.0, **kw)
    out: dict[str, Any] = {}
    with Network(cfg) as net:
        agent = threading.Thread(target=_drive_reset_stand, args=(name, mode, out))
        agent.start()
        summary = net.run()
        agent.join(30)
    assert not agent.is_alive() and "error" not in out, out
    path = out["path_m"]
    assert path > 0.15  # it drove
    driven = summary.lane["distance_m"][0]
    # What it drove before the reset (and a hair after: the reset's step), not the jump
    # back as well (which would double it).
    assert path * 0.9 < driven < path * 1.25, (driven, path)

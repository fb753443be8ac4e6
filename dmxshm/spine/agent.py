"""An agent process behind a spine: reads observations, writes actions.

The policy is ``forward`` (constant wheel speeds) or ``module:callable``:
a function ``act(obs) -> (left, right)`` wheel speeds in rad/s, where
``obs`` is the spine's observation record (its cycle, the cycle and time of
the servo replies behind it, the spine's state). The agent never slows the
spine down: the spine takes the newest action when it comes, reuses it until
it is too old, then sends stops.

The agent also measures its round trip through the spine: from writing an
action to reading the first observation published after it.
"""

from __future__ import annotations

import importlib
import time
from typing import Any

import numpy as np

from dmxshm.errors import DmxError, RingClosedError
from dmxshm.proc.gate import wait_for_start
from dmxshm.shm.ring import Ring

FORWARD_RAD_S = 5.0


def forward(obs: np.ndarray) -> tuple[float, float]:
    """The built-in policy: drive straight."""
    return FORWARD_RAD_S, FORWARD_RAD_S


def resolve_policy(spec: str) -> Any:
    """The callable named by ``spec`` (``forward`` or ``module:callable``)."""
    if spec == "forward":
        return forward
    module_name, sep, attr = spec.partition(":")
    if not sep:
        raise DmxError(f"spine agent {spec!r}: use 'forward' or module:callable")
    try:
        obj = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise DmxError(f"spine agent {spec!r}: {type(exc).__name__}: {exc}") from exc
    if not callable(obj):
        raise DmxError(f"spine agent {spec!r} is not callable")
    return obj


def run_spine_agent(names: dict[str, str], spec: str, timeout_s: float) -> dict[str, Any]:
    """Main loop of the agent process."""
    policy = resolve_policy(spec)
    obs_ring = Ring.attach(names["agent_obs"], side="reader", role="spine-agent")
    actions = Ring.attach(names["agent_action"], side="writer", role="spine-agent")
    wait_for_start(names["start"], party=2, role="spine-agent")
    out = np.zeros((), actions.dtype)
    round_trips: list[float] = []
    written_at: float | None = None
    count = 0
    try:
        while True:
            try:
                obs = obs_ring.read(timeout_s)
            except RingClosedError:
                break
            now = time.perf_counter()
            if written_at is not None and obs["t_published"] >= written_at:
                round_trips.append(now - written_at)
                written_at = None
            wheels = policy(obs)
            out["obs_cycle"] = obs["obs_cycle"]
            out["t_obs"] = obs["t_obs"]
            out["t_act"] = time.perf_counter()
            out["wheels_rad_s"] = wheels
            actions.write(out)
            written_at = time.perf_counter()
            count += 1
        return {"actions": count, "round_trips_s": round_trips}
    finally:
        obs_ring.close()
        actions.close()

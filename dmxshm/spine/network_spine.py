"""The spine inside a realtime network (``dmxshm run --mode realtime --spine``).

One pinned spine stands between the agents and the engine, as on a real
robot: it is the only writer of the robots' commands, and its CAN cycles
drive the physics. Each cycle, at its own frequency, it (1) builds the
observation from the latest wheel states the engine replied, (2) takes the
newest command of each agent (reusing one until it is ``command_timeout_s``
old, then stopping the robot), (3) keeps the engine's latest reply, and (4)
starts the next CAN cycle: it sends the commands of every robot to the
engine, which applies them in one physics step of ``1 / spine_hz`` and
replies with the wheel states after it. The spine never waits for the agents
or the engine. It sends stops for :data:`STOP_CYCLES` cycles at the start
and again at the end, runs ``duration_s`` of acting cycles between them,
then closes its frames: the engine's physics ends with them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import psutil

from dmxshm.shm.ring import Ring
from dmxshm.spine.clock import SynchronousClock, ask_realtime

STOP_CYCLES = 5
"""Stop commands sent before acting and before ending (as ``dmxshm spine``)."""


def spine_reply_dtype(robots: int) -> np.dtype:
    """The engine's reply to the spine: wheel states after a physics step."""
    return np.dtype([("step", "<u8"), ("t_reply", "<f8"),
                     ("wheel_angle_rad", "<f8", (robots, 2)),
                     ("wheel_rate_rad_s", "<f8", (robots, 2))])


@dataclass
class NetworkSpineResult:
    """The network spine's figures (periods in microseconds)."""

    cpu: int
    scheduling: str
    cycles: int
    stop_cycles: int  # cycles that sent stops for every robot (start and end)
    skipped_cycles: int
    frequency_hz: float
    period_us: dict[str, float]
    period_error_us_p99: float
    expired_commands: list[int]
    last_engine_step: int
    agent_command_drops: int


def run_network_spine(plan: Any, index: int = 0) -> NetworkSpineResult:
    """Main loop of the network's spine process."""
    cfg = plan.config
    cpu = cfg.pins.get("spine", sorted(psutil.Process().cpu_affinity())[-1])
    psutil.Process().cpu_affinity([cpu])
    scheduling = ask_realtime()
    agents = [Ring.attach(n, side="reader", role="spine", spin_us=0) for n in plan.cmd_rings]
    out = Ring.attach(plan.spine_rings[0], side="writer", role="spine", spin_us=0)
    replies = Ring.attach(plan.spine_rings[1], side="reader", role="spine", spin_us=0)
    rows = [np.array(r) for r in plan.agent_robots]
    wheels = np.zeros((cfg.robots, 2))
    received = np.full(cfg.robots, -np.inf)
    live = np.zeros(cfg.robots, bool)
    expired = np.zeros(cfg.robots, np.int64)
    slot = np.zeros((), out.dtype)
    periods: list[float] = []
    latest_step = -1
    total = 2 * STOP_CYCLES + max(1, round(cfg.duration_s * cfg.spine_hz))
    stops = 0
    try:
        plan.wait_for_start("spine", 0)
        clock = SynchronousClock(1.0 / cfg.spine_hz)
        cycles = 0
        while cycles < total:
            clock.wait_for_next_tick()
            if cycles:
                periods.append(clock.measured_period_s)
            now = time.monotonic()
            for ring, r in zip(agents, rows, strict=True):  # (2) newest command of each agent
                cmd = ring.try_read(newest=True)
                if cmd is not None:
                    wheels[r] = cmd["wheels_rad_s"]
                    received[r] = now
            fresh = now - received <= cfg.command_timeout_s
            expired += live & ~fresh
            live = fresh
            reply = replies.try_read(newest=True)  # (3) the engine's latest reply
            if reply is not None:
                latest_step = int(reply["step"])
            stopping = cycles < STOP_CYCLES or cycles >= total - STOP_CYCLES
            slot["step"] = cycles  # (4) the CAN cycle: every robot's command
            slot["wall_time_s"] = time.monotonic()
            slot["wheels_rad_s"] = 0.0 if stopping else np.where(live[:, None], wheels, 0.0)
            out.write(slot)
            stops += stopping
            cycles += 1
        out.close_writer()
        # The engine's replies to the last frames, until it closes them.
        deadline = time.monotonic() + cfg.wait_timeout_s
        while not (replies.closed and replies.stats().pending == 0) \
                and time.monotonic() < deadline:
            reply = replies.try_read(newest=True)
            if reply is not None:
                latest_step = int(reply["step"])
            else:
                time.sleep(0.001)
        p = np.array(periods) * 1e6
        return NetworkSpineResult(
            cpu=cpu, scheduling=scheduling, cycles=cycles, stop_cycles=stops,
            skipped_cycles=clock.skipped,
            frequency_hz=cfg.spine_hz,
            period_error_us_p99=float(np.percentile(np.abs(p - 1e6 / cfg.spine_hz), 99))
            if len(p) else 0.0,
            period_us={"p50": float(np.percentile(p, 50)) if len(p) else 0.0,
                       "p99": float(np.percentile(p, 99)) if len(p) else 0.0,
                       "max": float(p.max()) if len(p) else 0.0},
            expired_commands=expired.tolist(), last_engine_step=latest_step,
            agent_command_drops=int(sum(r.stats().drops for r in agents)))
    finally:
        for ring in (*agents, out, replies):
            ring.close()

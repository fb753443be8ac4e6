"""The spine's cycle, in Vulp's order, for both schedules.

Each cycle: (1) build the observation from the latest servo replies, (2)
take the action (plan), (3) wait for the CAN cycle started in the previous
cycle and keep its replies, (4) start the next CAN cycle with the new
commands. The schedules order these steps differently:

* ``after-action``, ``plan . (can // sleep)``: 1, 2, 3, 4 at each tick; the
  CAN cycle starts when planning ends and runs while the spine sleeps.
* ``after-sleep``, ``(plan // can) . sleep``: 3, 4, 1, 2 at each tick; the
  CAN cycle starts at the tick with the action planned in the previous
  cycle, and runs while the spine plans.

The spine sends stop commands for ``stop_cycles`` cycles before it acts and
again before it ends, and never waits for anything but the bus.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import psutil

from dmxshm.shm.ring import Ring
from dmxshm.spine.can import wait_start
from dmxshm.spine.clock import SynchronousClock
from dmxshm.spine.records import RECORD_DTYPE

RT_PRIORITY = 10  # SCHED_FIFO priority, as Vulp's SCHED_RR 10


@dataclass(frozen=True)
class _Obs:
    """What an observation was built from: the replies of one CAN cycle."""

    cycle: int = -1
    t_reply: float = math.nan


def ask_realtime() -> str:
    """Try SCHED_FIFO for this process; say plainly what we got."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RT_PRIORITY))
        return f"SCHED_FIFO priority {RT_PRIORITY}"
    except (PermissionError, OSError, AttributeError) as exc:
        return f"SCHED_OTHER (SCHED_FIFO refused: {exc}; grant CAP_SYS_NICE or rtprio)"


def _spin_until(t: float) -> float:
    clock = time.perf_counter
    now = clock()
    while now < t:
        now = clock()
    return now


def run_spine(cfg: Any, names: dict[str, str]) -> dict[str, Any]:
    """Main loop of the spine process (see the module docstring)."""
    if cfg.cpu is not None:
        psutil.Process().cpu_affinity([cfg.cpu])
    scheduling = ask_realtime() if cfg.realtime_priority else "SCHED_OTHER (not asked)"
    cmd = Ring.attach(names["cmd"], side="writer", role="spine", spin_us=0)
    reply = Ring.attach(names["reply"], side="reader", role="spine", spin_us=0)
    records = Ring.attach(names["records"], side="writer", role="spine")
    wait_start(names["start"], party=0, role="spine")
    try:
        return {"scheduling": scheduling, **_loop(cfg, cmd, reply, records)}
    finally:
        for ring in (cmd, reply, records):
            ring.close()


def _loop(cfg: Any, cmd: Ring, reply: Ring, records: Ring) -> dict[str, Any]:
    period = 1.0 / cfg.frequency_hz
    acting = int(round(cfg.duration_s * cfg.frequency_hz))
    after_sleep = cfg.schedule == "after-sleep"
    # after-sleep sends each action one cycle after planning it: one more
    # cycle at the end, so that the last stop_cycles sends are all stops.
    total = 2 * cfg.stop_cycles + acting + int(after_sleep)
    clock = SynchronousClock(period, start=time.perf_counter() + 0.01)
    latest = _Obs()
    inflight = False
    pending: tuple[float, int, _Obs, np.ndarray] | None = None  # after-sleep's next action
    slot = np.zeros((), cmd.dtype)
    rec = np.zeros((), RECORD_DTYPE)
    can = np.full(3, math.nan)
    stop = np.zeros(2)

    def collect() -> None:  # step 3: the CAN cycle started last cycle
        nonlocal latest, inflight
        if inflight:
            r = reply.read(cfg.timeout_s)
            latest = _Obs(int(r["cycle"]), float(r["t_reply"]))
            can[:] = (r["t_start"], r["t_reply"], r["t_end"])
            inflight = False

    def send(k: int, wheels: np.ndarray) -> float:  # step 4
        nonlocal inflight
        t_send = time.perf_counter()
        slot["cycle"] = k
        slot["t_send"] = t_send
        slot["wheels_rad_s"] = wheels
        cmd.write(slot, cfg.timeout_s)
        inflight = True
        return t_send

    def plan(obs: _Obs, stopping: bool) -> tuple[float, float, np.ndarray]:  # steps 1-2
        start = time.perf_counter()
        end = _spin_until(start + cfg.plan_s)  # the planner's work time T_p
        return start, end, stop if stopping else np.full(2, cfg.wheel_speed_rad_s)

    for k in range(total):
        stopping = k < cfg.stop_cycles or k >= cfg.stop_cycles + acting
        t_tick = clock.wait_for_next_tick()
        can[:] = math.nan
        if after_sleep:
            collect()
            sent = pending
            t_send = send(k, sent[3]) if sent is not None else math.nan
            obs = latest
            p0, p1, wheels = plan(obs, stopping)
            pending = (p1, k, obs, wheels)
        else:
            obs = latest
            p0, p1, wheels = plan(obs, stopping)
            collect()
            t_send = send(k, wheels)
            sent = (p1, k, obs, wheels)
        rec["cycle"] = k
        rec["t_tick"] = t_tick
        rec["t_send"] = t_send
        rec["t_act"] = sent[0] if sent is not None else math.nan
        rec["act_cycle"] = sent[1] if sent is not None else -1
        rec["obs_cycle"] = sent[2].cycle if sent is not None else -1
        rec["t_obs"] = sent[2].t_reply if sent is not None else math.nan
        rec["plan_start"] = p0
        rec["plan_end"] = p1
        rec["can_start"], rec["can_reply"], rec["can_end"] = can
        rec["period_s"] = clock.measured_period_s
        rec["slack_s"] = clock.slack_s
        rec["skipped"] = clock.skipped
        rec["stopping"] = int(stopping)
        rec["wheels_rad_s"] = sent[3] if sent is not None else stop
        records.write(rec)
    collect()
    cmd.close_writer()
    records.close_writer()
    return {"cycles": total, "acting_cycles": acting, "skipped_cycles": clock.skipped}

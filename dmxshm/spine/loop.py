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

import enum
import gc
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmxshm.proc.gate import wait_for_start
from dmxshm.shm.ring import Ring
from dmxshm.spine.clock import SynchronousClock, ask_realtime, spin_until_time
from dmxshm.spine.records import RECORD_DTYPE

_stop_requested: int | None = None  # the signal that asked for a stop


def request_stop(signum: int, frame: object) -> None:
    """Signal handler: only record; the loop moves to SHUTDOWN and sends stops."""
    global _stop_requested
    _stop_requested = signum


@dataclass(frozen=True)
class _Obs:
    """What an observation was built from: the replies of one CAN cycle."""

    cycle: int = -1
    t_reply: float = math.nan




def run_spine(cfg: Any, names: dict[str, str]) -> dict[str, Any]:
    """Main loop of the spine process (see the module docstring)."""
    scheduling = ask_realtime() if cfg.realtime_priority else "SCHED_OTHER (not asked)"
    cmd = Ring.attach(names["cmd"], side="writer", role="spine", spin_us=0)
    reply = Ring.attach(names["reply"], side="reader", role="spine", spin_us=0)
    records = Ring.attach(names["records"], side="writer", role="spine")
    agent = AgentLink(names, cfg.action_timeout_s) if cfg.agent else None
    wait_for_start(names["start"], party=0, role="spine")
    gc.collect()
    gc.disable()  # a real-time loop takes no garbage-collection pauses
    try:
        return {"scheduling": scheduling, **_loop(cfg, cmd, reply, records, agent)}
    finally:
        gc.enable()
        if agent is not None:
            agent.close()
        for ring in (cmd, reply, records):
            ring.close()


class State(enum.IntEnum):
    """The spine's states, as a real spine's (Vulp's ``State``)."""

    SEND_STOPS = 0  # stop commands until the agent starts us (>= stop_cycles)
    RESET = 1  # one cycle: forget the last action
    IDLE = 2  # no fresh action: stop commands
    ACT = 3  # send the latest action
    SHUTDOWN = 4  # stop commands again (>= stop_cycles), then the end


class AgentLink:
    """The spine's side of the agent link: observations out, actions in.

    The spine never waits for the agent: it publishes an observation each
    cycle and takes the newest action if one came. An action is reused
    until it is ``timeout_s`` old; then the spine sends stops.
    """

    def __init__(self, names: dict[str, str], timeout_s: float) -> None:
        self.obs = Ring.attach(names["agent_obs"], side="writer", role="spine")
        self.actions = Ring.attach(names["agent_action"], side="reader", role="spine")
        self.timeout_s = timeout_s
        self.slot = np.zeros((), self.obs.dtype)
        self.last: np.ndarray | None = None
        self.received_at = -math.inf
        self.started = False
        self.expired = 0

    def publish(self, k: int, obs: _Obs, state: State) -> None:
        self.slot["cycle"] = k
        self.slot["obs_cycle"] = obs.cycle
        self.slot["t_obs"] = obs.t_reply
        self.slot["state"] = int(state)
        self.slot["t_published"] = time.perf_counter()
        self.obs.write(self.slot)

    def take(self) -> np.ndarray | None:
        """The action to send now, or None (none yet, or expired)."""
        fresh = self.actions.try_read(newest=True)
        now = time.perf_counter()
        if fresh is not None:
            self.last, self.received_at, self.started = fresh, now, True
        if self.last is None:
            return None
        if now - self.received_at > self.timeout_s:
            self.expired += self.last is not None
            self.last = None
            return None
        return self.last

    def close(self) -> None:
        self.obs.close_writer()
        self.obs.close()
        self.actions.close()


def _loop(cfg: Any, cmd: Ring, reply: Ring, records: Ring,
          agent: AgentLink | None = None) -> dict[str, Any]:
    period = 1.0 / cfg.frequency_hz
    acting_target = int(round(cfg.duration_s * cfg.frequency_hz))
    after_sleep = cfg.schedule == "after-sleep"
    # after-sleep sends each action one cycle after planning it: one more
    # cycle at the end, so that the last stop_cycles sends are all stops.
    shutdown_cycles = cfg.stop_cycles + int(after_sleep)
    start_limit = cfg.stop_cycles + int(cfg.timeout_s * cfg.frequency_hz)
    clock = SynchronousClock(period, start=time.perf_counter() + 0.01)
    latest = _Obs()
    inflight = False
    pending: tuple[float, int, _Obs, np.ndarray, bool] | None = None  # after-sleep's next
    slot = np.zeros((), cmd.dtype)
    rec = np.zeros((), RECORD_DTYPE)
    can = np.full(3, math.nan)
    stop = np.zeros(2)
    state = State.SEND_STOPS
    counts = dict.fromkeys(State, 0)

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

    def plan(k: int, obs: _Obs) -> tuple[float, float, _Obs, np.ndarray, bool]:  # steps 1-2
        nonlocal state
        start = time.perf_counter()
        if agent is not None:
            agent.publish(k, obs, state)
        if state not in (State.IDLE, State.ACT):
            return start, start, obs, stop, False
        if agent is None:  # the built-in planner works T_p
            end = spin_until_time(start + cfg.plan_s)
            state = State.ACT
            return start, end, obs, np.full(2, cfg.wheel_speed_rad_s), True
        action = agent.take()
        if action is None:
            state = State.IDLE
            return start, start, obs, stop, False
        state = State.ACT
        answered = _Obs(int(action["obs_cycle"]), float(action["t_obs"]))
        return start, float(action["t_act"]), answered, action["wheels_rad_s"].copy(), True

    k = 0
    stopped_by: int | None = None  # a signal that cut the run short
    while True:
        # Transitions happen at the top of a cycle. Only the bus can end a
        # cycle early (a dead or silent bus raises: nothing can be sent then).
        if _stop_requested and state is not State.SHUTDOWN:
            state = State.SHUTDOWN
            stopped_by = _stop_requested
        elif state is State.SEND_STOPS and counts[State.SEND_STOPS] >= cfg.stop_cycles and (
                agent is None or agent.started or counts[State.SEND_STOPS] >= start_limit):
            state = State.RESET if agent is None or agent.started else State.SHUTDOWN
        elif state is State.RESET:
            state = State.IDLE
            if agent is not None:
                agent.last = None
        elif state in (State.IDLE, State.ACT) and (
                counts[State.IDLE] + counts[State.ACT] >= acting_target):
            state = State.SHUTDOWN
        elif state is State.SHUTDOWN and counts[State.SHUTDOWN] >= shutdown_cycles:
            break
        if agent is not None and state is State.SEND_STOPS:
            agent.take()  # an agent starts the spine by sending anything
        t_tick = clock.wait_for_next_tick()
        can[:] = math.nan
        if after_sleep:
            collect()
            sent = pending
            t_send = send(k, sent[3]) if sent is not None else math.nan
            p0, p1, obs, wheels, acted = plan(k, latest)
            pending = (p1, k, obs, wheels, acted)
        else:
            p0, p1, obs, wheels, acted = plan(k, latest)
            collect()
            t_send = send(k, wheels)
            sent = (p1, k, obs, wheels, acted)
        counts[state] += 1
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
        rec["stopping"] = int(sent is None or not sent[4])  # a stop, not an action, was sent
        rec["state"] = int(state)
        rec["wheels_rad_s"] = sent[3] if sent is not None else stop
        records.write(rec)
        k += 1
    collect()
    cmd.close_writer()
    records.close_writer()
    return {"cycles": k, "acting_cycles": counts[State.ACT], "stop_signal": stopped_by,
            "skipped_cycles": clock.skipped,
            "states": {s.name: n for s, n in counts.items()},
            "expired_actions": agent.expired if agent is not None else 0,
            "agent_started": agent.started if agent is not None else None}

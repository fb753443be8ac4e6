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
or the engine. Its states are :class:`~dmxshm.spine.state_machine.State`'s:
SEND_STOPS for at least :data:`STOP_CYCLES` cycles and until an agent's
first command, one RESET cycle (stops; the commands before it are
forgotten), ``duration_s`` of ACT cycles (IDLE, stops, while no robot has a
fresh command), then SHUTDOWN stops for :data:`STOP_CYCLES` cycles; then it
closes its frames, and the engine's physics ends with them. SIGINT or SIGTERM
(Ctrl-C, a stopped run) only records the request (:func:`request_stop`): the
next cycle goes to SHUTDOWN and the stops are sent, as at a normal end.

Its latency law (the network spine's one schedule is Vulp's ``after-action``:
each cycle plans, takes the engine's newest reply, then sends its frame): the
engine replies to a frame T_o after its send (``spine_reply_at_s``), so the
newest reply held at a send is that of the frame ``floor(T_o / T) + 1``
cycles back, and ``t_send - t_obs = (floor(T_o / T) + 1) T - T_o``
(:func:`predicted_send_minus_obs_s`). The report sets the measured
``t_send - t_obs`` beside that prediction, which uses the configuration only.
"""

from __future__ import annotations

import math
import signal
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psutil

from dmxshm.proc.outcome import Terminated
from dmxshm.settings import LIVENESS_POLL_S
from dmxshm.shm.peers import DEAD, peer_state
from dmxshm.shm.ring import Ring
from dmxshm.spine.clock import SynchronousClock, ask_realtime, overruns
from dmxshm.spine.records import RECORD_DTYPE
from dmxshm.spine.state_machine import State

STOP_CYCLES = 5
"""Stop commands sent before acting and before ending (as ``dmxshm spine``)."""

SCHEDULE = "after-action"
"""The network spine's schedule: plan, then start the CAN cycle (send the frame)."""

_stop_requested: int | None = None  # the signal that asked for a stop
_cycling = False  # the cycle loop runs: it acts on a stop request


def request_stop(signum: int, frame: object) -> None:
    """The spine process's SIGINT and SIGTERM handler: record; the loop moves to
    SHUTDOWN and sends its stops. Before the loop (at the start gate, waiting for
    the others), there is nothing to stop safely and nobody to act on a record:
    the spine unwinds at once (:class:`~dmxshm.proc.outcome.Terminated`)."""
    global _stop_requested
    if _stop_requested is None:  # the first one says why (Ctrl-C, then its SIGTERM)
        _stop_requested = signum
    if not _cycling:
        raise Terminated(signum)


def predicted_send_minus_obs_s(period_s: float, reply_at_s: float) -> float:
    """The law's t_send - t_obs of the network spine, from the configuration only.

    Args:
        period_s: the spine's period T.
        reply_at_s: T_o, the instant after a frame's send at which the engine's
            reply counts as the observation.

    Example:
        >>> predicted_send_minus_obs_s(1e-3, 2e-4)  # the reply to the previous frame
        0.0008
        >>> predicted_send_minus_obs_s(1e-3, 1.5e-3)  # a reply later than a period
        0.0005
    """
    cycles_back = math.floor(reply_at_s / period_s) + 1
    return round(cycles_back * period_s - reply_at_s, 12)


def spine_reply_dtype(robots: int) -> np.dtype:
    """The engine's reply to the spine: wheel states after the physics step of one
    frame (``frame``: the spine cycle that sent it; ``t_start``: when the engine
    took it; ``t_reply``: when the step was done)."""
    return np.dtype([("step", "<u8"), ("frame", "<i8"), ("t_start", "<f8"), ("t_reply", "<f8"),
                     ("wheel_angle_rad", "<f8", (robots, 2)),
                     ("wheel_rate_rad_s", "<f8", (robots, 2))])


@dataclass
class NetworkSpineResult:
    """The network spine's figures (periods in microseconds)."""

    cpu: int
    scheduling: str
    cycles: int
    stop_cycles: int  # cycles that sent stops for every robot (not ACT)
    skipped_cycles: int
    frequency_hz: float
    period_us: dict[str, float]
    period_error_us_p99: float
    expired_commands: list[int]
    last_engine_step: int
    agent_command_drops: int
    timing: dict[str, Any] = field(default_factory=dict)  # network_timing() of its records
    received_commands: list[int] = field(default_factory=list)  # per robot, from its agent


def acting_cycles(cfg: Any) -> int:
    """Cycles of ``duration_s`` after the spine's RESET (ACT or IDLE)."""
    return max(1, round(cfg.duration_s * cfg.spine_hz))


def total_cycles(cfg: Any) -> int:
    """The most cycles a network spine runs: its stops and the longest wait for its
    agents to start it, a reset, ``duration_s`` of cycles, and the shutdown stops."""
    return (STOP_CYCLES + round(cfg.wait_timeout_s * cfg.spine_hz) + 1 + acting_cycles(cfg)
            + STOP_CYCLES)


def network_timing(recs: np.ndarray, frequency_hz: float,
                   reply_at_s: float | None = None) -> dict[str, Any]:
    """The timing report of a network spine from its records (:data:`RECORD_DTYPE`),
    in microseconds: as ``dmxshm spine``'s, with the engine as the CAN bus.

    ``delivery_us``: a frame from the spine to the engine taking it, and the
    wheel states from the engine's reply to the spine having them (from when
    it looked); ``engine_step_us``: the physics step of a frame;
    ``send_minus_obs_us``: the age of the wheel states behind a frame when it
    is sent (the engine's reply held then); ``send_minus_act_us``: the age of
    the newest agent command when it is sent; ``states``: cycles per state.
    With ``reply_at_s`` (T_o): ``predicted``, the law's ``send_minus_obs_us``
    from T and T_o alone (:func:`predicted_send_minus_obs_s`), and
    ``minus_predicted_us``, the measured ``t_send - t_obs`` minus it, cycle by
    cycle (p50, p99).
    """
    def stats(x: np.ndarray) -> dict[str, float]:
        x = x[np.isfinite(x)] * 1e6
        return {"p50": float(np.percentile(x, 50)) if len(x) else float("nan"),
                "p99": float(np.percentile(x, 99)) if len(x) else float("nan"),
                "max": float(x.max()) if len(x) else float("nan")}

    period = 1.0 / frequency_hz
    periods = recs["period_s"][1:]
    sent_by_cycle = np.full(int(recs["cycle"].max()) + 2 if len(recs) else 1, np.nan)
    sent_by_cycle[recs["cycle"]] = recs["t_send"]
    got = recs[(recs["obs_cycle"] >= 0) & np.isfinite(recs["can_start"])]
    frame_sent = sent_by_cycle[np.minimum(got["obs_cycle"], len(sent_by_cycle) - 1)]
    law: dict[str, Any] = {}
    if reply_at_s is not None:
        law_s = predicted_send_minus_obs_s(period, reply_at_s)
        measured = stats(recs["t_send"] - recs["t_obs"] - law_s)
        law = {"predicted": {"schedule": SCHEDULE, "reply_at_us": reply_at_s * 1e6,
                             "send_minus_obs_us": law_s * 1e6},
               "minus_predicted_us": {"send_minus_obs_us": {"p50": measured["p50"],
                                                            "p99": measured["p99"]}}}
    return {
        "records": int(len(recs)),
        "states": {state.name: int((recs["state"] == state).sum()) for state in State
                   if (recs["state"] == state).any()},
        "period_us": stats(periods),
        "period_error_us_p99": stats(np.abs(periods - period))["p99"],
        "overruns": overruns(recs["period_s"], recs["skipped"]),
        "delivery_us": {"spine_to_engine": stats(got["can_start"] - frame_sent),
                        "engine_to_spine": stats(got["can_seen"] - np.maximum(
                            got["can_end"], got["collect_start"]))},
        "engine_step_us": stats(got["can_end"] - got["can_start"]),
        "send_minus_obs_us": stats(recs["t_send"] - recs["t_obs"]),
        "send_minus_act_us": stats(recs["t_send"] - recs["t_act"]),
        **law,
    }


def run_network_spine(plan: Any, index: int = 0) -> NetworkSpineResult:
    """Main loop of the network's spine process."""
    global _cycling
    cfg = plan.config
    cpu = cfg.pins.get("spine", sorted(psutil.Process().cpu_affinity())[-1])
    psutil.Process().cpu_affinity([cpu])
    scheduling = ask_realtime()
    agents = [Ring.attach(n, side="reader", role="spine", spin_us=0)
              for n in plan.indexed("cmd.agent")]
    out = Ring.attach(plan.ring("spine.frames"), side="writer", role="spine", spin_us=0)
    replies = Ring.attach(plan.ring("spine.replies"), side="reader", role="spine", spin_us=0)
    records = Ring.attach(plan.ring("spine.records"), side="writer", role="spine")
    rows = [np.array(r) for r in plan.agent_robots]
    wheels = np.zeros((cfg.robots, 2))
    received = np.full(cfg.robots, -np.inf)
    live = np.zeros(cfg.robots, bool)
    expired = np.zeros(cfg.robots, np.int64)
    taken = np.zeros(cfg.robots, np.int64)  # commands of each robot taken from its agent
    slot = np.zeros((), out.dtype)
    latest_step = -1
    total = total_cycles(cfg)
    target = acting_cycles(cfg)
    start_limit = STOP_CYCLES + round(cfg.wait_timeout_s * cfg.spine_hz)
    state, acted, shutdown = State.SEND_STOPS, 0, 0
    stops = 0
    recs = np.zeros(total, RECORD_DTYPE)  # also in shared memory, cycle by cycle
    for name in RECORD_DTYPE.names or ():
        if recs[name].dtype.kind == "f":
            recs[name] = np.nan
    held = (-1, np.nan, np.nan, np.nan)  # the engine reply held: frame, start, reply, seen
    t_act = np.nan
    try:
        plan.wait_for_start("spine", 0)
        _cycling = True  # from here a stop is recorded, and sent as SHUTDOWN stops
        clock = SynchronousClock(1.0 / cfg.spine_hz)
        cycles = 0
        while cycles < total:
            t_tick = clock.wait_for_next_tick()
            plan_start = time.perf_counter()
            now = time.monotonic()
            for ring, r in zip(agents, rows, strict=True):  # (2) newest command of each agent
                cmd = ring.try_read(newest=True)
                if cmd is not None:
                    wheels[r] = cmd["wheels_rad_s"]
                    received[r] = now
                    taken[r] += 1
                    t_act = float(cmd["wall_time_s"])  # CLOCK_MONOTONIC, as perf_counter
            fresh = now - received <= cfg.command_timeout_s
            expired += live & ~fresh
            live = fresh
            plan_end = collect_start = time.perf_counter()
            reply = replies.try_read(newest=True)  # (3) the engine's latest reply
            if reply is not None:
                latest_step = int(reply["step"])
                held = (int(reply["frame"]), float(reply["t_start"]), float(reply["t_reply"]),
                        time.perf_counter())
            # The state machine: stops until the agents started it (their first
            # command), at least STOP_CYCLES; one RESET cycle that forgets the
            # commands before it; ACT (or IDLE while no robot has a fresh
            # command) for duration_s; SHUTDOWN stops for STOP_CYCLES, and at
            # once when a stop was asked for (a signal).
            if _stop_requested is not None and state is not State.SHUTDOWN:
                state = State.SHUTDOWN
            elif state is State.SEND_STOPS and cycles >= STOP_CYCLES and (
                    np.isfinite(received).any() or cycles >= start_limit):
                state = State.RESET
                received[:] = -np.inf
                live[:] = False
            elif state is State.RESET:
                state = State.ACT
            elif state in (State.ACT, State.IDLE) and acted >= target:
                state = State.SHUTDOWN
            if state in (State.ACT, State.IDLE):
                state = State.ACT if live.any() else State.IDLE
                acted += 1
            stopping = state is not State.ACT
            slot["step"] = cycles  # (4) the CAN cycle: every robot's command
            slot["wall_time_s"] = time.monotonic()
            slot["wheels_rad_s"] = 0.0 if stopping else np.where(live[:, None], wheels, 0.0)
            t_send = time.perf_counter()
            out.write(slot)
            rec = recs[cycles]
            rec["cycle"], rec["t_tick"], rec["t_send"] = cycles, t_tick, t_send
            rec["t_act"] = t_act if not stopping and live.any() else np.nan
            rec["act_cycle"], rec["obs_cycle"], rec["t_obs"] = cycles, held[0], held[2]
            rec["plan_start"], rec["plan_end"] = plan_start, plan_end
            rec["can_start"], rec["can_reply"], rec["can_end"] = held[1], held[2], held[2]
            rec["collect_start"], rec["can_seen"] = collect_start, held[3]
            rec["period_s"] = clock.measured_period_s if cycles else np.nan
            rec["slack_s"], rec["skipped"] = clock.slack_s, clock.skipped
            rec["stopping"], rec["wheels_rad_s"] = int(stopping), slot["wheels_rad_s"][0]
            rec["state"] = int(state)
            records.write(rec)
            stops += stopping
            cycles += 1
            if state is State.SHUTDOWN:
                shutdown += 1
                if shutdown >= STOP_CYCLES:
                    break
        out.close_writer()
        records.close_writer()
        # The engine's replies to the last frames, until it closes them (or is gone:
        # a dead engine closes nothing, and its stops go nowhere).
        deadline = time.monotonic() + cfg.wait_timeout_s
        look_at = time.monotonic() + LIVENESS_POLL_S
        while not (replies.closed and replies.stats().pending == 0) \
                and time.monotonic() < deadline:
            reply = replies.try_read(newest=True)
            if reply is not None:
                latest_step = int(reply["step"])
                continue
            if time.monotonic() >= look_at:
                if peer_state(replies.peer("writer")) == DEAD:
                    break
                look_at = time.monotonic() + LIVENESS_POLL_S
            time.sleep(0.001)
        timing = network_timing(recs[:cycles], cfg.spine_hz,  # the periods too
                                cfg.spine_reply_at_s)
        if _stop_requested is not None:
            timing["stopped_by"] = signal.Signals(_stop_requested).name
        return NetworkSpineResult(
            cpu=cpu, scheduling=scheduling, cycles=cycles, stop_cycles=stops,
            skipped_cycles=clock.skipped, frequency_hz=cfg.spine_hz,
            period_error_us_p99=timing["period_error_us_p99"],
            period_us=dict(timing["period_us"]),
            expired_commands=expired.tolist(), last_engine_step=latest_step,
            agent_command_drops=int(sum(r.stats().drops for r in agents)), timing=timing,
            received_commands=taken.tolist())
    finally:
        for ring in (*agents, out, replies, records):
            ring.close()

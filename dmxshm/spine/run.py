"""Run a spine with its CAN bus, collect its records, report the timing.

:func:`run` is what ``dmxshm spine`` calls; usable from Python::

    from dmxshm.spine.run import SpineConfig, run
    report, records = run(SpineConfig(schedule="after-sleep", duration_s=2))
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dmxshm.errors import DmxError
from dmxshm.proc.cpus import usable_cpus
from dmxshm.proc.outcome import Cause, describe_signal
from dmxshm.proc.supervisor import Supervisor
from dmxshm.profiling import Profiler, shm_sizes
from dmxshm.settings import START_TIMEOUT_S
from dmxshm.shm import signals
from dmxshm.shm.barrier import Barrier
from dmxshm.shm.registry import Registry
from dmxshm.shm.ring import Ring
from dmxshm.spine.agent import AgentResult, resolve_policy, run_spine_agent
from dmxshm.spine.can import BusResult, run_mock_bus, run_sim_bus
from dmxshm.spine.law import SCHEDULES, predicted
from dmxshm.spine.loop import SpineResult, request_stop, run_spine
from dmxshm.spine.records import (
    AGENT_ACTION_DTYPE,
    AGENT_OBS_DTYPE,
    CAN_CMD_DTYPE,
    CAN_REPLY_DTYPE,
    RECORD_DTYPE,
)
from dmxshm.spine.state_machine import State

AGENT_END_GRACE_S = 2.0  # after the spine's end, an agent still busy is hung
# After a spine's end on a bus failure, how long the bus gets to end, so that
# its own end (killed, crashed) names the cause; then it is stopped as silent.
BUS_END_GRACE_S = 0.5
# At the end, how long the spine gets to send its shutdown stops, then the others to end.
SPINE_STOP_GRACE_S = 5.0


class SpineError(DmxError):
    """The spine or its bus failed; the message names which and why."""


class SpineShutDown(SpineError):
    """The spine shut down before its end, or its bus failed, but it went through
    SHUTDOWN and tried to send its stop commands; ``report`` and ``records``
    hold what it did until then.

    A step of its cycle that raised ends here (its traceback in the message);
    the subclasses say more.
    """

    def __init__(self, message: str, report: dict[str, Any], records: np.ndarray) -> None:
        super().__init__(message)
        self.report = report
        self.records = records


class SpineStopped(SpineShutDown):
    """The spine was stopped by a signal from outside (SIGTERM, SIGINT) before its end.

    It went through SHUTDOWN and sent its stop commands first.
    """


class SpineBusError(SpineShutDown):
    """The spine's CAN bus fell silent, died or refused a command.

    The spine went to SHUTDOWN at once and tried to send its stop commands,
    which the bus could not confirm; the message names the bus and what failed.
    """


@dataclass(frozen=True)
class RunResults:
    """What the processes of a run returned.

    Attributes:
        spine: the spine's result.
        bus: the bus's, None if it did not end by itself (a failed bus is stopped).
        agent: the agent's, or what its supervisor saw of it (None: no agent).
    """

    spine: SpineResult
    bus: BusResult | None = None
    agent: AgentResult | None = None


@dataclass(frozen=True)
class SpineConfig:
    """A spine run. Defaults are those of ``dmxshm spine``.

    Attributes:
        schedule: ``after-action`` or ``after-sleep``.
        frequency_hz: spine frequency (1/T).
        cpu: CPU of the spine (None: the last one).
        bus_cpu: CPU of the CAN bus (None: the one before the spine's, if any).
        actuation: ``mock`` (a simulated bus) or ``sim`` (a pybullet world,
            one physics step per CAN cycle; T_c is then the step's time).
        can_cycle_s: duration T_c of a CAN cycle.
        reply_at_s: when the last servo reply comes within it (T_o; None: T_c).
        jitter_s: standard deviation of the CAN cycle's timing jitter.
        plan_s: the built-in planner's work time T_p.
        duration_s: acting time (stop cycles come on top).
        stop_cycles: stop commands sent before acting and before ending.
        wheel_speed_rad_s: what the built-in planner commands.
        realtime_priority: ask for SCHED_FIFO.
        timeout_s: the longest the spine waits for its bus.
        seed: seed of the jitter.
        agent: take actions from an agent process instead of the built-in
            planner: ``forward`` or ``module:callable`` (see
            :mod:`dmxshm.spine.agent`).
        action_timeout_s: an agent's action is reused until it is this old;
            then the spine sends stops (Vulp: 100 ms).
    """

    schedule: str = "after-action"
    frequency_hz: float = 1000.0
    cpu: int | None = None
    bus_cpu: int | None = None
    actuation: str = "mock"
    can_cycle_s: float = 0.9e-3
    reply_at_s: float | None = None
    jitter_s: float = 0.0
    plan_s: float = 0.3e-3
    duration_s: float = 10.0
    stop_cycles: int = 5
    wheel_speed_rad_s: float = 5.0
    realtime_priority: bool = True
    timeout_s: float = 2.0
    seed: int = 0
    agent: str | None = None
    action_timeout_s: float = 0.1

    def __post_init__(self) -> None:
        ncpu = os.cpu_count() or 1
        checks = [
            (self.schedule in SCHEDULES, f"schedule must be one of {SCHEDULES}"),
            (self.frequency_hz > 0, "frequency must be positive"),
            (self.actuation in ("mock", "sim"), "actuation must be 'mock' or 'sim'"),
            (0 < self.can_cycle_s < 1 / self.frequency_hz,
             f"the CAN cycle ({self.can_cycle_s * 1e3:.3f} ms) must be shorter than the "
             f"period ({1e3 / self.frequency_hz:.3f} ms)"),
            (0 <= self.plan_s < 1 / self.frequency_hz,
             "the plan time must be shorter than the period"),
            (self.reply_at_s is None or 0 <= self.reply_at_s <= self.can_cycle_s,
             "the reply instant must lie within the CAN cycle (0 <= reply-at <= can-cycle)"),
            (self.jitter_s >= 0, "jitter must be 0 or more"),
            (self.action_timeout_s > 0, "the action timeout must be positive"),
            (self.duration_s > 0, "duration must be positive"),
            (self.stop_cycles >= 5, "a spine sends at least 5 stop cycles"),
            (self.cpu is None or 0 <= self.cpu < ncpu,
             f"CPU {self.cpu} does not exist (0-{ncpu - 1})"),
            (self.bus_cpu is None or 0 <= self.bus_cpu < ncpu,
             f"CPU {self.bus_cpu} does not exist (0-{ncpu - 1})"),
        ]
        for ok, message in checks:
            if not ok:
                raise SpineError(message)
        if self.agent:
            resolve_policy(self.agent)  # a bad agent fails here, not in a child

    @property
    def reply_at(self) -> float:
        """T_o."""
        return self.can_cycle_s if self.reply_at_s is None else self.reply_at_s

    def cpus(self) -> tuple[int, int | None]:
        """(spine CPU, bus CPU)."""
        allowed = usable_cpus()
        spine = self.cpu if self.cpu is not None else allowed[-1]
        others = [c for c in allowed if c != spine]
        bus = self.bus_cpu if self.bus_cpu is not None else (others[-1] if others else None)
        return spine, bus


def run(cfg: SpineConfig, profile_interval_s: float | None = None,
        on_profile: Callable[[Profiler], None] | None = None,
        on_progress: Callable[[int], None] | None = None
        ) -> tuple[dict[str, Any], np.ndarray]:
    """Run the spine and its bus; returns the report and the records.

    Args:
        cfg: the run.
        profile_interval_s: sample every process of the run this often
            (:mod:`dmxshm.profiling`); the report gains ``processes``,
            ``profile`` and ``shm_bytes``. None: no profiling.
        on_profile: called after each sample.
        on_progress: called with the number of cycles recorded so far, about
            every 0.1 s while the spine runs.

    Raises:
        SpineError: a process failed or did not finish in time.
        SpineStopped: the spine was stopped by a signal from outside.
    """
    spine_cpu, bus_cpu = cfg.cpus()
    cfg_run = _with_cpu(cfg, spine_cpu)
    # The most cycles the spine can run: stops until its agent starts it (up
    # to timeout_s), a reset, the acting cycles, the shutdown stops.
    total = (2 * cfg.stop_cycles + int(cfg.timeout_s * cfg.frequency_hz)
             + int(round(cfg.duration_s * cfg.frequency_hz)) + 2)
    with Registry() as reg, Supervisor() as sup:
        cmd = Ring.create(reg, "spine.cmd", CAN_CMD_DTYPE, 2)
        reply = Ring.create(reg, "spine.reply", CAN_REPLY_DTYPE, 2)
        records = Ring.create(reg, "spine.records", RECORD_DTYPE, total + 8, "overwrite")
        records.bind("reader", "supervisor")
        start = Barrier.create(reg, "spine.start", 3 if cfg.agent else 2)
        names = {"cmd": cmd.name, "reply": reply.name, "records": records.name,
                 "start": start.name}
        start.close()
        if cfg.agent:
            for key, dt in (("agent_obs", AGENT_OBS_DTYPE), ("agent_action", AGENT_ACTION_DTYPE)):
                ring = Ring.create(reg, f"spine.{key}", dt, 4, "overwrite")
                names[key] = ring.name
                ring.close()
        cmd.close()
        reply.close()
        profiler: Profiler | None = None
        try:
            if cfg.actuation == "mock":
                bus = sup.start("can-bus", run_mock_bus, names, cfg.can_cycle_s, cfg.reply_at,
                          cfg.jitter_s, cfg.seed, cfg.timeout_s, cpu=bus_cpu)
            else:
                bus = sup.start("can-bus", run_sim_bus, names, cfg.frequency_hz, cfg.seed,
                          cfg.timeout_s + START_TIMEOUT_S, cpu=bus_cpu)
            # Its handlers only record a stop: the loop goes to SHUTDOWN and sends stops.
            spine = sup.start("spine", run_spine, cfg_run, names, cpu=spine_cpu,
                              on_stop=request_stop)
            if cfg.agent:
                sup.start("spine-agent", run_spine_agent, names, cfg.agent,
                          cfg.timeout_s + START_TIMEOUT_S, cpu=bus_cpu)
            if profile_interval_s is not None:
                profiler = Profiler({"supervisor": os.getpid(), **sup.pids()},
                                    profile_interval_s, shm=lambda: shm_sizes(reg.names),
                                    light=frozenset({"spine"}))
            results = _watch(sup, deadline=time.monotonic() + START_TIMEOUT_S
                             + total / cfg.frequency_hz + 2 * cfg.timeout_s,
                             profiler=profiler, on_profile=on_profile,
                             on_progress=(lambda: on_progress(records.stats().writes))
                             if on_progress else None)
            shm_bytes = sum(shm_sizes(reg.names).values())
            rows = []
            while (item := records.try_read(newest=False)) is not None:
                rows.append(item)
        finally:
            # The spine first: SIGTERM makes it send its shutdown stops, which
            # needs the bus still there; then the others.
            sup.stop([c for c in sup.children if c.name == "spine"], SPINE_STOP_GRACE_S)
            sup.stop(grace_s=SPINE_STOP_GRACE_S)
            records.close()
    recs = np.array(rows, dtype=RECORD_DTYPE) if rows else np.zeros(0, RECORD_DTYPE)
    done = results.spine
    rep = report(cfg, recs, done, (spine_cpu, bus_cpu))
    rep = _no_nan(rep)
    if cfg.agent:
        agent = results.agent if results.agent is not None else AgentResult()
        rtt = np.array(agent.round_trips_s)
        rep["agent"] = {
            "started": done.agent_started,
            "hung": agent.hung,
            "failed": agent.failed,
            "actions": agent.actions,
            "expired_actions": done.expired_actions,
            "round_trip_us": {"p50": _pct(rtt * 1e6, 50), "p99": _pct(rtt * 1e6, 99),
                              "samples": len(rtt)},
        }
    rep["states"] = done.states
    rep["shm_bytes"] = shm_bytes
    if profiler is not None:
        profiler.stop()
        prof = profiler.report()
        rep["processes"] = prof.pop("processes")
        rep["profile"] = prof
    _raise_unless_done(cfg, done, spine.pid, bus.pid, rep, recs)
    return rep, recs


def _raise_unless_done(cfg: SpineConfig, done: SpineResult, spine_pid: int, bus_pid: int,
                       rep: dict[str, Any], recs: np.ndarray) -> None:
    """Raise what ended the spine early, if anything did (a failed bus first: its
    stops are unconfirmed, whatever else happened).

    Raises:
        SpineBusError: the bus fell silent, died or refused a command.
        SpineShutDown: a step of the spine's cycle raised.
        SpineStopped: a signal from outside stopped the spine.
    """
    shutdown = done.states[State.SHUTDOWN.name]
    went = f"went to SHUTDOWN after {done.cycles - shutdown} cycles"
    if done.bus_error is not None:
        raise SpineBusError(
            f"CAN bus can-bus (pid {bus_pid}) failed: {done.bus_error}\nThe spine (pid "
            f"{spine_pid}) {went} and tried to send {shutdown} stop commands, unconfirmed "
            f"({done.unsent_commands} not taken by the bus). It waits timeout_s "
            f"({cfg.timeout_s:g} s) for a reply.", rep, recs)
    if done.error is not None:
        raise SpineShutDown(f"spine (pid {spine_pid}) failed and {went}, sending its stops:"
                            f"\n{done.error.rstrip()}", rep, recs)
    if done.stop_signal:  # someone else stopped it: the run is not what was asked for
        raise SpineStopped(
            f"spine (pid {spine_pid}) was stopped by {describe_signal(done.stop_signal)} "
            f"after {done.cycles} cycles; it sent its shutdown stops", rep, recs)


def _watch(sup: Supervisor, deadline: float, profiler: Profiler | None = None,
           on_profile: Callable[[Profiler], None] | None = None,
           on_progress: Callable[[], None] | None = None) -> RunResults:
    """Gather the children's results until all ended; the agent's failure is tolerated,
    and so is a bus that the spine found failed (it is stopped, not awaited).

    Raises:
        SpineError: the spine or its bus failed, or the run overstayed ``deadline``.
    """
    got: dict[str, Any] = {}
    spine = sup.child("spine")
    spine_done_at: float | None = None
    while True:
        signals.check()
        for child in sup.children:
            outcome = child.outcome
            if outcome is None or child.name in got:
                continue
            if outcome.ok:
                got[child.name] = outcome.result
            elif child.name == "spine-agent":  # tolerated: the spine expires its action
                got[child.name] = AgentResult(failed=outcome.describe())
            elif outcome.cause in (Cause.KILLED, Cause.SIGNALLED, Cause.EXITED):
                raise SpineError(f"{child.name} (pid {child.pid}) died: {outcome.describe()}")
            else:
                raise SpineError(f"{child.name} (pid {child.pid}) failed: {outcome.describe()}"
                                 f"\n{outcome.traceback.rstrip()}")
        left = {c.name for c in sup.children} - set(got)
        if not left:
            return RunResults(spine=got["spine"], bus=got["can-bus"],
                              agent=got.get("spine-agent"))
        if "spine" in got and spine_done_at is None:
            spine_done_at = time.monotonic()
            if profiler is not None:  # the others are still there
                profiler.final_sample()
        if spine_done_at is not None:
            waited = time.monotonic() - spine_done_at
            if left == {"spine-agent"} and waited > AGENT_END_GRACE_S:
                # The spine never waits for its agent; neither does its supervisor.
                got["spine-agent"] = AgentResult(hung=True)
                left.clear()
            failed_bus = got["spine"].bus_error is not None and waited > BUS_END_GRACE_S
            if not left or (left == {"can-bus"} and failed_bus):  # a silent bus: stopped
                return RunResults(spine=got["spine"], bus=got.get("can-bus"),
                                  agent=got.get("spine-agent"))
        if profiler is not None and spine_done_at is None and profiler.maybe_sample() \
                and on_profile is not None:
            on_profile(profiler)
        if time.monotonic() > deadline:
            raise SpineError(f"{', '.join(sorted(left))} did not finish in time")
        if on_progress is not None and spine.report is None:
            on_progress()
        sup.wait(0.1)


def _with_cpu(cfg: SpineConfig, cpu: int) -> SpineConfig:
    from dataclasses import replace

    return replace(cfg, cpu=cpu)


def _no_nan(obj: Any) -> Any:
    """NaN (no data) as None, so that the JSON report is valid JSON."""
    if isinstance(obj, dict):
        return {k: _no_nan(v) for k, v in obj.items()}
    if isinstance(obj, float) and obj != obj:
        return None
    return obj


def _us(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e6


def _pct(x: np.ndarray, q: float) -> float:
    return float(np.percentile(x, q)) if len(x) else float("nan")


def report(cfg: SpineConfig, recs: np.ndarray, spine: SpineResult,
           cpus: tuple[int, int | None]) -> dict[str, Any]:
    """The summary of a run: figures of the acting cycles, and the law's prediction."""
    period = 1.0 / cfg.frequency_hz
    acting = recs[(recs["stopping"] == 0) & (recs["obs_cycle"] >= 0)]
    periods = recs["period_s"][np.isfinite(recs["period_s"])]
    can = recs[np.isfinite(recs["can_end"])]
    can_cycle = can["can_end"] - _sent_at(recs, can["cycle"] - 1)
    # T_p as the note means it: planning time from the start of the cycle's
    # "plan // can" (after-sleep: the CAN start, after step 3's few us) or the
    # plan itself (after-action).
    if not len(acting):
        plan_s = cfg.plan_s
    elif cfg.schedule == "after-sleep":
        plan_s = float(np.nanmedian(_plan_end_of(recs, acting["act_cycle"])
                                    - _sent_at(recs, acting["act_cycle"])))
    else:
        plan_s = float(np.median(acting["plan_end"] - acting["plan_start"]))
    # Medians: one stall of the machine must not move the prediction.
    reply_at = float(np.nanmedian(can["can_reply"] - _sent_at(recs, can["cycle"] - 1))) \
        if len(can) else cfg.reply_at
    s_o = (acting["t_send"] - acting["t_obs"]) * 1e6
    s_a = (acting["t_send"] - acting["t_act"]) * 1e6
    law: dict[str, float | None] = dict(predicted(cfg.schedule, period, plan_s, reply_at))
    if cfg.agent:
        # The agent answers an observation after the spine has taken this
        # cycle's action, so its answer goes out one cycle later: one more T.
        # When it computed depends on the agent, so t_send - t_act has no law.
        law = {"send_minus_obs_s": 3 * period - reply_at, "send_minus_act_s": None}

    def stats(x: np.ndarray) -> dict[str, float]:
        return {"mean": float(np.mean(x)) if len(x) else float("nan"),
                "p50": _pct(x, 50), "p99": _pct(x, 99)}

    return {
        "schedule": cfg.schedule, "frequency_hz": cfg.frequency_hz, "actuation": cfg.actuation,
        "cpu": cpus[0], "bus_cpu": cpus[1], "scheduling": spine.scheduling,
        "cycles": spine.cycles, "acting_cycles": spine.acting_cycles,
        "skipped_cycles": spine.skipped_cycles,
        "period_us": {"p50": _pct(periods * 1e6, 50), "p99": _pct(periods * 1e6, 99),
                      "max": float(periods.max() * 1e6) if len(periods) else float("nan")},
        "period_error_us_p99": _pct(np.abs(periods - period) * 1e6, 99),
        "can_cycle_us": {"p50": _pct(can_cycle * 1e6, 50), "p99": _pct(can_cycle * 1e6, 99)},
        "plan_us_p50": plan_s * 1e6, "reply_at_us_p50": reply_at * 1e6,
        "send_minus_obs_us": stats(s_o), "send_minus_act_us": stats(s_a),
        "predicted": {"send_minus_obs_us": _us(law["send_minus_obs_s"]),
                      "send_minus_act_us": _us(law["send_minus_act_s"])},
        "config": asdict(cfg),
    }


def _of_cycles(recs: np.ndarray, cycles: np.ndarray, field: str) -> np.ndarray:
    """``field`` of the records of ``cycles`` (NaN where there is none)."""
    size = int(max(recs["cycle"].max() if len(recs) else 0, cycles.max() if len(cycles) else 0))
    by_cycle = np.full(size + 2, np.nan)
    by_cycle[recs["cycle"]] = recs[field]
    ok = (cycles >= 0) & (cycles < len(by_cycle))
    out = np.full(len(cycles), np.nan)
    out[ok] = by_cycle[cycles[ok]]
    return out


def _plan_end_of(recs: np.ndarray, cycles: np.ndarray) -> np.ndarray:
    """plan_end of the given cycles."""
    return _of_cycles(recs, cycles, "plan_end")


def _sent_at(recs: np.ndarray, cycles: np.ndarray) -> np.ndarray:
    """t_send of the CAN cycles started in ``cycles``."""
    return _of_cycles(recs, cycles, "t_send")

"""Run a spine with its CAN bus, collect its records, report the timing.

:func:`run` is what ``dmxshm spine`` calls; usable from Python::

    from dmxshm.spine.run import SpineConfig, run
    report, records = run(SpineConfig(schedule="after-sleep", duration_s=2))
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from dmxshm.proc.cpus import usable_cpus
from dmxshm.proc.outcome import Cause, Outcome, describe_signal
from dmxshm.proc.supervisor import Child, Supervisor
from dmxshm.proc.watch import Watch, WatchPolicy
from dmxshm.profiling import Profiler, shm_sizes, steal_s
from dmxshm.settings import START_TIMEOUT_S
from dmxshm.shm import signals
from dmxshm.shm.barrier import Barrier
from dmxshm.shm.registry import Registry
from dmxshm.shm.ring import Ring
from dmxshm.spine.agent import AgentResult, run_spine_agent
from dmxshm.spine.can import BUS_POLL_US, BusResult, run_mock_bus, run_sim_bus
from dmxshm.spine.config import SpineConfig, SpineError, SpineProcessError
from dmxshm.spine.gate import SpinePorts, parties
from dmxshm.spine.loop import request_stop, run_spine
from dmxshm.spine.records import (
    AGENT_ACTION_DTYPE,
    AGENT_OBS_DTYPE,
    CAN_CMD_DTYPE,
    CAN_REPLY_DTYPE,
    RECORD_DTYPE,
)
from dmxshm.spine.result import SpineResult
from dmxshm.spine.run_report import (
    AgentReport,
    SpineBusError,
    SpineRunReport,
    SpineShutDown,
    SpineStopped,
    report,
)
from dmxshm.spine.state_machine import State

__all__ = ["AgentReport", "RunResults", "SpineBusError", "SpineConfig", "SpineError",
           "SpineProcessError", "SpineRun", "SpineRunReport", "SpineShutDown", "SpineStopped",
           "report", "run"]

BUS, AGENT = "can-bus", "spine-agent"  # the children's names (the spine's is "spine")

AGENT_END_GRACE_S = 2.0  # after the spine's end, an agent still busy is hung
# After a spine's end on a bus failure, how long the bus gets to end, so that
# its own end (killed, crashed) names the cause; then it is stopped as silent.
BUS_END_GRACE_S = 0.5
# At the end, how long the spine gets to send its shutdown stops, then the others to end.
SPINE_STOP_GRACE_S = 5.0


@dataclass(frozen=True)
class RunResults:
    """What the processes of a run returned.

    Attributes:
        spine: the spine's result.
        bus: the bus's, None if it did not end by itself (a failed bus is stopped).
        agent: the agent's, or what its supervisor saw of it (None: no agent).
        bus_failure: how the bus ended, when it failed (died, raised) and the
            spine saw it fail: the root cause of the spine's shutdown.
    """

    spine: SpineResult
    bus: BusResult | None = None
    agent: AgentResult | None = None
    bus_failure: Outcome | None = None


class SpineRun(NamedTuple):
    """What a spine run gives: its report (:meth:`SpineRunReport.to_dict` is
    ``dmxshm spine --json``) and its per-cycle records
    (:data:`~dmxshm.spine.records.RECORD_DTYPE`)."""

    report: SpineRunReport
    records: np.ndarray


def run(cfg: SpineConfig, *, profile_interval_s: float | None = None,
        on_profile: Callable[[Profiler], None] | None = None,
        on_progress: Callable[[int], None] | None = None) -> SpineRun:
    """Run the spine and its bus; what ``dmxshm spine`` does.

    Args:
        cfg: the run.
        profile_interval_s: sample every process of the run this often
            (:mod:`dmxshm.profiling`); the report gains ``processes`` and
            ``profile``. None: no profiling.
        on_profile: called after each sample.
        on_progress: called with the number of cycles recorded so far, about
            every 0.1 s while the spine runs.

    Raises:
        SpineError: a process failed or did not finish in time.
        SpineStopped: the spine was stopped by a signal from outside.
    """
    spine_cpu, bus_cpu = cfg.cpus()
    cfg_run = _with_cpu(cfg, spine_cpu)
    # The agent gets a CPU of its own where there is one; else it shares the
    # bus's, and the bus then never polls (a real-time bus polling for the
    # next frame would keep the agent off the CPU while the spine waits for
    # the agent's answer).
    spare = [c for c in usable_cpus() if c not in (spine_cpu, bus_cpu)]
    agent_cpu = spare[-1] if spare else bus_cpu
    bus_poll_us = 0.0 if cfg.agent and agent_cpu == bus_cpu else BUS_POLL_US
    # The most cycles the spine can run: stops until its agent starts it (up
    # to timeout_s), a reset, the acting cycles, the shutdown stops.
    total = (2 * cfg.stop_cycles + int(cfg.timeout_s * cfg.frequency_hz)
             + int(round(cfg.duration_s * cfg.frequency_hz)) + 2)
    with Registry() as reg, Supervisor() as sup:
        cmd = Ring.create(reg, "spine.cmd", CAN_CMD_DTYPE, 2)
        reply = Ring.create(reg, "spine.reply", CAN_REPLY_DTYPE, 2)
        records = Ring.create(reg, "spine.records", RECORD_DTYPE, total + 8, "overwrite")
        records.bind("reader", "supervisor")
        start = Barrier.create(reg, "spine.start", parties(agent=bool(cfg.agent)))
        agent_rings: dict[str, str] = {}
        if cfg.agent:
            for key, dt in (("agent_obs", AGENT_OBS_DTYPE), ("agent_action", AGENT_ACTION_DTYPE)):
                ring = Ring.create(reg, f"spine.{key}", dt, 4, "overwrite")
                agent_rings[key] = ring.name
                ring.close()
        ports = SpinePorts(cmd=cmd.name, reply=reply.name, records=records.name,
                           start=start.name, **agent_rings)
        start.close()
        cmd.close()
        reply.close()
        profiler: Profiler | None = None
        steal_at_start = steal_s()
        try:
            if cfg.actuation == "mock":
                bus = sup.start(BUS, run_mock_bus, ports, cfg.can_cycle_s, cfg.reply_at,
                                cfg.jitter_s, cfg.seed, cfg.timeout_s, cfg.bus_delay_s,
                                bus_poll_us, cpu=bus_cpu)
            else:
                bus = sup.start(BUS, run_sim_bus, ports, cfg.frequency_hz, cfg.seed,
                                cfg.timeout_s + START_TIMEOUT_S, bus_poll_us, cpu=bus_cpu)
            # Its handlers only record a stop: the loop goes to SHUTDOWN and sends stops.
            spine = sup.start("spine", run_spine, cfg_run, ports, cpu=spine_cpu,
                              on_stop=request_stop)
            if cfg.agent:
                sup.start(AGENT, run_spine_agent, ports, cfg.agent,
                          cfg.timeout_s + START_TIMEOUT_S, cpu=agent_cpu)
            if profile_interval_s is not None:
                profiler = Profiler({"supervisor": os.getpid(), **sup.pids()},
                                    profile_interval_s, shm=lambda: shm_sizes(reg.names),
                                    light=frozenset({"spine"}))
            results = _watch(sup, deadline=time.monotonic() + START_TIMEOUT_S
                             + total / cfg.frequency_hz + 2 * cfg.timeout_s,
                             profiler=profiler, on_profile=on_profile,
                             on_progress=(lambda: on_progress(records.stats().writes))
                             if on_progress else None, stall_limit_s=cfg.timeout_s)
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
    # CPU time the hypervisor gave to others during the run, summed over CPUs:
    # tells overruns of a virtual machine's own descheduling from the spine's.
    steal_now = steal_s()
    if profiler is not None:
        profiler.stop()
    rep = report(cfg, recs, done, (spine_cpu, bus_cpu),
                 host_steal_s=None if steal_at_start is None or steal_now is None
                 else steal_now - steal_at_start,
                 agent=results.agent,
                 bus_scheduling=results.bus.scheduling if results.bus is not None else None,
                 shm_bytes=shm_bytes,
                 profile=profiler.report() if profiler is not None else None)
    _raise_unless_done(cfg, done, spine.pid, bus.pid, rep, recs, results.bus_failure)
    return SpineRun(rep, recs)


def _raise_unless_done(cfg: SpineConfig, done: SpineResult, spine_pid: int, bus_pid: int,
                       rep: SpineRunReport, recs: np.ndarray,
                       bus_failure: Outcome | None = None) -> None:
    """Raise what ended the spine early, if anything did (a failed bus first: its
    stops are unconfirmed, whatever else happened; ``bus_failure`` says how the
    bus itself ended, if it died or raised).

    Raises:
        SpineBusError: the bus fell silent, died or refused a command.
        SpineShutDown: a step of the spine's cycle raised.
        SpineStopped: a signal from outside stopped the spine.
    """
    shutdown = done.states[State.SHUTDOWN.name]
    went = f"went to SHUTDOWN after {done.cycles - shutdown} cycles"
    if done.bus_error is not None:
        spine_saw = (f"The spine (pid {spine_pid}) saw: {done.bus_error}; it {went} and tried "
                     f"to send {shutdown} stop commands, unconfirmed ({done.unsent_commands} "
                     f"not taken by the bus). It waits timeout_s ({cfg.timeout_s:g} s) for a "
                     "reply.")
        # The bus's own end last (where the trouble started: the line a reader sees
        # first at the bottom of a terminal), with its traceback only if it raised.
        bus = (f"CAN bus {bus_failure.headline()}." if bus_failure is not None
               else f"CAN bus {BUS} (pid {bus_pid}) failed.")
        tb = (bus_failure.traceback.rstrip() if bus_failure is not None
              and bus_failure.cause in (Cause.RAISED, Cause.PEER) else "")
        raise SpineBusError(f"{spine_saw}\n{bus}"
                            + (f"\n--- traceback of {BUS} ---\n{tb}" if tb else ""), rep, recs)
    if done.error is not None:
        raise SpineShutDown(f"spine (pid {spine_pid}) failed and {went}, sending its stops:"
                            f"\n{done.error.rstrip()}", rep, recs)
    if done.stop_signal:  # someone else stopped it: the run is not what was asked for
        raise SpineStopped(
            f"spine (pid {spine_pid}) was stopped by {describe_signal(done.stop_signal)} "
            f"after {done.cycles} cycles; it sent its shutdown stops", rep, recs)


def _watch(sup: Supervisor, deadline: float, profiler: Profiler | None = None,
           on_profile: Callable[[Profiler], None] | None = None,
           on_progress: Callable[[], None] | None = None,
           stall_limit_s: float | None = None) -> RunResults:
    """Gather the children's results until all ended; the agent's failure is tolerated,
    and so is a bus that the spine found failed (it is stopped, not awaited).

    After the first failure the others get the report grace of the watch
    policy (:mod:`dmxshm.proc.watch`), then the root cause is named: the
    process that died first, not the peers that timed out waiting for it.

    Raises:
        SpineProcessError: the spine or its bus died, raised or stalled the run,
            except a bus failure the spine reported (the result then has its
            ``bus_failure``, and the run raises :class:`SpineBusError`).
        SpineError: the run overstayed ``deadline``.
    """
    # A process stopped (SIGSTOP) longer than stall_limit_s ends the run, named.
    watch = Watch(sup, WatchPolicy(tolerated=frozenset({AGENT}), stall_limit_s=stall_limit_s))
    spine = sup.child("spine")
    spine_done_at: float | None = None
    agent_hung = False
    while watch.step():
        signals.check()
        if watch.failing:  # only the report grace runs now
            continue
        done = _result(spine)
        if done is not None and spine_done_at is None:
            spine_done_at = time.monotonic()
            if profiler is not None:  # the others are still there
                profiler.final_sample()
        left = {c.name for c in sup.children if c.outcome is None} - ({AGENT} if agent_hung
                                                                        else set())
        if not left:
            break
        if done is not None and spine_done_at is not None:
            waited = time.monotonic() - spine_done_at
            if left == {AGENT} and waited > AGENT_END_GRACE_S:
                # The spine never waits for its agent; neither does its supervisor.
                agent_hung = True
                break
            if left == {BUS} and done.bus_error is not None and waited > BUS_END_GRACE_S:
                break  # a silent bus: stopped, not awaited
        if profiler is not None and spine_done_at is None and profiler.maybe_sample() \
                and on_profile is not None:
            on_profile(profiler)
        if time.monotonic() > deadline:
            raise SpineError(f"{', '.join(sorted(left))} did not finish in time")
        if on_progress is not None and spine.report is None:
            on_progress()
    done = _result(spine)
    cause = watch.failure()
    bus_failure = None
    if cause is not None:
        if cause.name != BUS or done is None or done.bus_error is None:
            raise SpineProcessError.of(cause)
        bus_failure = cause  # the spine saw it, went to SHUTDOWN and sent its stops
    assert done is not None  # every end but the spine's own success raised above
    bus = _result(sup.child(BUS))
    return RunResults(spine=done, bus=bus, agent=_agent_result(sup, agent_hung),
                      bus_failure=bus_failure)


def _result(child: Child) -> Any:
    """What ``child`` returned, once it ended well; None until then, or if it failed."""
    outcome = child.outcome
    return outcome.result if outcome is not None and outcome.ok else None


def _agent_result(sup: Supervisor, hung: bool) -> AgentResult | None:
    """What the agent did, or what was seen of it (None: no agent, or not ended)."""
    agent = next((c for c in sup.children if c.name == AGENT), None)
    if agent is None:
        return None
    if hung:
        return AgentResult(hung=True)
    outcome = agent.outcome
    if outcome is None:
        return None
    # A failed agent is tolerated: the spine expired its action and went on.
    return outcome.result if outcome.ok else AgentResult(failed=outcome.describe())


def _with_cpu(cfg: SpineConfig, cpu: int) -> SpineConfig:
    from dataclasses import replace

    return replace(cfg, cpu=cpu)



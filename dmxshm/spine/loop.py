"""The spine's cycle, in Vulp's order, for both schedules.

Each cycle: (1) build the observation from the latest servo replies, (2)
take the action (plan), (3) collect the CAN cycle started in the previous
cycle and keep its replies, (4) start the next CAN cycle with the new
commands. The schedules order these steps differently:

* ``after-action``, ``plan . (can // sleep)``: 1, 2, 3, 4 at each tick; the
  CAN cycle starts when planning ends and runs while the spine sleeps.
* ``after-sleep``, ``(plan // can) . sleep``: 3, 4, 1, 2 at each tick; the
  CAN cycle starts at the tick with the action planned in the previous
  cycle, and runs while the spine plans.

The loop drives a :class:`~dmxshm.spine.bus.Bus`: a ``dmxshm spine`` bus
process (:class:`~dmxshm.spine.bus.CanLink`), or a network's engine
(:class:`~dmxshm.spine.engine_bus.EngineBus`). Its actions come from the
built-in planner or an agent side: an agent that answers the spine's
observations (:class:`~dmxshm.spine.agent.AgentLink`), or a network's agents
(:class:`~dmxshm.spine.agent_commands.AgentCommands`).

The spine sends stop commands for ``stop_cycles`` cycles before it acts and
again before it ends, and never waits for anything but the bus.

Every end goes through SHUTDOWN (:mod:`~dmxshm.spine.state_machine`); the
loop never raises. A bus that falls silent (no reply within its timeout),
dies or refuses a command sends the spine to SHUTDOWN in that very cycle,
whose command becomes a stop. The spine then still tries to send its stops,
each waiting at most half a period for room, since they cannot be confirmed;
its result says what failed (``bus_error``), and its supervisor raises it.
"""

from __future__ import annotations

import gc
import math
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from dmxshm.errors import DmxError
from dmxshm.proc.gate import wait_for_start
from dmxshm.shm.ring import Ring
from dmxshm.spine.agent import AgentLink, AgentSide
from dmxshm.spine.bus import Bus, CanLink
from dmxshm.spine.clock import SynchronousClock, ask_realtime, spin_until_time
from dmxshm.spine.config import LoopSettings, SpineConfig
from dmxshm.spine.gate import SpinePorts, party
from dmxshm.spine.records import RECORD_DTYPE
from dmxshm.spine.result import SpineResult
from dmxshm.spine.state_machine import ShutdownReason, State, StateMachine

START_DELAY_S = 0.01  # from the end of the start gate to the first tick
REPLY_POLL_US = 300.0
"""How long step 3 polls for the bus's replies before it sleeps on the ring: an
agent that answers early starts the CAN cycle early, and the next cycle's
step 3 then comes before the bus has replied. A spine that slept there took
50 us (p50) to wake; a spine that polled all the time would be throttled by
the kernel (real-time tasks get 95% of each second)."""
# Once the bus failed, a command waits at most this share of a period for
# room in the command ring: the stops keep the spine's period, whatever the bus does.
FAILED_BUS_WAIT_PERIODS = 0.5

_stop_requested: int | None = None  # the signal that asked for a stop


def request_stop(signum: int, frame: object) -> None:
    """Signal handler: only record (the first signal: Ctrl-C, then its SIGTERM, is a
    Ctrl-C); the loop moves to SHUTDOWN and sends stops."""
    global _stop_requested
    if _stop_requested is None:
        _stop_requested = signum


class Observation(NamedTuple):
    """What an observation was built from: the replies of one CAN cycle."""

    cycle: int = -1  # the spine cycle that started that CAN cycle
    t_reply: float = math.nan  # when its last servo reply was made


class Command(NamedTuple):
    """What a cycle sends to the bus, and where it comes from (a record's fields)."""

    t_act: float  # when it was computed (the end of its plan)
    act_cycle: int  # the cycle whose plan computed it
    obs: Observation  # the observation it answers
    wheels_rad_s: np.ndarray  # the servo commands (one pair, or one per robot)
    acted: bool  # an action, not a stop


class Plan(NamedTuple):
    """Steps 1-2 of a cycle: when the plan ran, and the command it chose."""

    start: float
    end: float
    command: Command


class Step(NamedTuple):
    """What a cycle did: its plan's times, and what it sent when (NaN: nothing)."""

    plan_start: float
    plan_end: float
    t_send: float
    sent: Command


_STOP = np.zeros(2)  # every robot's stop: a bus broadcasts one pair to all
_NOTHING = Command(math.nan, -1, Observation(), _STOP, False)  # after-sleep's first cycle
_FAILED_STEP = Step(math.nan, math.nan, math.nan, _NOTHING)


@contextmanager
def no_gc() -> Iterator[None]:
    """A real-time loop takes no garbage-collection pauses: collect, then none until
    the end."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def run_spine(cfg: SpineConfig, ports: SpinePorts) -> SpineResult:
    """Main process of the spine: attach, wait at the start gate, run :class:`SpineLoop`."""
    scheduling = ask_realtime() if cfg.realtime_priority else "SCHED_OTHER (not asked)"
    bus = CanLink(Ring.attach(ports.cmd, side="writer", role="spine", spin_us=0),
                  Ring.attach(ports.reply, side="reader", role="spine",
                              spin_us=REPLY_POLL_US))
    records = Ring.attach(ports.records, side="writer", role="spine")
    agent = AgentLink(ports, cfg.action_timeout_s) if cfg.agent else None
    wait_for_start(ports.start, party=party("spine"), role="spine")
    try:
        with no_gc():
            done = SpineLoop(cfg.loop_settings(), bus, records, agent).run()
        return replace(done, scheduling=scheduling)
    finally:
        if agent is not None:
            agent.close()
        bus.close()
        records.close()


class SpineLoop:
    """The spine's loop: its state, and the steps of a cycle as methods.

    Args:
        settings: the run.
        bus: the bus it drives.
        records: ring of the per-cycle records (writer side).
        agent: the agent side, or None for the built-in planner.
        history: also keep each cycle's record here, by cycle (the records
            ring holds the newest only); :attr:`LoopSettings.most_cycles` long.
    """

    def __init__(self, settings: LoopSettings, bus: Bus, records: Ring,
                 agent: AgentSide | None = None, history: np.ndarray | None = None) -> None:
        self.settings = settings
        self.bus, self.records, self.agent, self.history = bus, records, agent, history
        self.period_s = 1.0 / settings.frequency_hz
        self.after_sleep = settings.schedule == "after-sleep"
        self.observed = agent is None or agent.observes
        self.machine = StateMachine(
            stop_cycles=settings.stop_cycles, acting_cycles=settings.acting_cycles,
            shutdown_cycles=settings.shutdown_cycles, start_limit=settings.start_limit,
            has_agent=agent is not None)
        self.clock = SynchronousClock(self.period_s, start=time.perf_counter() + START_DELAY_S)
        self.latest = Observation()  # from the last CAN cycle collected
        self.inflight: int | None = None  # the cycle that started the CAN cycle in flight
        self.pending: Command | None = None  # after-sleep: planned, sent next cycle
        # start, reply, end of the CAN cycle collected; when the spine began to
        # collect it, and when its replies reached the spine
        self.can = np.full(5, math.nan)
        self.can_cycle = -1  # the cycle that started the CAN cycle collected
        self.unsent = 0
        self._forward = np.full(2, settings.wheel_speed_rad_s)  # the built-in planner's action
        self._rec = np.zeros((), RECORD_DTYPE)

    def run(self) -> SpineResult:
        """Run cycles until SHUTDOWN has sent its stops; never raises."""
        machine, agent = self.machine, self.agent
        k = 0
        while True:
            leaving_reset = machine.state is State.RESET
            if not machine.begin_cycle(_stop_requested, agent is not None and agent.started):
                break
            if agent is not None and leaving_reset:
                agent.forget()
            t_tick = self.clock.wait_for_next_tick()
            self.can[:] = math.nan
            self.can_cycle = -1
            try:
                if agent is not None and machine.state is State.SEND_STOPS:
                    agent.take()  # an agent starts the spine by sending anything
                step = self._after_sleep(k) if self.after_sleep else self._after_action(k)
            except Exception:  # noqa: BLE001  a real-time loop shuts down, it never raises
                machine.fail(ShutdownReason.ERROR, f"cycle {k}: {traceback.format_exc()}")
                step = _FAILED_STEP
            machine.end_cycle()
            self._record(k, t_tick, step)
            k += 1
        self._collect()  # the last CAN cycle: its replies confirm the last stop
        self.bus.end()
        self.records.close_writer()
        return self._result(k)

    # -- the schedules --------------------------------------------------------------
    def _after_action(self, k: int) -> Step:
        """``plan . (can // sleep)``: plan, collect, send this plan's command."""
        plan = self._plan(k)
        self._collect()
        sent, t_send = self._send(k, plan.command)
        return Step(plan.start, plan.end, t_send, sent)

    def _after_sleep(self, k: int) -> Step:
        """``(plan // can) . sleep``: collect, send the previous cycle's plan, plan."""
        self._collect()
        sent, t_send = (_NOTHING, math.nan) if self.pending is None else \
            self._send(k, self.pending)
        plan = self._plan(k)
        self.pending = plan.command
        return Step(plan.start, plan.end, t_send, sent)

    # -- the steps ------------------------------------------------------------------
    def _plan(self, k: int) -> Plan:
        """Steps 1-2: publish the observation, then take an action, or a stop."""
        obs, machine, agent = self.latest, self.machine, self.agent
        start = time.perf_counter()
        if agent is not None:
            agent.publish(k, obs.cycle, obs.t_reply, machine.state)
        if not machine.acting:
            return Plan(start, start, Command(start, k, obs, _STOP, False))
        if agent is None:  # the built-in planner works T_p
            end = spin_until_time(start + self.settings.plan_s)
            machine.planned(True)
            return Plan(start, end, Command(end, k, obs, self._forward, True))
        # The agent plans in the spine's planning time: its answer to this
        # observation goes out with the plan's command when it comes within
        # T_p (after-action: in this cycle's CAN cycle; after-sleep: the next).
        # The plan lasts T_p whoever plans: a CAN cycle started earlier would
        # end earlier, and the next cycle's step 3 would wait for the one
        # after it, each a little later (T - T_c is only 100 us at 1 kHz):
        # measured, such sends drifted by tens of us a cycle into a skipped tick.
        until = start + self.settings.plan_s
        action = agent.take(answer_to=obs.cycle, until=until)
        end = spin_until_time(until)
        machine.planned(action is not None)
        if action is None:
            return Plan(start, end, Command(start, k, obs, _STOP, False))
        answered = Observation(int(action["obs_cycle"]), float(action["t_obs"]))
        t_act = float(action["t_act"])
        return Plan(start, end, Command(t_act, k, answered, action["wheels_rad_s"].copy(),
                                        True))

    def _collect(self) -> None:
        """Step 3: the replies of the CAN cycle started last cycle.

        It waits up to the bus timeout for them (a bus that is never waited
        for gives what it has); a bus that already failed is not waited for.
        A failure sends the spine to SHUTDOWN.
        """
        started_in, self.inflight = self.inflight, None
        if started_in is None:
            return
        collect_start = time.perf_counter()
        wait_s = self.settings.bus_timeout_s if self.machine.bus_error is None else None
        try:
            r = self.bus.collect(wait_s)
        except DmxError as exc:
            self.machine.fail(ShutdownReason.BUS, f"no reply to the CAN cycle started in "
                                                  f"cycle {started_in}: "
                                                  f"{type(exc).__name__}: {exc}")
            return
        if r is None:
            return
        seen = time.perf_counter()
        self.latest = Observation(r.cycle, r.t_reply)
        self.can[:] = (r.t_start, r.t_reply, r.t_end, collect_start, seen)
        self.can_cycle = r.cycle

    def _send(self, k: int, command: Command) -> tuple[Command, float]:
        """Step 4: start the next CAN cycle with ``command``.

        After a failure only stops go out. Returns what was sent, and when
        (NaN: the bus did not take it, and the spine went to SHUTDOWN).
        """
        machine = self.machine
        failed = machine.bus_error is not None or machine.error is not None
        if command.acted and failed:
            command = command._replace(wheels_rad_s=_STOP, acted=False)
        if not self.observed:  # the observation behind the frame: the newest reply
            command = command._replace(obs=self.latest)
        wait_s = self.settings.bus_timeout_s if machine.bus_error is None else \
            FAILED_BUS_WAIT_PERIODS * self.period_s
        t_send = time.perf_counter()
        try:
            self.bus.send(k, t_send, command.wheels_rad_s, wait_s)
        except DmxError as exc:
            self.unsent += 1
            machine.fail(ShutdownReason.BUS, f"the command of cycle {k} was not taken: "
                                             f"{type(exc).__name__}: {exc}")
            return command, math.nan
        self.inflight = k
        return command, t_send

    def _record(self, k: int, t_tick: float, step: Step) -> None:
        """The cycle's record (fields: :mod:`~dmxshm.spine.records`)."""
        rec, sent, clock = self._rec, step.sent, self.clock
        rec["cycle"] = k
        rec["t_tick"] = t_tick
        rec["t_send"] = step.t_send
        rec["t_act"] = sent.t_act
        rec["act_cycle"] = sent.act_cycle
        rec["obs_cycle"] = sent.obs.cycle
        rec["t_obs"] = sent.obs.t_reply
        rec["plan_start"] = step.plan_start
        rec["plan_end"] = step.plan_end
        rec["can_cycle"] = self.can_cycle
        (rec["can_start"], rec["can_reply"], rec["can_end"], rec["collect_start"],
         rec["can_seen"]) = self.can
        rec["period_s"] = clock.measured_period_s
        rec["slack_s"] = clock.slack_s
        rec["skipped"] = clock.skipped
        rec["stopping"] = int(not sent.acted)  # a stop, not an action, was sent
        rec["state"] = int(self.machine.state)
        wheels = sent.wheels_rad_s  # with a command per robot, the first robot's
        rec["wheels_rad_s"] = wheels if wheels.ndim == 1 else wheels[0]
        self.records.write(rec)
        if self.history is not None and k < len(self.history):
            self.history[k] = rec

    def _result(self, cycles: int) -> SpineResult:
        machine, agent = self.machine, self.agent
        reason = machine.reason
        assert reason is not None  # the loop ends in SHUTDOWN only
        return SpineResult(
            cycles=cycles, acting_cycles=machine.counts[State.ACT],
            skipped_cycles=self.clock.skipped,
            states={s.name: n for s, n in machine.counts.items()},
            shutdown_reason=reason, stop_signal=machine.stop_signal,
            bus_error=machine.bus_error, error=machine.error, unsent_commands=self.unsent,
            expired_actions=agent.expired if agent is not None else 0,
            agent_started=agent.started if agent is not None else None)

"""The spine's configuration: what its loop needs (:class:`LoopSettings`), a standalone
run's (:class:`SpineConfig`), and a standalone run's errors (those that carry what the
run did, :class:`~dmxshm.spine.run_report.SpineShutDown` and its kind, beside its report)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from dmxshm.errors import DmxError
from dmxshm.proc.cpus import cpu_ranges, usable_cpus
from dmxshm.proc.outcome import Outcome
from dmxshm.proc.watch import ChildFailedError, explain, short_cause
from dmxshm.spine.agent import resolve_policy
from dmxshm.spine.law import SCHEDULES


class SpineError(DmxError):
    """The spine or its bus failed; the message names which and why."""


class SpineProcessError(SpineError, ChildFailedError):
    """A process of the run (the spine, its CAN bus) died, raised or stalled it.

    It names the root cause: the process where the trouble started, not the
    peers that then timed out waiting for it. One of the error family of every
    run with children (:class:`~dmxshm.proc.watch.ChildFailedError`).

    Attributes:
        role: the process's name (``spine``, ``can-bus``).
        pid: its pid.
        cause: how it ended, in a few words.
        outcome: how it ended, in full (:class:`~dmxshm.proc.outcome.Outcome`).
    """

    def __init__(self, message: str, *, outcome: Outcome) -> None:
        ChildFailedError.__init__(self, message, role=outcome.name, pid=outcome.pid,
                                  cause=short_cause(outcome), outcome=outcome)

    @classmethod
    def of(cls, o: Outcome, longer_wait: str | None = None) -> SpineProcessError:
        """The error that reports the root cause ``o``."""
        return cls(explain(o, longer_wait), outcome=o)


@dataclass(frozen=True)
class LoopSettings:
    """What the loop needs of its run (:meth:`SpineConfig.loop_settings`, or a network spine's).

    Attributes:
        frequency_hz: the spine's frequency (1/T).
        schedule: ``after-action`` or ``after-sleep``.
        stop_cycles: stop commands sent before acting and before ending.
        acting_cycles: IDLE and ACT cycles to run, then SHUTDOWN.
        start_limit: with an agent, the most SEND_STOPS cycles to wait for it.
        bus_timeout_s: the longest the spine waits for its bus (a reply, room for a command).
        plan_s: the plan's time T_p (the built-in planner works it; an agent
            that answers observations has it to answer).
        wheel_speed_rad_s: what the built-in planner commands.
    """

    frequency_hz: float
    schedule: str
    stop_cycles: int
    acting_cycles: int
    start_limit: int
    bus_timeout_s: float
    plan_s: float
    wheel_speed_rad_s: float = 0.0

    @property
    def shutdown_cycles(self) -> int:
        """SHUTDOWN cycles: after-sleep sends each action one cycle after planning
        it, so one more cycle makes its last ``stop_cycles`` sends all stops."""
        return self.stop_cycles + int(self.schedule == "after-sleep")

    @property
    def most_cycles(self) -> int:
        """The most cycles a loop runs: its stops until its agent starts it (at
        most ``start_limit``), a reset, the acting cycles, the shutdown stops."""
        return self.start_limit + 1 + self.acting_cycles + self.shutdown_cycles


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
        bus_delay_s: mock bus: how long after it receives a CAN frame it starts
            the cycle (a slower link; tests inject a delivery delay with it).
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
    bus_delay_s: float = 0.0
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
        usable = usable_cpus()
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
            (self.bus_delay_s == 0 or self.actuation == "mock",
             "a bus delay applies to the mock bus (--actuation mock)"),
            (self.bus_delay_s >= 0 and self.bus_delay_s + self.can_cycle_s < 1 / self.frequency_hz,
             "the bus delay must be 0 or more, and with the CAN cycle shorter than the period"),
            (self.action_timeout_s > 0, "the action timeout must be positive"),
            (self.duration_s > 0, "duration must be positive"),
            (self.stop_cycles >= 5, "a spine sends at least 5 stop cycles"),
            (self.cpu is None or self.cpu in usable,
             _not_usable(f"CPU {self.cpu} (--cpu, the spine's)", usable)),
            (self.bus_cpu is None or self.bus_cpu in usable,
             _not_usable(f"CPU {self.bus_cpu} (bus_cpu, the CAN bus's)", usable)),
        ]
        for ok, message in checks:
            if not ok:
                raise SpineError(message)
        if self.agent:
            # Here, not at the top: the spine process unpickles this class, and
            # must not load the policies (their built-ins bring the world's physics).
            from dmxshm.policies import agent_spec

            try:
                if self.agent != "forward":  # a file's path, made absolute: the agent loads it
                    object.__setattr__(self, "agent", agent_spec(self.agent))
                resolve_policy(self.agent)  # a bad agent fails here, not in a child
            except DmxError as exc:
                raise SpineError(str(exc)) from None

    def loop_settings(self) -> LoopSettings:
        """What the loop needs of this run: it waits ``timeout_s`` for its bus, and
        as long (after its stops) for its agent to start it."""
        return LoopSettings(
            frequency_hz=self.frequency_hz, schedule=self.schedule,
            stop_cycles=self.stop_cycles,
            acting_cycles=int(round(self.duration_s * self.frequency_hz)),
            start_limit=self.stop_cycles + int(self.timeout_s * self.frequency_hz),
            bus_timeout_s=self.timeout_s, plan_s=self.plan_s,
            wheel_speed_rad_s=self.wheel_speed_rad_s)

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


def _not_usable(what: str, usable: list[int]) -> str:
    return (f"{what} is not one this process may run on: its affinity (taskset -cp "
            f"{os.getpid()}) allows CPUs {cpu_ranges(usable)} only; choose one of those")

"""The spine inside a realtime network (``dmxshm run --mode realtime --spine``).

One pinned spine stands between the agents and the engine, as on a real
robot: it is the only writer of the robots' commands, and its CAN cycles
drive the physics. It is ``dmxshm spine``'s loop
(:class:`~dmxshm.spine.loop.SpineLoop`, schedule ``after-action``), with the
engine as its bus (:class:`~dmxshm.spine.engine_bus.EngineBus`) and the
agents' newest commands as its actions
(:class:`~dmxshm.spine.agent_commands.AgentCommands`). Each cycle, at its own
frequency, it (1) takes the newest command of each agent (reusing one until
it is ``command_timeout_s`` old, then stopping the robot), (2) keeps the
engine's newest reply, and (3) starts the next CAN cycle: it sends the
commands of every robot to the engine, which applies them in one physics
step of ``1 / spine_hz`` and replies with the wheel states after it. The
spine never waits for the agents or the engine.

Its states are :class:`~dmxshm.spine.state_machine.StateMachine`'s: SEND_STOPS
for at least :data:`STOP_CYCLES` cycles and until an agent's first command
(at most ``wait_timeout_s``), one RESET cycle (stops; the commands before it
are forgotten), ``duration_s`` of ACT cycles (IDLE, stops, while no robot has
a fresh command), then SHUTDOWN stops for :data:`STOP_CYCLES` cycles; then it
closes its frames, and the engine's physics ends with them. SIGINT or SIGTERM
(Ctrl-C, a stopped run) only records the request (:func:`request_stop`): the
next cycle goes to SHUTDOWN and the stops are sent, as at a normal end.

Its latency law: the engine replies to a frame T_o after its send
(``spine_reply_at_s``), so the newest reply held at a send is that of the
frame ``floor(T_o / T) + 1`` cycles back, and ``t_send - t_obs = (floor(T_o /
T) + 1) T - T_o`` (:func:`predicted_send_minus_obs_s`). Its report is
``dmxshm spine``'s (:class:`~dmxshm.spine.report.SpineReport`): the measured
``t_send - t_obs`` beside that prediction, which uses the configuration only;
:meth:`NetworkSpineResult.to_dict` writes it under the summary's names.
"""

from __future__ import annotations

import math
import signal
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
import psutil

from dmxshm.proc.outcome import Terminated
from dmxshm.profiling import steal_s
from dmxshm.shm.ring import Ring
from dmxshm.spine import loop
from dmxshm.spine.agent_commands import AgentCommands
from dmxshm.spine.clock import ask_realtime
from dmxshm.spine.config import LoopSettings
from dmxshm.spine.engine_bus import EngineBus, spine_reply_dtype
from dmxshm.spine.law import Law
from dmxshm.spine.loop import SpineLoop, no_gc
from dmxshm.spine.records import RECORD_DTYPE
from dmxshm.spine.report import SpineReport, Stats, measure

__all__ = ["SCHEDULE", "STOP_CYCLES", "NetworkSpine", "NetworkSpineResult", "network_law",
           "network_settings", "predicted_send_minus_obs_s", "request_stop", "run_network_spine",
           "spine_reply_dtype", "total_cycles"]

STOP_CYCLES = 5
"""Stop commands sent before acting and before ending (as ``dmxshm spine``)."""

SCHEDULE = "after-action"
"""The network spine's schedule: plan, then start the CAN cycle (send the frame)."""

_cycling = False  # the cycle loop runs: it acts on a stop request


def request_stop(signum: int, frame: object) -> None:
    """The spine process's SIGINT and SIGTERM handler: record
    (:func:`dmxshm.spine.loop.request_stop`); the loop moves to SHUTDOWN and sends
    its stops. Before the loop (at the start gate, waiting for the others), there
    is nothing to stop safely and nobody to act on a record: the spine unwinds at
    once (:class:`~dmxshm.proc.outcome.Terminated`)."""
    loop.request_stop(signum, frame)
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


class SpineNetworkConfig(Protocol):
    """What the network spine reads of its run's configuration
    (:class:`~dmxshm.network.config.NetworkConfig`)."""

    @property
    def robots(self) -> int: ...
    @property
    def duration_s(self) -> float: ...
    @property
    def spine_hz(self) -> float: ...
    @property
    def spine_reply_at_s(self) -> float: ...
    @property
    def command_timeout_s(self) -> float: ...
    @property
    def wait_timeout_s(self) -> float: ...
    @property
    def pins(self) -> dict[str, int]: ...


class SpineNetworkPlan(Protocol):
    """What the network spine asks of its run's plan (:class:`~dmxshm.network.plan.Plan`)."""

    @property
    def config(self) -> SpineNetworkConfig: ...
    @property
    def agent_robots(self) -> tuple[tuple[int, ...], ...]: ...
    def ring(self, port: str) -> str: ...
    def indexed(self, kind: str) -> list[str]: ...
    def wait_for_start(self, role: str, index: int) -> None: ...


def network_settings(cfg: SpineNetworkConfig) -> LoopSettings:
    """The loop of a network's spine: :data:`STOP_CYCLES` stops, at most
    ``wait_timeout_s`` of them for its agents, ``duration_s`` of acting; the
    plan takes no time (the agents plan in their own processes), and the
    engine is waited for ``wait_timeout_s`` at most (its ring never makes the
    spine wait)."""
    return LoopSettings(
        frequency_hz=cfg.spine_hz, schedule=SCHEDULE, stop_cycles=STOP_CYCLES,
        acting_cycles=max(1, round(cfg.duration_s * cfg.spine_hz)),
        start_limit=STOP_CYCLES + round(cfg.wait_timeout_s * cfg.spine_hz),
        bus_timeout_s=cfg.wait_timeout_s, plan_s=0.0)


def total_cycles(cfg: SpineNetworkConfig) -> int:
    """The most cycles a network spine runs (its records' ring is sized by it)."""
    return network_settings(cfg).most_cycles


def network_law(cfg: SpineNetworkConfig) -> Law:
    """The network spine's law from the configuration alone; t_send - t_act has none
    (t_act is when an agent wrote its command)."""
    return Law(SCHEDULE, cfg.spine_reply_at_s,
               predicted_send_minus_obs_s(1.0 / cfg.spine_hz, cfg.spine_reply_at_s), None)


def _net(s: Stats) -> dict[str, float]:
    """The summary's statistics objects: p50, p99, max."""
    return s.pick("p50", "p99", "max")


@dataclass(frozen=True)
class NetworkSpineResult:
    """What the network spine did: its report, and what only a network has.

    Attributes:
        report: its figures, as ``dmxshm spine``'s (the engine as the bus).
        expired_commands: agents' commands that ran out, per robot.
        received_commands: commands taken from its agent, per robot.
        last_engine_step: the last engine step whose reply it had.
        agent_command_drops: agents' commands overwritten before it took them.
    """

    report: SpineReport
    expired_commands: list[int]
    received_commands: list[int]
    last_engine_step: int
    agent_command_drops: int

    def to_dict(self) -> dict[str, Any]:
        """The summary's ``spine`` (docs/json.md's names, frozen for the network)."""
        r = self.report
        law = r.law
        timing: dict[str, Any] = {
            "records": r.cycles,
            "states": {name: n for name, n in r.states.items() if n},
            "period_us": _net(r.period_us), "period_error_us_p99": r.period_error_us_p99,
            "overruns": dict(r.overruns),
            "delivery_us": {"spine_to_engine": _net(r.spine_to_bus_us),
                            "engine_to_spine": _net(r.bus_to_spine_us)},
            "engine_step_us": _net(r.can_cycle_us),
            "send_minus_obs_us": _net(r.send_minus_obs_us),
            "send_minus_act_us": _net(r.send_minus_act_us),
            "predicted": {"schedule": law.schedule, "reply_at_us": law.reply_at_s * 1e6,
                          "send_minus_obs_us": law.send_minus_obs_s * 1e6},
            "minus_predicted_us": {"send_minus_obs_us": r.obs_minus_law_us.pick("p50", "p99")},
        }
        if r.stop_signal:
            timing["stopped_by"] = signal.Signals(r.stop_signal).name
        return {
            "cpu": r.cpu, "scheduling": r.scheduling, "cycles": r.cycles,
            "stop_cycles": r.cycles - r.acting_cycles, "skipped_cycles": r.skipped_cycles,
            "frequency_hz": r.frequency_hz, "period_us": _net(r.period_us),
            "period_error_us_p99": r.period_error_us_p99,
            "expired_commands": list(self.expired_commands),
            "received_commands": list(self.received_commands),
            "last_engine_step": self.last_engine_step,
            "agent_command_drops": self.agent_command_drops,
            **({} if r.host_steal_s is None else {"host_steal_s": r.host_steal_s}),
            "timing": timing,
        }


class NetworkSpine:
    """The network's spine process, in three parts the process's skeleton calls
    (``dmxshm.network.spine.Spine``, a role of the network): open its ports and
    pin it (:meth:`__init__`), run :class:`~dmxshm.spine.loop.SpineLoop` with the
    engine as its bus once past the start gate (:meth:`cycle`), close
    (:meth:`close`)."""

    def __init__(self, plan: SpineNetworkPlan) -> None:
        cfg = self.cfg = plan.config
        self.cpu = cfg.pins.get("spine", sorted(psutil.Process().cpu_affinity())[-1])
        psutil.Process().cpu_affinity([self.cpu])
        self.scheduling = ask_realtime()
        self.settings = network_settings(cfg)
        self._open: list[Any] = []
        self.agents = self._keep(AgentCommands(
            [Ring.attach(n, side="reader", role="spine", spin_us=0)
             for n in plan.indexed("cmd.agent")],
            plan.agent_robots, cfg.robots, cfg.command_timeout_s))
        self.bus = self._keep(EngineBus(
            Ring.attach(plan.ring("spine.frames"), side="writer", role="spine", spin_us=0),
            Ring.attach(plan.ring("spine.replies"), side="reader", role="spine", spin_us=0),
            end_timeout_s=cfg.wait_timeout_s))
        self.records = self._keep(Ring.attach(plan.ring("spine.records"), side="writer",
                                              role="spine"))
        # Every cycle's record, for the report (the ring in shared memory keeps the newest).
        self.history = np.zeros(self.settings.most_cycles, RECORD_DTYPE)

    def _keep(self, thing: Any) -> Any:
        self._open.append(thing)
        return thing

    def cycle(self) -> NetworkSpineResult:
        """Past the start gate: the cycles until the end, then the report."""
        global _cycling
        cfg = self.cfg
        _cycling = True  # from here a stop is recorded, and sent as SHUTDOWN stops
        steal_at_start = steal_s()
        with no_gc():
            done = SpineLoop(self.settings, self.bus, self.records, self.agents,
                             history=self.history).run()
        steal_now = steal_s()
        report = measure(self.history[:done.cycles], replace(done, scheduling=self.scheduling),
                         network_law(cfg), frequency_hz=cfg.spine_hz, cpu=self.cpu,
                         host_steal_s=None if steal_at_start is None or steal_now is None
                         else steal_now - steal_at_start)
        return NetworkSpineResult(
            report=report, expired_commands=self.agents.expired_per_robot.tolist(),
            received_commands=self.agents.taken.tolist(), last_engine_step=self.bus.last_step,
            agent_command_drops=self.agents.drops())

    def close(self) -> None:
        """Close the agents' rings, the bus and the records, each once."""
        while self._open:
            self._open.pop(0).close()


def run_network_spine(plan: SpineNetworkPlan, index: int = 0) -> NetworkSpineResult:
    """Main of the network's spine process without the network's role skeleton
    (what ``dmxshm.network.spine.run_spine`` runs through it): attach its ports,
    pass the start gate, run :class:`~dmxshm.spine.loop.SpineLoop` with the engine
    as its bus."""
    spine = NetworkSpine(plan)
    try:
        plan.wait_for_start("spine", 0)
        return spine.cycle()
    finally:
        spine.close()

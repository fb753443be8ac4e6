"""The report of a standalone spine run (``dmxshm spine``): typed, and JSON only at the edge.

:class:`SpineRunReport` holds the run's figures (a
:class:`~dmxshm.spine.report.SpineReport`), its configuration, where and how
its bus ran, what its agent did and what its profiler saw;
:meth:`SpineRunReport.to_dict` is ``dmxshm spine --json``, under the names
docs/json.md froze (``tests/test_json_schema.py`` checks them).
:func:`report` makes one from the run's records and results; the errors of a run
that shut down early (:class:`SpineShutDown`) carry it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dmxshm.profiling import ProcessRow, ProfileReport
from dmxshm.settings import JSON_SCHEMA_VERSION
from dmxshm.spine.agent import AgentResult
from dmxshm.spine.config import SpineConfig, SpineError
from dmxshm.spine.law import Law
from dmxshm.spine.report import SpineReport, measure, no_nan, percentile
from dmxshm.spine.result import SpineResult

__all__ = ["AgentReport", "SpineBusError", "SpineRunReport", "SpineShutDown", "SpineStopped",
           "report"]


@dataclass(frozen=True)
class AgentReport:
    """What a run's agent did (``--agent``), as its supervisor and the spine saw it.

    Attributes:
        started: it started the spine (its first action came in time).
        hung: it did not end after the spine did (it was stopped).
        failed: how it failed, if it did (the spine went on without it).
        actions: actions it wrote.
        expired_actions: its actions the spine dropped for being too old.
        round_trip_us_p50, round_trip_us_p99: from writing an action to reading
            the next observation published after it (NaN: no sample).
        round_trip_samples: how many such round trips it timed.
    """

    started: bool
    hung: bool
    failed: str | None
    actions: int
    expired_actions: int
    round_trip_us_p50: float
    round_trip_us_p99: float
    round_trip_samples: int

    @classmethod
    def of(cls, agent: AgentResult, spine: SpineResult) -> AgentReport:
        """From the agent's result and the spine's (which counts what it started and expired)."""
        rtt_us = np.array(agent.round_trips_s) * 1e6
        return cls(started=bool(spine.agent_started), hung=agent.hung, failed=agent.failed,
                   actions=agent.actions, expired_actions=spine.expired_actions,
                   round_trip_us_p50=percentile(rtt_us, 50),
                   round_trip_us_p99=percentile(rtt_us, 99), round_trip_samples=len(rtt_us))

    def to_dict(self) -> dict[str, Any]:
        """The report's ``agent`` object (docs/json.md)."""
        return {"started": self.started, "hung": self.hung, "failed": self.failed,
                "actions": self.actions, "expired_actions": self.expired_actions,
                "round_trip_us": {"p50": self.round_trip_us_p50, "p99": self.round_trip_us_p99,
                                  "samples": self.round_trip_samples}}


@dataclass(frozen=True)
class SpineRunReport:
    """What ``dmxshm spine`` reports of a run.

    Attributes:
        figures: what the run measured, and its law.
        config: the run as asked (``cpu`` None where the spine took the last CPU).
        bus_cpu: the CPU of the CAN bus (None: there was no other CPU than the spine's).
        bus_scheduling: the scheduling the bus got (None: the bus did not report).
        shm_bytes: shared memory the run created.
        agent: what its agent did (None: no ``--agent``).
        processes, profile: ``--profile`` only: the profiler's rows and its
            :class:`~dmxshm.profiling.ProfileReport` (the JSON writes the rows apart).
    """

    figures: SpineReport
    config: SpineConfig
    bus_cpu: int | None
    bus_scheduling: str | None
    shm_bytes: int
    agent: AgentReport | None = None
    processes: list[ProcessRow] | None = None
    profile: ProfileReport | None = None

    @property
    def scheduling(self) -> str:
        """The scheduling the spine got (``SCHED_FIFO priority 10``, or why not)."""
        return self.figures.scheduling

    def to_dict(self) -> dict[str, Any]:
        """``dmxshm spine --json`` (docs/json.md): NaN (no data) as null."""
        out: dict[str, Any] = {"schema_version": JSON_SCHEMA_VERSION, **self.figures.to_dict(),
                               "actuation": self.config.actuation, "bus_cpu": self.bus_cpu,
                               "config": asdict(self.config)}
        if self.agent is not None:
            out["agent"] = self.agent.to_dict()
        out["bus_scheduling"] = self.bus_scheduling
        out["shm_bytes"] = self.shm_bytes
        if self.processes is not None:
            out["processes"] = [row.to_dict() for row in self.processes]
        if self.profile is not None:
            out["profile"] = self.profile.to_dict(with_processes=False)
        return no_nan(out)


def report(cfg: SpineConfig, recs: np.ndarray, spine: SpineResult,
           cpus: tuple[int, int | None], *, host_steal_s: float | None = None,
           agent: AgentResult | None = None, bus_scheduling: str | None = None,
           shm_bytes: int = 0, profile: ProfileReport | None = None) -> SpineRunReport:
    """The report of a run: its :class:`~dmxshm.spine.report.SpineReport` with the
    law of ``cfg``'s configuration alone, and the run's own figures.

    Args:
        cfg: the run as asked.
        recs: its per-cycle records (:data:`~dmxshm.spine.records.RECORD_DTYPE`).
        spine: what the spine's loop returned.
        cpus: (the spine's CPU, the bus's).
        host_steal_s: the hypervisor's steal time during the run, if known.
        agent: what the agent returned, with ``cfg.agent`` (None there: it
            returned nothing, and the report says so with zeros).
        bus_scheduling: what scheduling the bus got, if it reported.
        shm_bytes: shared memory the run created.
        profile: ``--profile``: the profiler's report (its rows are also
            :attr:`SpineRunReport.processes`).
    """
    law = Law.of(cfg.schedule, 1.0 / cfg.frequency_hz, cfg.plan_s, cfg.reply_at,
                 agent=bool(cfg.agent))
    figures = measure(recs, spine, law, frequency_hz=cfg.frequency_hz, cpu=cpus[0],
                      round_trips=bool(cfg.agent), host_steal_s=host_steal_s)
    return SpineRunReport(
        figures=figures, config=cfg, bus_cpu=cpus[1], bus_scheduling=bus_scheduling,
        shm_bytes=shm_bytes,
        agent=AgentReport.of(agent or AgentResult(), spine) if cfg.agent else None,
        processes=profile.processes if profile is not None else None, profile=profile)


class SpineShutDown(SpineError):
    """The spine shut down before its end, or its bus failed, but it went through
    SHUTDOWN and tried to send its stop commands; ``report`` (its
    :class:`SpineRunReport`) and ``records`` hold what it did until then.

    A step of its cycle that raised ends here (its traceback in the message);
    the subclasses say more.
    """

    def __init__(self, message: str, report: SpineRunReport, records: np.ndarray) -> None:
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

"""``dmxshm spine``'s report is typed, and its JSON keeps docs/json.md's frozen names.

The report is made here from a loop run in this process over a fake bus (no
process, no timing asserted): its typed fields are the figures of the records,
and :meth:`SpineRunReport.to_dict` writes them under the frozen keys, in the
order ``dmxshm spine --json`` has always written them.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import numpy as np
import pytest

from dmxshm.profiling import ProcessRow, ProfileReport
from dmxshm.settings import JSON_SCHEMA_VERSION
from dmxshm.spine.agent import AgentResult
from dmxshm.spine.loop import SpineLoop
from dmxshm.spine.records import RECORD_DTYPE
from dmxshm.spine.result import SpineResult
from dmxshm.spine.run import SpineConfig
from dmxshm.spine.run_report import AgentReport, SpineRunReport, report
from tests.spine.test_network_spine import SETTINGS, Engine, Records
from tests.test_json_schema import SPINE_REPORT, as_read, mismatches

# The top-level keys of dmxshm spine --json, in the order it writes them.
KEYS = ["schema_version", "schedule", "frequency_hz", "cpu", "scheduling", "cycles",
        "acting_cycles", "skipped_cycles", "overruns", "period_us", "period_error_us_p99",
        "can_cycle_us", "plan_us_p50", "reply_at_us_p50", "delivery_us", "send_minus_obs_us",
        "send_minus_act_us", "predicted", "minus_predicted_us", "states", "host_steal_s",
        "actuation", "bus_cpu", "config", "bus_scheduling", "shm_bytes"]
WITH_AGENT = ["schema_version", "agent_round_trip_us", *KEYS[1:KEYS.index("bus_scheduling")],
              "agent",
              *KEYS[KEYS.index("bus_scheduling"):]]
ROWS = [ProcessRow(role="spine", pid=1, affinity=[1], affinity_changes=0, cores_seen=[1],
                   stayed_in_affinity=True, cpu_percent_mean=50.0, cpu_percent_peak=90.0,
                   user_percent_mean=40.0, system_percent_mean=10.0, rss_bytes_peak=1 << 20,
                   uss_bytes=None, pss_bytes=None, ctx_switches_voluntary=3,
                   ctx_switches_involuntary=1, samples=3)]
PROFILE = ProfileReport(interval_s=0.5, samples=3, mean_interval_s=0.5, cores=2,
                        sampler_cpu_fraction=0.001, sampler_cpu_s=0.001, processes=ROWS,
                        timeline={}, shm={}, shm_bytes=0)


@pytest.fixture(scope="module")
def loop_run() -> tuple[np.ndarray, SpineResult]:
    history = np.zeros(SETTINGS.most_cycles, RECORD_DTYPE)
    done = SpineLoop(SETTINGS, Engine(late=1), Records(),  # type: ignore[arg-type]
                     history=history).run()
    return history[:done.cycles], done


def make(loop_run: tuple[np.ndarray, SpineResult], **kw: Any) -> SpineRunReport:
    recs, done = loop_run
    agent = kw.pop("agent", None)
    cfg = SpineConfig(frequency_hz=SETTINGS.frequency_hz, plan_s=0.0, can_cycle_s=2e-4,
                      agent="forward" if agent is not None else None)
    return report(cfg, recs, done, (1, 0), host_steal_s=0.25, agent=agent,
                  bus_scheduling="SCHED_FIFO priority 9", shm_bytes=4096, **kw)


def test_the_typed_report_holds_the_runs_figures(loop_run: tuple[np.ndarray, SpineResult]
                                                 ) -> None:
    recs, done = loop_run
    r = make(loop_run)
    assert (r.figures.cycles, r.figures.acting_cycles) == (len(recs), done.acting_cycles)
    assert r.figures.cpu == 1 and r.bus_cpu == 0 and r.figures.host_steal_s == 0.25
    assert r.scheduling == done.scheduling and r.bus_scheduling == "SCHED_FIFO priority 9"
    assert r.shm_bytes == 4096 and r.config.frequency_hz == SETTINGS.frequency_hz
    assert r.agent is None and r.processes is None and r.profile is None
    assert r.figures.to_frame_us is None  # round trips are an agent's


def test_to_dict_writes_the_frozen_keys_in_their_order(loop_run: tuple[np.ndarray, SpineResult]
                                                        ) -> None:
    r = make(loop_run)
    d = r.to_dict()
    assert list(d) == KEYS
    assert d["schema_version"] == JSON_SCHEMA_VERSION
    assert d["config"] == asdict(r.config) and d["actuation"] == r.config.actuation
    assert (d["cycles"], d["bus_cpu"], d["shm_bytes"]) == (r.figures.cycles, 0, 4096)
    assert d["period_us"] == {"p50": r.figures.period_us.p50, "p99": r.figures.period_us.p99,
                              "max": r.figures.period_us.max}
    assert d["predicted"]["send_minus_obs_us"] == r.figures.law.send_minus_obs_s * 1e6
    assert json.loads(json.dumps(d, allow_nan=False)) == d  # valid JSON as it is


def test_an_agents_report_and_a_profile_join_the_json(loop_run: tuple[np.ndarray, SpineResult]
                                                       ) -> None:
    agent = AgentResult(actions=7, round_trips_s=[1e-3, 2e-3, 3e-3], hung=True)
    r = make(loop_run, agent=agent, profile=PROFILE)
    assert r.agent == AgentReport(started=False, hung=True, failed=None, actions=7,
                                  expired_actions=0, round_trip_us_p50=pytest.approx(2000.0),
                                  round_trip_us_p99=pytest.approx(2980.0),
                                  round_trip_samples=3)
    assert r.processes == ROWS and r.profile is PROFILE
    d = r.to_dict()
    assert list(d) == [*WITH_AGENT, "processes", "profile"]
    assert d["agent"]["round_trip_us"] == {"p50": r.agent.round_trip_us_p50,
                                           "p99": r.agent.round_trip_us_p99, "samples": 3}
    assert d["processes"] == [row.to_dict() for row in ROWS] and d["profile"]["samples"] == 3
    assert "processes" not in d["profile"]  # the rows are written once, apart
    # The frozen schema of a real run's report with an agent (tests/test_json_schema.py).
    assert mismatches(as_read(d), SPINE_REPORT) == []


def test_an_agent_that_timed_nothing_writes_null_not_nan(
        loop_run: tuple[np.ndarray, SpineResult]) -> None:
    r = make(loop_run, agent=AgentResult(failed="it crashed"))
    assert r.agent is not None and r.agent.round_trip_samples == 0
    assert np.isnan(r.agent.round_trip_us_p50)  # typed: NaN, no data
    trip = r.to_dict()["agent"]["round_trip_us"]
    assert trip == {"p50": None, "p99": None, "samples": 0}  # JSON: null

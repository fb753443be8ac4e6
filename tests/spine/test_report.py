"""The spine's report (dmxshm/spine/report.py) against a pipeline built by hand: every
instant is placed from known durations, so each figure has a value known in advance,
not re-derived from the same records by the report's own formula."""

from __future__ import annotations

import numpy as np
import pytest

from dmxshm.spine.law import Law
from dmxshm.spine.records import RECORD_DTYPE
from dmxshm.spine.report import measure
from dmxshm.spine.result import SpineResult
from dmxshm.spine.state_machine import ShutdownReason

PERIOD_S = 5e-3  # T
PLAN_S = 1e-3  # T_p
REPLY_AT_S = 1.5e-3  # T_o
CAN_CYCLE_S = 2e-3  # T_c
TO_BUS_S = 0.2e-3  # a frame sent reaches the bus and starts its cycle
TO_SPINE_S = 0.1e-3  # the bus's replies reach the spine once it looks
CYCLES = 40


def pipeline(schedule: str) -> np.ndarray:
    """Records of an ideal spine: cycle k ticks at k T; after-action plans then sends at
    the plan's end, after-sleep sends at the tick then plans; the CAN cycle of frame k
    starts TO_BUS_S after the send and is collected in cycle k + 1 (its record), and the
    observation of cycle k is that of the CAN cycle collected in k - 1."""
    recs = np.zeros(CYCLES, RECORD_DTYPE)
    k = np.arange(CYCLES)
    tick = k * PERIOD_S
    recs["cycle"], recs["t_tick"] = k, tick
    recs["period_s"] = PERIOD_S
    if schedule == "after-action":
        recs["plan_start"], recs["plan_end"] = tick, tick + PLAN_S
        recs["t_send"] = tick + PLAN_S
        recs["act_cycle"] = k
    else:
        recs["t_send"] = tick
        recs["plan_start"], recs["plan_end"] = tick, tick + PLAN_S
        recs["act_cycle"] = k - 1
    # the CAN cycle collected in cycle k was started by the frame of cycle k - 1
    start = np.concatenate([[np.nan], recs["t_send"][:-1] + TO_BUS_S])
    recs["can_cycle"] = k - 1
    recs["can_start"], recs["can_reply"] = start, start + REPLY_AT_S
    recs["can_end"] = start + CAN_CYCLE_S
    recs["collect_start"] = tick + (PLAN_S if schedule == "after-action" else 0.0)
    recs["can_seen"] = np.maximum(recs["can_end"], recs["collect_start"]) + TO_SPINE_S
    recs["obs_cycle"] = k - 2
    recs["t_obs"] = np.concatenate([[np.nan], recs["can_reply"][:-1]])
    recs["t_act"] = np.where(recs["act_cycle"] >= 0,
                             recs["plan_end"][np.maximum(recs["act_cycle"], 0)], np.nan)
    recs = recs[3:]  # the first cycles have no observation or action yet
    return recs


@pytest.mark.parametrize("schedule", ["after-action", "after-sleep"])
def test_the_reports_figures_are_the_pipelines_known_durations(schedule: str) -> None:
    recs = pipeline(schedule)
    result = SpineResult(cycles=len(recs), acting_cycles=len(recs), skipped_cycles=0,
                         states={"ACT": len(recs)}, shutdown_reason=ShutdownReason.DONE)
    law = Law.of(schedule, PERIOD_S, PLAN_S, REPLY_AT_S)
    f = measure(recs, result, law, frequency_hz=1 / PERIOD_S, cpu=0)
    us = pytest.approx
    assert f.reply_at_us_p50 == us(REPLY_AT_S * 1e6)
    # after-sleep: T_p from the CAN start beside the plan (the send) to the plan's end
    assert f.plan_us_p50 == us(PLAN_S * 1e6)
    assert f.spine_to_bus_us.p50 == us(TO_BUS_S * 1e6)
    assert f.bus_to_spine_us.p50 == us(TO_SPINE_S * 1e6)
    assert f.can_cycle_us.p50 == us(CAN_CYCLE_S * 1e6)
    # t_send - t_obs: two periods, less the reply's instant and the way to the bus
    assert f.send_minus_obs_us.p50 == us((2 * PERIOD_S - REPLY_AT_S - TO_BUS_S) * 1e6)
    act = 0.0 if schedule == "after-action" else PERIOD_S - PLAN_S
    assert f.send_minus_act_us.p50 == us(act * 1e6)
    # measured minus the law: what the handoff to the bus cost, no more
    assert f.obs_minus_law_us.p50 == us(-TO_BUS_S * 1e6)
    assert f.act_minus_law_us is not None and f.act_minus_law_us.p50 == us(0.0, abs=1e-6)
    assert f.period_us.p50 == us(PERIOD_S * 1e6)

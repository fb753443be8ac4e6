"""The report of a spine run: figures of its acting cycles, the law's prediction
from the configuration, and the cost of the pipeline beyond it."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from dmxshm.spine.clock import overruns
from dmxshm.spine.config import SpineConfig
from dmxshm.spine.law import predicted
from dmxshm.spine.loop import SpineResult


def no_nan(obj: Any) -> Any:
    """NaN (no data) as None, so that the JSON report is valid JSON."""
    if isinstance(obj, dict):
        return {k: no_nan(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [no_nan(v) for v in obj]
    if isinstance(obj, float) and obj != obj:
        return None
    return obj


def _us(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e6


def percentile(x: np.ndarray, q: float) -> float:
    return float(np.percentile(x, q)) if len(x) else float("nan")


def report(cfg: SpineConfig, recs: np.ndarray, spine: SpineResult,
           cpus: tuple[int, int | None]) -> dict[str, Any]:
    """The summary of a run: figures of the acting cycles, the law's prediction from
    the configuration alone, and what the pipeline costs beyond it.

    ``predicted`` takes T, the configured T_p (``plan_s``) and the configured
    T_o (``reply_at``): nothing measured. ``minus_predicted_us`` is, cycle by
    cycle, the measured latency minus that: what the handoffs between the
    spine and its bus cost (they run on their own clocks). ``delivery_us``
    splits it: spine-to-bus (the frame sent to the bus starting its cycle)
    and bus-to-spine (the replies made to the spine having them, from when it
    looked for them).
    """
    period = 1.0 / cfg.frequency_hz
    acting = recs[(recs["stopping"] == 0) & (recs["obs_cycle"] >= 0)]
    periods = recs["period_s"][np.isfinite(recs["period_s"])]
    can = recs[np.isfinite(recs["can_end"])]
    sent_before = _sent_at(recs, can["cycle"] - 1)  # t_send of the CAN cycle collected
    can_cycle = can["can_end"] - can["can_start"]  # on the bus's own clock
    to_bus = can["can_start"] - sent_before
    to_spine = can["can_seen"] - np.maximum(can["can_end"], can["collect_start"])
    # T_p and T_o as measured (shown beside the configuration, not used by the law):
    # T_p from the start of the cycle's "plan // can" (after-sleep: the CAN
    # start) or the plan itself (after-action); T_o from the bus's own start.
    if not len(acting):
        plan_s = float("nan")
    elif cfg.schedule == "after-sleep":
        plan_s = float(np.nanmedian(_plan_end_of(recs, acting["act_cycle"])
                                    - _sent_at(recs, acting["act_cycle"])))
    else:
        plan_s = float(np.median(acting["plan_end"] - acting["plan_start"]))
    reply_at = float(np.nanmedian(can["can_reply"] - can["can_start"])) if len(can) \
        else float("nan")
    s_o = (acting["t_send"] - acting["t_obs"]) * 1e6
    s_a = (acting["t_send"] - acting["t_act"]) * 1e6
    law: dict[str, float | None] = dict(predicted(cfg.schedule, period, cfg.plan_s,
                                                  cfg.reply_at))
    if cfg.agent:
        # t_act is when the agent wrote its answer, which depends on the
        # agent: t_send - t_act has no law (it is the agent's round trip to
        # the frame, below). An answer within T_p keeps t_send - t_obs on the
        # law's line, as the built-in planner's.
        law["send_minus_act_s"] = None

    def stats(x: np.ndarray) -> dict[str, float]:
        return {"mean": float(np.mean(x)) if len(x) else float("nan"),
                "p50": percentile(x, 50), "p99": percentile(x, 99)}

    def beyond(x_us: np.ndarray, law_s: float | None) -> dict[str, float] | None:
        return None if law_s is None else stats(x_us - law_s * 1e6)

    out: dict[str, Any] = {}
    if cfg.agent:
        # An action's round trip through the spine, from the agent writing it
        # (t_act): to the CAN frame that carries it (t_send), and to the first
        # observation that reflects it: the one built from that CAN cycle's
        # replies, published at the plan of the cycle two after it
        # (after-action: a cycle plans before it collects) or the next one
        # (after-sleep: a cycle collects, sends, then plans).
        later = 1 if cfg.schedule == "after-sleep" else 2
        reflected = _of_cycles(recs, acting["cycle"] + later, "plan_start")
        to_obs = (reflected - acting["t_act"]) * 1e6
        out["agent_round_trip_us"] = {"to_frame": stats(s_a),
                                      "to_observation": stats(to_obs[np.isfinite(to_obs)])}
    return out | {
        "schedule": cfg.schedule, "frequency_hz": cfg.frequency_hz, "actuation": cfg.actuation,
        "cpu": cpus[0], "bus_cpu": cpus[1], "scheduling": spine.scheduling,
        "cycles": spine.cycles, "acting_cycles": spine.acting_cycles,
        "skipped_cycles": spine.skipped_cycles,
        "overruns": overruns(recs["period_s"], recs["skipped"]),
        "period_us": {"p50": percentile(periods * 1e6, 50), "p99": percentile(periods * 1e6, 99),
                      "max": float(periods.max() * 1e6) if len(periods) else float("nan")},
        "period_error_us_p99": percentile(np.abs(periods - period) * 1e6, 99),
        "can_cycle_us": {"p50": percentile(can_cycle * 1e6, 50),
                         "p99": percentile(can_cycle * 1e6, 99)},
        "plan_us_p50": plan_s * 1e6, "reply_at_us_p50": reply_at * 1e6,
        "delivery_us": {"spine_to_bus": stats(to_bus * 1e6),
                        "bus_to_spine": stats(to_spine * 1e6)},
        "send_minus_obs_us": stats(s_o), "send_minus_act_us": stats(s_a),
        "predicted": {"send_minus_obs_us": _us(law["send_minus_obs_s"]),
                      "send_minus_act_us": _us(law["send_minus_act_s"])},
        "minus_predicted_us": {"send_minus_obs_us": beyond(s_o, law["send_minus_obs_s"]),
                               "send_minus_act_us": beyond(s_a, law["send_minus_act_s"])},
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

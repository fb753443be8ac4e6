"""The report of a spine's run: figures of its acting cycles, the law's prediction
from the configuration, and the cost of the pipeline beyond it.

One report type, :class:`SpineReport`, for both spines: ``dmxshm spine``'s
(:func:`dmxshm.spine.run.run`: :meth:`SpineReport.to_dict` is its JSON) and
the network's (:mod:`~dmxshm.spine.network_spine`: the engine is its bus, and
its summary writes the same figures under the names docs/json.md froze for
it). :func:`measure` makes it from the per-cycle records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dmxshm.spine.clock import overruns
from dmxshm.spine.law import Law
from dmxshm.spine.result import SpineResult
from dmxshm.spine.state_machine import State


def no_nan(obj: Any) -> Any:
    """NaN (no data) as None, so that the JSON report is valid JSON."""
    if isinstance(obj, dict):
        return {k: no_nan(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [no_nan(v) for v in obj]
    if isinstance(obj, float) and obj != obj:
        return None
    return obj


def percentile(x: np.ndarray, q: float) -> float:
    return float(np.percentile(x, q)) if len(x) else float("nan")


@dataclass(frozen=True)
class Stats:
    """Statistics of one figure, cycle by cycle, in microseconds (NaN: no data).

    Example:
        >>> Stats.of(np.array([1e-6, 3e-6, np.nan])).pick("mean", "max")
        {'mean': 2.0, 'max': 3.0}
    """

    mean: float
    p50: float
    p99: float
    max: float

    @classmethod
    def of(cls, seconds: np.ndarray) -> Stats:
        """Of ``seconds``' finite values."""
        us = seconds[np.isfinite(seconds)] * 1e6
        if not len(us):
            return cls(*(4 * [float("nan")]))
        return cls(float(np.mean(us)), percentile(us, 50), percentile(us, 99), float(us.max()))

    def pick(self, *keys: str) -> dict[str, float]:
        """The JSON object of ``keys`` (each output keeps the keys it froze)."""
        return {k: getattr(self, k) for k in keys}


@dataclass(frozen=True)
class SpineReport:
    """What a spine's run measured, and its law (periods and delays in microseconds).

    Attributes:
        schedule, frequency_hz, cpu, scheduling: how it ran.
        cycles, acting_cycles, skipped_cycles, states: as its result's
            (:class:`~dmxshm.spine.result.SpineResult`); ``states`` has all five.
        stop_signal: the signal that stopped it, if one did.
        overruns: the cycles that began after skipped ticks: ``count``, ``longest_us``.
        period_us, period_error_us_p99: periods between cycles, and p99 of |period - T|.
        can_cycle_us: a CAN cycle on the bus's clock (the engine: its physics step).
        plan_us_p50, reply_at_us_p50: T_p and T_o as measured (medians).
        spine_to_bus_us: a frame from its send to the bus starting its cycle.
        bus_to_spine_us: the replies made to the spine having them (from when it looked).
        send_minus_obs_us, send_minus_act_us: of the acting cycles.
        law: the prediction from the configuration alone.
        obs_minus_law_us, act_minus_law_us: measured minus the law, cycle by
            cycle (None where the law is).
        to_frame_us, to_observation_us: with an agent that answers the
            spine's observations, an action's round trip from its writing to
            the frame that carries it and to the first observation that
            reflects it (None otherwise).
        host_steal_s: CPU time the hypervisor gave to others during the run,
            summed over CPUs (None where the OS does not say).
    """

    schedule: str
    frequency_hz: float
    cpu: int
    scheduling: str
    cycles: int
    acting_cycles: int
    skipped_cycles: int
    states: dict[str, int]
    stop_signal: int | None
    overruns: dict[str, float]
    period_us: Stats
    period_error_us_p99: float
    can_cycle_us: Stats
    plan_us_p50: float
    reply_at_us_p50: float
    spine_to_bus_us: Stats
    bus_to_spine_us: Stats
    send_minus_obs_us: Stats
    send_minus_act_us: Stats
    law: Law
    obs_minus_law_us: Stats
    act_minus_law_us: Stats | None
    to_frame_us: Stats | None = None
    to_observation_us: Stats | None = None
    host_steal_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """``dmxshm spine --json``'s keys of these figures (docs/json.md)."""
        act_law = self.law.send_minus_act_s
        out: dict[str, Any] = {}
        if self.to_frame_us is not None and self.to_observation_us is not None:
            out["agent_round_trip_us"] = {"to_frame": _ms(self.to_frame_us),
                                          "to_observation": _ms(self.to_observation_us)}
        return out | {
            "schedule": self.schedule, "frequency_hz": self.frequency_hz, "cpu": self.cpu,
            "scheduling": self.scheduling, "cycles": self.cycles,
            "acting_cycles": self.acting_cycles, "skipped_cycles": self.skipped_cycles,
            "overruns": dict(self.overruns), "period_us": self.period_us.pick("p50", "p99", "max"),
            "period_error_us_p99": self.period_error_us_p99,
            "can_cycle_us": self.can_cycle_us.pick("p50", "p99"),
            "plan_us_p50": self.plan_us_p50, "reply_at_us_p50": self.reply_at_us_p50,
            "delivery_us": {"spine_to_bus": _ms(self.spine_to_bus_us),
                            "bus_to_spine": _ms(self.bus_to_spine_us)},
            "send_minus_obs_us": _ms(self.send_minus_obs_us),
            "send_minus_act_us": _ms(self.send_minus_act_us),
            "predicted": {"send_minus_obs_us": self.law.send_minus_obs_s * 1e6,
                          "send_minus_act_us": None if act_law is None else act_law * 1e6},
            "minus_predicted_us": {
                "send_minus_obs_us": _ms(self.obs_minus_law_us),
                "send_minus_act_us": None if self.act_minus_law_us is None
                else _ms(self.act_minus_law_us)},
            "states": dict(self.states),
            "host_steal_s": self.host_steal_s,
        }


def _ms(s: Stats) -> dict[str, float]:
    """``dmxshm spine``'s statistics objects: mean, p50, p99."""
    return s.pick("mean", "p50", "p99")


def measure(recs: np.ndarray, result: SpineResult, law: Law, *, frequency_hz: float,
            cpu: int, round_trips: bool = False,
            host_steal_s: float | None = None) -> SpineReport:
    """The report of a run from its records (:data:`~dmxshm.spine.records.RECORD_DTYPE`).

    ``law`` takes the configuration alone: nothing measured. The measured
    minus it is, cycle by cycle, what the handoffs between the spine and its
    bus cost (they run on their own clocks); the delivery delays split it:
    spine-to-bus (the frame sent to the bus starting its cycle) and
    bus-to-spine (the replies made to the spine having them, from when it
    looked for them).

    Args:
        recs: every cycle's record, in order.
        result: what the loop returned.
        law: the latency law of its schedule and configuration.
        frequency_hz: the spine's frequency.
        cpu: the CPU it ran on.
        round_trips: its agent answers its observations: measure an action's
            round trips (``to_frame_us``, ``to_observation_us``).
        host_steal_s: the hypervisor's steal time during the run, if known.
    """
    period = 1.0 / frequency_hz
    acting = recs[(recs["stopping"] == 0) & (recs["obs_cycle"] >= 0)]
    periods = recs["period_s"][np.isfinite(recs["period_s"])]
    can = recs[np.isfinite(recs["can_end"])]
    sent = _of_cycles(recs, can["can_cycle"], "t_send")  # the frame of the CAN cycle collected
    # T_p and T_o as measured (shown beside the configuration, not used by the law):
    # T_p from the start of the cycle's "plan // can" (after-sleep: the CAN
    # start) or the plan itself (after-action); T_o from the bus's own start.
    if not len(acting):
        plan_s = float("nan")
    elif law.schedule == "after-sleep":
        plan_s = float(np.nanmedian(_of_cycles(recs, acting["act_cycle"], "plan_end")
                                    - _of_cycles(recs, acting["act_cycle"], "t_send")))
    else:
        plan_s = float(np.median(acting["plan_end"] - acting["plan_start"]))
    reply_at = float(np.nanmedian(can["can_reply"] - can["can_start"])) if len(can) \
        else float("nan")
    s_o = acting["t_send"] - acting["t_obs"]
    s_a = acting["t_send"] - acting["t_act"]
    to_frame = to_observation = None
    if round_trips:
        # An action's round trip through the spine, from the agent writing it
        # (t_act): to the CAN frame that carries it (t_send), and to the first
        # observation that reflects it: the one built from that CAN cycle's
        # replies, published at the plan of the cycle two after it
        # (after-action: a cycle plans before it collects) or the next one
        # (after-sleep: a cycle collects, sends, then plans).
        later = 1 if law.schedule == "after-sleep" else 2
        reflected = _of_cycles(recs, acting["cycle"] + later, "plan_start")
        to_frame, to_observation = Stats.of(s_a), Stats.of(reflected - acting["t_act"])
    return SpineReport(
        schedule=law.schedule, frequency_hz=frequency_hz, cpu=cpu,
        scheduling=result.scheduling, cycles=result.cycles,
        acting_cycles=result.acting_cycles, skipped_cycles=result.skipped_cycles,
        states={state.name: result.states.get(state.name, 0) for state in State},
        stop_signal=result.stop_signal,
        overruns=overruns(recs["period_s"], recs["skipped"]),
        period_us=Stats.of(periods),
        period_error_us_p99=percentile(np.abs(periods - period) * 1e6, 99),
        can_cycle_us=Stats.of(can["can_end"] - can["can_start"]),  # on the bus's own clock
        plan_us_p50=plan_s * 1e6, reply_at_us_p50=reply_at * 1e6,
        spine_to_bus_us=Stats.of(can["can_start"] - sent),
        bus_to_spine_us=Stats.of(can["can_seen"] - np.maximum(can["can_end"],
                                                              can["collect_start"])),
        send_minus_obs_us=Stats.of(s_o), send_minus_act_us=Stats.of(s_a), law=law,
        obs_minus_law_us=Stats.of(s_o - law.send_minus_obs_s),
        act_minus_law_us=None if law.send_minus_act_s is None
        else Stats.of(s_a - law.send_minus_act_s),
        to_frame_us=to_frame, to_observation_us=to_observation, host_steal_s=host_steal_s)


def _of_cycles(recs: np.ndarray, cycles: np.ndarray, field: str) -> np.ndarray:
    """``field`` of the records of ``cycles`` (NaN where there is none)."""
    size = int(max(recs["cycle"].max() if len(recs) else 0, cycles.max() if len(cycles) else 0))
    by_cycle = np.full(size + 2, np.nan)
    by_cycle[recs["cycle"]] = recs[field]
    ok = (cycles >= 0) & (cycles < len(by_cycle))
    out = np.full(len(cycles), np.nan)
    out[ok] = by_cycle[cycles[ok]]
    return out

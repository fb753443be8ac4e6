"""The latency law of the two schedules (derivation: docs/spine.md).

The note's three lines per schedule are the specification; with period T,
plan time T_p and the instant T_o of the last servo reply within a CAN cycle:

=============  ==========================  ==========================
quantity       ``after-action``            ``after-sleep``
=============  ==========================  ==========================
t_send[k]      k T + T_p                   k T
t_act[k]       k T + T_p                   (k - 1) T + T_p
t_obs[k]       (k - 2) T + T_p + T_o       (k - 2) T + T_o
send - obs     2 T - T_o                   2 T - T_o
send - act     0                           T - T_p
=============  ==========================  ==========================

Example:
    >>> predicted("after-sleep", period_s=1e-3, plan_s=3e-4, reply_at_s=9e-4)
    {'send_minus_obs_s': 0.0011, 'send_minus_act_s': 0.0007}
"""

from __future__ import annotations

from dataclasses import dataclass

SCHEDULES = ("after-action", "after-sleep")


@dataclass(frozen=True)
class Law:
    """The latency law from the configuration alone (nothing measured), in seconds.

    Attributes:
        schedule: the schedule it is the law of.
        reply_at_s: the configured T_o it takes.
        send_minus_obs_s: t_send - t_obs.
        send_minus_act_s: t_send - t_act (None: no law, as with an agent).
    """

    schedule: str
    reply_at_s: float
    send_minus_obs_s: float
    send_minus_act_s: float | None

    @classmethod
    def of(cls, schedule: str, period_s: float, plan_s: float, reply_at_s: float,
           agent: bool = False) -> Law:
        """The law of a ``dmxshm spine`` run (:func:`predicted`); with an agent,
        t_send - t_act has none (t_act is when the agent wrote its answer)."""
        p = predicted(schedule, period_s, plan_s, reply_at_s)
        return cls(schedule, reply_at_s, p["send_minus_obs_s"],
                   None if agent else p["send_minus_act_s"])


def predicted(schedule: str, period_s: float, plan_s: float, reply_at_s: float) -> dict[str, float]:
    """t_send - t_obs and t_send - t_act of ``schedule``, in seconds."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, not {schedule!r}")
    send_minus_obs = 2 * period_s - reply_at_s
    send_minus_act = 0.0 if schedule == "after-action" else period_s - plan_s
    return {"send_minus_obs_s": round(send_minus_obs, 12),
            "send_minus_act_s": round(send_minus_act, 12)}

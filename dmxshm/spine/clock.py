"""A synchronous clock in the spirit of Vulp's ``SynchronousClock``.

It ticks at period T on a fixed grid (tick k at ``t0 + k T``): it sleeps
until a short margin before the tick, then spins for the last stretch, since
a sleep on a loaded machine overshoots by tens of microseconds. A cycle that
overran is not made up: the ticks it covered are counted as skipped, as
``ceil((now - next_tick) / period)``, and the clock moves to the next tick
still ahead.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

# Sleep until this long before a tick, then spin (a VM's sleep overshoots
# by 50-100 us).
SPIN_MARGIN_S = 200e-6


RT_PRIORITY = 10  # the spine's SCHED_FIFO priority, as Vulp's SCHED_RR 10


def ask_realtime(priority: int = RT_PRIORITY) -> str:
    """Try SCHED_FIFO at ``priority`` for this process; say plainly what we got."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        return f"SCHED_FIFO priority {priority}"
    except (PermissionError, OSError, AttributeError) as exc:
        return f"SCHED_OTHER (SCHED_FIFO refused: {exc}; grant CAP_SYS_NICE or rtprio)"


def spin_until_time(t: float) -> float:
    """Busy-wait until ``time.perf_counter() >= t``; returns the time reached."""
    clock = time.perf_counter
    now = clock()
    while now < t:
        now = clock()
    return now


class SynchronousClock:
    """Ticks every ``period_s`` seconds.

    Attributes:
        period_s: the period T.
        skipped: ticks missed since the start.
        slack_s: time left before the last tick when the cycle ended (< 0 late).
        measured_period_s: time between the last two ticks as woken.
        next_tick: the monotonic time of the next tick.
    """

    def __init__(self, period_s: float, start: float | None = None) -> None:
        if not period_s > 0:
            raise ValueError(f"period must be positive, not {period_s}")
        self.period_s = period_s
        now = time.perf_counter()
        self.next_tick = now + period_s if start is None else start
        self.skipped = 0
        self.slack_s = 0.0
        self.measured_period_s = math.nan
        self._last_wake: float | None = None

    def wait_for_next_tick(self) -> float:
        """Block until the next tick; returns the time woken (perf_counter)."""
        clock = time.perf_counter
        now = clock()
        self.slack_s = self.next_tick - now
        if self.slack_s < 0:  # overran: skip the ticks already past
            missed = math.ceil(-self.slack_s / self.period_s)
            self.skipped += missed
            self.next_tick += missed * self.period_s
        sleep_s = self.next_tick - SPIN_MARGIN_S - clock()
        if sleep_s > 0:
            time.sleep(sleep_s)
        target = self.next_tick
        while clock() < target:
            pass
        woke = clock()
        if self._last_wake is not None:
            self.measured_period_s = woke - self._last_wake
        self._last_wake = woke
        self.next_tick += self.period_s
        return woke


def overruns(periods_s: np.ndarray, skipped: np.ndarray) -> dict[str, float]:
    """The cycles that began after skipped ticks: how many there were and the
    longest period among them (microseconds).

    ``periods_s`` and ``skipped`` are the records' columns, cycle by cycle
    (``skipped`` counts the clock's skipped ticks since the start). Skipped
    ticks come in stalls: ``count`` tells a few long stalls (the process, or
    on a virtual machine the machine itself, taken off the CPU) from many
    short overruns (a cycle's work longer than T).
    """
    late = np.diff(skipped, prepend=0) > 0
    longest = periods_s[late & np.isfinite(periods_s)]
    return {"count": int(late.sum()),
            "longest_us": float(longest.max() * 1e6) if len(longest) else 0.0}

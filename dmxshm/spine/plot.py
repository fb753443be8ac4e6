"""The ``dmxshm spine --plot`` figure: a timeline and two histograms."""

from __future__ import annotations

from typing import Any

import numpy as np

from dmxshm.bench.plot import _pyplot

TIMELINE_CYCLES = 4


def plot_spine(report: dict[str, Any], recs: np.ndarray, path: str) -> None:
    """Timeline of a few cycles (plan, CAN, sleep), then histograms of the
    period and of t_send - t_obs with the law's prediction."""
    plt = _pyplot()
    fig = plt.figure(figsize=(11, 6.5))
    grid = fig.add_gridspec(2, 2, height_ratios=[1.1, 1])
    ax = fig.add_subplot(grid[0, :])
    acting = np.where((recs["stopping"] == 0) & (recs["obs_cycle"] >= 0))[0]
    if len(acting) > TIMELINE_CYCLES + 2:
        k0 = int(acting[len(acting) // 2])
        t0 = recs["t_tick"][k0]
        ms = lambda t: (t - t0) * 1e3  # noqa: E731
        period_ms = 1e3 / report["frequency_hz"]
        for k in range(k0, k0 + TIMELINE_CYCLES):
            r, nxt = recs[k], recs[k + 1]
            ax.axvline(ms(r["t_tick"]), color="grey", lw=0.8, ls=":")
            ax.broken_barh([(ms(r["plan_start"]), ms(r["plan_end"]) - ms(r["plan_start"]))],
                           (1.6, 0.8), color="#4c72b0", label="plan" if k == k0 else None)
            busy_end = max(r["plan_end"], r["t_send"])
            ax.broken_barh([(ms(busy_end), ms(nxt["t_tick"]) - ms(busy_end))], (1.6, 0.8),
                           color="#dddddd", label="sleep" if k == k0 else None)
            if np.isfinite(r["t_send"]) and np.isfinite(nxt["can_end"]):
                ax.broken_barh([(ms(r["t_send"]), ms(nxt["can_end"]) - ms(r["t_send"]))],
                               (0.4, 0.8), color="#55a868", label="CAN cycle" if k == k0 else None)
                ax.plot([ms(nxt["can_reply"])], [0.8], "k|", ms=14,
                        label="last servo reply (T_o)" if k == k0 else None)
        r = recs[k0 + 2]
        for t, name, y, ha in ((r["t_obs"], "t_obs", 0.15, "center"),
                               (r["t_act"], "t_act ", 2.55, "right"),
                               (r["t_send"], " t_send", 2.55, "left")):
            ax.annotate(name, (ms(t), y), ha=ha, fontsize=8, color="#c44e52")
            ax.plot([ms(t)], [y + 0.1], "v", color="#c44e52", ms=5)
        ax.set_xlim(-0.05 * period_ms, TIMELINE_CYCLES * period_ms)
        ax.set_yticks([0.8, 2.0])
        ax.set_yticklabels(["CAN bus", "spine"])
        ax.set_ylim(0, 3)
        ax.set_xlabel("ms from a tick (dotted lines: ticks)")
        ax.legend(fontsize=8, ncol=4, loc="upper right")
    ax.set_title(f"schedule {report['schedule']} at {report['frequency_hz']:.0f} Hz: "
                 "the action sent at the marked t_send, its t_act and t_obs")
    ax1 = fig.add_subplot(grid[1, 0])
    periods = recs["period_s"][np.isfinite(recs["period_s"])] * 1e6
    ax1.hist(periods, bins=80, color="#4c72b0")
    ax1.set_yscale("log")
    ax1.set_xlabel("period, us")
    ax1.set_title(f"period: p99 {report['period_us']['p99']:.1f} us, "
                  f"skipped {report['skipped_cycles']}")
    ax2 = fig.add_subplot(grid[1, 1])
    sel = recs[(recs["stopping"] == 0) & (recs["obs_cycle"] >= 0)]
    ax2.hist((sel["t_send"] - sel["t_obs"]) * 1e6, bins=80, color="#55a868")
    ax2.axvline(report["predicted"]["send_minus_obs_us"], color="#c44e52",
                label=f"law: {report['predicted']['send_minus_obs_us']:.1f} us")
    ax2.set_yscale("log")
    ax2.set_xlabel("t_send - t_obs, us")
    ax2.set_title(f"measured mean {report['send_minus_obs_us']['mean']:.1f} us")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

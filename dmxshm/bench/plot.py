"""PNG figures of benchmark results and of a spine run (needs the ``plot`` extra: matplotlib)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dmxshm.errors import DmxError

if TYPE_CHECKING:
    from dmxshm.spine.run_report import SpineRunReport

STEP_COLORS = {"physics": "#4c72b0", "rendering": "#55a868", "agents": "#c44e52",
               "metrics": "#937860", "framework": "#8172b2"}
"""One colour per part of a step, the same in every figure."""


def require_matplotlib() -> None:
    """Raise a DmxError with the install command when matplotlib is missing."""
    _pyplot()


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise DmxError(
            "plotting needs matplotlib: pip install 'dmxshm[plot]'"
        ) from exc
    return plt


def _save(plt: Any, fig: Any, path: str, rect: tuple[float, ...] = (0, 0, 1, 1)) -> None:
    """Lay out, write as PNG and free a figure."""
    fig.tight_layout(rect=rect)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_ipc(rows: Sequence[Any], path: str) -> None:
    """Bar chart of median round trips, one group per payload x pinning.

    Args:
        rows: :class:`dmxshm.bench.ipc.Row` objects.
        path: where to write the PNG.
    """
    plt = _pyplot()
    groups = sorted({(r.payload, r.pinning) for r in rows}, key=lambda g: (g[1], g[0]))
    transports = list(dict.fromkeys(r.transport for r in rows))
    by = {(r.transport, r.payload, r.pinning): r for r in rows}
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(transports)
    for k, t in enumerate(transports):
        xs, ys, errs = [], [], []
        for g, (payload, pin) in enumerate(groups):
            r = by.get((t, payload, pin))
            if r is None:
                continue
            xs.append(g + (k - (len(transports) - 1) / 2) * width)
            ys.append(r.rtt_us_median)
            errs.append([[r.rtt_us_median - r.rtt_us_p10], [r.rtt_us_p90 - r.rtt_us_median]])
        lo = [e[0][0] for e in errs]
        hi = [e[1][0] for e in errs]
        ax.bar(xs, ys, width, label=t, yerr=[lo, hi], capsize=2)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{p}\n{'same core' if pin == 'same' else 'two cores'}"
                        for p, pin in groups])
    ax.set_yscale("log")
    ax.set_ylabel("round trip, us (median; bars p10-p90)")
    ax.set_title("dmxshm bench ipc: ping-pong round trip between two processes")
    ax.legend(ncol=len(transports), fontsize=8, loc="upper left")
    ax.grid(axis="y", which="both", alpha=0.3)
    _save(plt, fig, path)


def plot_network(rows: Sequence[Any], path: str) -> None:
    """Stacked bars: where a gym-mode step's time goes, per configuration.

    Args:
        rows: :class:`dmxshm.bench.network.Row` objects.
        path: where to write the PNG.
    """
    plt = _pyplot()
    labels = [f"{r.robots} robot{'s' if r.robots > 1 else ''}\ncamera {r.camera}" for r in rows]
    parts = [("physics", "physics_us", STEP_COLORS["physics"]),
             ("rendering", "rendering_us", STEP_COLORS["rendering"]),
             ("agents", "agents_us", STEP_COLORS["agents"]),
             ("framework overhead", "overhead_us", STEP_COLORS["framework"])]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, cam in zip(axes, ("none", "160x120"), strict=True):
        sel = [(lab, r) for lab, r in zip(labels, rows, strict=True) if r.camera == cam]
        if not sel:
            continue
        xs = range(len(sel))
        bottom = [0.0] * len(sel)
        for name, key, color in parts:
            vals = [getattr(r, key) / 1e3 for _, r in sel]
            ax.bar(xs, vals, bottom=bottom, color=color, label=name, width=0.6)
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
        ax.scatter(xs, [r.floor_us / 1e3 for _, r in sel], marker="_", s=900, color="black",
                   label="floor (raw semaphore handoffs)", zorder=3)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([lab for lab, _ in sel])
        ax.set_ylabel("ms per step")
        ax.set_title(f"camera: {cam}")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8, loc="upper left")
    fig.suptitle("dmxshm bench network: where a gym-mode step goes (1 renderer, 1 agent)")
    _save(plt, fig, path)


def plot_vector(rows: Sequence[Any], path: str) -> None:
    """Grouped bars: env-steps/s of each implementation, per observation and batch size.

    Args:
        rows: :class:`dmxshm.bench.vector.Row` objects.
        path: where to write the PNG.
    """
    plt = _pyplot()
    kinds = list(dict.fromkeys((r.obs, r.camera) for r in rows))
    sizes = sorted({r.num_envs for r in rows if r.impl != "single"})
    impls = [("dmxshm", "#4c72b0"), ("dmx-recv", "#8172b3"), ("free", "#937860"),
             ("async", "#dd8452"), ("sync", "#55a868")]
    fig, axes = plt.subplots(1, len(kinds), figsize=(4.2 * len(kinds), 4.2), squeeze=False)
    for ax, (obs, cam) in zip(axes[0], kinds, strict=True):
        by = {(r.impl, r.num_envs): r.env_steps_per_s for r in rows
              if (r.obs, r.camera) == (obs, cam)}
        width = 0.8 / len(impls)
        for k, (impl, color) in enumerate(impls):
            xs = [g + (k - (len(impls) - 1) / 2) * width for g, n in enumerate(sizes)
                  if (impl, n) in by]
            ys = [by[(impl, n)] for n in sizes if (impl, n) in by]
            label = {"dmxshm": "dmxshm make_vec step()",
                     "dmx-recv": "dmxshm recv()/send(), batch n/2",
                     "free": "free-running workers (no handoff)",
                     "async": "AsyncVectorEnv (shm)", "sync": "SyncVectorEnv"}[impl]
            ax.bar(xs, ys, width, label=label, color=color)
        single = by.get(("single", 1))
        if single:
            cores = os.cpu_count() or 1
            ax.axhline(cores * single, color="k", ls="--", lw=1,
                       label=f"{cores} x one env in one process")
        ax.set_ylim(0, 1.1 * max([*by.values(), (os.cpu_count() or 1) * (single or 0)]))
        ax.set_xticks(range(len(sizes)))
        ax.set_xticklabels([f"{n} envs" for n in sizes])
        ax.set_title(f"obs={obs}" + (f" {cam}" if cam != "-" else ""))
        ax.set_ylabel("env-steps/s")
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9)
    fig.suptitle("dmxshm bench vector: random actions, same environment, same run")
    _save(plt, fig, path, rect=(0, 0.07, 1, 1))


def plot_profile(run: dict[str, Any], path: str) -> None:
    """A profiled run at a glance: CPU% per process over time, and where a step went.

    Args:
        run: the JSON summary of a run with ``--profile`` (``processes``,
            ``profile`` and ``timing``).
        path: where to write the PNG.
    """
    plt = _pyplot()
    profile, timing = run["profile"], run.get("timing", {})
    bx = None
    if timing.get("step_s"):
        fig, (ax, bx) = plt.subplots(1, 2, figsize=(12.5, 4.2),
                                     gridspec_kw={"width_ratios": [4, 1]})
    else:  # a spine run: no steps to break down
        fig, ax = plt.subplots(figsize=(10, 4.2))
    pins = {p["role"]: p["affinity"] for p in run.get("processes", [])}
    for role, series in profile["timeline"].items():
        cpus = pins.get(role, [])
        label = role + (f" (CPU {','.join(map(str, cpus))})"
                        if cpus and len(cpus) < profile.get("cores", 0) else "")
        ax.plot(series["t_s"], series["cpu_percent"], marker=".", label=label)
    ax.axhline(100, color="k", lw=0.8, ls=":")
    ax.set_xlabel("time since the start, s")
    ax.set_ylabel("CPU, % of one core")
    ax.set_title(f"CPU per process (sampled every {profile['interval_s']:g} s)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    if bx is None:
        _save(plt, fig, path)
        return
    parts = [("physics", "physics_s", STEP_COLORS["physics"]),
             ("rendering", "rendering_s", STEP_COLORS["rendering"]),
             ("agents", "agents_s", STEP_COLORS["agents"]),
             ("lane metrics", "metrics_s", STEP_COLORS["metrics"]),
             ("framework", "framework_s", STEP_COLORS["framework"])]
    bottom = 0.0
    for name, key, color in parts:
        value = timing.get(key)
        if not value:
            continue
        bx.bar([0], [value * 1e3], bottom=[bottom], color=color, label=name, width=0.5)
        bottom += value * 1e3
    if "step_s" in timing:
        bx.axhline(timing["step_s"] * 1e3, color="k", ls="--", lw=1, label="wall time per step")
    bx.set_xticks([])
    bx.set_xlim(-0.6, 0.6)
    bx.set_ylabel("ms per step (mean)")
    bx.set_title(f"{run.get('mode', '')} mode, {run.get('robots', '?')} robots")
    bx.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    _save(plt, fig, path)


TIMELINE_CYCLES = 4


def plot_spine(report: SpineRunReport, recs: np.ndarray, path: str) -> None:
    """Timeline of a few cycles (plan, CAN, sleep), then histograms of the
    period and of t_send - t_obs with the law's prediction."""
    plt = _pyplot()
    f = report.figures
    fig = plt.figure(figsize=(11, 6.5))
    grid = fig.add_gridspec(2, 2, height_ratios=[1.1, 1])
    ax = fig.add_subplot(grid[0, :])
    acting = np.where((recs["stopping"] == 0) & (recs["obs_cycle"] >= 0))[0]
    if len(acting) > TIMELINE_CYCLES + 2:
        k0 = int(acting[len(acting) // 2])
        t0 = recs["t_tick"][k0]
        ms = lambda t: (t - t0) * 1e3  # noqa: E731
        period_ms = 1e3 / f.frequency_hz
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
    ax.set_title(f"schedule {f.schedule} at {f.frequency_hz:.0f} Hz: "
                 "the action sent at the marked t_send, its t_act and t_obs")
    ax1 = fig.add_subplot(grid[1, 0])
    periods = recs["period_s"][np.isfinite(recs["period_s"])] * 1e6
    ax1.hist(periods, bins=80, color="#4c72b0")
    ax1.set_yscale("log")
    ax1.set_xlabel("period, us")
    ax1.set_title(f"period: p99 {f.period_us.p99:.1f} us, skipped {f.skipped_cycles}")
    ax2 = fig.add_subplot(grid[1, 1])
    sel = recs[(recs["stopping"] == 0) & (recs["obs_cycle"] >= 0)]
    ax2.hist((sel["t_send"] - sel["t_obs"]) * 1e6, bins=80, color="#55a868")
    law_us = f.law.send_minus_obs_s * 1e6
    ax2.axvline(law_us, color="#c44e52", label=f"law: {law_us:.1f} us")
    ax2.set_yscale("log")
    ax2.set_xlabel("t_send - t_obs, us")
    ax2.set_title(f"measured mean {f.send_minus_obs_us.mean:.1f} us")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_scaling(rows: Sequence[Any], path: str) -> None:
    """env-steps/s of dmxshm against its worker count, per observation kind and batch
    size, beside the ideal: workers x the rate of one environment stepped alone."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    singles = {(r.obs, r.camera): r.env_steps_per_s for r in rows if r.impl == "single"}
    groups = dict.fromkeys((r.obs, r.camera, r.num_envs) for r in rows if r.impl == "dmxshm")
    for obs, cam, n in groups:
        mine = sorted((r.num_workers, r.env_steps_per_s) for r in rows
                      if (r.impl, r.obs, r.camera, r.num_envs) == ("dmxshm", obs, cam, n))
        label = f"{obs}{'' if cam == '-' else ' ' + cam}, {n} envs"
        line, = ax.plot([w for w, _ in mine], [v for _, v in mine], "o-", label=label)
        ideal = singles.get((obs, cam))
        if ideal:
            ws = [w for w, _ in mine]
            ax.plot(ws, [w * ideal for w in ws], "--", color=line.get_color(), alpha=0.5,
                    label=f"ideal ({label})")
    ax.set_xticks(sorted({r.num_workers for r in rows if r.impl == "dmxshm"}))
    ax.set_xlabel("worker processes")
    ax.set_ylabel("env-steps/s")
    ax.set_title("dmxshm make_vec: scaling with workers")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    _save(plt, fig, path)


def plot_render(rows: Sequence[Any], path: str) -> None:
    """Grouped bars (log scale): frames/s per core of each renderer, per size, for the
    pinhole camera and the lens.

    Args:
        rows: :class:`dmxshm.bench.render.RenderRow` objects.
        path: where to write the PNG.
    """
    plt = _pyplot()
    cameras = list(dict.fromkeys(r.camera for r in rows))
    sizes = list(dict.fromkeys(r.size for r in rows))
    renderers = [(n, c) for n, c in (("tiny", "#55a868"), ("egl", "#dd8452"),
                                     ("batch", "#4c72b0")) if any(r.renderer == n for r in rows)]
    fig, axes = plt.subplots(1, len(cameras), figsize=(5.2 * len(cameras), 4.2),
                             squeeze=False)
    for ax, camera in zip(axes[0], cameras, strict=True):
        by = {(r.renderer, r.size): r.frames_per_s for r in rows if r.camera == camera}
        width = 0.8 / len(renderers)
        for k, (name, color) in enumerate(renderers):
            xs = [g + (k - (len(renderers) - 1) / 2) * width for g, s in enumerate(sizes)
                  if (name, s) in by]
            ys = [by[(name, s)] for s in sizes if (name, s) in by]
            bars = ax.bar(xs, ys, width, label=name, color=color)
            for bar, y in zip(bars, ys, strict=True):
                ax.annotate(f"{y:.0f}", (bar.get_x() + bar.get_width() / 2, y),
                            ha="center", va="bottom", fontsize=7)
        ax.set_yscale("log")
        ax.set_xticks(range(len(sizes)))
        ax.set_xticklabels(sizes)
        ax.set_title("pinhole camera" if camera == "pinhole" else "the Duckiebot's lens")
        ax.set_ylabel("frames/s per core")
        ax.grid(axis="y", alpha=0.3, which="both")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9)
    fig.suptitle("dmxshm bench render: 16 views per call, the same scene, one run")
    _save(plt, fig, path, rect=(0, 0.07, 1, 1))

"""What the command line prints of benchmarks, the spine, maps, the machine and
``dmxshm clean``: their tables and verdicts (re-exported by :mod:`dmxshm.cli.console`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from dmxshm.bench.render import RenderResult
    from dmxshm.cli.sysinfo import SystemInfo
    from dmxshm.spine.run_report import SpineRunReport
    from dmxshm.world.maps import MapInfo

from dmxshm.cli.console import (  # noqa: F401
    LiveTable,
    Progress,
    fmt_bytes,
    realtime_refused,
    run_progress,
    scheduling_refused,
    stalls,
    write_json,
    write_outputs,
)


def print_spine(r: SpineRunReport) -> None:
    """``dmxshm spine``'s report of a run."""
    f, cfg = r.figures, r.config
    click.echo(f"schedule {f.schedule}, {f.frequency_hz:g} Hz, spine on CPU {f.cpu} "
               f"({f.scheduling}), CAN bus on CPU {r.bus_cpu}")
    click.echo(f"cycles {f.cycles} (acting {f.acting_cycles}), skipped "
               f"{f.skipped_cycles} ({f.skipped_cycles / max(f.cycles, 1):.3%})"
               + stalls(f.overruns, f.host_steal_s))
    p = f.period_us
    click.echo(f"period us: p50 {p.p50:.1f}, p99 {p.p99:.1f}, max {p.max:.1f}; "
               f"p99 |period - T| {f.period_error_us_p99:.1f} us")
    c = f.can_cycle_us
    plan = "an agent" if r.agent is not None else f"{f.plan_us_p50:.1f} us"
    click.echo(f"CAN cycle us (bus clock): p50 {c.p50:.1f}, p99 {c.p99:.1f}; T_p "
               f"{plan} measured ({cfg.plan_s * 1e6:.1f} configured), T_o "
               f"{f.reply_at_us_p50:.1f} us measured ({cfg.reply_at * 1e6:.1f} configured)")
    to_bus, to_spine = f.spine_to_bus_us, f.bus_to_spine_us
    click.echo(f"delivery us: spine to bus p50 {to_bus.p50:.1f}, p99 {to_bus.p99:.1f}; "
               f"bus to spine p50 {to_spine.p50:.1f}, p99 {to_spine.p99:.1f}")
    click.echo(f"{'us':<18} {'mean':>9} {'p50':>9} {'p99':>9} {'predicted':>10} "
               f"{'- predicted p50':>16} {'p99':>9}")
    act_law = f.law.send_minus_act_s
    for name, m, law, beyond in (
            ("send minus obs", f.send_minus_obs_us, f.law.send_minus_obs_s * 1e6,
             f.obs_minus_law_us),
            ("send minus act", f.send_minus_act_us, None if act_law is None else act_law * 1e6,
             f.act_minus_law_us)):
        extra = "" if beyond is None else f" {beyond.p50:>16.1f} {beyond.p99:>9.1f}"
        click.echo(f"{name:<18} {m.mean:>9.1f} {m.p50:>9.1f} "
                   f"{m.p99:>9.1f} {'-' if law is None else f'{law:.1f}':>10}{extra}")
    click.echo("(predicted: the law with the configured T, T_p and T_o; measured minus "
               "predicted is what the handoffs between spine and bus cost)")
    a = r.agent
    if a is not None:
        click.echo(f"agent: {a.actions} actions, {a.expired_actions} expired"
                   f"{', hung at the end' if a.hung else ''}")
        if f.to_frame_us is not None and f.to_observation_us is not None:
            click.echo(f"agent round trip us, from writing an action: to the CAN frame that "
                       f"carries it p50 {f.to_frame_us.p50:.1f}, p99 {f.to_frame_us.p99:.1f}; "
                       f"to the first observation that reflects it p50 "
                       f"{f.to_observation_us.p50:.1f}, p99 {f.to_observation_us.p99:.1f}"
                       f"; to the next observation read p50 {a.round_trip_us_p50:.1f}")
        click.echo("(with an agent, t_act is when the agent wrote its action; the spine waits "
                   "for it up to T_p after publishing the observation)")
    click.echo("states: " + ", ".join(f"{k} {v}" for k, v in f.states.items()))


def print_targets(targets: list[tuple[str, float, bool]]) -> None:
    click.echo("")
    for desc, value, ok in targets:
        click.echo(f"target {desc}: {value:.2f} {'reached' if ok else 'MISSED'}")


def print_ipc_table(rows: list[Any]) -> None:
    click.echo(f"{'transport':<12} {'payload':<8} {'pinning':<8} {'rtt_us median':>13} "
               f"{'p10':>8} {'p90':>8} {'p99':>8} {'max':>9} {'x semaphore':>12}")
    for r in sorted(rows, key=lambda r: (r.pinning, r.payload_bytes)):
        ratio = f"{r.ratio_to_semaphore:.2f}" if r.ratio_to_semaphore is not None else "-"
        click.echo(f"{r.transport:<12} {r.payload:<8} {r.pinning:<8} {r.rtt_us_median:>13.1f} "
                   f"{r.rtt_us_p10:>8.1f} {r.rtt_us_p90:>8.1f} {r.rtt_us_p99:>8.1f} "
                   f"{r.rtt_us_max:>9.1f} {ratio:>12}")


def print_info(info: SystemInfo) -> None:
    """What ``dmxshm info`` shows (see :func:`dmxshm.sysinfo.collect`)."""
    shm, objs = info.shm, info.dmxshm_objects
    rt, pin = info.realtime_scheduling, info.cpu_pinning
    lines = [
        ("python", f"{info.python} on {info.platform}"),
        ("cpus", f"{info.cpus_logical} logical, {info.cpus_physical} physical"),
        ("memory", fmt_bytes(info.memory_bytes)),
        ("/dev/shm", f"{fmt_bytes(shm.free_bytes)} free of {fmt_bytes(shm.total_bytes)}"),
        ("real-time scheduling", ("yes: " if rt.permitted else "no: ") + rt.detail),
        ("cpu pinning", ("yes: " if pin.permitted else "no: ") + pin.detail),
        ("semaphore timeouts", "yes" if info.semaphore_timeout_supported else "NO"),
        ("memory ordering", info.memory_ordering),
        ("dmxshm objects", f"{objs.count} ({objs.stale} stale, "
                           f"{fmt_bytes(objs.size_bytes)}); 'dmxshm clean' removes stale ones"),
    ]
    lines += [(f"  {k}", v or "not installed") for k, v in info.versions.items()]
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        click.echo(f"{k:<{width}}  {v}")


def print_clean(found: list[Any], targets: list[Any], dry_run: bool) -> None:
    """What ``dmxshm clean`` removed (or would), and what it kept."""
    verb = "would remove" if dry_run else "removed"
    def state(f: Any) -> str:
        if getattr(f, "other_namespace", False) and f.creator_alive:
            return "in another PID namespace"
        return "alive" if f.creator_alive else "dead"

    for f in targets:
        click.echo(f"{verb} {f.entry.kind:9s} {f.entry.name}  "
                   f"({fmt_bytes(f.size_bytes)}, creator pid {f.entry.pid} {state(f)})")
    names = {f.entry.name for f in targets}
    kept = [f for f in found if f.entry.name not in names]
    other = sum(1 for f in kept if getattr(f, "other_namespace", False))
    click.echo(f"{verb} {len(targets)} object(s), "
               f"{fmt_bytes(sum(f.size_bytes for f in targets))}; kept {len(kept) - other} of "
               f"live networks" + (f" and {other} of another PID namespace (--all-namespaces "
                                   "judges them by pid)" if other else ""))


def print_render(result: RenderResult) -> None:
    """``dmxshm bench render``'s tables."""
    click.echo(f"scene: map {result.map_name}, {result.robots} robots; {result.cameras} "
               "robots' views per call (batch: at once; tiny, egl: one after another); one "
               "process, one thread: frames/s per core")
    click.echo(f"{'renderer':<16} {'camera':<10} {'size':>9} {'ms/frame p50':>13} "
               f"{'mean':>8} {'frames/s':>9} {'frames':>7}")
    for r in result.rows:
        click.echo(f"{r.renderer:<16} {r.camera:<10} {r.size:>9} {r.ms_per_frame_p50:>13.3f} "
                   f"{r.ms_per_frame_mean:>8.3f} {r.frames_per_s:>9.1f} {r.frames:>7}")
    if result.egl_device:
        click.echo(f"egl draws with: {result.egl_device}")
    for name, why in result.unavailable.items():
        click.echo(f"{name}: not measured: {why}")
    for name, ratios in result.over_tiny.items():
        click.echo(f"{name} / tiny frames/s: " + ", ".join(f"{k} {v:.2f}x"
                                                           for k, v in ratios.items()))
    if result.lens_cost:
        click.echo("lens / pinhole time per frame: " + ", ".join(
            f"{k} {v:.2f}x" for k, v in result.lens_cost.items()))
    for look, ratios in result.look_cost.items():
        click.echo(f"batch's {look} look / its flat look frames/s: " + ", ".join(
            f"{k} {v:.2f}x" for k, v in ratios.items()))
    for d in result.differences:
        click.echo(f"{d.renderer} against tiny, {d.size} {d.camera}: mean absolute difference "
                   f"{d.mean_abs_difference:.2f} of 255; pixels differing "
                   f"{d.pixels_differing:.1%}, by more than 32 levels "
                   f"{d.pixels_differing_over_32:.1%}")


def print_network_rows(rows: list[Any]) -> None:
    """``dmxshm bench network``'s table (times per step, in microseconds)."""
    click.echo(f"{'robots':>6} {'camera':>8} {'steps/s':>9} {'physics':>9} {'render':>9} "
               f"{'agents':>8} {'overhead':>9} {'share':>6} {'floor':>7}  (us per step)")
    for r in rows:
        click.echo(f"{r.robots:>6} {r.camera:>8} {r.steps_per_s:>9.1f} {r.physics_us:>9.1f} "
                   f"{r.rendering_us:>9.1f} {r.agents_us:>8.1f} {r.overhead_us:>9.1f} "
                   f"{r.overhead_fraction:>6.1%} {r.floor_us:>7.1f}")


def print_network_busy(rows: list[Any]) -> None:
    """``bench network``: each process's own work and idle time per step (us)."""
    click.echo("\nper process, us per step: busy (its own work) / idle (the rest of the step)")
    for r in rows:
        step = 1e6 / r.steps_per_s
        parts = ", ".join(f"{name} {busy:.0f}/{step - busy:.0f}"
                          for name, busy in r.busy_us.items())
        click.echo(f"{r.robots:>3} robot(s), camera {r.camera:<8} step {step:>8.0f}: {parts}")


def print_vector_rows(rows: list[Any], summary: list[dict[str, Any]]) -> None:
    """``dmxshm bench vector``'s table and its ratios."""
    click.echo(f"{'impl':<8} {'obs':<7} {'camera':<11} {'envs':>5} {'procs':>6} "
               f"{'env-steps/s':>12} {'caller CPU us/env-step':>23}")
    for r in rows:
        cpu = getattr(r, "caller_cpu_us", None)
        click.echo(f"{r.impl:<8} {r.obs:<7} {r.camera:<11} {r.num_envs:>5} {r.num_workers:>6} "
                   f"{r.env_steps_per_s:>12.0f} {'-' if cpu is None else f'{cpu:.1f}':>23}")
    click.echo("(caller CPU: the CPU time of the process that calls step() or recv()/send(), "
               "per env-step, kernel included)")
    click.echo("")
    names = (("vs_sync", "dmxshm / sync"), ("vs_async", "dmxshm / async"),
             ("vs_free", "dmxshm / free"), ("recv_vs_free", "dmx-recv / free"),
             ("recv_vs_async", "dmx-recv / async"))
    for srow in summary:
        ratios = [f"{label} {srow[key]:.2f}" for key, label in names if srow[key] is not None]
        click.echo(f"{srow['obs']} {srow['camera']} x{srow['num_envs']} "
                   f"({srow['workers']} workers): " + ", ".join(ratios)
                   + f", scaling efficiency {srow['scaling_efficiency']:.2f}")


def print_maps(infos: list[MapInfo]) -> None:
    """``dmxshm maps``: one line per map."""
    width = max([10, *(len(m.name) for m in infos)])
    click.echo(f"{'map':<{width}} {'tiles':>7} {'size m':>11} {'road tiles':>10} "
               f"{'objects':>7} {'robots':>7}  description")
    for m in infos:
        click.echo(f"{m.name:<{width}} {m.cols:>3} x {m.rows:<3}"
                   f"{m.width_m:>5.1f} x {m.height_m:<4.1f} {m.road_tiles:>10} "
                   f"{m.objects:>7} {m.capacity:>7}  {m.description}")


def print_breakdowns(rows: list[Any]) -> None:
    """Where each dmxshm batch step went (``bench vector``), in microseconds."""
    split = [r for r in rows if getattr(r, "breakdown", None)]
    if not split:
        return
    click.echo("\nwhere a dmxshm batch step goes (us): step = handoff out + span + handoff back;"
               " barrier = span - mean busy")
    click.echo(f"{'obs':<7} {'camera':<11} {'envs':>5} {'workers':>7} {'step':>8} {'out':>6} "
               f"{'span':>8} {'back':>6} {'barrier':>8}  busy per worker / idle per worker")
    for r in split:
        b = r.breakdown
        busy = "/".join(f"{v:.0f}" for v in b["busy_us"])
        idle = "/".join(f"{v:.0f}" for v in b["idle_us"])
        click.echo(f"{r.obs:<7} {r.camera:<11} {r.num_envs:>5} {r.num_workers:>7} "
                   f"{b['step_us']:>8.0f} {b['handoff_out_us']:>6.0f} {b['span_us']:>8.0f} "
                   f"{b['handoff_back_us']:>6.0f} {b['barrier_us']:>8.0f}  {busy} / {idle}")


def print_agents_bench(res: Any) -> None:
    """``dmxshm bench agents``' figures (:class:`dmxshm.bench.agents.Result`)."""
    built = ", ".join(f"{v:.0f}" for v in res.built_in_steps_per_s)
    out = ", ".join(f"{v:.0f}" for v in res.outside_steps_per_s)
    click.echo(f"gym, {res.robots} robots, {res.steps} steps, lane-follow (steps/s from step "
               f"20):\n  built-in agent: {built}\n  outside agent:  {out}\n  ratio of medians "
               f"(outside / built-in): {res.ratio:.3f} (pair by pair: "
               + ", ".join(f"{r:.2f}" for r in res.pair_ratios) + "); same digest in "
               f"{sum(res.same_digest)}/{len(res.same_digest)} pairs")
    click.echo(f"realtime, {res.robots} robots, {res.realtime_duration_s:g} s: command age when "
               "applied (made -> engine step)")
    for who, c in res.latency.items():
        click.echo(f"  {who:<8} n {c['n']:>5}  p50 {c['p50_s'] * 1e3:6.2f} ms  p99 "
                   f"{c['p99_s'] * 1e3:6.2f} ms  max {c['max_s'] * 1e3:6.2f} ms")

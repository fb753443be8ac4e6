"""Everything the command line prints: tables, summaries, a live table, progress.

The library returns typed results (:class:`~dmxshm.network.summary.Summary`,
benchmark rows, reports); the CLI hands them here. Nothing here computes a
figure: it formats what it is given.
"""

from __future__ import annotations

import json as _json
import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from dmxshm.bench.render import RenderResult
    from dmxshm.logs import LogInfo
    from dmxshm.network.summary import Summary
    from dmxshm.profiling import ProcessRow, ProfileReport
    from dmxshm.spine.run_report import SpineRunReport
    from dmxshm.sysinfo import SystemInfo
    from dmxshm.world.maps import MapInfo


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "unknown"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024  # type: ignore[assignment]
    return str(n)


class LiveTable:
    """The profile table, redrawn in place on a terminal (stderr) at each sample."""

    def __init__(self, label: str, total: int) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.lines = 0

    def progress(self, n: int) -> None:
        self.done = n

    def draw(self, profiler: Any) -> None:
        head = f"{self.label}: {self.done}/{self.total} steps" if self.total else self.label
        text = [head, *profiler.format_table()]
        up = f"\x1b[{self.lines}F" if self.lines else ""
        sys.stderr.write(up + "".join(f"\x1b[2K{line}\n" for line in text))
        sys.stderr.flush()
        self.lines = len(text)

    def close(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()


def print_profile(processes: list[ProcessRow], profile: ProfileReport,
                   shm_bytes: int) -> None:
    click.echo(f"\n{'process':<12} {'pid':>7} {'cpus':>6} {'ran on':>7} {'CPU% mean':>9} "
               f"{'peak':>6} {'RSS peak':>9} {'USS peak':>9} {'PSS peak':>9} {'invol ctx':>9}")
    for p in processes:
        click.echo(
            f"{p.role:<12} {p.pid:>7} {fmt_cpus(p.affinity):>6} "
            f"{fmt_cpus(p.cores_seen):>7} {p.cpu_percent_mean:>9.1f} "
            f"{p.cpu_percent_peak:>6.0f} {fmt_bytes(p.rss_bytes_peak):>9} "
            f"{fmt_bytes(p.uss_bytes):>9} {fmt_bytes(p.pss_bytes):>9} "
            f"{p.ctx_switches_involuntary:>9}")
    moved = [p.role for p in processes if not p.stayed_in_affinity]
    click.echo(f"shared memory of the run: {fmt_bytes(shm_bytes)} in "
               f"{len(profile.shm)} objects (counted once; RSS counts it in "
               "every process that touched it)")
    click.echo(f"profiler: {profile.samples} samples every {profile.interval_s:g} s, "
               f"{profile.sampler_cpu_fraction:.2%} of one core"
               + (f"; left their CPUs: {', '.join(moved)}" if moved else ""))


def fmt_cpus(cpus: list[int]) -> str:
    if not cpus:
        return "-"
    if len(cpus) > 1 and cpus == list(range(cpus[0], cpus[-1] + 1)):
        return f"{cpus[0]}-{cpus[-1]}"
    return ",".join(map(str, cpus))


def print_summary(s: Summary) -> None:
    if s.interrupted:
        click.echo("\nINTERRUPTED: the figures of the steps done until the run was stopped")
    click.echo(f"\n{s.mode} mode, {s.robots} robot(s): {s.steps} steps, "
               f"{s.sim_time_s:.2f} s simulated in {s.wall_time_s:.2f} s wall "
               f"({s.steps_per_s:.1f} steps/s)")
    if "camera" in s.sensors:
        click.echo(f"camera renderer: {s.renderer}"
                   + (f" ({s.renderer_device})" if s.renderer_device else ""))
    click.echo(f"{'sensor':<10} {'configured Hz':>14} {'achieved Hz':>12} {'fresh':>8} "
               f"{'repeated':>9}")
    for name, rate in s.sensors.items():
        # fresh: samples of a newer state than the sample before (docs/sensors.md)
        counts = ("" if rate.fresh is None
                  else f" {rate.fresh:>8} {rate.repeated if rate.repeated is not None else 0:>9}")
        click.echo(f"{name:<10} {rate.configured_hz:>14.1f} {rate.achieved_hz:>12.1f}{counts}")
    if s.mode == "realtime":
        missed = sum(s.missed_sensor_ticks.values())
        late = ("" if s.late_steps is None  # a spine keeps the schedule: not measured here
                else f"late engine steps: {s.late_steps} (worst lag "
                     f"{(s.max_lag_s or 0.0) * 1e3:.1f} ms); ")
        click.echo(f"{late}missed sensor ticks: {missed}")
    drops = ", ".join(f"{k} {v}" for k, v in s.drops.items())
    expired = ("" if s.expired_commands is None
               else f", expired commands {sum(s.expired_commands)}")
    click.echo(f"drops: {drops}; rejected commands {sum(s.rejected_commands)}{expired}")
    t = s.timing
    if s.mode == "gym":  # the step's parts run one after another: shares of a step
        parts = [("physics", t.physics_s), ("rendering", t.rendering_s),
                 ("agents", t.agents_s), ("framework", t.framework_s or 0.0)]
        click.echo("time per step: " + ", ".join(
            f"{k} {v * 1e3:.3f} ms ({v / t.step_s:.0%})" for k, v in parts)
            + f"; step {t.step_s * 1e3:.3f} ms")
    elif s.busy_fraction:  # processes overlap: each one's own work over the run's wall time
        click.echo("busy share of wall time (each process's own work): " + ", ".join(
            f"{name} {share:.0%}" for name, share in s.busy_fraction.items()))
    for name in s.unfinished:
        click.echo(f"UNFINISHED: {name} was still in its policy after the run's end and "
                   "was stopped; its robots' commands expired")
    if s.command_latency:
        click.echo("command age when applied (made -> engine): " + ", ".join(
            f"{who} p50 {c['p50_s'] * 1e3:.2f} ms, p99 {c['p99_s'] * 1e3:.2f} ms"
            for who, c in s.command_latency.items()))
    print_slots(s.slots, s.mode)
    if s.spine is not None:
        sp = s.spine.to_dict()  # the figures as the JSON names them
        click.echo(f"spine: {sp['cycles']} cycles at {sp['frequency_hz']:g} Hz on CPU {sp['cpu']} "
                   f"({sp['scheduling']}), {sp['stop_cycles']} of them stops, skipped "
                   f"{sp['skipped_cycles']} ({sp['skipped_cycles'] / max(sp['cycles'], 1):.2%})"
                   f"{stalls(sp.get('timing', {}).get('overruns'), sp.get('host_steal_s'))},"
                   f" period p99 {sp['period_us']['p99']:.1f} us, |period - T| p99 "
                   f"{sp['period_error_us_p99']:.1f} us, expired agent commands "
                   f"{sum(sp['expired_commands'])}")
        click.echo(f"physics steps {s.steps} for {sp['cycles']} CAN cycles "
                   f"({s.drops['commands']} frames overwritten before the engine took them)")
        st = sp.get("timing") or {}
        if st.get("records"):
            d = st["delivery_us"]

            def pp(x: dict[str, float]) -> str:
                return f"p50 {x['p50']:.1f}, p99 {x['p99']:.1f}"
            click.echo(f"spine timing us: frame to engine {pp(d['spine_to_engine'])}; engine "
                       f"step {pp(st['engine_step_us'])}; reply to spine "
                       f"{pp(d['engine_to_spine'])}; wheel states at send "
                       f"{pp(st['send_minus_obs_us'])} old")
            if "predicted" in st:
                law, beyond = st["predicted"], st["minus_predicted_us"]["send_minus_obs_us"]
                click.echo(f"spine law ({law['schedule']}, T_o {law['reply_at_us']:g} us from "
                           f"the configuration): send - obs {law['send_minus_obs_us']:.1f} us; "
                           f"measured minus law {pp(beyond)} us")
            if st.get("stopped_by"):
                click.echo(f"spine stopped by {st['stopped_by']}: "
                           f"{st['states'].get('SHUTDOWN', 0)} SHUTDOWN cycles sent stops")
    print_robots(s)
    if s.randomization:
        drawn = sorted(n for group in s.randomization["config"].values() for n in group)
        click.echo(f"randomised per robot: {', '.join(drawn)} (each robot's values: "
                   "--json's randomization)")
    click.echo(f"seed {s.seed}, map {s.map}; trajectory digest {s.trajectory_digest}")
    if s.log is not None:
        click.echo(f"log: {s.log.path}, {s.log.size_bytes / 1e6:.2f} MB, "
                   f"{sum(t.messages for t in s.log.topics)} messages on "
                   f"{len(s.log.topics)} topics ('dmxshm log info' to list them)")
    if s.contact_sheet:
        click.echo(f"recorded {s.recorded_frames} frames; contact sheet {s.contact_sheet}")


def print_robots(s: Any) -> None:
    """One line per robot: how it drove (distance, worst lane offset, steps off the
    road) and what became of its commands."""
    lane = s.lane
    if not lane:
        return
    click.echo(f"{'robot':>5} {'distance m':>11} {'worst offset m':>15} {'off-road steps':>15} "
               f"{'collisions':>10} {'rejected':>9} {'expired':>8}")
    for r in range(s.robots):
        hits = lane.get("robot_collisions", [0] * s.robots)[r] + \
            lane.get("object_collisions", [0] * s.robots)[r]
        click.echo(f"{r:>5} {lane['distance_m'][r]:>11.2f} {lane['max_abs_offset_m'][r]:>15.3f} "
                   f"{lane['off_road_steps'][r]:>15} {hits:>10} {s.rejected_commands[r]:>9} "
                   f"{'-' if s.expired_commands is None else s.expired_commands[r]:>8}")
    for line in s.held():  # robots that stood still long, and what held them
        click.echo(line)


def realtime_refused(r: dict[str, Any]) -> str | None:
    """The one-line note for a run whose real-time scheduling was refused, from
    ``r``'s ``scheduling`` and ``bus_scheduling`` (``dmxshm run``'s summary)."""
    return scheduling_refused(r.get("scheduling"), r.get("bus_scheduling"))


def scheduling_refused(spine: str | None, bus: str | None = None) -> str | None:
    """The one-line note where the spine's or the CAN bus's real-time scheduling
    (what each got, or why not) was refused; None where neither was."""
    refused = [f"{who} ({what})" for who, what in (("spine", spine), ("CAN bus", bus))
               if what and "refused" in what]
    if not refused:
        return None
    return ("dmxshm: note: real-time scheduling was refused for the " + " and the ".join(refused)
            + "; the run went on under SCHED_OTHER, so its timing figures are those of a "
            "shared scheduler")


def stalls(overruns: dict[str, float] | None, steal_s: float | None) -> str:
    """How the skipped ticks came: in how many late cycles, the longest period,
    and the CPU time the hypervisor took from this machine meanwhile."""
    out = ""
    if overruns and overruns["count"]:
        out += (f" in {overruns['count']} late cycle{'s' * (overruns['count'] != 1)}, "
                f"longest period {overruns['longest_us'] / 1e3:.1f} ms")
    if steal_s and overruns and overruns["count"]:  # as /proc/stat says (some VMs say 0)
        out += f"; host steal {steal_s * 1e3:.0f} ms"
    return out


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


def write_outputs(data: Any, json_path: str | None, plot_path: str | None,
                   draw: Any) -> None:
    """Write ``data`` as JSON and ``draw(plot_path)`` a figure, where asked."""
    if json_path:
        write_json(data, json_path)
    if plot_path:
        draw(plot_path)
        click.echo(f"wrote {plot_path}")


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


@contextmanager
def run_progress(label: str, total: int, live_table: bool
                 ) -> Iterator[tuple[Callable[[int], None], Callable[[Any], None] | None]]:
    """``(on_progress, on_profile)`` callbacks for a run: a live profile table on a
    terminal when asked (``live_table``), else a progress bar; both on stderr."""
    if live_table and sys.stderr.isatty():
        live = LiveTable(label, total)
        try:
            yield live.progress, live.draw
        finally:
            live.close()
        return
    bar = Progress(label, total)
    try:
        yield bar.update, None
    finally:
        bar.close()


class Progress:
    """Steps done out of ``total`` on stderr, with an ETA from the steps alone.

    The clock starts at the first step, not when the processes start (their
    start-up is no step's time). On a terminal one line is redrawn in place;
    elsewhere (a log, CI) a line is written every :attr:`every_s` seconds.
    """

    every_s = 5.0
    width = 30

    def __init__(self, label: str, total: int, stream: Any = None) -> None:
        self.label = label
        self.total = max(total, 1)
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.first: tuple[float, int] | None = None  # (time, steps) at the first step seen
        self.done = 0
        self.last_line = -math.inf

    def eta_s(self, now: float) -> float | None:
        """Seconds left at the rate since the first step; None before two readings."""
        if self.first is None or self.done <= self.first[1]:
            return None
        rate = (self.done - self.first[1]) / max(now - self.first[0], 1e-9)
        return (self.total - self.done) / rate

    def update(self, done: int) -> None:
        now = time.monotonic()
        self.done = done
        if self.first is None and done > 0:
            self.first = (now, done)
        if self.tty:
            self._write(now, end="\r")
        elif now - self.last_line >= self.every_s:
            self._write(now, end="\n")

    def _write(self, now: float, end: str) -> None:
        eta = self.eta_s(now)
        left = "" if eta is None else f", ETA {int(eta) // 60}:{int(eta) % 60:02d}"
        fill = int(self.width * min(self.done / self.total, 1.0))
        bar = f"[{'#' * fill}{'-' * (self.width - fill)}] " if self.tty else ""
        self.stream.write(f"{self.label} {bar}{self.done}/{self.total} steps "
                          f"({self.done / self.total:.0%}){left}{' ' * 4 if self.tty else ''}"
                          + end)
        self.stream.flush()
        self.last_line = now

    def close(self) -> None:
        """The last reading, on a line of its own."""
        self._write(time.monotonic(), end="\n")


def print_render(result: RenderResult) -> None:
    """``dmxshm bench render``'s tables."""
    click.echo(f"scene: map {result.map_name}, {result.robots} robots; {result.cameras} "
               "robots' views per call (batch: at once; tiny, egl: one after another); one "
               "process, one thread: frames/s per core")
    click.echo(f"{'renderer':<9} {'camera':<10} {'size':>9} {'ms/frame p50':>13} {'mean':>8} "
               f"{'frames/s':>9} {'frames':>7}")
    for r in result.rows:
        click.echo(f"{r.renderer:<9} {r.camera:<10} {r.size:>9} {r.ms_per_frame_p50:>13.3f} "
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
    for d in result.differences:
        click.echo(f"{d.renderer} against tiny, {d.size} {d.camera}: mean absolute difference "
                   f"{d.mean_abs_difference:.2f} of 255; pixels differing "
                   f"{d.pixels_differing:.1%}, by more than 32 levels "
                   f"{d.pixels_differing_over_32:.1%}")


def print_log_info(d: LogInfo) -> None:
    """``dmxshm log info``: the run, then one row per topic."""
    c, s = d.config or {}, d.summary
    click.echo(f"{d.path}: {d.size_bytes / 1e6:.2f} MB, {d.duration_s:.2f} s, "
               f"{sum(t.messages for t in d.topics)} messages on {len(d.topics)} topics")
    if c:
        click.echo(f"run: {c.get('mode')} mode, {c.get('robots')} robot(s), map {c.get('map')}, "
                   f"seed {c.get('seed')}, camera {'x'.join(map(str, c.get('camera', [])))}"
                   + (", spine" if c.get("spine") else ""))
    if s:
        click.echo(f"summary: {s['steps']} steps, {s['wall_time_s']:.2f} s wall; trajectory "
                   f"digest {s['trajectory_digest']}")
    else:
        click.echo("summary: none (the run did not finish: it failed or was stopped)")
    click.echo(f"{'topic':<22} {'schema':<26} {'messages':>9} {'rate Hz':>9}")
    for t in d.topics:
        click.echo(f"{t.topic:<22} {t.schema:<26} {t.messages:>9} {t.rate_hz:>9.1f}")


def write_json(data: Any, path: str) -> None:
    with open(path, "w") as fh:
        _json.dump(data, fh, indent=1)
    click.echo(f"wrote {path}")


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


def print_cut_parts(log_info: LogInfo | None) -> None:
    """Warn (on stderr) of each part of a log that was cut short when it was merged
    (``log_info``: :func:`dmxshm.logs.info`, or a summary's ``log``; None: no log)."""
    if log_info is not None:
        from dmxshm.logs import cut_warnings

        for line in cut_warnings(log_info.path, log_info.cut_parts):
            click.echo(line, err=True)


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


def print_slots(slots: list[dict[str, Any]], mode: str) -> None:
    """Each external agent slot of a run: who held it and when, what it passed on."""
    for sl in slots:
        robots = ", ".join(map(str, sl["robots"]))
        held = "; ".join(
            (f"pid {h['pid']}" if h["pid"] else "a client of unknown pid")
            + (f" ({h['name']})" if h.get("name") else "")
            + f" from step {h['claimed_step']}"
            + (f" to step {h['left_step']}" if h.get("left_step") is not None else " to the end")
            for h in sl["holders"])
        rejected = ("" if not sl["rejected"] else f", rejected {sl['rejected']} ("
                    + ", ".join(f"{k} {v}" for k, v in sl["rejections"].items()) + ")")
        click.echo(f"slot-{sl['index']} (robots {robots}): "
                   + (f"held by {held}; {sl['accepted']} commands{rejected}" if sl["holders"]
                      else "WARNING: never claimed, its robots stood still"
                      if mode == "realtime" else "never claimed"))


def print_run(s: Summary, json_path: str | None, profile: bool, stopped: bool = False) -> None:
    """``dmxshm run``'s report of its summary ``s`` (``stopped``: by Ctrl-C or SIGTERM,
    the figures of the steps done), written to ``json_path`` too where asked."""
    if not stopped:
        note = scheduling_refused(s.spine.report.scheduling if s.spine is not None else None)
        if note:  # once, and the run went on
            click.echo(note, err=True)
    print_summary(s)
    if not stopped:
        print_cut_parts(s.log)
        if profile:
            print_profile(s.processes, s.profile, s.shm_bytes)
    if json_path:
        write_json(s.to_dict(), json_path)


def print_replay(r: Any, json_path: str | None) -> None:
    """``dmxshm replay``'s report of a :class:`~dmxshm.replay.ReplayResult`: the
    replay's figures, both digests and the verdict; to ``json_path`` too where asked."""
    rec, again = r.recording, r.replayed
    if r.in_process:  # a realtime run: its physics and samples, replayed in this process
        click.echo(f"\nreplay of a realtime run in this process: {again.steps} physics steps, "
                   f"{again.samples} logged samples recomputed and compared")
    else:
        print_summary(again)
        print_cut_parts(again.log)
    click.echo(f"recorded run ({rec.mode} mode, {rec.steps} steps, {rec.wall_time_s:.1f} s): "
               f"digest {rec.trajectory_digest}")
    if r.equal and r.digest_equal:
        verdict = "EQUAL (every state, command and sample)"
    elif r.equal:
        verdict = (f"EQUAL on what was compared ({', '.join(r.compared_streams)}); not replayed: "
                   f"{', '.join(r.not_replayed)}")
    else:
        verdict = "DIFFERENT" + (f": streams {', '.join(r.differing)}" if r.differing else "")
    click.echo(f"replay: {again.steps} steps in {again.wall_time_s:.1f} s; its digest "
               f"{again.trajectory_digest}")
    click.echo(f"replay: digest {verdict}")
    if r.first_difference is not None:
        click.echo(f"first difference: {r.first_difference}")
    unread = again.unread if r.in_process else []
    if unread:
        click.echo(f"samples of states the replay never published: {', '.join(unread)}")
    if json_path:
        write_json(r.to_dict(), json_path)


def print_runs(runs: list[Any]) -> None:
    """``dmxshm ps``: one row per running network (:class:`~dmxshm.network.runs.RunInfo`)."""
    if not runs:
        click.echo("no network of yours is running")
        return
    click.echo(f"{'pid':>8}  {'name':<16} {'mode':<9} {'robots':>6} {'agents':>6} "
               f"{'renderers':>9}  {'camera':<9} {'uptime':>8}  {'slots':<10} view")
    for r in runs:
        mode = r.mode + ("+spine" if r.spine else "")
        camera = "off" if tuple(r.camera) == (0, 0) else f"{r.camera[0]}x{r.camera[1]}"
        slots = f"{len(r.free_slots)}/{len(r.slots)} free" if r.slots else "-"
        click.echo(f"{r.pid:>8}  {r.name or '-':<16} {mode:<9} {r.robots:>6} {r.agents:>6} "
                   f"{r.renderers:>9}  {camera:<9} {r.uptime_s:>7.0f}s  {slots:<10} "
                   f"{r.view or ''}".rstrip())
        for sl in r.slots:
            who = ("free" if not sl.held else "held by a client of unknown pid"
                   if sl.holder is None else f"held by pid {sl.holder}"
                   + (f" ({sl.holder_name})" if sl.holder_name else ""))
            click.echo(f"{'':>10}slot-{sl.index} robots {', '.join(map(str, sl.robots))}: {who}"
                       + ("" if sl.served else " (not served yet)"))

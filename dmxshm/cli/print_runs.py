"""What the command line prints of runs, logs and replays: their summaries and tables
(re-exported by :mod:`dmxshm.cli.console`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from dmxshm.logs import LogInfo
    from dmxshm.network.summary import Summary
    from dmxshm.profiling import ProcessRow, ProfileReport

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


def print_cut_parts(log_info: LogInfo | None) -> None:
    """Warn (on stderr) of each part of a log that was cut short when it was merged
    (``log_info``: :func:`dmxshm.logs.info`, or a summary's ``log``; None: no log)."""
    if log_info is not None:
        from dmxshm.logs import cut_warnings

        for line in cut_warnings(log_info.path, log_info.cut_parts):
            click.echo(line, err=True)


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

"""The ``dmxshm`` command line (click). It parses and prints; the library works."""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import json as _json
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

import click
from click.core import ParameterSource

from dmxshm import __version__, console
from dmxshm.errors import DmxError, RefusedError
from dmxshm.shm import signals

# Named exit codes.
EXIT_OK = 0
EXIT_ERROR = 1  # a run failed (a DmxError): the message says what went wrong and what to do
EXIT_USAGE = 2  # what was asked cannot run, nothing started: a bad option, an impossible
#                configuration, a missing extra, a path that cannot be used (a RefusedError)
EXIT_TARGET_MISSED = 3  # a benchmark run with --check missed a figure
EXIT_INTERRUPTED = 130
MAP_PICTURE_ROBOTS = 8  # robots drawn on each map by `dmxshm maps --render`


class _Command(click.Command):
    """A command on which a :class:`~dmxshm.errors.RefusedError` is a usage error (exit
    code 2, after the command's usage line), wherever it was raised: the one place
    where a refusal becomes its exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RefusedError as exc:
            raise click.UsageError(str(exc), ctx) from None


class _Group(click.Group):
    """A group whose commands and subgroups are :class:`_Command` s."""

    command_class = _Command
    group_class = type  # subgroups are _Groups too


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"],
                                           "auto_envvar_prefix": "DMXSHM"})
@click.version_option(__version__, prog_name="dmxshm")
def cli() -> None:
    """dmxshm: a Duckiematrix-style robot simulator network over POSIX shared memory.

    Options can also be set from the environment as DMXSHM_<COMMAND>_<OPTION>,
    e.g. DMXSHM_BENCH_IPC_ROUNDS=5000 (not the destructive flags of 'clean').
    """


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def info(as_json: bool) -> None:
    """Show what this machine offers the simulator.

    Cores, /dev/shm size and free space, whether real-time scheduling and CPU
    pinning are permitted, the memory-ordering primitive in use, dmxshm
    objects present in /dev/shm, and package versions.
    """
    from dmxshm.sysinfo import collect

    data = collect()
    if as_json:
        click.echo(_json.dumps(data, indent=2))
    else:
        console.print_info(data)


@cli.command()
@click.option("--dry-run", is_flag=True, allow_from_autoenv=False,
              help="Only list what would be removed.")
@click.option("--all", "remove_all", is_flag=True, allow_from_autoenv=False,
              help="Remove every dmxshm object of this user, even of live processes.")
@click.option("--all-namespaces", is_flag=True, allow_from_autoenv=False,
              help="Judge objects made in another PID namespace (another container "
                   "sharing /dev/shm) by their pid too, as if made here; by default they "
                   "are kept, since their pid means nothing here.")
def clean(dry_run: bool, remove_all: bool, all_namespaces: bool) -> None:
    """Remove dmxshm segments and semaphores whose creator process is dead.

    Names carry the creator's pid (dmx-<pid>-<token>-<what>), so objects left
    by a crashed or killed run are found and unlinked. Objects of running
    networks are kept unless --all is given. Only this user's objects are
    touched.
    """
    from dmxshm.shm.clean import scan, sweep

    found = scan(all_namespaces=all_namespaces)
    console.print_clean(found, sweep(remove_live=remove_all, dry_run=dry_run,
                                     all_namespaces=all_namespaces), dry_run)


CAMERA_PRESETS = {"duckiebot": (640, 480)}
"""Named camera sizes: a Duckiebot's camera delivers 640x480 (at 30 Hz)."""


def _parse_wh(ctx: Any, param: Any, value: str) -> tuple[int, int]:
    if value.lower() in CAMERA_PRESETS:
        return CAMERA_PRESETS[value.lower()]
    try:
        w, h = (int(v) for v in value.lower().split("x"))
    except ValueError:
        raise click.BadParameter(f"{value!r}: use WIDTHxHEIGHT, e.g. 160x120, 0x0, or a "
                                 f"preset ({', '.join(CAMERA_PRESETS)})") from None
    return w, h


def _parse_pin(ctx: Any, param: Any, value: str | None) -> dict[str, int] | str:
    if (value or "").strip() == "auto":
        return "auto"
    pins: dict[str, int] = {}
    for item in filter(None, (value or "").split(",")):
        role, sep, cpu = item.partition("=")
        if not sep or not cpu.strip().isdigit():
            raise click.BadParameter(f"{item!r}: use ROLE=CPU, e.g. engine=0,renderer-0=1, "
                                     "or auto")
        pins[role.strip()] = int(cpu)
    return pins


def _parse_rates(ctx: Any, param: Any, value: str | None) -> dict[str, float]:
    rates: dict[str, float] = {}
    for item in filter(None, (value or "").split(",")):
        name, sep, hz = item.partition("=")
        try:
            rates[name.strip()] = float(hz)
        except ValueError:
            raise click.BadParameter(f"{item!r}: use SENSOR=HZ, e.g. imu=200") from None
        if not sep:
            raise click.BadParameter(f"{item!r}: use SENSOR=HZ, e.g. imu=200")
    return rates


@cli.command()
@click.option("--mode", type=click.Choice(["gym", "realtime"]), default="gym", show_default=True,
              help="gym: lockstep and reproducible; realtime: nobody waits, drops are counted.")
@click.option("--robots", type=int, default=2, show_default=True, help="Robots in the world.")
@click.option("--renderers", type=int, default=1, show_default=True,
              help="Renderer processes (robots are split between them).")
@click.option("--agents", type=int, default=1, show_default=True,
              help="Agent processes (robots are split between them).")
@click.option("--agent", default="lane-follow", show_default=True,
              help="Built-in agent (idle, random, lane-follow), module:callable (found in "
                   "--app-dir or on sys.path) or path/to/file.py:callable.")
@click.option("--app-dir", type=click.Path(exists=True, file_okay=False), default=".",
              show_default=True,
              help="Folder searched first for the --agent module (as uvicorn's --app-dir).")
@click.option("--steps", type=int, default=1000, show_default=True, help="Gym mode: steps.")
@click.option("--duration", "duration_s", type=float, default=10.0, show_default=True,
              help="Realtime mode: seconds to run.")
@click.option("--camera", default="160x120", show_default=True, callback=_parse_wh,
              help="Camera size WxH, or 'duckiebot' (640x480, the real robot's); 0x0 "
                   "disables the camera.")
@click.option("--renderer", type=click.Choice(["tiny", "egl", "auto"]), default="tiny",
              show_default=True,
              help="Camera renderer: tiny (pybullet's CPU renderer, the same pixels "
                   "everywhere), egl (its EGL plugin: a GPU, or Mesa's software OpenGL), or "
                   "auto (egl where a GPU is present, else tiny).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of world and agents.")
@click.option("--map", "map_name", default="loop", show_default=True,
              help="Bundled map name or path of a map file.")
@click.option("--pin", callback=_parse_pin, default="",
              help="Pin processes to CPUs: ROLE=CPU,... (roles: engine, renderer-N, agent-N, "
                   "camera-N in realtime with a camera, spine), or 'auto': the spine alone "
                   "on the last CPU, the rest dealt round the others.")
@click.option("--record", "record_dir", type=click.Path(file_okay=False),
              help="Write camera frames as PNG here, plus contact_sheet.png (a folder that "
                   "holds frames of an earlier run is refused unless --overwrite).")
@click.option("--overwrite", is_flag=True,
              help="With --record: remove the frames of an earlier run from the folder first; "
                   "with --log: replace an existing log.")
@click.option("--log", "log_path", type=click.Path(dir_okay=False),
              help="Record the run to this MCAP file: camera images, poses, applied wheel "
                   "commands, IMU, encoders, time of flight, config and summary (opens in "
                   "Foxglove; replay a realtime run with 'dmxshm replay'). Needs "
                   "pip install 'dmxshm[log]'.")
@click.option("--json", "json", type=click.Path(dir_okay=False),
              help="Write the summary as JSON to this file.")
@click.option("--timeout", "timeout_s", type=float, default=10.0, show_default=True,
              help="Longest wait of any process for another before it gives up.")
@click.option("--spine", "use_spine", is_flag=True,
              help="Realtime: put a pinned spine between the agents and the engine "
                   "(pin it with --pin spine=CPU; default the last CPU). Gym: step through "
                   "the spine's pipeline in lockstep, one physics step of 1/frequency a "
                   "step, each observation two cycles old (deterministic).")
@click.option("--spine-frequency", "spine_hz", type=float, default=1000.0, show_default=True,
              help="Frequency of the --spine, Hz.")
@click.option("--spine-reply-at", "spine_reply_at_s", type=click.FloatRange(min=0.0),
              default=None,
              help="Realtime --spine: the instant after a frame's send, in seconds, at which "
                   "the engine's reply counts as the observation (T_o). The report predicts "
                   "t_send - t_obs from the frequency and this alone, beside the measured "
                   "[default: 0.0002, NetworkConfig.spine_reply_at_s].")
@click.option("--command-timeout", "command_timeout_s", type=float, default=0.5,
              show_default=True, help="Realtime: a wheel command older than this stops its robot.")
@click.option("--profile", is_flag=True,
              help="Sample every process with psutil: a live table while it runs, CPU, "
                   "memory and context switches per role at the end (and in --json).")
@click.option("--profile-interval", "profile_interval_s", type=click.FloatRange(min=0.1),
              default=0.5, show_default=True, help="Seconds between two profile samples.")
@click.option("--rates", callback=_parse_rates, default="",
              help="Realtime sensor rates in Hz, e.g. camera=15,imu=200 "
                   "[default: camera=30,imu=100,encoders=30,tof=15].")
@click.option("--view", "view", is_flag=True,
              help="Serve a live view of the run in the browser (map, poses and trails, "
                   "cameras, sensor rates, steps/s; the spine's histograms). Needs "
                   "pip install 'dmxshm[view]'.")
@click.option("--view-port", type=int, default=8765, show_default=True,
              help="Port of the --view server.")
@click.option("--view-host", default="127.0.0.1", show_default=True,
              help="Address of the --view server; beyond loopback needs --allow-remote.")
@click.option("--allow-remote", is_flag=True,
              help="Let --view listen beyond loopback; its URL then carries a token.")
def run(mode: str, robots: int, renderers: int, agents: int, agent: str, app_dir: str,
        steps: int, overwrite: bool,
        duration_s: float, camera: tuple[int, int], seed: int, map_name: str,
        pin: dict[str, int], record_dir: str | None, json: str | None,
        timeout_s: float, use_spine: bool, spine_hz: float, command_timeout_s: float,
        spine_reply_at_s: float | None,
        profile: bool, profile_interval_s: float, rates: dict[str, float],
        log_path: str | None, view: bool, view_port: int, view_host: str,
        allow_remote: bool, renderer: str) -> None:
    """Run a simulator network: engine, renderers and agents over shared memory.

    Prints a progress bar, then a summary: steps, simulated and wall time,
    steps/s, each sensor's configured and achieved rate, drops, and the time
    per step spent in physics, rendering, agents and the framework.
    """
    from dmxshm import network

    _refuse_other_modes_options(mode)
    if spine_reply_at_s is not None and not use_spine:
        raise click.UsageError("--spine-reply-at is the network spine's T_o: it applies with "
                               "--spine only. Drop it, or add --spine.")
    _check_outputs(json)
    _add_app_dir(app_dir)
    with _usage_errors():  # what was asked cannot run: found before anything starts
        config = network.NetworkConfig(
            mode=mode, robots=robots, renderers=renderers, agents=agents, agent=agent,
            steps=steps, duration_s=duration_s, camera=camera, seed=seed, map=map_name,
            pin=pin, record_dir=record_dir, wait_timeout_s=timeout_s,
            command_timeout_s=command_timeout_s, spine=use_spine, spine_hz=spine_hz,
            **({} if spine_reply_at_s is None else {"spine_reply_at_s": spine_reply_at_s}),
            sensor_rates_hz={**network.DEFAULT_SENSOR_RATES_HZ, **rates}, profile=profile,
            profile_interval_s=profile_interval_s, log=log_path, renderer=renderer)
        config.preflight()  # an agent that does not load, a bad map, too many robots
        if log_path:
            _check_log(log_path, overwrite)
        if view:
            _check_view(view_host, allow_remote)
    if record_dir:  # last: --overwrite removes old frames only for a run that will start
        _prepare_record_dir(record_dir, overwrite)
    failed: network.RunFailedError | None = None
    stopped: BaseException | None = None
    with contextlib.ExitStack() as stack:
        if view:
            url = stack.enter_context(_view_process(os.getpid(), view_host, view_port,
                                                    allow_remote, follow=False))
            click.echo(f"view: {url}", err=True)
        with console.run_progress(f"{mode} run", config.planned_steps,
                                  live_table=profile) as (on_progress, on_profile):
            try:
                summary = network.run(config, on_progress=on_progress, on_profile=on_profile)
            except network.RunFailedError as exc:  # the figures still tell what happened
                failed, summary = exc, exc.summary
            except (KeyboardInterrupt, SystemExit) as exc:  # Ctrl-C, SIGTERM: what was done
                stopped = exc
    if stopped is not None:
        partial = getattr(stopped, "summary", None)
        if partial is not None:
            console.print_summary(partial)
            if json:
                console.write_json(partial.to_dict(), json)
        raise stopped
    note = console.realtime_refused({"scheduling": summary.spine.get("scheduling")})
    if note:  # once, and the run went on
        click.echo(note, err=True)
    console.print_summary(summary)
    warn_cut_parts(summary.log or None)
    if profile:
        console.print_profile(summary.processes, summary.profile, summary.shm_bytes)
    if json:
        console.write_json(summary.to_dict(), json)
    if failed is not None:
        raise failed


@cli.command("view")
@click.option("--pid", type=int, help="The run to show: its supervisor's pid "
              "[default: the newest run going, and the next one when it ends].")
@click.option("--port", type=int, default=8765, show_default=True, help="Port of the server.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address of the server; beyond loopback needs --allow-remote.")
@click.option("--allow-remote", is_flag=True,
              help="Listen beyond loopback; the URL then carries a token, and requests "
                   "without it are refused.")
def view_cmd(pid: int | None, port: int, host: str, allow_remote: bool) -> None:
    """Serve a live view of a run already going, in the browser, until Ctrl-C.

    It peeks at the run's shared memory and never slows it down.
    """
    import asyncio

    from dmxshm.view.server import ViewServer, check_host, require_aiohttp

    require_aiohttp()
    token = check_host(host, allow_remote, None)
    server = ViewServer(pid, host, port, token, follow=pid is None, exit_with=None)
    try:
        asyncio.run(server.serve(lambda url: click.echo(f"view: {url} (Ctrl-C to stop)")))
    except OSError as exc:
        raise DmxError(f"the view cannot listen on {host}:{port}: {exc}") from None


@cli.group("log")
def log_group() -> None:
    """Read MCAP logs written by 'dmxshm run --log'."""


@log_group.command("info")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def log_info(path: str, as_json: bool) -> None:
    """Topics, message counts, rates and duration of a log, and the run it records.

    Reads every message, so a truncated or corrupted file is found.
    """
    from dmxshm.logs import info

    data = info(path)
    if as_json:
        click.echo(_json.dumps(data, indent=2))
    else:
        console.print_log_info(data)
    warn_cut_parts(data)


@cli.command()
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--log", "log_path", type=click.Path(dir_okay=False),
              help="Record the replay to this MCAP file too (its sensors rendered again).")
@click.option("--camera", default=None, callback=lambda c, p, v: None if v is None
              else _parse_wh(c, p, v),
              help="The replay's camera size WxH (0x0: none, faster) [default: the recorded].")
@click.option("--overwrite", is_flag=True, help="With --log: replace an existing log.")
@click.option("--json", "json", type=click.Path(dir_okay=False),
              help="Write the replay's summary as JSON to this file.")
def replay(path: str, log_path: str | None, camera: tuple[int, int] | None,
           overwrite: bool, json: str | None) -> None:
    """Replay a run recorded with 'dmxshm run --log', exactly.

    Re-runs the same map, seed and robots in gym mode, each robot given at
    every engine step the command it had in the recorded run, and compares
    the trajectory digests: equal means the replay went through the same
    states, bit for bit. Exits 1 if they differ. A realtime run is what this
    is for (it cannot be reproduced by running it again); a log that lacks
    what replay needs is refused with the reason.
    """
    from dmxshm import replay as rp

    _check_outputs(json)
    with _usage_errors():  # a log that cannot be replayed: refused before anything starts
        if log_path:
            _check_log(log_path, overwrite)
        rec = rp.load(path)
        rp.check(rec, path, log=log_path, camera=camera)
    with console.run_progress("replay", rec.steps, live_table=False) as (on_progress, _):
        summary = rp.run_recording(rec, path, log=log_path, camera=camera,
                                   on_progress=on_progress)
    if hasattr(summary, "sensors"):
        console.print_summary(summary)
        warn_cut_parts(summary.log)
    else:  # a realtime spine run: its physics, replayed in this process
        click.echo(f"\nreplay of the {summary.mode}: {summary.steps} physics steps")
    recorded = rec.summary["trajectory_digest"]
    same = summary.trajectory_digest == recorded
    click.echo(f"recorded run ({rec.config['mode']} mode, {rec.steps} steps, "
               f"{rec.summary['wall_time_s']:.1f} s): digest {recorded}")
    click.echo(f"replay: {summary.steps} steps in {summary.wall_time_s:.1f} s; digest "
               f"{'EQUAL' if same else 'DIFFERENT'}")
    if json:
        data = summary.to_dict() if hasattr(summary, "to_dict") else dataclasses.asdict(summary)
        console.write_json({**data, "recorded_digest": recorded, "digest_equal": same}, json)
    if not same:
        sys.exit(EXIT_ERROR)


@cli.command("maps")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option("--render", "render_dir", type=click.Path(file_okay=False),
              help="Also draw each bundled map from above as DIR/map-NAME.png, with some "
                   "robots at their start poses, as dmxshm's own renderer sees them.")
def maps_cmd(as_json: bool, render_dir: str | None) -> None:
    """List the bundled maps: size, road tiles, and how many robots each holds.

    A map's capacity is how many robots always fit on it, 0.35 m apart, whatever
    the seed; --robots above it is refused before a run starts. Pass a map by
    name (--map NAME) or give your own map file (docs/maps.md).
    """
    from dmxshm.world.maps import map_infos

    if render_dir:
        _check_folder(render_dir, "--render")
    infos = map_infos()
    if as_json:
        click.echo(_json.dumps(infos, indent=2))
    else:
        console.print_maps(infos)
    if render_dir:
        from dmxshm.matrix.camera import top_view
        from dmxshm.pngio import write_png
        from dmxshm.world.maps import load_map

        os.makedirs(render_dir, exist_ok=True)
        for m in infos:
            path = os.path.join(render_dir, f"map-{m['name']}.png")
            write_png(path, top_view(load_map(m["name"]), 480,
                                     robots=min(m["capacity"], MAP_PICTURE_ROBOTS)))
            click.echo(f"wrote {path}", err=as_json)


@cli.command("profile")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--plot", "plot", type=click.Path(dir_okay=False),
              help="Draw CPU% per process over time and the time per step as a PNG "
                   "(needs the plot extra: matplotlib).")
def profile_cmd(path: str, plot: str | None) -> None:
    """Show the profile of a run saved with --profile --json PATH.

    Prints one line per process (CPU% mean and peak, the CPUs it was allowed
    and the ones it ran on, peaks of RSS, USS and PSS, involuntary context switches)
    and, with --plot, draws the run at a glance.
    """
    try:
        with open(path) as fh:
            run = _json.load(fh)
    except (OSError, ValueError) as exc:
        raise click.BadParameter(f"cannot read {path}: {exc}", param_hint="PATH") from None
    if not isinstance(run, dict) or not run.get("profile") or "processes" not in run:
        raise click.BadParameter(
            f"{path} holds no profile: write it with 'dmxshm run --profile --json {path}' "
            "(or 'dmxshm spine --profile --json ...')", param_hint="PATH")
    _check_outputs(plot=plot)
    console.print_profile(run["processes"], run["profile"], run.get("shm_bytes", 0))
    if plot:
        from dmxshm.bench.plot import plot_profile

        plot_profile(run, plot)
        click.echo(f"wrote {plot}")


@cli.command()
@click.option("--schedule", type=click.Choice(["after-action", "after-sleep"]),
              default="after-action", show_default=True,
              help="after-action: plan . (can // sleep); after-sleep: (plan // can) . sleep.")
@click.option("--frequency", "frequency_hz", type=float, default=1000.0, show_default=True,
              help="Spine frequency, Hz.")
@click.option("--cpu", type=int, default=None, help="CPU of the spine [default: the last].")
@click.option("--actuation", type=click.Choice(["mock", "sim"]), default="mock",
              show_default=True,
              help="CAN actuation: mock (a simulated bus) or sim (pybullet, one step per cycle).")
@click.option("--can-cycle", "can_cycle_s", type=float, default=0.9e-3, show_default=True,
              help="Duration of a CAN cycle T_c, s.")
@click.option("--reply-at", "reply_at_s", type=float, default=None,
              help="When the last servo reply comes within a CAN cycle, T_o, s [default: T_c].")
@click.option("--jitter", "jitter_s", type=float, default=0.0, show_default=True,
              help="Standard deviation of the CAN cycle's jitter, s.")
@click.option("--bus-delay", "bus_delay_s", type=click.FloatRange(min=0), default=0.0,
              show_default=True,
              help="Mock bus: how long after it receives a CAN frame it starts the cycle, s "
                   "(a slower link). It shows in the measured latencies, not in the law's.")
@click.option("--plan-time", "plan_s", type=float, default=0.3e-3, show_default=True,
              help="Work time of the built-in planner, T_p, s.")
@click.option("--duration", "duration_s", type=float, default=10.0, show_default=True,
              help="Acting time, s (5 stop cycles come before and after).")
@click.option("--agent", default=None,
              help="Take actions from an agent process (forward, module:callable or "
                   "path/to/file.py:callable) instead of the built-in planner; reports the "
                   "agent's round trip.")
@click.option("--app-dir", type=click.Path(exists=True, file_okay=False), default=".",
              show_default=True, help="Folder searched first for the --agent module.")
@click.option("--action-timeout", "action_timeout_s", type=float, default=0.1,
              show_default=True, help="An agent's action is reused until this old, then stops.")
@click.option("--json", "json", type=click.Path(dir_okay=False),
              help="Write the report (and the law's prediction) as JSON.")
@click.option("--plot", "plot", type=click.Path(dir_okay=False),
              help="Draw the timeline and histograms as a PNG (needs matplotlib).")
@click.option("--profile", is_flag=True,
              help="Sample the spine, its bus (and agent) with psutil: a live table, then "
                   "CPU, cores, memory and context switches per process (and in --json).")
@click.option("--profile-interval", "profile_interval_s", type=click.FloatRange(min=0.1),
              default=0.5, show_default=True, help="Seconds between two profile samples.")
def spine(schedule: str, frequency_hz: float, cpu: int | None, actuation: str,
          can_cycle_s: float, reply_at_s: float | None, jitter_s: float, bus_delay_s: float,
          plan_s: float, duration_s: float, agent: str | None, app_dir: str,
          action_timeout_s: float,
          json: str | None, plot: str | None, profile: bool, profile_interval_s: float) -> None:
    """Run a pinned fixed-frequency spine that times CAN cycles.

    Each cycle builds an observation from the latest servo replies, plans an
    action, collects the CAN cycle started in the previous cycle, and starts
    the next one, in the order the schedule says. The mock CAN bus runs on its
    own clock: it starts a cycle when it receives the frame. Prints the period,
    the CAN cycle, the delivery delays between spine and bus, and t_send -
    t_obs and t_send - t_act beside the law's prediction from the
    configuration (T, --plan-time, --reply-at), with what the pipeline costs
    beyond it.
    """
    from dmxshm.spine.run import SpineConfig, run

    _check_outputs(json, plot)
    _add_app_dir(app_dir)
    with _usage_errors():
        cfg = SpineConfig(schedule=schedule, frequency_hz=frequency_hz, cpu=cpu,
                          actuation=actuation, can_cycle_s=can_cycle_s, reply_at_s=reply_at_s,
                          jitter_s=jitter_s, bus_delay_s=bus_delay_s, plan_s=plan_s,
                          duration_s=duration_s, agent=agent,
                          action_timeout_s=action_timeout_s)
    click.echo(f"spine: {schedule} at {frequency_hz:g} Hz for {duration_s:g} s ...", err=True)
    live = console.LiveTable("spine", 0) if profile and sys.stderr.isatty() else None
    try:
        report, recs = run(cfg, profile_interval_s=profile_interval_s if profile else None,
                           on_profile=live.draw if live else None)
    finally:
        if live:
            live.close()
    note = console.realtime_refused(report)
    if note:  # once, and the run went on
        click.echo(note, err=True)
    console.print_spine(report)
    if profile:
        console.print_profile(report["processes"], report["profile"], report["shm_bytes"])
    from dmxshm.bench.plot import plot_spine

    console.write_outputs(report, json, plot, lambda p: plot_spine(report, recs, p))


@cli.group()
def bench() -> None:
    """Benchmarks that measure dmxshm beside its peers in the same run."""


@bench.command("ipc")
@click.option("--quick", is_flag=True, help="Fewer rounds, one repeat: under 30 s.")
@click.option("--rounds", type=click.IntRange(min=10), default=None,
              help="Timed round trips per cell and repeat [default: 20000; --quick 2000].")
@click.option("--repeats", type=click.IntRange(min=1), default=None,
              help="Interleaved passes over all cells [default: 3; --quick 1].")
@click.option("--json", "json", type=click.Path(dir_okay=False, writable=True),
              help="Write the rows as a JSON list to this file.")
@click.option("--plot", "plot", type=click.Path(dir_okay=False, writable=True),
              help="Draw a bar chart PNG (needs the plot extra: matplotlib).")
@click.option("--check", is_flag=True,
              help="Also check the project's target figures (measured on its 2-core "
                   f"development machine): print them, exit {EXIT_TARGET_MISSED} if one is missed.")
def bench_ipc(quick: bool, rounds: int | None, repeats: int | None, json: str | None,
              plot: str | None, check: bool) -> None:
    """Round trip between two processes: semaphore, ring, pipe and queue.

    Ping-pong with an 8-byte payload and a 160x120x3 uint8 frame, with both
    processes pinned to one core and to two cores. The raw posix_ipc
    semaphore pair (plus a plain shared-memory copy of the payload) is the
    floor; each transport is reported as a ratio to it.
    """
    from dmxshm.bench import ipc

    json_path, plot_path = json, plot
    _check_outputs(json_path, plot_path)
    rounds = rounds or (2000 if quick else 20_000)
    repeats = repeats or (1 if quick else 3)
    ncells = len(ipc.TRANSPORTS) * len(ipc.PAYLOADS) * len(ipc.pinnings()) * repeats
    with click.progressbar(length=ncells, label="bench ipc", file=sys.stderr,
                           show_pos=True, item_show_func=lambda s: s) as bar:
        def progress(label: str) -> None:
            bar.update(1, label)

        rows = ipc.run(rounds=rounds, repeats=repeats, progress=progress,
                       warmup=200 if quick else 500)
    console.print_ipc_table(rows)
    from dmxshm.bench.plot import plot_ipc

    console.write_outputs(ipc.as_dicts(rows), json_path, plot_path, lambda p: plot_ipc(rows, p))
    _check_targets(ipc.targets(rows), check)


@bench.command("render")
@click.option("--sizes", default="64x64,160x120,640x480", show_default=True,
              help="Image sizes, WxH, comma-separated.")
@click.option("--frames", type=click.IntRange(min=1), default=30, show_default=True,
              help="Timed renders per renderer and size.")
@click.option("--renderer", "renderers", type=click.Choice(["tiny", "egl"]), multiple=True,
              help="Renderers to compare [default: tiny and egl].")
@click.option("--images", "images_dir", type=click.Path(file_okay=False),
              help="Write each renderer's image of the same view per size as PNG here.")
@click.option("--json", "json", type=click.Path(dir_okay=False, writable=True),
              help="Write the figures as JSON to this file.")
def bench_render(sizes: str, frames: int, renderers: tuple[str, ...], images_dir: str | None,
                 json: str | None) -> None:
    """The camera renderers side by side: ms per frame and frames/s per process at each
    size, on the same scene, and how their images differ.

    tiny is pybullet's CPU renderer; egl its EGL plugin (on a GPU, or on Mesa's
    software OpenGL where there is none). A renderer that cannot load here is
    named with the reason and left out.
    """
    from dmxshm.bench import render

    _check_outputs(json)
    if images_dir:
        _check_folder(images_dir, "--images")
    wh = tuple(_parse_wh(None, None, v.strip()) for v in sizes.split(",") if v.strip())
    if not wh or any(w <= 0 or h <= 0 for w, h in wh):
        raise click.BadParameter(f"{sizes!r}: give sizes as WxH,WxH (each positive)",
                                 param_hint="--sizes")
    chosen = renderers or ("tiny", "egl")
    with click.progressbar(length=len(wh) * len(chosen), label="bench render",
                           file=sys.stderr, item_show_func=lambda s: s) as bar:
        result = render.run(wh, chosen, frames, progress=lambda label: bar.update(1, label))
    console.print_render(result, render.speedups(result))
    if images_dir:
        from dmxshm.pngio import write_png

        os.makedirs(images_dir, exist_ok=True)
        for name, by_size in result["images"].items():
            for size, img in by_size.items():
                path = os.path.join(images_dir, f"render-{name}-{size}.png")
                write_png(path, img)
                click.echo(f"wrote {path}")
    if json:
        console.write_json({k: v for k, v in result.items() if k != "images"}
                           | {"egl_over_tiny": render.speedups(result)}, json)


@bench.command("network")
@click.option("--quick", is_flag=True, help="Fewer steps: about 15 s.")
@click.option("--json", "json", type=click.Path(dir_okay=False),
              help="Write the rows as a JSON list to this file.")
@click.option("--plot", "plot", type=click.Path(dir_okay=False),
              help="Draw the time breakdown as a PNG (needs the plot extra: matplotlib).")
@click.option("--check", is_flag=True,
              help="Also check the project's target figures (measured on its 2-core "
                   f"development machine): print them, exit {EXIT_TARGET_MISSED} if one is missed.")
def bench_network(quick: bool, json: str | None, plot: str | None, check: bool) -> None:
    """Gym-mode steps/s and the framework's overhead per step, beside its floor.

    1, 4 and 8 robots, without and with a 160x120 camera, one renderer and
    one idle agent. The overhead is the wall time of a step not spent in
    physics, rendering or agent code; the floor is the time of the same
    handoffs as raw posix_ipc semaphores between the same processes.
    """
    from dmxshm.bench import network

    _check_outputs(json, plot)
    configs = network.CONFIGS
    with click.progressbar(length=len(configs), label="bench network", file=sys.stderr,
                           item_show_func=lambda s: s) as bar:
        rows = network.run(quick=quick, progress=lambda label: bar.update(1, label))
    console.print_network_rows(rows)
    console.print_network_busy(rows)
    from dmxshm.bench.plot import plot_network

    console.write_outputs(network.as_dicts(rows), json, plot, lambda p: plot_network(rows, p))
    _check_targets(network.targets(rows), check)


@bench.command("vector")
@click.option("--num-envs", type=click.IntRange(min=1), multiple=True, default=(16,),
              show_default=True,
              help="Sub-environments in each vector env; repeat to measure several sizes.")
@click.option("--workers", type=click.IntRange(min=1), multiple=True,
              help="dmxshm worker processes [default: one per core]; repeat for a sweep "
                   "(dmxshm measured at each count, its peers once).")
@click.option("--scaling-plot", "scaling_plot", type=click.Path(dir_okay=False),
              help="With a --workers sweep: env-steps/s against workers, beside the ideal "
                   "(workers x one environment alone), as a PNG.")
@click.option("--obs", "obs", type=click.Choice(["state", "camera64", "camera160"]),
              multiple=True, help="Observation kinds to measure; repeatable "
              "[default: all three: state, camera 64x64, camera 160x120].")
@click.option("--quick", is_flag=True, help="1.5 s per measurement instead of 4 s.")
@click.option("--json", "json", type=click.Path(dir_okay=False),
              help="Write the rows as a JSON list to this file.")
@click.option("--plot", "plot", type=click.Path(dir_okay=False),
              help="Draw the rates as a bar chart PNG (needs the plot extra: matplotlib).")
@click.option("--check", is_flag=True,
              help="Also check the project's target figures (measured on its 2-core "
                   f"development machine): print them, exit {EXIT_TARGET_MISSED} if one is missed.")
def bench_vector(num_envs: tuple[int, ...], workers: tuple[int, ...], scaling_plot: str | None,
                 obs: tuple[str, ...], quick: bool, json: str | None, plot: str | None,
                 check: bool) -> None:
    """dmxshm make_vec beside gymnasium's SyncVectorEnv and AsyncVectorEnv.

    Same environment (dmxshm/DuckieLane-v0), same number of sub-environments,
    random actions; obs "state", and "camera" at 64x64 and 160x120. Measures
    dmxshm's step() ("dmxshm"), its asynchronous recv()/send() at batch_size
    n/2 ("dmx-recv"), and the same workers stepping their worlds with no
    handoff at all ("free", the reference for both). Reports env-steps/s,
    the ratios, and the scaling efficiency (dmxshm / (cores x one environment
    in one process)). Each rate is the median of three windows after a 0.5 s
    warm-up; a full run of one size takes about two minutes.
    """
    from dmxshm.bench import vector

    _check_outputs(json, plot)
    kinds = {"state": ("state", (160, 120)), "camera64": ("camera", (64, 64)),
             "camera160": ("camera", (160, 120))}
    configs = tuple(kinds[k] for k in obs) or vector.OBS_CONFIGS
    _check_outputs(plot=scaling_plot)
    per_workers = len(vector.PER_WORKERS) * max(len(workers), 1)
    n_runs = len(configs) * (1 + (len(vector.IMPLS) - len(vector.PER_WORKERS) + per_workers)
                             * len(num_envs))
    with click.progressbar(length=n_runs, label="bench vector", file=sys.stderr,
                           item_show_func=lambda s: s) as bar:
        rows = vector.run(num_envs=num_envs, workers=workers or None, quick=quick,
                          configs=configs,
                          progress=lambda label: bar.update(1, label))
    console.print_vector_rows(rows, vector.summary(rows))
    console.print_breakdowns(rows)
    from dmxshm.bench.plot import plot_vector

    console.write_outputs(vector.as_dicts(rows), json, plot, lambda p: plot_vector(rows, p))
    if scaling_plot:
        from dmxshm.bench.plot import plot_scaling

        console.write_outputs(None, None, scaling_plot, lambda p: plot_scaling(rows, p))
    _check_targets(vector.targets(rows), check)


def _add_app_dir(app_dir: str) -> None:
    """Search ``app_dir`` first for the --agent module; the agent processes start with
    this ``sys.path``, so they find it too."""
    folder = os.path.abspath(app_dir)
    if folder not in sys.path:
        sys.path.insert(0, folder)


def _prepare_record_dir(path: str, overwrite: bool) -> None:
    """A folder for --record: refused when it holds an earlier run's frames (unless
    --overwrite, which removes them). (No camera: NetworkConfig refuses it.)"""
    old = sorted(glob.glob(os.path.join(path, "robot[0-9][0-9]_*.png"))
                 + glob.glob(os.path.join(path, "contact_sheet.png")))
    if old and not overwrite:
        raise click.UsageError(f"{path} holds {len(old)} frame(s) of an earlier run; new "
                               "frames would mix with them. Choose an empty folder, or add "
                               "--overwrite to remove them first.")
    try:
        for name in old:
            os.remove(name)
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise click.BadParameter(f"cannot use {path}: {exc.strerror}",
                                 param_hint="--record") from None


# Options that only one mode uses: typed in the other, they are refused.
_MODE_ONLY = {"steps": ("gym", "--steps", "a realtime run lasts --duration seconds"),
              "duration_s": ("realtime", "--duration", "a gym run lasts --steps steps"),
              "rates": ("realtime", "--rates", "in gym mode every sensor produces once a step"),
              "command_timeout_s": ("realtime", "--command-timeout",
                                    "in gym mode every step waits for every command"),
              "spine_reply_at_s": ("realtime", "--spine-reply-at",
                                   "a gym spine is the engine's lockstep pipeline, with no "
                                   "frames to reply to")}


def _refuse_other_modes_options(mode: str) -> None:
    """A typed option that has no effect in ``mode`` is a usage error, with the reason."""
    ctx = click.get_current_context()
    for name, (only, flag, why) in _MODE_ONLY.items():
        if only == mode:
            continue
        source = ctx.get_parameter_source(name)
        if source is ParameterSource.COMMANDLINE:
            raise click.UsageError(f"{flag} applies to {only} mode only: {why}. Drop it, or "
                                   f"add --mode {only}.")
        if source is ParameterSource.ENVIRONMENT:  # exported for other runs: said, not refused
            variable = f"DMXSHM_RUN_{name.upper()}"  # click names it after the parameter
            click.echo(f"dmxshm: note: {variable} has no effect in {mode} mode ({flag} applies "
                       f"to {only} mode only: {why}).", err=True)


@contextlib.contextmanager
def _usage_errors() -> Iterator[None]:
    """Checks of what was asked, before anything starts: a DmxError raised in the block
    (an impossible configuration, an agent that cannot load, a map without room, a
    missing extra) is a refusal, which :class:`_Command` turns into exit code 2."""
    try:
        yield
    except RefusedError:
        raise
    except DmxError as exc:
        raise RefusedError(str(exc)) from None


def _check_targets(targets: list[tuple[str, float, bool]], check: bool) -> None:
    """With --check: print the project's target figures, exit 3 if one is missed."""
    if not check or not targets:
        return
    console.print_targets(targets)
    if not all(ok for _, _, ok in targets):
        sys.exit(EXIT_TARGET_MISSED)


@contextlib.contextmanager
def _view_process(pid: int | None, host: str, port: int, allow_remote: bool,
                  follow: bool) -> Iterator[str]:
    """A live view server in a process of its own (``dmx-view``, started through the
    process layer); yields its URL, stops it at the end."""
    from dmxshm.proc import program
    from dmxshm.view.server import TOKEN_ENV, check_host, require_aiohttp, wait_for_url

    require_aiohttp()
    token = check_host(host, allow_remote, None)
    args = ["--host", host, "--port", str(port), "--exit-with", str(os.getpid())]
    args += ["--pid", str(pid)] if pid is not None else []
    args += ["--allow-remote"] if allow_remote else []
    args += ["--follow"] if follow else []
    proc = program.start("view", "dmxshm.view.server", args,
                         env={TOKEN_ENV: token} if token else None)  # not on the command line
    try:
        url = wait_for_url(proc)
        # Its later messages go on to our stderr (a full pipe would block it).
        threading.Thread(target=_relay, args=(proc.stderr,), daemon=True).start()
        yield url
    finally:
        program.stop(proc)


def _relay(pipe: Any) -> None:
    with contextlib.suppress(OSError, ValueError):
        for line in pipe:
            sys.stderr.write(line.decode(errors="replace"))


def _check_log(path: str, overwrite: bool) -> None:
    """A log that can be written, and no earlier log replaced unless asked."""
    from dmxshm.logs import check_writable

    check_writable(path)
    if os.path.exists(path) and not overwrite:
        raise RefusedError(f"{path} exists; give --overwrite to replace it, or another path")


def _check_view(host: str, allow_remote: bool) -> None:
    """A view that can start: the extra installed, a host beyond loopback meant."""
    from dmxshm.view.server import check_host, require_aiohttp

    require_aiohttp()
    check_host(host, allow_remote, None)


def warn_cut_parts(log_info: dict[str, Any] | None) -> None:
    """Warn (on stderr) of each part of a log that was cut short when it was merged
    (``log_info``: :func:`dmxshm.logs.info`, or a summary's ``log``; None: no log)."""
    from dmxshm.logs import cut_warnings

    if log_info:
        for line in cut_warnings(log_info["path"], log_info["cut_parts"]):
            click.echo(line, err=True)


def _check_folder(path: str, option: str) -> None:
    """A folder that can be written (made if missing), before the work that fills it."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise click.BadParameter(f"cannot use {path}: {exc.strerror}",
                                 param_hint=option) from None
    if not os.access(path, os.W_OK):
        raise click.BadParameter(f"cannot write in {path}", param_hint=option)


def _check_outputs(json_path: str | None = None, plot: str | None = None) -> None:
    """Fail before a long run, not after it: an output that cannot be written, or a
    plot without matplotlib."""
    for path in (json_path, plot):
        if path is None:
            continue
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise click.BadParameter(f"cannot write {path}: {folder} is not a writable folder")
    if plot:
        from dmxshm.bench.plot import require_matplotlib

        with _usage_errors():  # a missing extra is a refusal
            require_matplotlib()


def main(argv: list[str] | None = None) -> None:
    """Console entry point: runs the click group, turns DmxError into a message."""
    signals.install()  # SIGTERM unwinds like Ctrl-C: every `with Registry()` unlinks
    try:
        cli.main(args=argv, prog_name="dmxshm", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("dmxshm: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except DmxError as exc:
        click.echo(f"dmxshm: error: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    except KeyboardInterrupt:
        click.echo("dmxshm: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    main()

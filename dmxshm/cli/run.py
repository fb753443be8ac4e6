"""``dmxshm run``: a simulator network, its live servers, its summary.

Its options are :class:`~dmxshm.network.NetworkConfig`'s fields, with their
defaults (:mod:`dmxshm.cli.run_options`), and the live servers'
(:mod:`dmxshm.view.launch`).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import click
from click.core import ParameterSource

from dmxshm import network
from dmxshm.cli import console, print_runs
from dmxshm.cli.checks import add_app_dir, check_outputs, usage_errors
from dmxshm.cli.group import Command
from dmxshm.cli.run_options import FIELDS, run_options
from dmxshm.errors import RefusedError
from dmxshm.network.recording import check_log_path, prepare_record_dir
from dmxshm.view import launch

GIVEN = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
"""Where a parameter the user set comes from (the others are defaults)."""


@click.command(cls=Command)
@run_options
def run(mode: str, robots: int, renderers: int, agents: int, agent: str, app_dir: str,
        steps: int, overwrite: bool,
        duration_s: float, camera: tuple[int, int], seed: int, map_name: str,
        route: str | None, noise: bool, motor_dynamics: bool, randomize: str | None,
        pin: dict[str, int], record_dir: str | None, json: str | None,
        timeout_s: float, use_spine: bool, spine_hz: float, command_timeout_s: float,
        spine_reply_at_s: float | None,
        profile: bool, profile_interval_s: float, rates: dict[str, float],
        log_path: str | None, view: bool, view_port: int, view_host: str,
        foxglove: bool, foxglove_port: int, foxglove_host: str,
        allow_remote: bool, renderer: str, physics: str, look: str, name: str | None,
        external_agents: int | None,
        connect_timeout_s: float, episodes: bool, episode_steps: int, action: str,
        duckiematrix: bool, duckiematrix_port: int,
        duckiematrix_host: str, robot_names: str | None) -> None:
    """Run a simulator network: engine, renderers and agents over shared memory.

    Prints a progress bar, then a summary: steps, simulated and wall time,
    steps/s, each sensor's configured and achieved rate, drops, and the time
    per step spent in physics, rendering, agents and the framework.
    """
    check_outputs(json)
    add_app_dir(app_dir)
    ctx = click.get_current_context()
    # Unset, the config's own default holds (the help says it; no literal repeats it).
    reply_at: dict[str, Any] = ({} if spine_reply_at_s is None
                                else {"spine_reply_at_s": spine_reply_at_s})
    with usage_errors():  # what was asked cannot run: found before anything starts
        if external_agents is not None and external_agents < 1:
            raise RefusedError(f"--external-agents must be 1 or more, not {external_agents} "
                               "(leave it out for a run of built-in agents only)")
        names: list[str] = []
        if duckiematrix:
            names = _duckiematrix_run(ctx, robots, robot_names, duckiematrix_host,
                                      duckiematrix_port, allow_remote)
            mode, action, agents, external_agents = "realtime", "pwm", 0, robots
            name = name or f"duckiematrix-{duckiematrix_port}"
        elif robot_names is not None:
            raise RefusedError("--robot-names names the robots of --duckiematrix: add "
                               "--duckiematrix, or drop it")
        if agents is None:
            agents = 0 if external_agents else network.NetworkConfig.agents
        config = network.NetworkConfig(
            mode=mode, robots=robots, renderers=renderers, agents=agents, agent=agent,
            action=action, external_agents=external_agents or 0,
            connect_timeout_s=connect_timeout_s, episodes=episodes, episode_steps=episode_steps,
            steps=steps, duration_s=duration_s, camera=camera,
            camera_model=ctx.meta.get("camera_model", "pinhole"), seed=seed, map=map_name,
            route=route, noise=noise, motor_dynamics=motor_dynamics,
            randomize=_randomize(randomize), pin=pin, record_dir=record_dir,
            wait_timeout_s=timeout_s,
            command_timeout_s=command_timeout_s, spine=use_spine, spine_hz=spine_hz,
            **reply_at,
            sensor_rates_hz={**network.DEFAULT_SENSOR_RATES_HZ, **rates}, profile=profile,
            profile_interval_s=profile_interval_s, log=log_path, renderer=renderer, name=name,
            physics=physics, look=look)
        _refuse_unused(ctx, config)
        config.preflight()  # an agent that does not load, a bad map, too many robots
        if log_path:
            check_log_path(log_path, overwrite)
        view_port, foxglove_port = _live_ports(ctx, view, foxglove, view_host, view_port,
                                               foxglove_host, foxglove_port, allow_remote)
    if record_dir:  # last: --overwrite removes old frames only for a run that will start
        prepare_record_dir(record_dir, overwrite)
    failed: network.RunFailedError | None = None
    stopped: BaseException | None = None
    with contextlib.ExitStack() as stack:
        if foxglove:
            url = stack.enter_context(launch.foxglove_process(os.getpid(), foxglove_host,
                                                              foxglove_port, allow_remote))
            click.echo(f"foxglove: {url} ({launch.open_to(foxglove_host, 'see the run')})",
                       err=True)
        announce: dict[str, Any] = {}
        if view:
            url = stack.enter_context(launch.view_process(os.getpid(), view_host, view_port,
                                                          allow_remote, follow=False))
            click.echo(f"view: {url}", err=True)
            announce["view"] = url
        if duckiematrix:
            from dmxshm.duckiematrix.launch import bridge_process

            url = stack.enter_context(bridge_process(
                config, names, duckiematrix_host, duckiematrix_port, allow_remote)).url
            click.echo(f"duckiematrix: {url} (robots {', '.join(names)}; "
                       f"DB21J(name, simulated=True); "
                       f"{launch.open_to(duckiematrix_host, 'drive the robots')})", err=True)
        with console.run_progress(f"{mode} run", config.planned_steps,
                                  live_table=profile) as (on_progress, on_profile):
            try:
                summary = network.run(config, on_progress=on_progress, on_profile=on_profile,
                                      announce=announce)
            except network.RunFailedError as exc:  # the figures still tell what happened
                failed, summary = exc, exc.summary
            except (KeyboardInterrupt, SystemExit) as exc:  # Ctrl-C, SIGTERM: what was done
                stopped = exc
    if stopped is not None:
        partial = getattr(stopped, "summary", None)
        if partial is not None:
            print_runs.print_run(partial, json, profile, stopped=True)
        raise stopped
    print_runs.print_run(summary, json, profile)
    if failed is not None:
        raise failed


def _duckiematrix_run(ctx: click.Context, robots: int, robot_names: str | None, host: str,
                      port: int, allow_remote: bool) -> list[str]:
    """The robot names of a --duckiematrix run, once what it needs is there: its
    extra, a free port, names that fit, and no option it overrides given otherwise."""
    from dmxshm import duckiematrix as dm
    from dmxshm.view.server import is_loopback

    for option, value, why in (("mode", "realtime", "duckietown-sdk 0.2.0 has no lockstep "
                                "protocol"), ("action", "pwm", "the SDK sends PWM duties")):
        if ctx.get_parameter_source(option) in GIVEN and ctx.params[option] != value:
            raise RefusedError(f"--duckiematrix runs with --{option} {value} ({why}): drop "
                               f"--{option} {ctx.params[option]}")
    for option in ("agents", "external_agents"):
        if ctx.get_parameter_source(option) in GIVEN:
            flag = "--" + option.replace("_", "-")
            raise RefusedError(f"--duckiematrix gives every robot an agent slot of its own: "
                               f"drop {flag}")
    names = ([n.strip() for n in robot_names.split(",")] if robot_names is not None
             else dm.default_names(robots))
    dm.check_names(names, robots)
    if not is_loopback(host) and not allow_remote:
        raise RefusedError(f"the Duckiematrix server would be reachable from other machines "
                           f"on {host}, and its protocol has no authentication: give "
                           "--allow-remote to mean it")
    if not launch.port_is_free(host, port):
        raise RefusedError(f"port {port} on {host} is in use (another Duckiematrix, or "
                           "another server): give another --duckiematrix-port")
    dm.require()
    return names


def _randomize(value: str | None) -> str | bool | None:
    """``--randomize``: a file's path, or ``defaults`` (True) where no file has that name."""
    if value == "defaults" and not os.path.exists(value):
        return True
    return value


def _refuse_unused(ctx: click.Context, config: network.NetworkConfig) -> None:
    """An option set that has no effect in this run (:meth:`NetworkConfig.unused_fields`)
    is refused when typed, and noted when it comes from the environment (exported for
    other runs)."""
    sources = {p.name: (p.opts[0], ctx.get_parameter_source(p.name))
               for p in ctx.command.params if p.name}
    given = {FIELDS.get(name, name): name for name, (_, source) in sources.items()
             if source in GIVEN}
    for field, only, why in config.unused_fields(given):
        name = given[field]
        flag, source = sources[name]
        applies, fix = (("realtime --spine runs", "--spine") if only == "spine"
                        else ("runs with --episodes", "--episodes") if only == "episodes"
                        else (f"{only} mode", f"--mode {only}"))
        if source is ParameterSource.COMMANDLINE:
            raise RefusedError(f"{flag} applies to {applies} only: {why}. Drop it, or add "
                               f"{fix}.")
        variable = f"{ctx.auto_envvar_prefix}_{name.upper()}"
        click.echo(f"dmxshm: note: {variable} has no effect in {config.mode} mode ({flag} "
                   f"applies to {applies} only: {why}).", err=True)


def _live_ports(ctx: click.Context, view: bool, foxglove: bool, view_host: str,
                view_port: int, foxglove_host: str, foxglove_port: int,
                allow_remote: bool) -> tuple[int, int]:
    """The live servers asked for can start; ``(view port, Foxglove port)``, where
    a port on its default makes way for the other server's
    (:func:`~dmxshm.view.launch.choose_ports`), and says so."""
    if view:
        launch.check_view(view_host, allow_remote)
    if foxglove:
        launch.check_foxglove(foxglove_host, allow_remote)
    if not (view and foxglove):
        return view_port, foxglove_port

    def given(name: str, port: int) -> int | None:
        return port if ctx.get_parameter_source(name) in GIVEN else None

    ports = launch.choose_ports(
        given("view_port", view_port), given("foxglove_port", foxglove_port),
        is_free=lambda p: launch.port_is_free(view_host, p)
        and launch.port_is_free(foxglove_host, p))
    for who, flag, asked, got in (("the view", "--view-port", view_port, ports[0]),
                                  ("Foxglove", "--foxglove-port", foxglove_port, ports[1])):
        if got != asked:
            click.echo(f"dmxshm: note: {who} listens on port {got}: {asked} is taken by the "
                       f"other live server; give {flag} to choose", err=True)
    return ports

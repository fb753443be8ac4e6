"""``dmxshm spine``: a pinned fixed-frequency spine that times CAN cycles."""

from __future__ import annotations

import sys

import click

from dmxshm.cli import console, print_bench, print_runs
from dmxshm.cli.checks import add_app_dir, check_outputs, usage_errors
from dmxshm.cli.group import Command
from dmxshm.cli.options import (
    DURATION,
    RATE_HZ,
    TIMEOUT,
    field_default,
    json_file_option,
    plot_option,
    profile_options,
    seconds,
)
from dmxshm.network.config import NetworkConfig
from dmxshm.settings import MAX_CPU
from dmxshm.spine.config import SpineConfig
from dmxshm.spine.law import SCHEDULES


def _default(name: str) -> object:
    return field_default(SpineConfig, name)


@click.command(cls=Command)
@click.option("--schedule", type=click.Choice(SCHEDULES), default=_default("schedule"),
              show_default=True,
              help="after-action: plan . (can // sleep); after-sleep: (plan // can) . sleep.")
@click.option("--frequency", "frequency_hz", type=RATE_HZ, default=_default("frequency_hz"),
              show_default=True, help="Spine frequency, Hz.")
@click.option("--cpu", type=click.IntRange(0, MAX_CPU), default=None,
              help="CPU of the spine [default: the last].")
@click.option("--actuation", type=click.Choice(["mock", "sim"]), default=_default("actuation"),
              show_default=True,
              help="CAN actuation: mock (a simulated bus) or sim (pybullet, one step per cycle).")
@click.option("--can-cycle", "can_cycle_s", type=seconds(0.0, 1.0), default=_default("can_cycle_s"),
              show_default=True, help="Duration of a CAN cycle T_c, s.")
@click.option("--reply-at", "reply_at_s", type=seconds(0.0, 1.0), default=None,
              help="When the last servo reply comes within a CAN cycle, T_o, s [default: T_c].")
@click.option("--jitter", "jitter_s", type=seconds(0.0, 1.0), default=_default("jitter_s"),
              show_default=True, help="Standard deviation of the CAN cycle's jitter, s.")
@click.option("--bus-delay", "bus_delay_s", type=seconds(0.0, 1.0),
              default=_default("bus_delay_s"), show_default=True,
              help="Mock bus: how long after it receives a CAN frame it starts the cycle, s "
                   "(a slower link). It shows in the measured latencies, not in the law's.")
@click.option("--plan-time", "plan_s", type=seconds(0.0, 1.0), default=_default("plan_s"),
              show_default=True, help="Work time of the built-in planner, T_p, s.")
@click.option("--duration", "duration_s", type=DURATION, default=_default("duration_s"),
              show_default=True, help="Acting time, s (5 stop cycles come before and after).")
@click.option("--agent", default=None,
              help="Take actions from an agent process (forward, module:callable or "
                   "path/to/file.py:callable) instead of the built-in planner; reports the "
                   "agent's round trip.")
@click.option("--app-dir", type=click.Path(exists=True, file_okay=False), default=".",
              show_default=True, help="Folder searched first for the --agent module.")
@click.option("--action-timeout", "action_timeout_s", type=TIMEOUT,
              default=_default("action_timeout_s"), show_default=True,
              help="An agent's action is reused until this old, then stops.")
@json_file_option("Write the report (and the law's prediction) as JSON.")
@plot_option("Draw the timeline and histograms as a PNG (needs matplotlib).")
@profile_options("Sample the spine, its bus (and agent) with psutil: a live table, then "
                 "CPU, cores, memory and context switches per process (and in --json).",
                 field_default(NetworkConfig, "profile_interval_s"))  # as dmxshm run's
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
    from dmxshm.spine.run import run

    check_outputs(json, plot)
    add_app_dir(app_dir)
    with usage_errors():
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
    note = console.scheduling_refused(report.scheduling, report.bus_scheduling)
    if note:  # once, and the run went on
        click.echo(note, err=True)
    print_bench.print_spine(report)
    if report.processes is not None and report.profile is not None:
        print_runs.print_profile(report.processes, report.profile, report.shm_bytes)
    from dmxshm.bench.plot import plot_spine

    console.write_outputs(report.to_dict() if json else None, json, plot,
                          lambda p: plot_spine(report, recs, p))

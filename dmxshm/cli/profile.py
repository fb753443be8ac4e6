"""``dmxshm profile``: the profile of a run saved with ``--profile --json``."""

from __future__ import annotations

import json as _json
from typing import Any

import click

from dmxshm.cli import print_runs
from dmxshm.cli.checks import check_outputs
from dmxshm.cli.group import Command
from dmxshm.cli.options import plot_option


@click.command("profile", cls=Command)
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@plot_option("Draw CPU% per process over time and the time per step as a PNG "
             "(needs the plot extra: matplotlib).")
def profile(path: str, plot: str | None) -> None:
    """Show the profile of a run saved with --profile --json PATH.

    Prints one line per process (CPU% mean and peak, the CPUs it was allowed
    and the ones it ran on, peaks of RSS, USS and PSS, involuntary context switches)
    and, with --plot, draws the run at a glance.
    """
    run = _read_profile(path)
    check_outputs(plot=plot)
    from dmxshm.profiling import ProfileReport

    report = ProfileReport.from_dict(run["profile"], run["processes"])
    print_runs.print_profile(report.processes, report, run.get("shm_bytes", 0))
    if plot:
        from dmxshm.bench.plot import plot_profile

        plot_profile(run, plot)
        click.echo(f"wrote {plot}")


def _read_profile(path: str) -> dict[str, Any]:
    """The JSON of a profiled run at ``path``; a usage error if it holds no profile."""
    try:
        with open(path) as fh:
            run = _json.load(fh)
    except (OSError, ValueError) as exc:
        raise click.BadParameter(f"cannot read {path}: {exc}", param_hint="PATH") from None
    if not isinstance(run, dict) or not run.get("profile") or "processes" not in run:
        raise click.BadParameter(
            f"{path} holds no profile: write it with 'dmxshm run --profile --json {path}' "
            "(or 'dmxshm spine --profile --json ...')", param_hint="PATH")
    return run

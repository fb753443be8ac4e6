"""``dmxshm ps``: this user's running networks."""

from __future__ import annotations

import json as _json

import click

from dmxshm.cli import print_runs
from dmxshm.cli.group import Command


@click.command("ps", cls=Command)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def ps(as_json: bool) -> None:
    """List your running networks: pid, name, mode, robots, agents, uptime.

    Reads what each network wrote into its shared memory as it started; never
    waits for a run and never slows one down.
    """
    from dmxshm.network.runs import live_runs

    runs = live_runs()
    if as_json:
        click.echo(_json.dumps([r.to_dict() for r in runs], indent=2))
    else:
        print_runs.print_runs(runs)

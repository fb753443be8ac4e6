"""``dmxshm info``: what this machine offers the simulator."""

from __future__ import annotations

import json as _json

import click

from dmxshm.cli import print_bench
from dmxshm.cli.group import Command


@click.command(cls=Command)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def info(as_json: bool) -> None:
    """Show what this machine offers the simulator.

    Cores, /dev/shm size and free space, whether real-time scheduling and CPU
    pinning are permitted, the memory-ordering primitive in use, dmxshm
    objects present in /dev/shm, and package versions.
    """
    from dmxshm.cli.sysinfo import collect

    info = collect()
    if as_json:
        click.echo(_json.dumps(info.to_dict(), indent=2))
    else:
        print_bench.print_info(info)

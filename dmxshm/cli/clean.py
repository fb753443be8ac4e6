"""``dmxshm clean``: remove what dead runs left in /dev/shm."""

from __future__ import annotations

import click

from dmxshm.cli import print_bench
from dmxshm.cli.group import Command


@click.command(cls=Command)
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
    print_bench.print_clean(found, sweep(remove_live=remove_all, dry_run=dry_run,
                                     all_namespaces=all_namespaces), dry_run)

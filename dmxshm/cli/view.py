"""``dmxshm view``: the live view of a run already going."""

from __future__ import annotations

import click

from dmxshm import settings
from dmxshm.cli.group import Command


@click.command("view", cls=Command)
@click.option("--pid", type=click.IntRange(1, settings.MAX_PID),
              help="The run to show: its supervisor's pid [default: the newest run going, "
                   "and the next one when it ends].")
@click.option("--port", type=click.IntRange(0, settings.MAX_PORT), default=settings.VIEW_PORT,
              show_default=True,
              help="Port of the server.")
@click.option("--host", default=settings.LOCAL_HOST, show_default=True,
              help="Address of the server; beyond loopback needs --allow-remote.")
@click.option("--allow-remote", is_flag=True,
              help="Listen beyond loopback; the URL's token is then all that keeps other "
                   "machines out.")
def view(pid: int | None, port: int, host: str, allow_remote: bool) -> None:
    """Serve a live view of a run already going, in the browser, until Ctrl-C.

    It peeks at the run's shared memory and never slows it down. Open the URL it
    prints: it carries the server's token (?token=...), without which every request
    is refused.
    """
    from dmxshm.view.launch import serve_view

    serve_view(pid, host, port, allow_remote,
               on_ready=lambda url: click.echo(f"view: {url} (Ctrl-C to stop)"))

"""``dmxshm log info`` and ``dmxshm replay``: reading and replaying MCAP logs."""

from __future__ import annotations

import json as _json
import sys

import click

from dmxshm.cli import console, print_runs
from dmxshm.cli.checks import check_outputs, usage_errors
from dmxshm.cli.group import EXIT_ERROR, Command, Group
from dmxshm.cli.options import json_file_option, parse_wh


@click.group("log", cls=Group)
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

    found = info(path)
    if as_json:
        click.echo(_json.dumps(found.as_dict(), indent=2))
    else:
        print_runs.print_log_info(found)
    print_runs.print_cut_parts(found)


@click.command(cls=Command)
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--log", "log_path", type=click.Path(dir_okay=False),
              help="Record the replay to this MCAP file too (its sensors rendered again).")
@click.option("--camera", default=None, callback=lambda c, p, v: None if v is None
              else parse_wh(c, p, v),
              help="The replay's camera size WxH (0x0: none, faster) [default: the recorded].")
@click.option("--overwrite", is_flag=True, help="With --log: replace an existing log.")
@json_file_option("Write the replay's summary as JSON to this file.")
def replay(path: str, log_path: str | None, camera: tuple[int, int] | None,
           overwrite: bool, json: str | None) -> None:
    """Replay a run recorded with 'dmxshm run --log', exactly.

    A realtime run (what this is for: it cannot be reproduced by running it
    again) is replayed in this process: its physics with the logged commands,
    every logged sample recomputed from the state it read and compared with
    the log. A gym run is run again as a gym network, each robot given at every
    step the command it had. Either way the trajectory digests are compared
    (every state, command and sample): EQUAL means the replay produced the
    same, bit for bit; otherwise the differing streams and the first differing
    sample (step, robot, topic) are named and the exit code is 1. A log that
    lacks what replay needs is refused with the reason (exit 2).
    """
    from dmxshm.network import replay as rp

    check_outputs(json)
    with usage_errors():  # a log that cannot be replayed: refused before anything starts
        rec = rp.prepare(path, log=log_path, camera=camera, overwrite=overwrite)
    with console.run_progress("replay", rec.steps, live_table=False) as (on_progress, _):
        result = rp.run_recording(rec, path, log=log_path, camera=camera,
                                  on_progress=on_progress)
    print_runs.print_replay(result, json)
    if not result.equal:
        sys.exit(EXIT_ERROR)

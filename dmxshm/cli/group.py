"""The ``dmxshm`` group, its exit codes, and where an error becomes an exit code."""

from __future__ import annotations

import sys
from typing import Any

import click

from dmxshm import __version__
from dmxshm.errors import DmxError, RefusedError
from dmxshm.shm import signals

# Named exit codes.
EXIT_OK = 0
EXIT_ERROR = 1  # a run failed (a DmxError): the message says what went wrong and what to do
EXIT_USAGE = 2  # what was asked cannot run, nothing started: a bad option, an impossible
#                configuration, a missing extra, a path that cannot be used (a RefusedError)
EXIT_TARGET_MISSED = 3  # a benchmark run with --check missed a figure
EXIT_INTERRUPTED = 130


class Command(click.Command):
    """A command on which a :class:`~dmxshm.errors.RefusedError` is a usage error (exit
    code 2, after the command's usage line), wherever it was raised: the one place
    where a refusal becomes its exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RefusedError as exc:
            raise click.UsageError(str(exc), ctx) from None


class Group(click.Group):
    """A group whose commands and subgroups are :class:`Command` s."""

    command_class = Command
    group_class = type  # subgroups are Groups too


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"],
                                          "auto_envvar_prefix": "DMXSHM"})
@click.version_option(__version__, prog_name="dmxshm")
def cli() -> None:
    """dmxshm: a Duckiematrix-style robot simulator network over POSIX shared memory.

    Options can also be set from the environment as DMXSHM_<COMMAND>_<OPTION>,
    e.g. DMXSHM_BENCH_IPC_ROUNDS=5000 (not the destructive flags of 'clean').
    """


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

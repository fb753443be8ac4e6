"""Checks of what a command was asked, made before its work starts."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

import click

from dmxshm.cli import print_bench
from dmxshm.cli.group import EXIT_TARGET_MISSED
from dmxshm.errors import DmxError, RefusedError


@contextlib.contextmanager
def usage_errors() -> Iterator[None]:
    """Checks of what was asked, before anything starts: a DmxError raised in the block
    (an impossible configuration, an agent that cannot load, a map without room, a
    missing extra) is a refusal, which :class:`~dmxshm.cli.group.Command` turns into
    exit code 2."""
    try:
        yield
    except RefusedError:
        raise
    except DmxError as exc:
        raise RefusedError(str(exc)) from None


def check_outputs(json_path: str | None = None, plot: str | None = None) -> None:
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

        with usage_errors():  # a missing extra is a refusal
            require_matplotlib()


def check_folder(path: str, option: str) -> None:
    """A folder that can be written (made if missing), before the work that fills it."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise click.BadParameter(f"cannot use {path}: {exc.strerror}",
                                 param_hint=option) from None
    if not os.access(path, os.W_OK):
        raise click.BadParameter(f"cannot write in {path}", param_hint=option)


def add_app_dir(app_dir: str) -> None:
    """Search ``app_dir`` first for the --agent module; the agent processes start with
    this ``sys.path``, so they find it too."""
    folder = os.path.abspath(app_dir)
    if folder not in sys.path:
        sys.path.insert(0, folder)


def check_targets(targets: list[tuple[str, float, bool]], check: bool) -> None:
    """With --check: print the project's target figures, exit 3 if one is missed."""
    if not check or not targets:
        return
    print_bench.print_targets(targets)
    if not all(ok for _, _, ok in targets):
        sys.exit(EXIT_TARGET_MISSED)

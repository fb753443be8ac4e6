"""The ``dmxshm`` group: its commands, exit codes, version, and SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import dmxshm.cli
from dmxshm.cli import EXIT_ERROR, EXIT_USAGE, cli, main
from dmxshm.cli.group import Command, Group
from dmxshm.errors import DmxError, RefusedError
from dmxshm.shm.names import list_entries
from tests.cli.common import CLI_TIMEOUT_S
from tests.procs import JOIN_TIMEOUT_S

pytestmark = pytest.mark.timeout(CLI_TIMEOUT_S)

COMMANDS = {"bench", "clean", "info", "log", "maps", "profile", "ps", "replay", "run", "spine",
            "view"}
MAX_MODULE_LINES = 300


def walk(group: click.Group) -> list[click.Command]:
    """Every command and group under ``group``."""
    found: list[click.Command] = []
    for command in group.commands.values():
        found.append(command)
        if isinstance(command, click.Group):
            found += walk(command)
    return found


def test_console_script_is_installed() -> None:
    out = subprocess.run([sys.executable, "-m", "dmxshm.cli", "--help"], capture_output=True,
                         text=True, timeout=CLI_TIMEOUT_S, check=True)
    listed = {line.split()[0] for line in out.stdout.split("Commands:")[1].splitlines()
              if line.strip()}
    assert listed == COMMANDS == set(cli.commands)


def test_every_command_turns_a_refusal_into_exit_2() -> None:
    # The one place (Command.invoke) holds only for commands made as Commands.
    plain = [c.name for c in walk(cli) if not isinstance(c, (Command, Group))]
    assert plain == []
    assert {c.name for c in walk(cli)} >= {"ipc", "render", "network", "vector", "info"}


def test_no_module_of_the_cli_is_over_300_lines() -> None:
    folder = Path(dmxshm.cli.__file__).parent
    sizes = {p.name: len(p.read_text().splitlines()) for p in folder.glob("*.py")}
    assert {"run.py", "bench.py", "group.py"} <= set(sizes)
    assert {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES} == {}


def test_version_names_the_package_version() -> None:
    from dmxshm import __version__

    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"dmxshm, version {__version__}"


def test_dmx_error_becomes_a_message_and_exit_code(monkeypatch, capsys) -> None:  # noqa: ANN001
    import dmxshm.cli.sysinfo

    def boom() -> dict:
        raise DmxError("something clear went wrong")

    monkeypatch.setattr(dmxshm.cli.sysinfo, "collect", boom)
    with pytest.raises(SystemExit) as exc:
        main(["info"])
    assert exc.value.code == EXIT_ERROR
    assert "something clear went wrong" in capsys.readouterr().err


def test_bad_option_value_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["bench", "ipc", "--rounds", "-5"])
    assert result.exit_code == EXIT_USAGE
    assert "--rounds" in result.output


def test_a_refusal_raised_anywhere_in_a_command_exits_2(monkeypatch) -> None:  # noqa: ANN001
    # The one place: a RefusedError out of any command is a usage error, with the
    # command's usage line, through click's runner as through main().
    import dmxshm.cli.sysinfo

    def refuse() -> dict:
        raise RefusedError("cannot here: do this instead")

    monkeypatch.setattr(dmxshm.cli.sysinfo, "collect", refuse)
    result = CliRunner().invoke(cli, ["info"])
    assert result.exit_code == EXIT_USAGE
    assert "Usage: cli info" in result.output and "cannot here: do this instead" in result.output


SIGTERM_SCRIPT = """
from dmxshm.cli import main
main(["bench", "ipc", "--rounds", "1000000", "--repeats", "1"])
"""


def test_sigterm_unlinks_everything() -> None:
    proc = subprocess.Popen([sys.executable, "-c", SIGTERM_SCRIPT], cwd=os.getcwd(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        while not [e for e in list_entries() if e.pid == proc.pid]:  # wait for its objects
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(JOIN_TIMEOUT_S) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert [e for e in list_entries() if e.pid == proc.pid] == []

"""``dmxshm run --view --foxglove``: the live servers beside a run, and who takes which port."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from dmxshm import settings
from dmxshm.cli import cli
from dmxshm.view import launch
from tests.cli.common import CLI_TIMEOUT_S

pytestmark = pytest.mark.timeout(CLI_TIMEOUT_S)

RUN = ["run", "--steps", "5", "--camera", "0x0"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind((settings.LOCAL_HOST, 0))
        return int(s.getsockname()[1])


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The live servers of a run replaced by fakes that note their port, and every
    port above the defaults free."""
    pytest.importorskip("aiohttp")
    pytest.importorskip("foxglove")
    pytest.importorskip("dmxshm.view.foxglove")
    started: dict[str, int] = {}

    @contextlib.contextmanager
    def fake(name: str, host: str, port: int) -> Iterator[str]:
        started[name] = port
        yield f"fake://{host}:{port}"

    monkeypatch.setattr(launch, "view_process",
                        lambda pid, host, port, allow_remote, follow: fake("view", host, port))
    monkeypatch.setattr(launch, "foxglove_process",
                        lambda pid, host, port, allow_remote: fake("foxglove", host, port))
    monkeypatch.setattr(launch, "port_is_free",
                        lambda host, port: port > settings.FOXGLOVE_PORT + 1)
    return started


def test_on_their_defaults_the_view_makes_way_for_foxglove(servers: dict[str, int]) -> None:
    assert settings.VIEW_PORT == settings.FOXGLOVE_PORT  # the case this policy is for
    result = CliRunner().invoke(cli, [*RUN, "--view", "--foxglove"])
    assert result.exit_code == 0, result.output
    moved = settings.FOXGLOVE_PORT + 2  # the next port is_free says yes to
    assert servers == {"foxglove": settings.FOXGLOVE_PORT, "view": moved}
    assert f"the view listens on port {moved}" in result.output
    assert f"view: fake://{settings.LOCAL_HOST}:{moved}" in result.output


def test_a_port_the_user_gave_is_never_moved(servers: dict[str, int]) -> None:
    result = CliRunner().invoke(cli, [*RUN, "--view", "--foxglove", "--view-port",
                                      str(settings.FOXGLOVE_PORT)])
    assert result.exit_code == 0, result.output
    assert servers == {"view": settings.FOXGLOVE_PORT, "foxglove": settings.FOXGLOVE_PORT + 2}
    assert "Foxglove listens on port" in result.output


def test_one_live_server_keeps_its_port(servers: dict[str, int]) -> None:
    result = CliRunner().invoke(cli, [*RUN, "--view"])
    assert result.exit_code == 0, result.output
    assert servers == {"view": settings.VIEW_PORT} and "listens on port" not in result.output


def test_run_with_foxglove_prints_its_url_and_stops_it(tmp_path) -> None:  # noqa: ANN001
    pytest.importorskip("foxglove")
    pytest.importorskip("dmxshm.view.foxglove")
    port = free_port()
    out = subprocess.run([sys.executable, "-m", "dmxshm.cli", *RUN, "--steps", "30",
                          "--foxglove", "--foxglove-port", str(port)],
                         capture_output=True, text=True, timeout=CLI_TIMEOUT_S / 2, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert f"foxglove: ws://{settings.LOCAL_HOST}:{port}" in out.stderr
    with socket.socket() as s:  # it went with the run: nothing listens there any more
        assert s.connect_ex((settings.LOCAL_HOST, port)) != 0

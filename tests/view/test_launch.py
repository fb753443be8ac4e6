"""dmxshm.view.launch: the live servers started through the process layer, and the
port policy between the view and Foxglove."""

from __future__ import annotations

import socket
import sys

import psutil
import pytest

from dmxshm import settings
from dmxshm.errors import RefusedError
from dmxshm.view import launch
from dmxshm.view.server import ViewError

LAUNCH_TIMEOUT_S = 60
pytestmark = pytest.mark.timeout(LAUNCH_TIMEOUT_S)

DEFAULT = settings.FOXGLOVE_PORT


def all_free(port: int) -> bool:
    return True


@pytest.mark.parametrize("view, foxglove, expected", [
    (None, None, (DEFAULT + 1, DEFAULT)),  # both on defaults: the view makes way
    (DEFAULT, None, (DEFAULT, DEFAULT + 1)),  # the view's port given: Foxglove moves
    (None, DEFAULT, (DEFAULT + 1, DEFAULT)),
    (9000, 9001, (9000, 9001)),  # apart: nobody moves
    (9000, None, (9000, DEFAULT)),
    (None, 9001, (settings.VIEW_PORT, 9001)),
])
def test_a_port_on_its_default_makes_way_and_a_given_one_never_moves(
        view: int | None, foxglove: int | None, expected: tuple[int, int]) -> None:
    assert launch.choose_ports(view, foxglove, is_free=all_free) == expected


def test_the_view_takes_the_next_free_port() -> None:
    taken = {DEFAULT + 1, DEFAULT + 2}
    assert launch.choose_ports(None, None, is_free=lambda p: p not in taken) == (DEFAULT + 3,
                                                                             DEFAULT)


def test_the_same_port_given_for_both_is_refused() -> None:
    with pytest.raises(RefusedError, match="both 9000"):
        launch.choose_ports(9000, 9000, is_free=all_free)


def test_no_free_port_is_refused_with_the_fix() -> None:
    with pytest.raises(RefusedError, match="--view-port"):
        launch.choose_ports(None, None, is_free=lambda p: False)


def test_a_port_in_use_is_not_free() -> None:
    with socket.socket() as s:
        s.bind((settings.LOCAL_HOST, 0))
        s.listen()
        port = s.getsockname()[1]
        assert not launch.port_is_free(settings.LOCAL_HOST, port)
    assert launch.port_is_free(settings.LOCAL_HOST, port)  # closed: free again


def test_a_port_left_in_time_wait_by_a_session_is_free() -> None:
    # What an SDK session leaves on the bridge's port (issue 42): the server closed
    # first, so its side of the connection sits in TIME-WAIT for 60 s after the
    # server is gone. The server binds with SO_REUSEADDR (aiohttp does), so the
    # port is free to the next run's server, and the check must say so.
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((settings.LOCAL_HOST, 0))
        server.listen()
        port = server.getsockname()[1]
        with socket.create_connection((settings.LOCAL_HOST, port), timeout=10) as client:
            conn, _ = server.accept()
            conn.close()  # the server's side closes first: it goes to TIME-WAIT
            assert client.recv(1) == b""  # the server's FIN arrived
    assert time_wait_on(port), "the test did not leave a TIME-WAIT socket on the port"
    assert launch.port_is_free(settings.LOCAL_HOST, port)


def time_wait_on(port: int) -> bool:
    """Whether a TCP socket of this machine on local ``port`` is in TIME-WAIT."""
    with open("/proc/net/tcp") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    return any(int(local.rsplit(":", 1)[1], 16) == port and state == "06"  # TIME_WAIT
               for _, local, _, state, *_ in rows)


def test_the_live_view_is_a_child_of_the_process_layer() -> None:
    # Started by dmxshm.proc.program: named dmx-view, told to stop when we end.
    pytest.importorskip("aiohttp")
    with socket.socket() as s:
        s.bind((settings.LOCAL_HOST, 0))
        port = s.getsockname()[1]
    with launch.view_process(None, settings.LOCAL_HOST, port, False, follow=True) as url:
        assert url.startswith(f"http://{settings.LOCAL_HOST}:{port}/")
        views = [c for c in psutil.Process().children() if c.name() == "dmx-view"]
        assert len(views) == 1
    assert not views[0].is_running()  # stopped with the block


def test_a_server_that_ends_before_it_listens_says_why() -> None:
    # A program that fails at once: its last error line names the cause.
    from dmxshm.proc import program

    proc = program.start("doomed", "json.tool", ["/no/such/file"])
    try:
        with pytest.raises(ViewError, match="the doomed server did not start: .*no/such/file"):
            launch.wait_for_url(proc, "the doomed server")
    finally:
        program.stop(proc)


def test_a_foxglove_server_without_its_extra_is_refused(monkeypatch) -> None:  # noqa: ANN001
    pytest.importorskip("dmxshm.view.foxglove")
    from dmxshm.view.server import ViewRefusedError

    monkeypatch.setitem(sys.modules, "foxglove", None)  # import foxglove fails
    with pytest.raises(ViewRefusedError, match="pip install"):
        launch.check_foxglove(settings.LOCAL_HOST, False)
    with pytest.raises(ViewRefusedError, match="pip install"), \
            launch.foxglove_process(0, settings.LOCAL_HOST, 0):
        pass


def test_foxglove_beyond_loopback_needs_allow_remote() -> None:
    pytest.importorskip("foxglove")
    pytest.importorskip("dmxshm.view.foxglove")
    from dmxshm.view.server import ViewRefusedError

    with pytest.raises(ViewRefusedError, match="--allow-remote"):
        launch.check_foxglove("0.0.0.0", False)
    launch.check_foxglove("0.0.0.0", True)  # meant: allowed

"""Starting a run's live servers: the view (``dmx-view``) and Foxglove (``dmx-foxglove``).

Each is a program of its own (``python -m dmxshm.view.server``, ``python -m
dmxshm.view.foxglove``), started through the process layer
(:func:`dmxshm.proc.program.start`): it follows the run of a supervisor's pid,
prints its URL on its standard output once it listens, and serves until it is
stopped. :func:`view_process` and :func:`foxglove_process` start one, yield its
URL, pass its later messages on to our stderr (a full pipe would block it), and
stop it at the end of the block.

Both listen on port 8765 unless told (:data:`~dmxshm.settings.VIEW_PORT`,
:data:`~dmxshm.settings.FOXGLOVE_PORT`: Foxglove's own default). When a run asks
for both, :func:`choose_ports` settles who takes which: a port the user gave is
never moved; of two on their defaults, the view moves to the next free port.

Example:
    >>> choose_ports(None, None, is_free=lambda port: port != 8766)
    (8767, 8765)
    >>> choose_ports(9000, None, is_free=lambda port: True)
    (9000, 8765)
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import IO

from dmxshm import settings
from dmxshm.errors import RefusedError
from dmxshm.view.server import (
    FIND_TIMEOUT_S,
    TOKEN_ENV,
    ViewError,
    check_host,
    is_loopback,
    require_aiohttp,
)
from dmxshm.view.server import wait_for_url as server_wait_for_url

FOXGLOVE_MODULE = "dmxshm.view.foxglove"
"""The Foxglove live server's program (the view's command line: ``--pid PID --host H
--port N --exit-with PID [--allow-remote]``)."""

LAST_PORT = 65535


@contextlib.contextmanager
def view_process(pid: int | None, host: str, port: int, allow_remote: bool,
                 follow: bool) -> Iterator[str]:
    """A live view server in a process of its own (``dmx-view``); yields its URL.

    Args:
        pid: the supervisor whose run it shows (None: the newest run going).
        host, port: where it listens; a host beyond loopback needs ``allow_remote``.
            The URL carries the server's token (made here and passed in its
            environment, never on its command line, which other users can read).
        follow: go on to the next run when this one ends.

    Raises:
        ViewRefusedError: the view extra is missing, or a host beyond loopback
            without ``allow_remote``.
        ViewError: the server ended before it listened (its last error line says why).
    """
    require_aiohttp()
    token = check_host(host, allow_remote, None)
    args = ["--host", host, "--port", str(port), "--exit-with", str(os.getpid())]
    args += ["--pid", str(pid)] if pid is not None else []
    args += ["--allow-remote"] if allow_remote else []
    args += ["--follow"] if follow else []
    with serving("view", "dmxshm.view.server", args, "the view", env={TOKEN_ENV: token}) as url:
        yield url


@contextlib.contextmanager
def foxglove_process(pid: int, host: str, port: int,
                     allow_remote: bool = False) -> Iterator[str]:
    """A Foxglove live server in a process of its own (``dmx-foxglove``, the program
    :mod:`dmxshm.view.foxglove`) streaming the run of supervisor ``pid``; yields its
    URL (``ws://host:port``).

    Raises:
        ViewRefusedError: foxglove-sdk is missing, or a host beyond loopback without
            ``allow_remote`` (:func:`check_foxglove`).
        ViewError: the server ended before it listened (its last error line says why).
    """
    check_foxglove(host, allow_remote)
    args = ["--pid", str(pid), "--host", host, "--port", str(port),
            "--exit-with", str(os.getpid())]
    args += ["--allow-remote"] if allow_remote else []
    with serving("foxglove", FOXGLOVE_MODULE, args, "the Foxglove server") as url:
        yield url


def serve_view(pid: int | None, host: str, port: int, allow_remote: bool,
               on_ready: Callable[[str], None]) -> None:
    """Serve a live view in this process until interrupted (``dmxshm view``).

    Args:
        pid: the supervisor whose run it shows; None: the newest run going, and
            the next one when it ends.
        host, port, allow_remote: as :func:`view_process`.
        on_ready: called with the URL (with its token) once it listens.

    Raises:
        ViewRefusedError: the view extra is missing, or a host beyond loopback
            without ``allow_remote``.
        ViewError: it cannot listen there (the port is taken, the host is not ours).
    """
    import asyncio

    from dmxshm.view.server import ViewServer

    require_aiohttp()
    token = check_host(host, allow_remote, None)
    server = ViewServer(pid, host, port, token, follow=pid is None, exit_with=None)
    try:
        asyncio.run(server.serve(on_ready))
    except OSError as exc:
        raise ViewError(f"the view cannot listen on {host}:{port}: {exc}") from None


def check_view(host: str, allow_remote: bool) -> None:
    """A view that can start on ``host``: the extra installed, a host beyond loopback
    meant.

    Raises:
        ViewRefusedError: the extra is missing, or a host beyond loopback without
            ``allow_remote``.
    """
    require_aiohttp()
    check_host(host, allow_remote, None)


def check_foxglove(host: str, allow_remote: bool) -> None:
    """A Foxglove server that can start on ``host``: foxglove-sdk installed, and a host
    beyond loopback meant (it has no token: whoever reaches its port sees the run,
    :func:`open_to`).

    Raises:
        ViewRefusedError: the extra is missing, or a host beyond loopback without
            ``allow_remote`` (the messages of :mod:`dmxshm.view.foxglove`, whose policy
            this is).
    """
    from dmxshm.view.foxglove import check_remote, require_foxglove

    require_foxglove()
    check_remote(host, allow_remote)


def choose_ports(view_port: int | None, foxglove_port: int | None, *,
                 is_free: Callable[[int], bool]) -> tuple[int, int]:
    """``(view port, Foxglove port)`` for a run that serves both.

    Args:
        view_port, foxglove_port: the ports the user gave; None: on its default
            (:data:`~dmxshm.settings.VIEW_PORT`, :data:`~dmxshm.settings.FOXGLOVE_PORT`).
        is_free: whether a port can be listened on (:func:`port_is_free`).

    Returns:
        the two ports, different: where both would take the same one, the one on
        its default moves to the next free port above it (of two on their
        defaults, the view's; Foxglove keeps its own default).

    Raises:
        RefusedError: the user gave the same port for both.
    """
    view = settings.VIEW_PORT if view_port is None else view_port
    foxglove = settings.FOXGLOVE_PORT if foxglove_port is None else foxglove_port
    if view != foxglove:
        return view, foxglove
    if view_port is not None and foxglove_port is not None:
        raise RefusedError(f"--view-port and --foxglove-port are both {view}: the view and "
                           "the Foxglove server cannot share a port; give one of them another")
    moved = next_free_port(view, is_free)
    return (moved, foxglove) if view_port is None else (view, moved)


def next_free_port(taken: int, is_free: Callable[[int], bool]) -> int:
    """The first port above ``taken`` that ``is_free``.

    Raises:
        RefusedError: none is, up to the last port.
    """
    for port in range(taken + 1, LAST_PORT + 1):
        if is_free(port):
            return port
    raise RefusedError(f"no free port above {taken}: give --view-port and --foxglove-port")


def open_to(host: str, does: str) -> str:
    """Who can use a server without authentication listening on ``host`` (Foxglove's,
    the Duckiematrix bridge's protocols have none), for its start message.

    Example:
        >>> open_to("127.0.0.1", "see the run")
        'no authentication: any local user of this machine can connect and see the run'
        >>> open_to("0.0.0.0", "see the run")
        'no authentication: anyone who can reach 0.0.0.0 can connect and see the run'
    """
    who = "any local user of this machine" if is_loopback(host) else \
        f"anyone who can reach {host}"
    return f"no authentication: {who} can connect and {does}"


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could listen on ``host:port`` now (it may be taken later).

    It asks as the servers bind (aiohttp's, the bridge's, with ``SO_REUSEADDR``): a
    port whose only sockets are in TIME-WAIT, as a client's session leaves it for
    60 s, is free to them, and so to this check.
    """
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def wait_for_url(proc: subprocess.Popen[bytes], what: str,
                 timeout_s: float = FIND_TIMEOUT_S) -> str:
    """The URL a server process printed once it listens (it prints nothing else).

    Raises:
        ViewError: it ended first (its last error line says why), or it said
            nothing within ``timeout_s`` (``what``: who, in the message).
    """
    return server_wait_for_url(proc, timeout_s, what)


def relay(pipe: IO[bytes]) -> None:
    """Copy a child's messages to our stderr, line by line, until its pipe closes."""
    with contextlib.suppress(OSError, ValueError):
        for line in pipe:
            sys.stderr.write(line.decode(errors="replace"))


@contextlib.contextmanager
def serving(name: str, module: str, args: list[str], what: str,
             env: dict[str, str] | None = None) -> Iterator[str]:
    """Start the program ``module`` as ``dmx-<name>``; yield the URL it printed once it
    listens; relay what it writes to stderr; stop it at the end of the block."""
    from dmxshm.proc import program

    proc = program.start(name, module, args, env=env)
    try:
        url = wait_for_url(proc, what)
        threading.Thread(target=relay, args=(proc.stderr,), daemon=True,
                         name=f"relay-{name}").start()
        yield url
    finally:
        program.stop(proc)

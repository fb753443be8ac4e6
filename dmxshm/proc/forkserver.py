"""Children forked from one pre-imported server: a child's start-up in milliseconds.

A fresh interpreter spends about 0.35 s of CPU importing numpy, posix_ipc and
dmxshm before a role's first line; a network test starts three to five of them,
a CLI run as many. The fork server is one such interpreter, started once per
process (on the first :meth:`~dmxshm.proc.supervisor.Supervisor.start`), that
imports those modules once and then forks each child: the child begins with
them imported, as a fresh interpreter would have them, and runs
:func:`dmxshm.proc.child.run` as a spawned child does. The server never runs
a role, never imports the caller's ``__main__`` and holds no shared memory.

The server imports numpy, posix_ipc and dmxshm's shared-memory layer at its
start. Once a supervisor has stopped its children (:func:`learn`), it also
imports the modules of the targets it forked children for (a role's: pybullet
for the engine...), so that a process that starts runs again (tests,
benchmarks, a batch made anew) starts the next ones in milliseconds; a process
that starts one run never pays for those imports twice, and no run is slowed
by them.

What a child gets from its supervisor at the moment it is started, as with
``subprocess.Popen``: the standard output and error (file descriptors sent
over the server's socket), the environment, the working folder, ``sys.path``
and the CPUs it may run on; standard input is ``/dev/null``.

Lifetime: the server dies with the thread that started it (the kernel's death
signal, SIGKILL, as every child's) and ends when its socket closes (the
process that started it ended). A child's death signal (its supervisor's
death) comes through the server: the supervisor dies, the server is killed,
the child gets its own death signal. The server reaps its children and sends
each exit status back to the supervisor, where :class:`Forked` answers as a
``subprocess.Popen`` does.

When it is not used, and children start as fresh interpreters: off Linux, from
any thread but the main one (a server started there would die with that thread),
while coverage.py measures children in a way that loses a forked child's
measurements (``COVERAGE_PROCESS_START``, or ``[run] patch`` without ``fork`` and
``_exit``: coverage.py's ``patch = subprocess, fork, _exit`` keeps the server), and when
``DMXSHM_CHILD_START=spawn`` (:data:`START_ENV`). A server that fails to
start or answer is not tried again in that process, and the child is spawned.
"""

from __future__ import annotations

import atexit
import base64
import importlib
import json
import os
import pickle
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import warnings
from typing import Any

START_ENV = "DMXSHM_CHILD_START"
"""``spawn``: every child is a fresh interpreter; ``fork`` (the default on Linux):
children are forked from the fork server."""

# What the server imports before it forks anything: what every child imports.
_CORE = ("numpy", "posix_ipc", "dmxshm.proc.child", "dmxshm.shm.ring", "dmxshm.shm.segment")
_STATUS = struct.Struct("q")
_MAX_REQUEST = 1 << 20
# How long the supervisor waits for the server's answer (the pid) to a request.
_ANSWER_TIMEOUT_S = 30.0

_BOOT = ("import sys; sys.path[:] = {!r}; sys._dmxshm_child = True; "
         "from dmxshm.proc.forkserver import serve; serve(sys.argv[1:])")


def wanted() -> bool:
    """Whether a child started now, from this thread, comes from the fork server."""
    choice = os.environ.get(START_ENV, "fork").strip().lower()
    if choice == "spawn":
        return False
    if choice not in ("", "fork"):
        raise ValueError(f"{START_ENV}={choice!r}: expected 'fork' or 'spawn'")
    return (sys.platform.startswith("linux")
            and threading.current_thread() is threading.main_thread()
            and not _coverage_loses_forks())


def _coverage_loses_forks() -> bool:
    """Whether coverage.py measures this process's children in a way that a forked
    child's measurements would be lost: ``COVERAGE_PROCESS_START`` (coverage.py's and
    pytest-cov's older way: a child saves at its interpreter's exit, which a forked
    child never reaches), or ``[run] patch = subprocess`` without ``fork`` and
    ``_exit`` (with them, coverage.py resets after a fork and saves at ``os._exit``)."""
    if os.environ.get("COVERAGE_PROCESS_START"):
        return True
    config = os.environ.get("COVERAGE_PROCESS_CONFIG")
    if not config:
        return False
    try:  # coverage.py's config, as it passes it on: JSON, in base64
        patches = set(json.loads(base64.b64decode(config, validate=True)).get("patch") or ())
    except (ValueError, AttributeError, TypeError):
        return True
    return not {"fork", "_exit"} <= patches


class Forked:
    """A child of the fork server, as :class:`subprocess.Popen` shows a child:
    ``pid``, ``returncode``, :meth:`poll`, :meth:`wait`, :meth:`send_signal`,
    :meth:`terminate`, :meth:`kill`. Its exit status comes from the server, which
    reaped it (a negative status: the signal that ended it)."""

    def __init__(self, name: str, pid: int, status: socket.socket) -> None:
        self.args = name
        self.pid = pid
        self.returncode: int | None = None
        self._status = status

    def __repr__(self) -> str:
        return f"<Forked {self.args} pid {self.pid} returncode {self.returncode}>"

    def _take(self, timeout_s: float | None) -> int | None:
        if self.returncode is not None:
            return self.returncode
        ready, _, _ = select.select([self._status], [], [], timeout_s)
        if not ready:
            return None
        try:
            data = self._status.recv(_STATUS.size, socket.MSG_WAITALL)
        except OSError:
            data = b""
        if len(data) == _STATUS.size:
            self.returncode = _STATUS.unpack(data)[0]
        elif _exists(self.pid):
            # The server is gone and did not say; the child (its death signal on the
            # way) is someone else's to reap now: it ended when it is gone.
            return None
        else:
            self.returncode = -int(signal.SIGKILL)
        self._status.close()
        return self.returncode

    def poll(self) -> int | None:
        return self._take(0.0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._take(timeout)
        if code is None:
            if timeout is None:  # the server went away, the child not yet
                while (code := self._take(0.05)) is None:
                    pass
                return code
            raise subprocess.TimeoutExpired(self.args, timeout)
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def spawn(boot: str, fd: int, *argv: str, flags: list[str]) -> subprocess.Popen[bytes]:
    """A fresh interpreter (this one, with ``flags``) running ``boot`` (formatted with
    this process's ``sys.path``) with the file descriptor ``fd`` passed to it and
    ``fd argv...`` as its arguments; standard input from /dev/null. The fork server
    is started so, and so is a child that is not forked."""
    return subprocess.Popen([sys.executable, *flags, "-c", boot.format(sys.path), str(fd),
                             *argv], pass_fds=(fd,), stdin=subprocess.DEVNULL,
                            close_fds=True)


class _Client:
    """This process's end of its fork server."""

    def __init__(self, flags: list[str]) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.popen = spawn(_BOOT, theirs.fileno(), str(os.getpid()), flags=flags)
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        self.sock = mine
        self.owner = os.getpid()
        self.lock = threading.Lock()
        atexit.register(self.close)

    def fork(self, name: str, channel_fd: int, target: str) -> Forked:
        request = pickle.dumps({
            "name": name, "env": dict(os.environb), "cwd": os.getcwd(),
            "path": list(sys.path), "cpus": sorted(os.sched_getaffinity(0)),
            "module": target.partition(":")[0]}, protocol=pickle.HIGHEST_PROTOCOL)
        mine, theirs = socket.socketpair()
        try:
            with self.lock:
                socket.send_fds(self.sock, [request],
                                [1, 2, channel_fd, theirs.fileno()])
            theirs.close()
            ready, _, _ = select.select([mine], [], [], _ANSWER_TIMEOUT_S)
            data = mine.recv(_STATUS.size, socket.MSG_WAITALL) if ready else b""
            if len(data) != _STATUS.size:
                raise OSError(f"the fork server (pid {self.popen.pid}) did not answer")
            return Forked(name, _STATUS.unpack(data)[0], mine)
        except BaseException:
            theirs.close()
            mine.close()
            raise

    def close(self) -> None:
        """End the server (its socket closes), as this process ends."""
        if self.owner != os.getpid() or self.sock.fileno() < 0:
            return  # a forked copy's (the server is its parent's), or closed already
        self.sock.close()
        # At once: it may be importing (learning), and what it forked is stopped
        # already, or would die with this process all the same (its death signal).
        self.popen.kill()
        self.popen.wait()

    def learn(self) -> None:
        """Tell the server to import, while nothing else asks, the modules of the
        targets it forked children for (a process that starts runs again gets its
        next children with their roles imported)."""
        try:
            with self.lock:
                self.sock.send(pickle.dumps({"learn": True}), socket.MSG_DONTWAIT)
        except OSError:
            pass


_client: _Client | None = None
_broken_in: int | None = None  # the pid of a process whose server failed
_client_lock = threading.Lock()


def fork(name: str, channel_fd: int, target: str, flags: list[str]) -> Forked | None:
    """Child ``name`` (its channel ``channel_fd``, its target ``module:qualname``)
    forked from this process's fork server, started now if need be; None where the
    server cannot be had (the caller spawns the child instead)."""
    global _client, _broken_in
    pid = os.getpid()
    if _broken_in == pid:
        return None
    with _client_lock:
        if _client is None or _client.owner != pid:  # none yet, or a fork's copy
            try:
                _client = _Client(flags)
            except OSError:
                _broken_in = pid
                return None
        client = _client
    try:
        return client.fork(name, channel_fd, target)
    except OSError:
        _broken_in = pid
        client.close()
        return None


def learn() -> None:
    """This process's fork server, if it has one, imports the modules of the targets
    it forked children for, while nothing else asks: called when a supervisor has
    stopped all its children (so never while a run goes on, which the imports would
    slow, nor in a process that only ever starts one run)."""
    client = _client
    if client is not None and client.owner == os.getpid() and _broken_in != client.owner:
        client.learn()


def server_pid() -> int | None:
    """The pid of this process's fork server, if it has one."""
    client, pid = _client, os.getpid()
    if client is None or client.owner != pid or _broken_in == pid:
        return None
    return client.popen.pid


# -- the server -----------------------------------------------------------------------
def serve(argv: list[str]) -> None:
    """The fork server's main (``FD OWNER``): never returns."""
    from dmxshm.proc.prctl import die_with_parent, set_process_name

    fd, owner = int(argv[0]), int(argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the supervisor stops the children
    die_with_parent(signal.SIGKILL)
    if os.getppid() != owner:
        os._exit(0)
    set_process_name("dmx-forkserver")
    sock = socket.socket(fileno=fd)
    for module in _CORE:
        _learn(module)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, int] = {}  # pid -> its status socket's fd
    seen: set[str] = set()  # the modules of the targets forked for
    to_learn: list[str] = []
    while True:
        try:
            ready, _, _ = select.select([sock.fileno(), wake_r], [], [],
                                        0.0 if to_learn else None)
        except InterruptedError:
            continue
        if not ready:
            _learn(to_learn.pop(0))  # idle: a role's modules, for its next child
            continue
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
            _reap(children)
        if sock.fileno() in ready:
            try:
                msg, fds, _, _ = socket.recv_fds(sock, _MAX_REQUEST, 8)
            except OSError:
                msg, fds = b"", []
            if not msg:
                os._exit(0)  # the process that started it has ended
            request = pickle.loads(msg)
            if request.get("learn"):
                to_learn.extend(m for m in seen if m not in sys.modules and m not in to_learn)
                continue
            out, err, channel, status = fds
            pid = os.fork()
            if pid == 0:
                _child(request, out, err, channel, [sock.fileno(), wake_r, wake_w, status,
                                                   *children.values()])
            for f in (out, err, channel):
                os.close(f)
            try:
                os.write(status, _STATUS.pack(pid))
            except OSError:
                pass
            children[pid] = status
            if request["module"].startswith("dmxshm."):
                seen.add(request["module"])
            _reap(children)


def _learn(module: str) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            importlib.import_module(module)
    except Exception:  # noqa: BLE001  the child imports it itself, and reports why not
        pass


def _reap(children: dict[int, int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = children.pop(pid, None)
        if fd is None:
            continue
        try:
            os.write(fd, _STATUS.pack(os.waitstatus_to_exitcode(status)))
        except OSError:
            pass  # its supervisor is gone
        os.close(fd)


def _child(request: dict[str, Any], out: int, err: int, channel: int,
           server_fds: list[int]) -> None:
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for f in server_fds:
            try:
                os.close(f)
            except OSError:
                pass
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for f in {null, out, err} - {0, 1, 2}:
            os.close(f)
        os.environb.clear()
        os.environb.update(request["env"])
        os.chdir(request["cwd"])
        sys.path[:] = request["path"]
        os.sched_setaffinity(0, request["cpus"])
        from dmxshm.proc.child import run

        run([str(channel), request["name"]], parent_pid=os.getppid())  # never returns
    finally:
        os._exit(1)  # it failed before its run

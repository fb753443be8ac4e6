"""Children that are whole programs (``python -m module ARGS``), such as the live view.

A :class:`~dmxshm.proc.supervisor.Supervisor` child runs one function and
reports one outcome when it ends. The live view server (``python -m
dmxshm.view.server``, what ``dmxshm run --view`` starts) is a program
instead: it has its own command line, prints its URL on its standard output
once it listens, and serves until it is stopped. :func:`start` starts such
a program as the supervisor starts its children: this interpreter with its
flags and its ``sys.path`` (so a folder added at run time, ``--app-dir``,
counts), standard input from ``/dev/null``, called ``dmx-<name>`` (ps and
psutil), and told to stop (SIGTERM) when the thread that started it ends;
:func:`stop` stops it::

    view = program.start("view", "dmxshm.view.server", ["--port", "8765"],
                         env={TOKEN_ENV: token})   # a secret: not on the command line
    try:
        url = wait_for_url(view)                   # reads its standard output
    finally:
        program.stop(view)
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from collections.abc import Mapping, Sequence

from dmxshm.proc.prctl import die_with_parent, set_process_name
from dmxshm.proc.supervisor import interpreter_flags
from dmxshm.settings import STOP_GRACE_S

# The program's first line: the parent's sys.path, the child's mark (as in
# dmxshm.proc.supervisor), then main() below, which takes its own arguments off
# the command line and runs the module as __main__.
_BOOT = ("import sys; sys.path[:] = {!r}; sys._dmxshm_child = True; "
         "from dmxshm.proc.program import main; main()")


def start(name: str, module: str, args: Sequence[str] = (), *,
          env: Mapping[str, str] | None = None, capture: bool = True) -> subprocess.Popen[bytes]:
    """Start ``python -m module *args`` in a child called ``dmx-<name>``.

    Args:
        name: its name in ps and psutil (``view``).
        module: the module it runs as ``__main__``.
        args: its command line (``sys.argv[1:]`` there).
        env: variables added to this process's environment for it (secrets
            go here, not in ``args``: other users can read a command line).
        capture: pipe its standard output and error (read them, or it may
            block once a pipe is full); False: it writes to ours.

    Returns:
        The child; stop it with :func:`stop`.
    """
    pipe = subprocess.PIPE if capture else None
    return subprocess.Popen(
        [sys.executable, *interpreter_flags(), "-c", _BOOT.format(sys.path),
         str(os.getpid()), name, module, *args],
        stdin=subprocess.DEVNULL, stdout=pipe, stderr=pipe, close_fds=True,
        env={**os.environ, **env} if env else None)


def stop(proc: subprocess.Popen[bytes], grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM ``proc``, SIGKILL it ``grace_s`` later if it is still there, and close
    its pipes; always returns."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def main() -> None:
    """In the child (``-c`` boot): ``PARENT_PID NAME MODULE ARGS...`` on the command line."""
    parent_pid, name, module = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    del sys.argv[1:4]
    die_with_parent()
    if os.getppid() != parent_pid:  # the parent died before the line above
        sys.exit(1)
    set_process_name(f"dmx-{name}")
    runpy.run_module(module, run_name="__main__", alter_sys=True)

"""Module-level targets for the process-layer tests (a child imports them by name)."""

from __future__ import annotations

import os
import signal
import sys
import time

from dmxshm.errors import PeerDiedError
from dmxshm.shm.peers import pid_alive


def returns(value: object) -> object:
    return value


def raises_value_error(message: str) -> None:
    raise ValueError(message)


def raises_peer_died() -> None:
    raise PeerDiedError("renderer-0 (pid 1) died", role="renderer-0", pid=1)


def killed_once_gone(pid: int, timeout_s: float) -> None:
    """Wait until the process ``pid`` has ended (a zombie counts), then die by SIGKILL:
    a death that comes after ``pid``'s own end."""
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGKILL)


def exits(code: int) -> None:
    sys.stdout.flush()
    os._exit(code)


def sleeps(seconds: float) -> str:
    """Sleep in short slices, as every wait of a real child does (each has a timeout).

    One long sleep can miss a signal on some kernels: a SIGTERM that comes as a
    SIGCONT restarts the sleep was seen delivered but never interrupt it.
    """
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.05)
    return "slept"


def where_am_i() -> dict[str, object]:
    """What a child sees of itself: its CPUs, its parent and supervisor, its stdin and
    stdout, its main module, its working folder and environment."""
    import __main__
    from dmxshm.proc.child import supervisor_pid

    return {"cpus": sorted(os.sched_getaffinity(0)), "ppid": os.getppid(),
            "supervisor": supervisor_pid(),
            "stdin_is_null": os.path.samefile("/proc/self/fd/0", os.devnull),
            "stdout": os.readlink("/proc/self/fd/1"), "cwd": os.getcwd(),
            "mark": os.environ.get("DMXSHM_TEST_MARK"),
            "main_file": getattr(__main__, "__file__", None)}


def unpicklable() -> object:
    return lambda: None


def records_stop(signum: int, frame: object) -> None:
    """A stop handler that only records: the target sees it and returns."""
    global _stop
    _stop = signum


_stop: int | None = None


def waits_for_stop(timeout_s: float) -> int | None:
    deadline = time.monotonic() + timeout_s
    while _stop is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return _stop


def forks_and_returns(grandchild_s: float) -> int:
    """Fork a process that holds this child's channel open, then return at once."""
    pid = os.fork()
    if pid == 0:  # the grandchild: inherits the channel's descriptor, and sleeps
        time.sleep(grandchild_s)
        os._exit(0)
    return pid


class Hook:
    """A start hook (stands for any argument object); its class is importable."""

    def __call__(self) -> str:
        return "hooked"


def calls(hook: object) -> object:
    return hook()  # type: ignore[operator]


def imported(modules: list[str]) -> dict[str, bool]:
    """Which of ``modules`` this child had imported when its target started (this
    module imports only the standard library and what dmxshm.proc itself needs)."""
    return {m: m in sys.modules for m in modules}


def registered_once_gymnasium_is_imported() -> dict[str, bool]:
    """Whether dmxshm's envs are in gymnasium's registry once this child imports it."""
    before = "gymnasium" in sys.modules
    import gymnasium

    return {"imported_before": before,
            "v0": "dmxshm/DuckieLane-v0" in gymnasium.registry,
            "v1": "dmxshm/DuckieLane-v1" in gymnasium.registry}

"""Linux process controls a child sets on itself: its name, and death with its parent."""

from __future__ import annotations

import ctypes
import ctypes.util
import signal

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15


def _prctl(option: int, value: int | bytes) -> None:
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return
    try:
        ctypes.CDLL(libc_name, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def set_process_name(name: str) -> None:
    """Show ``name`` in ps/top/psutil (Linux: the 15-byte comm field)."""
    _prctl(_PR_SET_NAME, name.encode()[:15])


def die_with_parent(signum: int = signal.SIGKILL) -> None:
    """Ask the kernel for ``signum`` when the parent dies, even by SIGKILL.

    SIGKILL by default: a child stopped by SIGSTOP never acts on a SIGTERM (it
    stays pending), so an orphan would stay, stopped, holding its mappings. Its
    supervisor is gone, so nothing is left for a gentler end to report to; what
    the run created is swept at the next start (``dmxshm clean``)."""
    _prctl(_PR_SET_PDEATHSIG, int(signum))

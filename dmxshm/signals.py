"""SIGTERM that unwinds like Ctrl-C, even when Python swallows the exception.

The handler records the signal and raises SystemExit, so that ``with``
blocks unlink what they created. An exception raised by a handler while a
finaliser (``__del__``, a weakref callback) runs is printed and dropped by
Python, so long loops also call :func:`check`, which raises again once a
signal was recorded.
"""

from __future__ import annotations

import signal
import threading

_received: int | None = None


def _handler(signum: int, frame: object) -> None:
    global _received
    _received = signum
    raise SystemExit(128 + signum)


def install() -> bool:
    """Handle SIGTERM so (main thread, default handler only); True if installed."""
    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, _handler)):
        signal.signal(signal.SIGTERM, _handler)
        return True
    return False


def uninstall() -> None:
    """Back to the default SIGTERM action."""
    if signal.getsignal(signal.SIGTERM) is _handler:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def check() -> None:
    """Raise SystemExit if a SIGTERM was received (and its exception lost)."""
    if _received is not None:
        raise SystemExit(128 + _received)

"""SIGTERM that unwinds like Ctrl-C, even when Python swallows the exception.

The handler records the signal and raises SystemExit, so that ``with``
blocks unlink what they created. An exception raised by a handler while a
finaliser (``__del__``, a weakref callback) runs is printed and dropped by
Python, so long loops also call :func:`check`, which raises again once a
signal was recorded.

A second place swallows a handler's exception: posix_ipc. A semaphore wait
interrupted by a signal runs the Python handler from inside the C call and
then replaces whatever it raised (a child's Terminated, SystemExit; only
KeyboardInterrupt is kept) with ``SignalError``; a loop that retries on ``SignalError`` would never
stop (found by the fault-injection suite: a SIGTERMed agent waiting for an
observation lived on). :func:`watch` wraps the SIGINT and SIGTERM handlers so
that each call is counted, and :func:`raise_swallowed` calls the handler
again, in plain Python, when a watched signal came during a wait.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any

_received: int | None = None


def _handler(signum: int, frame: object) -> None:
    global _received
    _received = signum
    raise SystemExit(128 + signum)


_seen = 0  # watched signals handled so far
_last: tuple[int, Callable[[int, Any], Any]] | None = None


def watch() -> None:
    """Count SIGINT and SIGTERM before their Python handlers run (main thread only).

    Idempotent; a handler installed later replaces the wrapper (and is then
    not watched). Signals left to the system (``SIG_DFL``, ``SIG_IGN``) need
    no watching: no Python handler, nothing to swallow.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGINT, signal.SIGTERM):
        current = signal.getsignal(signum)
        if callable(current) and not hasattr(current, "dmx_watched"):
            signal.signal(signum, _watched(current))


def _watched(handler: Callable[[int, Any], Any]) -> Callable[[int, Any], Any]:
    def counting(signum: int, frame: Any) -> Any:
        global _seen, _last
        _seen += 1
        _last = (signum, handler)
        return handler(signum, frame)

    counting.dmx_watched = handler  # type: ignore[attr-defined]
    return counting


def seen() -> int:
    """How many watched signals were handled so far (pass it to :func:`raise_swallowed`)."""
    return _seen


def raise_swallowed(since: int) -> None:
    """Raise what the handler of a watched signal raised, if one came after ``since``.

    Call it where ``posix_ipc.SignalError`` is caught: the handler has run
    inside the wait and its exception is lost; calling it again raises it.
    """
    if _seen != since and _last is not None:
        signum, handler = _last
        handler(signum, None)


def install() -> bool:
    """Handle SIGTERM so (main thread, default handler only); True if installed."""
    current = signal.getsignal(signal.SIGTERM)
    if (threading.current_thread() is threading.main_thread()
            and (current in (signal.SIG_DFL, _handler)
                 or getattr(current, "dmx_watched", None) is _handler)):
        signal.signal(signal.SIGTERM, _handler)
        watch()
        return True
    return False


def uninstall() -> None:
    """Back to the default SIGTERM action."""
    current = signal.getsignal(signal.SIGTERM)
    if current is _handler or getattr(current, "dmx_watched", None) is _handler:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def check() -> None:
    """Raise SystemExit if a SIGTERM was received (and its exception lost)."""
    if _received is not None:
        raise SystemExit(128 + _received)

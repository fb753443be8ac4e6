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

import _signal
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
_raised: BaseException | None = None  # what the last watched handler raised


_MAIN_THREAD = threading.main_thread().ident
_WATCHED_SIGNALS = (int(signal.SIGINT), int(signal.SIGTERM))
_last_seen: tuple[Any, ...] = ()  # the handlers as the last watch() left them
_getsignal = _signal.getsignal


def watch() -> None:
    """Record what the SIGINT and SIGTERM handlers raise (main thread only).

    Idempotent and cheap (about 0.25 us when nothing changed: every semaphore
    wait calls it), so a handler that was installed later is watched from the
    next wait on. It reads the handlers with ``_signal.getsignal``, the C
    function behind ``signal.getsignal``, whose enum conversion of the answer
    costs 2 us a call. Signals left to the system (``SIG_DFL``, ``SIG_IGN``)
    need no watching, and neither does Python's own ``default_int_handler``:
    posix_ipc keeps its KeyboardInterrupt (and asyncio looks for that handler
    by identity).
    """
    global _last_seen
    if threading.get_ident() != _MAIN_THREAD:
        return
    current = (_getsignal(_WATCHED_SIGNALS[0]), _getsignal(_WATCHED_SIGNALS[1]))
    if current == _last_seen:
        return
    for signum, handler in zip(_WATCHED_SIGNALS, current, strict=True):
        if (callable(handler) and handler is not signal.default_int_handler
                and not hasattr(handler, "dmx_watched")):
            signal.signal(signum, _watched(handler))
    _last_seen = (_getsignal(_WATCHED_SIGNALS[0]), _getsignal(_WATCHED_SIGNALS[1]))


def _watched(handler: Callable[[int, Any], Any]) -> Callable[[int, Any], Any]:
    def counting(signum: int, frame: Any) -> Any:
        global _seen, _raised
        _seen += 1
        _raised = None
        try:
            return handler(signum, frame)
        except BaseException as exc:
            _raised = exc  # kept for raise_swallowed; the handler runs only once
            raise

    counting.dmx_watched = handler  # type: ignore[attr-defined]
    return counting


def seen() -> int:
    """How many watched signals were handled so far (pass it to :func:`raise_swallowed`)."""
    return _seen


def raise_swallowed(since: int) -> None:
    """Raise again what a watched handler raised, if one ran after ``since``.

    Call it where ``posix_ipc.SignalError`` is caught: the handler has run
    inside the wait and its exception was replaced. The handler is not called
    again; a handler that raised nothing leaves nothing to raise. Only the
    main thread runs handlers, so only it may raise their exceptions.
    """
    if (_seen != since and _raised is not None
            and threading.current_thread() is threading.main_thread()):
        raise _raised


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

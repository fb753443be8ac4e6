"""Stop signals: a handler records the signal; the code that can act on it acts.

dmxshm's SIGTERM handler (:func:`install`: the CLI, a network's supervisor)
only records the signal, as the project's style asks (uvicorn's
``handle_exit``). An exception raised by a handler lands wherever the main
thread happens to be: in a finaliser (Python prints it and drops it), in the
middle of a clean-up, or in a posix_ipc wait (which replaces it, see below).
So the places that can act do: :func:`check` raises ``SystemExit(128 +
signum)`` once for a recorded signal, and ``with`` blocks unlink what they
created on the way out. The run loops call it (the network's supervisor, the
spine run, the IPC benchmark), and so does every semaphore wait of
:mod:`dmxshm.shm.waiting`, before it sleeps and when a signal cut its sleep
short. Where no such wait is under way (the main thread computes, sleeps in
``select``, or runs a command that has no loop: ``dmxshm replay``, ``bench
render``), nothing would look at the record: the handler then acts itself
and raises ``SystemExit`` at once, as Python's own SIGINT handler does, so a
single SIGTERM always stops a process. Inside a semaphore wait
(:func:`deferring`) it only records, and the wait acts. A second SIGTERM that
finds the first one still not acted on raises too.

How posix_ipc meets signals (``Semaphore_acquire``, its ``case EINTR``:
https://github.com/osvenskan/posix_ipc/blob/rel1.1.1/posix_ipc_module.c ,
the same in 1.3.2's ``src/posix_ipc_module.c``; ``SignalError`` in
https://github.com/osvenskan/posix_ipc/blob/rel1.1.1/USAGE.md ; and
https://github.com/osvenskan/posix_ipc/issues/30): ``acquire`` releases the
GIL and sleeps in ``sem_timedwait``. A signal that has a Python handler
interrupts that sleep (CPython installs its handlers without ``SA_RESTART``)
and posix_ipc does not retry: it runs the Python handlers there and then
(``PyErr_CheckSignals``), keeps a ``KeyboardInterrupt`` they raised, and
replaces anything else they raised, or nothing, with ``SignalError``. Hence:

* A handler that only records does end the wait: the wait gets SignalError,
  looks at the record (:func:`check`) and leaves. dmxshm's own handler needs
  no exception to unwind a wait, and Ctrl-C (Python's
  ``default_int_handler``) comes out of a wait as KeyboardInterrupt.
* What any other handler raises during a wait would be lost (a child whose
  handler raised ``Terminated`` in a wait for an observation lived on: found
  by the fault-injection suite). The children of :mod:`dmxshm.proc` therefore
  use dmxshm's handler too (``install(exit_with=Terminated)``): it records in
  a wait and raises ``Terminated`` elsewhere, and their waits cost nothing
  more. For any other Python handler (a user's, a spine's ``on_stop``):
  while a main-thread wait sleeps, the stop
  signals whose handler is some other Python function are blocked
  (``pthread_sigmask``, this thread only), the wait sleeps in chunks of at
  most :data:`~dmxshm.settings.LIVENESS_POLL_S`, and between chunks they are
  unblocked: the handler then runs in plain Python, and what it raises comes
  out of the wait unchanged. Nothing is installed or wrapped. The price,
  only in a process with such a handler: the signal may wait for the end of
  the chunk (50 ms at most), and a wait that sleeps makes two more system
  calls (2 us more per wait, measured with timeit on an acquire that finds
  its token).
"""

from __future__ import annotations

import _signal
import signal
import sys
import threading
from collections.abc import Callable

_MAIN_THREAD = threading.main_thread().ident
_STOP_SIGNALS = (int(signal.SIGINT), int(signal.SIGTERM))
_getsignal = _signal.getsignal  # signal.getsignal's enum conversion costs 2 us a call

_received: int | None = None  # the first stop signal dmxshm's handler recorded


def _system_exit(signum: int) -> BaseException:
    return SystemExit(128 + signum)


_exit_with: Callable[[int], BaseException] = _system_exit  # what acting on a signal raises
_deferring = 0  # main-thread semaphore waits under way, which act on a record
_acted = False  # check() has raised for it
_seen = 0  # signals dmxshm's handler recorded so far

_last_seen: tuple[object, ...] = ()  # the handlers as held_in_waits() last saw them
_held: tuple[int, ...] = ()


def _handler(signum: int, frame: object) -> None:
    """dmxshm's SIGTERM handler: record (see the module docstring)."""
    global _received, _seen, _acted
    _seen += 1
    if _received is None:
        _received = signum
        if _deferring:  # a wait is under way: it acts (posix_ipc would replace a raise)
            return
        _acted = True  # nothing under way would look at the record: act now
        raise _raising(signum)
    if not _acted:  # the first one is still waiting for a check: nothing checks
        _acted = True  # acted on now: the clean-up this starts goes on in peace
        raise _raising(_received)


_raised: BaseException | None = None  # what the handler raised last


def _raising(signum: int) -> BaseException:
    global _raised
    _raised = _exit_with(signum)
    return _raised


def _unraisable(unraisable: object) -> None:
    """``sys.unraisablehook``: where the handler's raise landed in a finaliser (a
    ``__del__``, a weakref callback, the collector's), Python dropped it and the process
    would live on with the signal taken as acted on. Re-arm it: the next :func:`check`
    (every wait makes one) raises again. Seen once in the fault matrix: a renderer
    SIGTERMed as it started ran on, its run with it, until it was killed."""
    global _acted
    if _received is not None and _acted and _raised is not None \
            and getattr(unraisable, "exc_value", None) is _raised:
        _acted = False
    _previous_unraisable(unraisable)


_previous_unraisable = sys.unraisablehook


def install(exit_with: Callable[[int], BaseException] | None = None) -> bool:
    """Handle SIGTERM by recording it (main thread, default handler only).

    Args:
        exit_with: what acting on the signal raises, from its number (default
            ``SystemExit(128 + signum)``; a child process of :mod:`dmxshm.proc`
            gives its ``Terminated``, which carries its partial result). One
            handler for every process, so that no wait needs to hold a
            handler's exception back from posix_ipc.

    Returns:
        True if dmxshm's handler is in place (installed now or before).
    """
    global _received, _acted, _exit_with, _previous_unraisable
    if threading.get_ident() != _MAIN_THREAD:
        return False
    current = signal.getsignal(signal.SIGTERM)
    if current is _handler:
        return True
    if current is not signal.SIG_DFL:
        return False
    _received, _acted = None, False  # a fresh start: nothing recorded yet
    _exit_with = exit_with if exit_with is not None else _system_exit
    signal.signal(signal.SIGTERM, _handler)
    if sys.unraisablehook is not _unraisable:  # chained: Python's own still prints
        _previous_unraisable, sys.unraisablehook = sys.unraisablehook, _unraisable
    return True


def pending() -> bool:
    """A signal was recorded and nothing acted on it yet."""
    return _received is not None and not _acted


def uninstall() -> None:
    """Back to the default SIGTERM action (if dmxshm's handler is in place).

    A SIGTERM recorded and never acted on is not lost: it is sent again, to
    the default action (the process ends, as it would have without dmxshm).
    """
    global _received
    if signal.getsignal(signal.SIGTERM) is _handler:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if pending():
            signum, _received = _received, None
            signal.raise_signal(signum)


def check() -> None:
    """Act on a recorded SIGTERM: raise ``SystemExit(128 + signum)``, once.

    Only the main thread acts (it alone runs signal handlers); elsewhere this
    returns. Once it has raised, it does not raise again for that signal, so
    the clean-up it starts may wait on rings and barriers in peace.

    Example:
        >>> check()  # nothing recorded: nothing to do
    """
    global _acted
    if _received is not None and not _acted and threading.get_ident() == _MAIN_THREAD:
        _acted = True
        raise _exit_with(_received)


def deferring(delta: int) -> None:
    """A main-thread semaphore wait begins (``+1``) or ends (``-1``): while one is
    under way dmxshm's handler only records, and the wait acts (:func:`check`).
    Two calls instead of a context manager: every wait that may sleep makes them."""
    global _deferring
    if threading.get_ident() == _MAIN_THREAD:  # handlers run there: other threads' waits
        _deferring += delta                    # cannot act for it


def held_in_waits() -> tuple[int, ...]:
    """The stop signals a main-thread wait holds back from posix_ipc (module doc).

    Those whose handler is a Python function other than dmxshm's own and
    Python's ``default_int_handler`` (posix_ipc keeps the KeyboardInterrupt
    of that one). Empty outside the main thread, whose waits no handler can
    interrupt. About 0.15 us when the handlers did not change: every wait
    that sleeps asks.
    """
    global _last_seen, _held
    if threading.get_ident() != _MAIN_THREAD:
        return ()
    current = (_getsignal(_STOP_SIGNALS[0]), _getsignal(_STOP_SIGNALS[1]))
    if current != _last_seen:
        _held = tuple(
            signum for signum, handler in zip(_STOP_SIGNALS, current, strict=True)
            if callable(handler) and handler is not _handler
            and handler is not signal.default_int_handler
        )
        _last_seen = current
    return _held


def watch() -> None:
    """Nothing left to do: waits no longer re-install handlers (module doc).

    Kept so that callers of earlier versions still run.
    """


def seen() -> int:
    """How many signals dmxshm's SIGTERM handler recorded so far."""
    return _seen


def raise_swallowed(since: int) -> None:
    """Act (:func:`check`) if dmxshm's handler recorded a signal after ``since``
    (a value of :func:`seen`). Kept for callers of earlier versions."""
    if _seen != since:
        check()

"""The error hierarchy of dmxshm: one root, semantic leaves.

Every error raised on purpose by dmxshm derives from :class:`DmxError`, so a
caller can catch them all with one clause. Leaves that match a built-in
category also derive from it (a timeout is a :class:`TimeoutError`, a missing
segment a :class:`FileNotFoundError`), so generic handlers keep working.
"""

from __future__ import annotations


class DmxError(Exception):
    """Root of every error dmxshm raises on purpose."""


class RefusedError(DmxError):
    """What was asked cannot run, and nothing was started: an optional extra is
    missing, a path cannot be used, a resource is held by a live run. The
    ``dmxshm`` command exits 2 (``EXIT_USAGE``) on it, as on a bad option; the
    message says what to change."""

class ShmError(DmxError):
    """Something is wrong with a shared-memory segment or semaphore."""


class SegmentExistsError(ShmError, FileExistsError):
    """A segment or semaphore with this name already exists (never adopted)."""


class SegmentMissingError(ShmError, FileNotFoundError):
    """A segment or semaphore that should exist is gone."""


class ShmSpaceError(ShmError, RefusedError, MemoryError):
    """/dev/shm has not enough free space for a new segment. Segments are made before
    any process starts, so this is a refusal (exit 2): nothing ran."""

    def __init__(self, message: str, *, size_bytes: int, free_bytes: int) -> None:
        super().__init__(message)
        self.size_bytes = size_bytes
        self.free_bytes = free_bytes


class LayoutError(ShmError, ValueError):
    """A segment's header does not match what the attacher expects."""


class PeerDiedError(DmxError):
    """A peer process that a wait depended on is dead.

    Attributes:
        role: the peer's role (e.g. ``"reader"``, ``"renderer-1"``).
        pid: the peer's process id.
    """

    def __init__(self, message: str, *, role: str, pid: int) -> None:
        super().__init__(message)
        self.role = role
        self.pid = pid


class DmxTimeoutError(DmxError, TimeoutError):
    """A blocking wait ran out of time while every peer was still alive."""


class RingTimeoutError(DmxTimeoutError):
    """A ring read or write waited longer than its timeout."""


class BarrierTimeoutError(DmxTimeoutError):
    """A barrier wait ran out of time; the message names who did not arrive."""


class BrokenBarrierError(DmxError):
    """The barrier was broken by a timeout or a dead party; it cannot be reused."""


class RingClosedError(DmxError, EOFError):
    """The writer closed the ring and every written slot has been read."""


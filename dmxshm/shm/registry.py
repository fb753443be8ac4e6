"""A registry of everything one network created, so one call unlinks it all."""

from __future__ import annotations

import os
import weakref

import posix_ipc

from dmxshm.errors import SegmentExistsError
from dmxshm.shm.names import make_name, new_token
from dmxshm.shm.segment import Segment


def _unlink_names(creator_pid: int, segments: list[str], semaphores: list[str]) -> list[str]:
    if os.getpid() != creator_pid:  # a forked child never unlinks its parent's objects
        return []
    return unlink_names(segments, semaphores)


def unlink_names(segments: list[str], semaphores: list[str]) -> list[str]:
    """Unlink these objects, those that still exist; returns the names removed.

    For a registry's own objects, and for the children of a creator that
    died without unlinking (SIGKILL): the last one out removes them.
    Empties both lists.
    """
    removed = []
    for name in segments:
        try:
            posix_ipc.unlink_shared_memory(name)
            removed.append(name)
        except posix_ipc.ExistentialError:
            pass
    for name in semaphores:
        try:
            posix_ipc.unlink_semaphore(name)
            removed.append(name)
        except posix_ipc.ExistentialError:
            pass
    segments.clear()
    semaphores.clear()
    return removed


class Registry:
    """Creates names under one network token and remembers what it created.

    :meth:`unlink_all` removes everything, and runs by itself when the
    registry is garbage-collected or the interpreter exits, so a failed
    start-up or an exception leaves nothing in /dev/shm.

    Example:
        >>> with Registry() as reg:
        ...     seg = reg.create_segment("doc", 4096)
        ...     seg.name.startswith("/dmx-")
        True
    """

    def __init__(self, token: str | None = None) -> None:
        self.token = token or new_token()
        self.pid = os.getpid()
        self._segments: list[str] = []
        self._semaphores: list[str] = []
        self._finalizer = weakref.finalize(
            self, _unlink_names, self.pid, self._segments, self._semaphores
        )

    def name(self, what: str) -> str:
        """The POSIX name of object ``what`` in this network."""
        return make_name(self.token, what, pid=self.pid)

    def create_segment(self, what: str, size_bytes: int) -> Segment:
        """Create a segment and register it for :meth:`unlink_all`.

        The name is registered first: a signal that unwinds during the creation
        (SIGTERM raises SystemExit) must not leave the new segment behind.
        """
        name = self.name(what)
        self._segments.append(name)
        try:
            return Segment.create(name, size_bytes)
        except SegmentExistsError:
            self._segments.remove(name)  # somebody else's: never ours to unlink
            raise

    def create_semaphore(self, name: str, initial_value: int = 0) -> posix_ipc.Semaphore:
        """Create a semaphore with a full name (from :meth:`name`) and register it
        (first, as :meth:`create_segment` does)."""
        self._semaphores.append(name)
        try:
            return posix_ipc.Semaphore(name, posix_ipc.O_CREX, 0o600, initial_value)
        except posix_ipc.ExistentialError as exc:
            self._semaphores.remove(name)
            raise SegmentExistsError(
                f"semaphore {name} already exists; dmxshm never adopts it. "
                "If its creator is dead, 'dmxshm clean' removes it."
            ) from exc

    @property
    def names(self) -> list[str]:
        """Names of the live objects this registry created."""
        return [*self._segments, *self._semaphores]

    def unlink_all(self) -> list[str]:
        """Unlink every object created here; returns the names removed."""
        return _unlink_names(self.pid, self._segments, self._semaphores)

    def __enter__(self) -> Registry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unlink_all()

"""POSIX shared-memory segments with numpy views.

A :class:`Segment` is created exclusively (``O_EXCL``, mode 0600), sized with
``posix_fallocate`` after a free-space check so that a too-small /dev/shm is
a clear :class:`~dmxshm.errors.ShmSpaceError` at creation instead of a SIGBUS
at the first touch (moby#2606), and its pages are touched once so the hot
loop takes no page faults. The creator unlinks; attachers only close.

:meth:`Segment.locked` serialises the rare read-modify-writes of a segment's
header that several processes may attempt at once (taking a ring's side, a
barrier's party) with ``flock`` on the segment's file: the kernel drops the
lock of a process that dies holding it, which a semaphore used as a lock
would never do (posix_ipc#53). Taking and dropping it takes and drops a
kernel lock, whose acquire and release order the loads and stores made under
it on every architecture, as ``sem_wait``/``sem_post`` do for a blocking ring.
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import posix_ipc

from dmxshm.errors import (
    DmxTimeoutError,
    SegmentExistsError,
    SegmentMissingError,
    ShmError,
    ShmSpaceError,
)
from dmxshm.shm.names import SHM_DIR

PAGE_SIZE = mmap.PAGESIZE
# A lock holder keeps it for microseconds: a contender looks again this often.
LOCK_POLL_S = 0.001
REMOVE_IPC_HINT = (
    "Was it removed underneath the run? systemd-logind removes a user's shared "
    "memory at logout when RemoveIPC=yes (see logind.conf); run as a system user "
    "or set RemoveIPC=no."
)


def shm_free_bytes(shm_dir: str = SHM_DIR) -> int | None:
    """Free bytes on the shared-memory file system (None when unknown)."""
    try:
        return shutil.disk_usage(shm_dir).free
    except OSError:
        return None


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def _space_error(name: str, size_bytes: int, free_bytes: int) -> ShmSpaceError:
    return ShmSpaceError(
        f"cannot create shared-memory segment {name}: it needs {size_bytes} bytes "
        f"({_mib(size_bytes)}) but {SHM_DIR} has {free_bytes} bytes ({_mib(free_bytes)}) "
        "free. Free space with 'dmxshm clean', ask for smaller rings, or enlarge "
        f"{SHM_DIR} (docker: --shm-size=1g; host: mount -o remount,size=2G {SHM_DIR}).",
        size_bytes=size_bytes,
        free_bytes=free_bytes,
    )


class Segment:
    """A mapped POSIX shared-memory segment.

    Use :meth:`create` or :meth:`attach`; both return a mapped segment.

    Example:
        >>> from dmxshm.shm.names import make_name, new_token
        >>> name = make_name(new_token(), "doc")
        >>> seg = Segment.create(name, 4096)
        >>> seg.ndarray(np.uint8, (4,))[:] = 7
        >>> Segment.attach(name).ndarray(np.uint8, (4,)).tolist()
        [7, 7, 7, 7]
        >>> seg.unlink()
    """

    def __init__(self, name: str, buf: mmap.mmap, size_bytes: int, owner: bool) -> None:
        self.name = name
        self.size_bytes = size_bytes
        self.owner = owner
        self._buf: mmap.mmap | None = buf
        self._unlinked = False

    @classmethod
    def create(cls, name: str, size_bytes: int) -> Segment:
        """Create, size, touch and map a new segment.

        Args:
            name: POSIX name (``/dmx-...``).
            size_bytes: size; rounded up to whole pages by the kernel.

        Raises:
            SegmentExistsError: the name exists already (it is never adopted).
            ShmSpaceError: /dev/shm lacks the space (message gives both sizes).
            ValueError: ``size_bytes`` is not positive.
        """
        if size_bytes <= 0:
            raise ValueError(f"segment size must be positive, got {size_bytes}")
        free = shm_free_bytes()
        if free is not None and size_bytes > free:
            raise _space_error(name, size_bytes, free)
        try:
            shm = posix_ipc.SharedMemory(name, posix_ipc.O_CREX, mode=0o600, size=0)
        except posix_ipc.ExistentialError as exc:
            raise SegmentExistsError(
                f"shared-memory segment {name} already exists; dmxshm never adopts a "
                "segment it did not create. Is another network using this name? "
                "If its creator is dead, 'dmxshm clean' removes it."
            ) from exc
        try:
            cls._allocate(shm.fd, name, size_bytes)
            buf = mmap.mmap(shm.fd, size_bytes)
            seg = cls(name, buf, size_bytes, owner=True)
            seg._touch()  # seconds for GiBs: a Ctrl-C here must not leak the name
        except BaseException:
            shm.close_fd()
            posix_ipc.unlink_shared_memory(name)
            raise
        shm.close_fd()
        return seg

    @staticmethod
    def _allocate(fd: int, name: str, size_bytes: int) -> None:
        # posix_fallocate reserves tmpfs pages now and fails with ENOSPC,
        # where ftruncate would succeed and the first touch would SIGBUS.
        try:
            os.posix_fallocate(fd, 0, size_bytes)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise _space_error(name, size_bytes, shm_free_bytes() or 0) from exc
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise ShmError(f"cannot size segment {name}: {exc}") from exc
            os.ftruncate(fd, size_bytes)  # no fallocate here: the free-space check stands

    def _touch(self) -> None:
        pages = np.frombuffer(self.buf, dtype=np.uint8)[::PAGE_SIZE]
        pages[:] = 0

    @classmethod
    def attach(cls, name: str) -> Segment:
        """Map an existing segment created by someone else.

        Raises:
            SegmentMissingError: no such segment (with a hint about RemoveIPC).
            ShmError: the segment belongs to another user or cannot be mapped.
        """
        try:
            shm = posix_ipc.SharedMemory(name, 0)
        except posix_ipc.ExistentialError as exc:
            raise SegmentMissingError(
                f"shared-memory segment {name} does not exist. {REMOVE_IPC_HINT}"
            ) from exc
        except posix_ipc.PermissionsError as exc:
            raise ShmError(f"no permission to open segment {name}: {exc}") from exc
        try:
            st = os.fstat(shm.fd)
            if st.st_uid != os.geteuid():
                raise ShmError(
                    f"segment {name} belongs to uid {st.st_uid}, not to this user "
                    f"(uid {os.geteuid()}); dmxshm only attaches its own user's segments"
                )
            if st.st_size == 0:
                raise ShmError(f"segment {name} has size 0: its creator has not finished it")
            buf = mmap.mmap(shm.fd, st.st_size)
        finally:
            shm.close_fd()
        return cls(name, buf, st.st_size, owner=False)

    @contextmanager
    def locked(self, timeout_s: float, why: str) -> Iterator[None]:
        """Hold the segment's lock, exclusive across processes and threads.

        Args:
            timeout_s: the longest wait for a holder to let go.
            why: what the lock is for, e.g. ``"to bind its writer"`` (messages).

        Raises:
            SegmentMissingError: the segment was removed.
            DmxTimeoutError: another holder kept it for ``timeout_s``.
        """
        try:
            shm = posix_ipc.SharedMemory(self.name, 0)
        except posix_ipc.ExistentialError as exc:
            raise SegmentMissingError(
                f"shared-memory segment {self.name} does not exist. {REMOVE_IPC_HINT}"
            ) from exc
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    fcntl.flock(shm.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise DmxTimeoutError(
                            f"could not lock segment {self.name} {why} within "
                            f"{timeout_s:.1f} s: the process holding it was stopped "
                            "(SIGSTOP?) in the middle of a few stores. Continue it "
                            "(kill -CONT) or end it."
                        ) from None
                    time.sleep(LOCK_POLL_S)
            yield  # closing the descriptor below drops the lock
        finally:
            shm.close_fd()

    @property
    def buf(self) -> mmap.mmap:
        """The mapping; raises ShmError after :meth:`close`."""
        if self._buf is None:
            raise ShmError(f"segment {self.name} is closed")
        return self._buf

    def ndarray(self, dtype: Any, shape: tuple[int, ...], offset: int = 0) -> np.ndarray:
        """A numpy view of part of the segment (no copy)."""
        return np.ndarray(shape, dtype=dtype, buffer=self.buf, offset=offset)

    def close(self) -> None:
        """Drop this handle's mapping. Safe to call twice.

        The mapping is not closed explicitly: a numpy view made by
        :meth:`ndarray` holds the mmap object as its base but no buffer
        export, so ``mmap.close()`` would unmap memory under a live view (a
        segfault at its next use). Dropping the reference unmaps at once when
        no view is left, and with the last view otherwise.
        """
        self._buf = None

    def unlink(self) -> None:
        """Close, and remove the name if this process created it."""
        self.close()
        if self.owner and not self._unlinked:
            self._unlinked = True
            try:
                posix_ipc.unlink_shared_memory(self.name)
            except posix_ipc.ExistentialError:
                pass

    def __enter__(self) -> Segment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unlink() if self.owner else self.close()

    def __repr__(self) -> str:
        return f"Segment({self.name!r}, size_bytes={self.size_bytes}, owner={self.owner})"

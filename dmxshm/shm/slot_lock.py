"""The claims on an agent slot: Linux open-file-description locks on one byte of
its segment (docs/abi.md, "Claiming a slot"), and who may be named as holding one.

A claim is an ``F_OFD_SETLK`` write lock: the kernel drops it when its holder's
descriptor closes (its process dies, SIGKILL included), in any PID namespace, and
two claims conflict even from one process. An OFD lock has no owner pid
(``F_OFD_GETLK`` reports -1), so the pid a slot's holder line carries is only what
the client wrote: :func:`holds_claim` checks it against the kernel's own record
(``/proc/<pid>/fdinfo`` lists the locks of each descriptor) before anyone names it.
"""

from __future__ import annotations

import fcntl
import os
import struct

_FLOCK = struct.Struct("=hh4xqqi4x")  # Linux struct flock, 64-bit off_t
_AGAIN = (11, 13)  # EAGAIN, EACCES: held through another open file description


def _lock(fd: int, byte: int, kind: int, cmd: int) -> tuple[int, int]:
    """fcntl(fd, cmd, struct flock{kind, SEEK_SET, byte, 1}); its (l_type, l_pid)."""
    got = fcntl.fcntl(fd, cmd, _FLOCK.pack(kind, os.SEEK_SET, byte, 1, 0))
    l_type, _, _, _, l_pid = _FLOCK.unpack(got[:_FLOCK.size])
    return l_type, l_pid


def try_lock(fd: int, byte: int) -> bool:
    """Take the write lock on ``byte`` of ``fd``'s file (an OFD lock); False if held."""
    try:
        _lock(fd, byte, fcntl.F_WRLCK, fcntl.F_OFD_SETLK)
        return True
    except OSError as exc:
        if exc.errno in _AGAIN:
            return False
        raise


def unlock(fd: int, byte: int) -> None:
    """Let go of the lock ``fd`` holds on ``byte`` (none held: nothing happens)."""
    _lock(fd, byte, fcntl.F_UNLCK, fcntl.F_OFD_SETLK)


def is_locked(fd: int, byte: int) -> bool:
    """Whether another open file description holds a lock on ``byte`` (never takes it)."""
    l_type, _ = _lock(fd, byte, fcntl.F_WRLCK, fcntl.F_OFD_GETLK)
    return l_type != fcntl.F_UNLCK


def holds_claim(pid: int, path: str, byte: int) -> bool:
    """Whether process ``pid`` (of this PID namespace) holds a write lock on ``byte``
    of the file at ``path`` through one of its descriptors: the only way to know that
    a pid a client wrote into a slot is the client's. False for a pid of another PID
    namespace, a process that is gone, or one whose ``/proc`` entries cannot be read.

    Example:
        >>> holds_claim(os.getpid(), "/nonexistent", 1)
        False
    """
    if not 0 < pid < 2**31:
        return False
    try:
        real = os.path.realpath(path)
        ino = os.stat(real).st_ino  # our own file, the slot's
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            # The link's text, never the file it names: a stat would follow the link
            # into whatever the pid (chosen by a client) has open, a hung mount's file.
            if os.readlink(f"/proc/{pid}/fd/{fd}") != real:
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                lines = info.read().splitlines()
        except OSError:
            continue  # closed meanwhile
        for line in lines:
            # "lock:\t1: OFDLCK ADVISORY  WRITE -1 00:1b:236 1 1": kind, mode, pid,
            # device:inode, first byte, last byte
            words = line.split()
            if (len(words) >= 8 and words[0] == "lock:" and words[2] == "OFDLCK"
                    and words[4] == "WRITE" and words[-3].rsplit(":", 1)[-1] == str(ino)
                    and words[-2] == str(byte) and words[-1] in (str(byte), "EOF")):
                return True
    return False

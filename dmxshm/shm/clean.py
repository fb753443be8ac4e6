"""Find and remove dmxshm objects left in /dev/shm by dead processes.

A process killed with SIGKILL cannot unlink what it created (sglang#40723
lost 18 GiB that way). Every name carries its creator's pid, so a sweep can
tell the orphans from the objects of a network that is still running.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil

from dmxshm.shm.names import SHM_DIR, Entry, list_entries
from dmxshm.shm.peers import pid_alive

# An object older than its "creator" by more than this has a reused pid.
_REUSE_MARGIN_S = 1.0


def creator_alive(entry: Entry, st: os.stat_result) -> bool:
    """Whether the process named in ``entry`` is alive and really its creator.

    A pid is reused once its process is gone: if the process now holding it
    started after the object last changed (mtime and ctime only grow, so both
    are at or after its creation), it cannot have created it.
    """
    if not pid_alive(entry.pid):
        return False
    try:
        started = psutil.Process(entry.pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return True
    return started <= min(st.st_mtime, st.st_ctime) + _REUSE_MARGIN_S


@dataclass(frozen=True)
class Found:
    """A dmxshm object in /dev/shm with what the sweep knows of it.

    Attributes:
        entry: the parsed name.
        size_bytes: its size in /dev/shm.
        creator_alive: whether the creator pid is a live process.
    """

    entry: Entry
    size_bytes: int
    creator_alive: bool


def scan(shm_dir: str = SHM_DIR) -> list[Found]:
    """List this user's dmxshm objects with their creator's liveness."""
    uid = os.geteuid()
    found = []
    for entry in list_entries(shm_dir):
        try:
            st = os.stat(entry.path)
        except FileNotFoundError:
            continue  # removed while we looked
        if st.st_uid != uid:
            continue
        found.append(Found(entry=entry, size_bytes=st.st_size,
                           creator_alive=creator_alive(entry, st)))
    return found


def sweep(
    remove_live: bool = False, dry_run: bool = False, shm_dir: str = SHM_DIR
) -> list[Found]:
    """Remove this user's dmxshm objects whose creator is dead.

    Args:
        remove_live: also remove objects whose creator is alive (``--all``).
        dry_run: only report what would be removed.
        shm_dir: where to look.

    Returns:
        the objects removed (or that would be, with ``dry_run``).
    """
    targets = [f for f in scan(shm_dir) if remove_live or not f.creator_alive]
    if not dry_run:
        for f in targets:
            try:
                os.unlink(f.entry.path)
            except FileNotFoundError:
                pass
    return targets

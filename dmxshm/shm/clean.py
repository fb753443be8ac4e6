"""Find and remove dmxshm objects left in /dev/shm by dead processes.

A process killed with SIGKILL cannot unlink what it created (sglang#40723
lost 18 GiB that way). Every name carries its creator's pid, so a sweep can
tell the orphans from the objects of a network that is still running.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from dmxshm.shm.names import SHM_DIR, Entry, list_entries
from dmxshm.shm.peers import pid_alive


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
    alive: dict[int, bool] = {}
    for entry in list_entries(shm_dir):
        try:
            st = os.stat(entry.path)
        except FileNotFoundError:
            continue  # removed while we looked
        if st.st_uid != uid:
            continue
        if entry.pid not in alive:
            alive[entry.pid] = pid_alive(entry.pid)
        found.append(Found(entry=entry, size_bytes=st.st_size, creator_alive=alive[entry.pid]))
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

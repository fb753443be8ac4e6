"""Find and remove dmxshm objects left in /dev/shm by dead processes.

A process killed with SIGKILL cannot unlink what it created (sglang#40723
lost 18 GiB that way). Every name carries its creator's pid, so a sweep can
tell the orphans from the objects of a network that is still running.

That pid is the creator's in its own PID namespace. Containers that share
/dev/shm (one IPC namespace, e.g. ``docker run --ipc=host`` or
``--ipc=container:...``) but not their PID namespace see each other's
objects, yet a pid from the other namespace names nobody here, or somebody
else: the live network over there would look dead. Each token therefore
carries its creator's PID namespace (:mod:`dmxshm.shm.names`), and an object
made in another one is taken as alive, since nothing here can tell: the
start-up sweep of every network never touches it. ``dmxshm clean --all``
(``remove_live``) still removes it, and ``all_namespaces=True`` judges it by
its pid as if it were ours. A name without the namespace (an older token, or
one given by hand) is judged by its pid, as it always was.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil

from dmxshm.shm.names import SHM_DIR, Entry, list_entries, own_pidns
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
        creator_alive: whether the creator pid is a live process; True for an
            object of another PID namespace unless all namespaces are judged
            (nothing here can tell).
        other_namespace: made in another PID namespace than this process's.
    """

    entry: Entry
    size_bytes: int
    creator_alive: bool
    other_namespace: bool = False


def in_other_namespace(entry: Entry) -> bool:
    """Whether ``entry`` was made in a PID namespace other than this process's
    (False when either namespace is unknown: then its pid is all there is)."""
    theirs, ours = entry.pidns, own_pidns()
    return theirs is not None and ours is not None and theirs != ours


def scan(shm_dir: str = SHM_DIR, all_namespaces: bool = False) -> list[Found]:
    """List this user's dmxshm objects with their creator's liveness.

    Args:
        shm_dir: where to look.
        all_namespaces: judge the objects of other PID namespaces by their pid
            too, as if it were one of ours (by default they count as alive).
    """
    uid = os.geteuid()
    found = []
    for entry in list_entries(shm_dir):
        try:
            st = os.stat(entry.path)
        except FileNotFoundError:
            continue  # removed while we looked
        if st.st_uid != uid:
            continue
        other = in_other_namespace(entry)
        alive = True if other and not all_namespaces else creator_alive(entry, st)
        found.append(Found(entry=entry, size_bytes=st.st_size, creator_alive=alive,
                           other_namespace=other))
    return found


def sweep(
    remove_live: bool = False,
    dry_run: bool = False,
    shm_dir: str = SHM_DIR,
    all_namespaces: bool = False,
) -> list[Found]:
    """Remove this user's dmxshm objects whose creator is dead.

    Objects made in another PID namespace are kept (see the module doc):
    every network sweeps at start-up, and must not remove the objects of a
    live network in another container that shares /dev/shm.

    Args:
        remove_live: also remove objects whose creator is alive, and those of
            other PID namespaces (``dmxshm clean --all``).
        dry_run: only report what would be removed.
        shm_dir: where to look.
        all_namespaces: judge the objects of other PID namespaces by their pid
            as if it were ours, and remove those that look dead.

    Returns:
        the objects removed (or that would be, with ``dry_run``).
    """
    targets = [f for f in scan(shm_dir, all_namespaces)
               if remove_live or not f.creator_alive]
    if not dry_run:
        for f in targets:
            try:
                os.unlink(f.entry.path)
            except FileNotFoundError:
                pass
    return targets

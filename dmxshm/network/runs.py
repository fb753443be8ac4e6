"""The networks of this user that are running: what ``dmxshm ps`` lists.

Every network writes what it is (its pid, name, mode, robots, agents, when it
started) into its ``view.meta`` ring as it starts, before any process of it
runs; a run is live while its supervisor's process is. This reads those
rings, never waiting and never writing (the view's way of peeking).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

from dmxshm.errors import RefusedError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
"""A run's ``--name``: 1 to 64 letters, digits, ``_``, ``.`` or ``-``, not starting
with a punctuation mark."""


class NameTakenError(RefusedError):
    """A running network of this user already has that name.

    Attributes:
        pid: that network's supervisor.
    """

    def __init__(self, message: str, *, pid: int) -> None:
        super().__init__(message)
        self.pid = pid


@dataclass(frozen=True)
class SlotInfo:
    """An agent slot of a running network (docs/abi.md) and who holds it now.

    ``held``: a client holds it (its claim's lock is taken). ``holder`` is the pid the
    holding client wrote, once checked to be a process that holds the claim (a client
    can write any number there), else None; ``served``: the network's slot process
    serves it.
    """

    index: int
    robots: tuple[int, ...]
    segment: str
    holder: int | None
    holder_name: str
    served: bool
    held: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "robots": list(self.robots)}


def slot_states(slots: list[dict[str, Any]]) -> tuple[SlotInfo, ...]:
    """Each slot of a run's meta, with its holder now (never takes a lock)."""
    from dmxshm.shm.slot import SlotSegment

    out = []
    for s in slots:
        holder, who, served, held = None, "", False, False
        with contextlib.suppress(Exception):  # a run ending as it is read: a free slot
            seg = SlotSegment.attach(str(s["segment"]))
            try:
                served = seg.served()
                held = seg.held()
                if held:
                    pid, _, who = seg.holder()
                    holder = pid if seg.holds(pid) else None  # never an unchecked pid
            finally:
                seg.close()
        out.append(SlotInfo(index=int(s["index"]), robots=tuple(int(r) for r in s["robots"]),
                            segment=str(s["segment"]), holder=holder, holder_name=who,
                            served=served, held=held))
    return tuple(out)


@dataclass(frozen=True)
class RunInfo:
    """One running network, as its supervisor described it at its start, and its
    agent slots as they are now."""

    pid: int
    name: str | None
    mode: str
    robots: int
    agents: int
    renderers: int
    spine: bool
    camera: tuple[int, int]
    started: float  # wall clock, s since the epoch
    uptime_s: float
    slots: tuple[SlotInfo, ...] = ()
    view: str | None = None  # the live view's address, where the run has one
    spin_us: float = 0.0  # how long the run's waits poll before they sleep
    episodes: bool = False  # --episodes: the slots carry rewards and ends; gym resets
    episode_steps: int = 0

    @property
    def free_slots(self) -> list[SlotInfo]:
        return [s for s in self.slots if not s.held]

    def to_dict(self) -> dict[str, Any]:
        """``dmxshm ps --json``'s row."""
        return {**asdict(self), "camera": list(self.camera),
                "slots": [s.to_dict() for s in self.slots]}


def live_runs() -> list[RunInfo]:
    """This user's running networks, the oldest first."""
    from dmxshm.shm.clean import creator_alive, in_other_namespace
    from dmxshm.shm.names import list_entries
    from dmxshm.shm.ring import Ring
    from dmxshm.view import rings as vr

    found = []
    for e in list_entries():
        if e.kind != "segment" or e.what != vr.META or in_other_namespace(e):
            continue
        try:
            st = os.stat(e.path)
        except OSError:
            continue  # gone as it was listed
        # This user's runs, whose creator lives (a pid reused since is not it).
        if st.st_uid != os.getuid() or not creator_alive(e, st):
            continue
        meta = None
        with contextlib.suppress(Exception):  # a run ending as it is read: not listed
            ring = Ring.attach(e.name)
            try:
                meta = vr.read_meta(ring)
            finally:
                ring.close()
        if meta is None or int(meta.get("pid", -1)) != e.pid:
            continue
        started = float(meta["started"])
        found.append(RunInfo(
            pid=e.pid, name=meta.get("name"), mode=str(meta["mode"]),
            robots=int(meta["robots"]), agents=int(meta.get("agents", 0)),
            renderers=len(meta.get("renderer_robots", [])), spine=bool(meta.get("spine")),
            camera=(int(meta.get("camera", (0, 0))[0]), int(meta.get("camera", (0, 0))[1])),
            started=started, uptime_s=max(time.time() - started, 0.0),
            slots=slot_states(list(meta.get("slots", []))), view=meta.get("view"),
            spin_us=float(meta.get("spin_us", 0.0)),
            episodes=bool(meta.get("episodes", False)),
            episode_steps=int(meta.get("episode_steps", 0))))
    return sorted(found, key=lambda r: r.started)


NAME_LOCK_TIMEOUT_S = 10.0


@contextlib.contextmanager
def names_locked(name: str | None) -> Iterator[None]:
    """Hold the lock under which a named run checks its name and makes its
    ``view.meta``: two runs started at once under one name cannot both pass the
    check. The lock is ``flock`` on /dev/shm itself (every run of the machine
    sees it; the kernel drops it if its holder dies; nothing is left behind), held
    for milliseconds; an unnamed run takes none.

    Raises:
        DmxTimeoutError: somebody held it for ``NAME_LOCK_TIMEOUT_S``.
    """
    if name is None:
        yield
        return
    from dmxshm.errors import DmxTimeoutError
    from dmxshm.shm.names import SHM_DIR

    fd = os.open(SHM_DIR, os.O_RDONLY)
    try:
        deadline = time.monotonic() + NAME_LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise DmxTimeoutError(
                        f"could not take the run-name lock (flock on {SHM_DIR}) within "
                        f"{NAME_LOCK_TIMEOUT_S:g} s: a process holds it") from None
                time.sleep(0.005)
        yield
    finally:
        os.close(fd)  # drops the lock


def check_name(name: str | None) -> None:
    """Refuse a name that another running network of this user has.

    Raises:
        NameTakenError: one has it (the message names its pid).
    """
    if name is None:
        return
    for run in live_runs():
        if run.name == name:
            raise NameTakenError(
                f"a network named {name!r} is running (pid {run.pid}, {run.mode} mode, "
                f"{run.robots} robots, up {run.uptime_s:.0f} s): give another --name, or "
                "stop that run first ('dmxshm ps' lists the running networks)", pid=run.pid)

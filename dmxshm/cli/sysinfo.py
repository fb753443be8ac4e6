"""What this machine offers the simulator (``dmxshm info``)."""

from __future__ import annotations

import os
import platform
import resource
import sys
from dataclasses import asdict, dataclass
from importlib import metadata
from typing import Any

import posix_ipc
import psutil

from dmxshm.shm.clean import scan
from dmxshm.shm.fence import ORDERING_PRIMITIVE
from dmxshm.shm.names import SHM_DIR

PACKAGES = ("dmxshm", "numpy", "pybullet", "posix_ipc", "psutil", "click", "gymnasium")


def realtime_scheduling() -> tuple[bool, str]:
    """Whether this process may use SCHED_FIFO, and why not when it may not.

    Tries SCHED_FIFO at priority 1 on the calling thread and restores the
    previous policy at once.
    """
    if not hasattr(os, "sched_setscheduler"):
        return False, "this OS has no sched_setscheduler"
    policy = os.sched_getscheduler(0)
    param = os.sched_getparam(0)
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except PermissionError:
        soft, _ = resource.getrlimit(resource.RLIMIT_RTPRIO)
        return False, (f"not permitted (RLIMIT_RTPRIO={soft}); grant CAP_SYS_NICE or raise "
                       "rtprio in /etc/security/limits.conf")
    except OSError as exc:
        return False, f"refused: {exc}"
    os.sched_setscheduler(0, policy, param)
    return True, "SCHED_FIFO permitted"


def cpu_pinning() -> tuple[bool, str]:
    """Whether this process may set its CPU affinity."""
    proc = psutil.Process()
    try:
        cpus = proc.cpu_affinity()
        proc.cpu_affinity(cpus)
    except (AttributeError, psutil.Error, OSError) as exc:
        return False, f"not available: {exc}"
    return True, f"permitted; allowed CPUs {cpus}"


def versions() -> dict[str, str | None]:
    """Installed versions of dmxshm and its dependencies (None when missing)."""
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


@dataclass(frozen=True)
class Capability:
    """Whether this process may do something, and the detail (why not, or what it got)."""

    permitted: bool
    detail: str


@dataclass(frozen=True)
class ShmSpace:
    """The shared-memory file system (None: its size could not be read)."""

    path: str
    total_bytes: int | None
    free_bytes: int | None


@dataclass(frozen=True)
class ShmObjects:
    """dmxshm's objects in /dev/shm: how many, how many of dead creators, their size."""

    count: int
    stale: int
    size_bytes: int


@dataclass(frozen=True)
class SystemInfo:
    """What this machine offers the simulator: what ``dmxshm info`` reports.

    Attributes:
        python, platform, machine: the interpreter's version, the OS, the architecture.
        cpus_logical, cpus_physical: cores (None where psutil cannot tell).
        memory_bytes: physical memory.
        shm: the size and free space of /dev/shm.
        realtime_scheduling: whether SCHED_FIFO is permitted (:func:`realtime_scheduling`).
        cpu_pinning: whether CPU affinity may be set (:func:`cpu_pinning`).
        semaphore_timeout_supported, semaphore_value_supported: posix_ipc's capability flags.
        memory_ordering: the primitive that orders a ring's stores (:mod:`dmxshm.shm.fence`).
        dmxshm_objects: dmxshm's objects present in /dev/shm.
        versions: dmxshm's and its dependencies' versions (None: not installed).
    """

    python: str
    platform: str
    machine: str
    cpus_logical: int | None
    cpus_physical: int | None
    memory_bytes: int
    shm: ShmSpace
    realtime_scheduling: Capability
    cpu_pinning: Capability
    semaphore_timeout_supported: bool
    semaphore_value_supported: bool
    memory_ordering: str
    dmxshm_objects: ShmObjects
    versions: dict[str, str | None]

    def to_dict(self) -> dict[str, Any]:
        """``dmxshm info --json``."""
        out = asdict(self)
        objects = out["dmxshm_objects"]
        objects["bytes"] = objects.pop("size_bytes")
        return out


def collect() -> SystemInfo:
    """Everything ``dmxshm info`` reports."""
    try:
        usage = psutil.disk_usage(SHM_DIR)
        shm = ShmSpace(SHM_DIR, usage.total, usage.free)
    except OSError:
        shm = ShmSpace(SHM_DIR, None, None)
    found = scan()
    return SystemInfo(
        python=sys.version.split()[0],
        platform=platform.platform(),
        machine=platform.machine(),
        cpus_logical=psutil.cpu_count(logical=True),
        cpus_physical=psutil.cpu_count(logical=False),
        memory_bytes=psutil.virtual_memory().total,
        shm=shm,
        realtime_scheduling=Capability(*realtime_scheduling()),
        cpu_pinning=Capability(*cpu_pinning()),
        semaphore_timeout_supported=bool(posix_ipc.SEMAPHORE_TIMEOUT_SUPPORTED),
        semaphore_value_supported=bool(posix_ipc.SEMAPHORE_VALUE_SUPPORTED),
        memory_ordering=ORDERING_PRIMITIVE,
        dmxshm_objects=ShmObjects(count=len(found),
                                  stale=sum(not f.creator_alive for f in found),
                                  size_bytes=sum(f.size_bytes for f in found)),
        versions=versions(),
    )

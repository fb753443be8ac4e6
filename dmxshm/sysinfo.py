"""What this machine offers the simulator (``dmxshm info``)."""

from __future__ import annotations

import os
import platform
import resource
import sys
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


def collect() -> dict[str, Any]:
    """Everything ``dmxshm info`` reports, as a JSON-ready dict."""
    try:
        usage = psutil.disk_usage(SHM_DIR)
        shm = {"path": SHM_DIR, "total_bytes": usage.total, "free_bytes": usage.free}
    except OSError:
        shm = {"path": SHM_DIR, "total_bytes": None, "free_bytes": None}
    rt_ok, rt_why = realtime_scheduling()
    pin_ok, pin_why = cpu_pinning()
    found = scan()
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus_logical": psutil.cpu_count(logical=True),
        "cpus_physical": psutil.cpu_count(logical=False),
        "memory_bytes": psutil.virtual_memory().total,
        "shm": shm,
        "realtime_scheduling": {"permitted": rt_ok, "detail": rt_why},
        "cpu_pinning": {"permitted": pin_ok, "detail": pin_why},
        "semaphore_timeout_supported": bool(posix_ipc.SEMAPHORE_TIMEOUT_SUPPORTED),
        "semaphore_value_supported": bool(posix_ipc.SEMAPHORE_VALUE_SUPPORTED),
        "memory_ordering": ORDERING_PRIMITIVE,
        "dmxshm_objects": {
            "count": len(found),
            "stale": sum(not f.creator_alive for f in found),
            "bytes": sum(f.size_bytes for f in found),
        },
        "versions": versions(),
    }

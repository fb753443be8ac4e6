"""``dmxshm info``'s result is typed (:class:`~dmxshm.cli.sysinfo.SystemInfo`); its JSON
keeps the names it has always had."""

from __future__ import annotations

import json
import os

import pytest

from dmxshm.cli import print_bench
from dmxshm.cli.sysinfo import Capability, ShmObjects, ShmSpace, SystemInfo, collect

KEYS = ["python", "platform", "machine", "cpus_logical", "cpus_physical", "memory_bytes", "shm",
        "realtime_scheduling", "cpu_pinning", "semaphore_timeout_supported",
        "semaphore_value_supported", "memory_ordering", "dmxshm_objects", "versions"]

INFO = SystemInfo(
    python="3.11.7", platform="Linux-6", machine="x86_64", cpus_logical=4, cpus_physical=2,
    memory_bytes=8 << 30, shm=ShmSpace("/dev/shm", 4 << 30, 3 << 30),
    realtime_scheduling=Capability(False, "not permitted (RLIMIT_RTPRIO=0)"),
    cpu_pinning=Capability(True, "permitted; allowed CPUs [0, 1, 2, 3]"),
    semaphore_timeout_supported=True, semaphore_value_supported=False,
    memory_ordering="x86-64 TSO", dmxshm_objects=ShmObjects(count=3, stale=1, size_bytes=2048),
    versions={"dmxshm": "0.1.0", "pybullet": None})


def test_collect_reports_this_machine_in_typed_fields() -> None:
    info = collect()
    assert info.cpus_logical == os.cpu_count()
    assert info.shm.free_bytes is not None and info.shm.total_bytes is not None
    assert 0 < info.shm.free_bytes <= info.shm.total_bytes
    assert isinstance(info.realtime_scheduling.permitted, bool) and info.realtime_scheduling.detail
    assert info.dmxshm_objects.stale <= info.dmxshm_objects.count
    assert info.versions["numpy"]


def test_to_dict_keeps_the_json_names() -> None:
    d = INFO.to_dict()
    assert list(d) == KEYS
    assert d["shm"] == {"path": "/dev/shm", "total_bytes": 4 << 30, "free_bytes": 3 << 30}
    assert d["realtime_scheduling"] == {"permitted": False,
                                        "detail": "not permitted (RLIMIT_RTPRIO=0)"}
    assert d["dmxshm_objects"] == {"count": 3, "stale": 1, "bytes": 2048}
    assert d["versions"] == {"dmxshm": "0.1.0", "pybullet": None}
    assert json.loads(json.dumps(d)) == d
    assert list(collect().to_dict()) == KEYS


def test_info_prints_the_typed_fields(capsys: pytest.CaptureFixture[str]) -> None:
    print_bench.print_info(INFO)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "python                3.11.7 on Linux-6"
    assert "real-time scheduling  no: not permitted (RLIMIT_RTPRIO=0)" in lines
    assert "/dev/shm              3.0 GiB free of 4.0 GiB" in lines
    assert ("dmxshm objects        3 (1 stale, 2.0 KiB); 'dmxshm clean' removes stale ones"
            in lines)
    assert lines[-1] == "  pybullet            not installed"

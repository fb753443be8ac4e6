"""Profiling: the psutil sampler, a profiled run, pinning, the profile command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from dmxshm.cli import cli
from dmxshm.network import ConfigError, Network, NetworkConfig
from dmxshm.proc.cpus import auto_pins, usable_cpus
from dmxshm.profiling import Profiler
from dmxshm.shm.names import list_entries

RUN_TIMEOUT_S = 120
CORES = os.cpu_count() or 1
PROCESS_KEYS = ("role", "pid", "affinity", "cpu_percent_mean", "cpu_percent_peak",
                "rss_bytes_peak", "uss_bytes", "ctx_switches_involuntary")


@pytest.mark.timeout(30)
def test_the_sampler_sees_a_busy_and_an_idle_process_and_one_that_ends() -> None:
    busy = subprocess.Popen([sys.executable, "-c", "import time\nt=time.time()\n"
                             "while time.time() - t < 20: pass"])
    idle = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)
    try:
        prof = Profiler({"busy": busy.pid, "idle": idle.pid}, interval_s=0.0)
        for _ in range(3):
            prof.sample()
            time.sleep(0.3)  # CPU time accrues between samples
        idle.communicate(b"", timeout=10)  # the idle one ends
        prof.sample(full=True)
        rows = {p.role: p for p in prof.processes()}
    finally:
        busy.kill()
        busy.wait()
    assert rows["busy"].pid == busy.pid and rows["idle"].pid == idle.pid
    # An ordering, not a share of a shared machine's cores: the busy loop used
    # more CPU than the sleeper, and no process more than all the cores.
    assert rows["idle"].cpu_percent_mean < rows["busy"].cpu_percent_mean
    assert rows["busy"].cpu_percent_mean <= 100 * CORES + 10
    for row in rows.values():
        assert row.rss_bytes_peak > 0 and row.affinity
        assert row.uss_bytes is None or row.uss_bytes > 0
    assert prof.live_rows()[1]["ended"]
    assert 0 < prof.sampler_cpu_fraction < 1  # its cost is docs/profiling.md's figure


def test_auto_pins_keep_the_last_cpu_for_the_spine() -> None:
    roles = ["engine", "renderer-0", "renderer-1", "agent-0", "spine"]
    pins = auto_pins(roles, spine=True, cpus=[0, 1, 2])
    assert pins["spine"] == 2 and all(pins[r] in (0, 1) for r in roles[:-1])
    assert auto_pins(roles[:-1], cpus=[4])["agent-0"] == 4  # one CPU: everything on it
    assert set(auto_pins(roles[:-1], cpus=[0, 1, 2, 3]).values()) == {0, 1, 2, 3}


def test_bad_pins_are_refused() -> None:
    with pytest.raises(ConfigError, match="'auto'"):
        NetworkConfig(pin="everywhere")
    with pytest.raises(ConfigError, match="CPU 4096"):
        NetworkConfig(pin={"engine": 4096})
    with pytest.raises(ConfigError, match="spine"):
        NetworkConfig(pin={"spine": 0})
    with pytest.raises(ConfigError, match="'auto'"):
        NetworkConfig(pin=None)  # type: ignore[arg-type]


def test_an_auto_plan_follows_the_roles_of_a_replaced_config() -> None:
    import dataclasses

    two = NetworkConfig(robots=2, renderers=2, pin="auto")
    one = dataclasses.replace(two, renderers=1)
    assert one.pin == "auto" and set(one.pins) == {"engine", "renderer-0", "agent-0"}


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_profiled_run_shows_every_process_where_it_was_pinned(tmp_path) -> None:  # noqa: ANN001
    cpus = usable_cpus()
    config = NetworkConfig(robots=2, renderers=2, steps=60, camera=(32, 24), profile=True,
                           profile_interval_s=0.05, pin="auto")
    with Network(config) as net:
        pids = net.supervisor.pids()
        summary = net.run()
    data = summary.to_dict()
    rows = {p["role"]: p for p in data["processes"]}
    assert set(rows) == {"supervisor", "engine", "renderer-0", "renderer-1", "agent-0"}
    assert rows["supervisor"]["pid"] == os.getpid()
    for role, pid in pids.items():
        row = rows[role]
        assert row["pid"] == pid
        for key in PROCESS_KEYS:
            assert key in row
        assert row["affinity"] == [config.pins[role]] and row["affinity"][0] in cpus
        assert row["stayed_in_affinity"] and set(row["cores_seen"]) <= set(row["affinity"])
        assert 0 <= row["cpu_percent_mean"] <= row["cpu_percent_peak"] <= 100 * CORES + 10
        assert row["rss_bytes_peak"] > 0 and row["uss_bytes"] > 0, row
        assert row["ctx_switches_voluntary"] + row["ctx_switches_involuntary"] > 0
    assert data["shm_bytes"] > 0 and data["profile"]["shm_bytes"] == data["shm_bytes"]
    assert data["profile"]["samples"] >= 2
    assert set(data["profile"]["timeline"]) == set(rows)
    assert not [e for e in list_entries() if e.pid == os.getpid()]
    # The profile command reads it back and draws it.
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(cli, ["profile", str(path), "--plot", str(tmp_path / "p.png")])
    assert result.exit_code == 0, result.output
    assert "renderer-1" in result.output and "of one core" in result.output
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_profile_command_explains_a_file_without_a_profile(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "plain.json"
    path.write_text(json.dumps({"mode": "gym", "processes": []}))
    result = CliRunner().invoke(cli, ["profile", str(path)])
    assert result.exit_code == 2 and "--profile" in result.output


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_batch_profiles_its_workers() -> None:
    import numpy as np

    import dmxshm
    from dmxshm.errors import DmxError

    envs = dmxshm.make_vec(4, num_workers=2, seed=0, profile=True, profile_interval_s=0.05)
    try:
        pids = {f"worker-{w}": child.pid for w, child in enumerate(envs._workers)}
        envs.reset()
        actions = np.zeros((4, 2), np.float32)
        while envs.profile().samples < 6:
            envs.step(actions)
        live = envs.profile()
    finally:
        envs.close()
    rows = {p.role: p for p in live.processes}
    assert set(rows) == {"parent", "worker-0", "worker-1"}
    assert rows["parent"].pid == os.getpid()
    for role, pid in pids.items():
        assert rows[role].pid == pid
        assert 0 < rows[role].cpu_percent_mean <= 100 * CORES + 10
        assert rows[role].rss_bytes_peak > 0
    assert live.shm_bytes > 0
    assert live.to_dict()["processes"][0]["role"] == live.processes[0].role  # JSON rows
    after = envs.profile()  # still readable after close, and no longer sampling
    assert after.samples >= live.samples
    assert envs.profile().samples == after.samples
    plain = dmxshm.make_vec(2, num_workers=1)
    try:
        with pytest.raises(DmxError, match="profile=True"):
            plain.profile()
    finally:
        plain.close()
    assert not [e for e in list_entries() if e.pid == os.getpid()]


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_profiled_spine_shows_its_bus_and_itself_on_their_cpus() -> None:
    from dmxshm.spine.run import SpineConfig, run

    report, _ = run(SpineConfig(duration_s=0.6, frequency_hz=500.0), profile_interval_s=0.1)
    assert report.processes is not None and report.profile is not None
    rows = {p.role: p for p in report.processes}
    assert set(rows) == {"supervisor", "can-bus", "spine"}
    assert rows["spine"].affinity == [report.figures.cpu]
    assert rows["spine"].stayed_in_affinity
    assert report.shm_bytes > 0 and report.profile.samples >= 2


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_run_profile_prints_the_processes_and_writes_them(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "run.json"
    result = CliRunner().invoke(cli, ["run", "--steps", "40", "--camera", "32x24", "--profile",
                                      "--profile-interval", "0.1", "--json", str(path)])
    assert result.exit_code == 0, result.output
    for words in ("supervisor", "engine", "renderer-0", "agent-0", "of one core"):
        assert words in result.output
    data = json.loads(path.read_text())
    assert {p["role"] for p in data["processes"]} >= {"engine", "renderer-0", "agent-0"}
    assert data["shm_bytes"] > 0

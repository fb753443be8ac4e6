"""``dmxshm bench``: ipc, render, network and vector, their outputs and refusals."""

from __future__ import annotations

import json
import os
import sys

import pytest
from click.testing import CliRunner

from dmxshm.cli import EXIT_TARGET_MISSED, cli
from dmxshm.shm.names import list_entries
from tests.cli.common import CLI_TIMEOUT_S, refused

pytestmark = pytest.mark.timeout(CLI_TIMEOUT_S)


@pytest.mark.slow
def test_bench_ipc_writes_rows(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "ipc.json"
    result = CliRunner().invoke(
        cli, ["bench", "ipc", "--rounds", "50", "--repeats", "1", "--json", str(path)])
    assert result.exit_code == 0, result.output
    rows = json.loads(path.read_text())
    kinds = {(r["transport"], r["payload_bytes"], r["pinning"]) for r in rows}
    for transport in ("semaphore", "ring", "pipe", "queue"):
        assert (transport, 8, "same") in kinds
        assert (transport, 160 * 120 * 3, "same") in kinds
    assert all(r["rtt_us_median"] > 0 and r["rounds"] == 50 for r in rows)
    # the tails, where a shared machine's stalls show
    assert all(r["rtt_us_p10"] <= r["rtt_us_median"] <= r["rtt_us_p90"] <= r["rtt_us_p99"]
               <= r["rtt_us_max"] for r in rows)
    assert "x semaphore" in result.output
    assert "target" not in result.output  # the project's targets only with --check


def test_bench_ipc_quick_and_full_take_their_rounds_from_the_library(monkeypatch) -> None:  # noqa: ANN001
    from dmxshm.bench import ipc
    from dmxshm.cli.bench import IPC_QUICK
    from dmxshm.cli.options import arg_default

    full = {k: arg_default(ipc.run, k) for k in IPC_QUICK}
    assert full != IPC_QUICK
    asked: list[dict[str, int]] = []

    def fake_run(rounds: int, repeats: int, warmup: int, progress: object) -> list:
        asked.append({"rounds": rounds, "repeats": repeats, "warmup": warmup})
        return []

    monkeypatch.setattr(ipc, "run", fake_run)
    monkeypatch.setattr(ipc, "targets", lambda rows: [])
    monkeypatch.setattr("dmxshm.cli.print_bench.print_ipc_table", lambda rows: None)
    runner = CliRunner()
    assert runner.invoke(cli, ["bench", "ipc", "--quick"]).exit_code == 0
    assert runner.invoke(cli, ["bench", "ipc"]).exit_code == 0
    assert runner.invoke(cli, ["bench", "ipc", "--quick", "--rounds", "77"]).exit_code == 0
    assert asked[0] == IPC_QUICK and asked[1] == full
    assert asked[2] == {**IPC_QUICK, "rounds": 77}


@pytest.mark.slow
def test_bench_check_prints_the_targets_and_exits_3_on_a_miss(monkeypatch) -> None:  # noqa: ANN001
    from dmxshm.bench import ipc

    monkeypatch.setattr(ipc, "targets", lambda rows: [("a figure >= 2", 1.0, False)])
    result = CliRunner().invoke(cli, ["bench", "ipc", "--rounds", "20", "--repeats", "1",
                                      "--check"])
    assert result.exit_code == EXIT_TARGET_MISSED
    assert "target a figure >= 2: 1.00 MISSED" in result.output


@pytest.mark.parametrize("physics", ["bullet", "db18"])
def test_bench_network_rows_add_up_to_the_step(physics: str) -> None:
    from dmxshm.bench import network

    (row,) = network.as_dicts(network.run(quick=True, configs=[(1, (0, 0))], physics=physics))
    assert row["robots"] == 1 and row["camera"] == "none"
    assert row["physics"] == physics  # (as the run's summary reports it)
    assert row["steps_per_s"] > 0 and row["floor_us"] > 0
    # The step's parts: its work, and the framework's overhead that completes it.
    step_us = 1e6 / row["steps_per_s"]
    assert row["physics_us"] + row["rendering_us"] + row["agents_us"] + row["overhead_us"] \
        == pytest.approx(step_us, rel=1e-6)
    assert row["overhead_fraction"] == pytest.approx(row["overhead_us"] / step_us, rel=1e-6)
    assert 0 <= row["overhead_fraction"] < 1
    # Each process's own work per step, which the idle time completes to the step.
    assert set(row["busy_us"]) == {"engine", "renderer-0", "agent-0"}
    assert all(0 <= busy < step_us for busy in row["busy_us"].values())
    # The engine's work holds its physics. Under Bullet the physics is most of it; under
    # DB18 (25-35 us) the engine's fixed work per step (reading commands, writing states,
    # 10-25 us) is of the same size, so only the lower bound holds there.
    assert row["busy_us"]["engine"] >= 0.5 * row["physics_us"]
    if physics == "bullet":
        assert row["busy_us"]["engine"] == pytest.approx(row["physics_us"], rel=0.5)


@pytest.mark.slow
def test_bench_vector_measures_every_peer_and_draws_them(tmp_path) -> None:  # noqa: ANN001
    from dmxshm.bench import vector
    from dmxshm.bench.plot import plot_vector

    rows = vector.run(num_envs=(2,), configs=(("state", (160, 120)),), seconds=0.3)
    dicts = vector.as_dicts(rows)
    assert [d["impl"] for d in dicts] == ["single", "dmxshm", "dmx-recv", "free", "sync", "async"]
    assert all(d["env_steps_per_s"] > 0 and d["obs"] == "state" for d in dicts)
    assert [d["num_envs"] for d in dicts] == [1, 2, 2, 2, 2, 2]
    w = min(2, os.cpu_count() or 1)
    assert [d["num_workers"] for d in dicts] == [1, w, w, w, 1, 2]
    # the caller's CPU per env-step where a caller hands the steps off (and only there)
    cpu = {d["impl"]: d["caller_cpu_us"] for d in dicts}
    assert [k for k, v in cpu.items() if v is None] == ["single", "free", "sync"]
    assert all(0 < cpu[k] < 1e5 for k in ("dmxshm", "dmx-recv", "async"))
    (s,) = vector.summary(rows)
    assert s["num_envs"] == 2 and s["vs_async"] > 0 and s["scaling_efficiency"] > 0
    assert s["vs_free"] > 0 and s["recv_vs_free"] > 0 and s["recv_vs_async"] > 0
    assert vector.targets(rows) == []  # set for 16 envs only
    plot_vector(rows, str(tmp_path / "v.png"))
    assert (tmp_path / "v.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [e for e in list_entries() if e.pid == os.getpid()] == []


def test_bench_vector_sweeps_workers_and_splits_each_step(tmp_path) -> None:  # noqa: ANN001
    from dmxshm.bench import vector
    from dmxshm.bench.plot import plot_scaling

    rows = vector.run(num_envs=(2,), workers=(1, 2), configs=(("state", (160, 120)),),
                      impls=("dmxshm",), seconds=0.2)
    mine = [r for r in rows if r.impl == "dmxshm"]
    assert [r.num_workers for r in mine] == [1, 2]
    for r in mine:
        b = r.breakdown
        assert b is not None and b["steps"] > 0 and len(b["busy_us"]) == r.num_workers
        assert b["handoff_out_us"] + b["span_us"] + b["handoff_back_us"] == \
            pytest.approx(b["step_us"])
    (s,) = vector.summary(rows)  # beside its peers: the run with one worker per core
    best = 2 if (os.cpu_count() or 1) >= 2 else 1
    assert s["scaling_efficiency"] == pytest.approx(
        next(r.env_steps_per_s for r in mine if r.num_workers == best)
        / ((os.cpu_count() or 1) * rows[0].env_steps_per_s))
    plot_scaling(rows, str(tmp_path / "s.png"))
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"


def test_bench_vector_refuses_an_unknown_observation() -> None:
    result = CliRunner().invoke(cli, ["bench", "vector", "--obs", "lidar"])
    assert result.exit_code == 2 and "lidar" in result.output


def test_bench_vector_summary_keeps_each_size_apart() -> None:
    from dmxshm.bench.vector import Row, summary

    rows = [Row("single", "state", "-", 1, 1, 100.0, 1)]
    for n, rate in ((1, 50.0), (16, 300.0)):
        rows += [Row("dmxshm", "state", "-", n, 2, rate, 1),
                 Row("async", "state", "-", n, n, rate / 2, 1)]
    by_n = {s["num_envs"]: s for s in summary(rows)}
    assert by_n[1]["vs_async"] == by_n[16]["vs_async"] == 2.0
    assert by_n[16]["scaling_efficiency"] == 300.0 / ((os.cpu_count() or 1) * 100.0)
    assert by_n[1]["scaling_efficiency"] == 50.0 / ((os.cpu_count() or 1) * 100.0)


@pytest.mark.parametrize("argv", [
    ["spine", "--duration", "0.1", "--plot", "PLOT"],
    ["bench", "ipc", "--quick", "--plot", "PLOT"],
    ["bench", "network", "--quick", "--plot", "PLOT"],
    ["bench", "vector", "--quick", "--plot", "PLOT"],
])
def test_a_plot_without_matplotlib_is_refused_before_the_work(
        argv: list[str], tmp_path, monkeypatch, capsys) -> None:  # noqa: ANN001
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    argv = [str(tmp_path / "p.png") if a == "PLOT" else a for a in argv]
    assert "matplotlib" in refused(argv, capsys)
    assert not (tmp_path / "p.png").exists()


def test_folders_that_cannot_be_used_are_refused_before_the_work(tmp_path, capsys) -> None:  # noqa: ANN001
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("mine")
    assert "--render" in refused(["maps", "--render", str(in_the_way)], capsys)
    err = refused(["bench", "render", "--frames", "1", "--images", str(in_the_way / "x")],
                  capsys)
    assert "--images" in err and "bench render" not in err.split("Error: ")[1]
    assert in_the_way.read_text() == "mine"


def _vector_rows(single: float, free: float) -> list:
    """A bench vector run of state at 16 envs: dmxshm 1000 env-steps/s, recv() 900."""
    from dmxshm.bench.vector import Row

    cores = os.cpu_count() or 1
    w = min(cores, 16)
    return [Row("single", "state", "-", 1, 1, single, 100),
            Row("dmxshm", "state", "-", 16, w, 1000.0, 100),
            Row("dmx-recv", "state", "-", 16, w, 900.0, 100),
            Row("free", "state", "-", 16, w, free, 100)]


def test_bench_vector_refuses_a_ratio_that_cannot_be_and_measures_its_reference_again(
        monkeypatch) -> None:  # noqa: ANN001
    from dmxshm.bench import vector

    cores = os.cpu_count() or 1
    # A single env measured in a slow window: efficiency 2.31 (it cannot exceed 1).
    slow = _vector_rows(single=1000.0 / (2.31 * cores), free=800.0)
    misses = [(name, value) for name, value, ok in vector.targets(slow) if not ok]
    assert any("scaling_efficiency 2.31 cannot be above 1" in n for n, _ in misses)
    assert any("recv_vs_free 1.12 cannot be above 1" in n for n, _ in misses)
    assert not any(ok for name, _, ok in vector.targets(slow) if "efficiency >=" in name)
    # Measured again in a good window, the references make the figures possible.
    again: list[str] = []
    monkeypatch.setattr(vector, "_time_single", lambda *a: (
        again.append("single") or vector.Timed(1000.0 / (0.9 * cores), 100, 0.1)))
    monkeypatch.setattr(vector, "_time_free", lambda *a: (again.append("free") or (920.0, 100)))
    fixed = vector.measure_again(slow, 0.1)
    assert sorted(again) == ["free", "single"]
    assert vector.targets(fixed) == [t for t in vector.targets(fixed) if t[2]]  # all reached
    (s,) = vector.summary(fixed)
    assert s["scaling_efficiency"] == pytest.approx(0.9) and s["recv_vs_free"] < 1

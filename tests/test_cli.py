"""The installed ``dmxshm`` command: help, info, clean, bench ipc."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from dmxshm.cli import EXIT_ERROR, EXIT_USAGE, cli, main
from dmxshm.errors import DmxError
from dmxshm.shm.clean import sweep
from dmxshm.shm.names import list_entries
from dmxshm.shm.registry import Registry
from tests.procs import JOIN_TIMEOUT_S

CLI_TIMEOUT_S = 120


def test_console_script_is_installed() -> None:
    out = subprocess.run([sys.executable, "-m", "dmxshm.cli", "--help"], capture_output=True,
                         text=True, timeout=CLI_TIMEOUT_S, check=True)
    for command in ("info", "clean", "bench"):
        assert command in out.stdout


def test_info_json_reports_the_machine() -> None:
    result = CliRunner().invoke(cli, ["info", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["cpus_logical"] >= 1
    assert data["shm"]["free_bytes"] > 0
    assert isinstance(data["realtime_scheduling"]["permitted"], bool)
    assert data["versions"]["numpy"]


def test_info_text() -> None:
    result = CliRunner().invoke(cli, ["info"])
    assert result.exit_code == 0
    assert "/dev/shm" in result.output and "real-time scheduling" in result.output


def _orphan_segment() -> str:
    """Create a segment named after a dead pid, as a SIGKILLed run leaves it."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(JOIN_TIMEOUT_S)
    name = f"/dmx-{child.pid}-0badcafe-orphan"
    fd = os.open(f"/dev/shm{name}", os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    os.ftruncate(fd, 4096)
    os.close(fd)
    return name


def test_clean_removes_orphans_and_keeps_live_objects(registry: Registry) -> None:
    orphan = _orphan_segment()
    live = registry.create_segment("live", 4096)
    runner = CliRunner()
    dry = runner.invoke(cli, ["clean", "--dry-run"])
    assert dry.exit_code == 0
    assert orphan in dry.output and "would remove" in dry.output
    assert orphan in {e.name for e in list_entries()}
    done = runner.invoke(cli, ["clean"])
    assert done.exit_code == 0
    names = {e.name for e in list_entries()}
    assert orphan not in names
    assert live.name in names
    live.close()


def test_sweep_all_removes_live_objects_too(tmp_path) -> None:  # noqa: ANN001
    # In a private directory: `dmxshm clean --all` on the real /dev/shm would
    # also remove the objects of anything else running on this machine.
    live = tmp_path / f"dmx-{os.getpid()}-0badcafe-live"
    sem = tmp_path / f"sem.dmx-{os.getpid()}-0badcafe-live.free"
    other = tmp_path / "not-ours"
    for f in (live, sem, other):
        f.write_bytes(b"x")
    assert sweep(shm_dir=str(tmp_path)) == []  # creator alive: kept by default
    removed = sweep(remove_live=True, shm_dir=str(tmp_path))
    assert {f.entry.kind for f in removed} == {"segment", "semaphore"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-ours"]


def test_dmx_error_becomes_a_message_and_exit_code(monkeypatch, capsys) -> None:  # noqa: ANN001
    import dmxshm.sysinfo

    def boom() -> dict:
        raise DmxError("something clear went wrong")

    monkeypatch.setattr(dmxshm.sysinfo, "collect", boom)
    with pytest.raises(SystemExit) as exc:
        main(["info"])
    assert exc.value.code == EXIT_ERROR
    assert "something clear went wrong" in capsys.readouterr().err


def test_bad_option_value_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["bench", "ipc", "--rounds", "-5"])
    assert result.exit_code == 2
    assert "--rounds" in result.output


@pytest.mark.timeout(CLI_TIMEOUT_S)
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
    assert all(r["rtt_us_median"] > 0 for r in rows)
    assert "x semaphore" in result.output
    assert "target" not in result.output  # the project's targets only with --check


@pytest.mark.timeout(CLI_TIMEOUT_S)
def test_bench_check_prints_the_targets_and_exits_3_on_a_miss(monkeypatch) -> None:  # noqa: ANN001
    from dmxshm.bench import ipc
    from dmxshm.cli import EXIT_TARGET_MISSED

    monkeypatch.setattr(ipc, "targets", lambda rows: [("a figure >= 2", 1.0, False)])
    result = CliRunner().invoke(cli, ["bench", "ipc", "--rounds", "20", "--repeats", "1",
                                      "--check"])
    assert result.exit_code == EXIT_TARGET_MISSED
    assert "target a figure >= 2: 1.00 MISSED" in result.output


def test_sweep_treats_an_object_older_than_its_pid_as_orphaned(tmp_path) -> None:  # noqa: ANN001
    # Our pid is alive, but this object was last changed long before we
    # started: its real creator is gone and the pid was reused.
    old = tmp_path / f"dmx-{os.getpid()}-0badcafe-old"
    old.write_bytes(b"x")
    os.utime(old, (0, 0))
    assert [f.entry.name for f in sweep(shm_dir=str(tmp_path))] == [f"/{old.name}"]
    assert not old.exists()


SIGTERM_SCRIPT = """
import sys
from dmxshm.cli import main
main(["bench", "ipc", "--rounds", "1000000", "--repeats", "1"])
"""


@pytest.mark.timeout(CLI_TIMEOUT_S)
def test_sigterm_unlinks_everything(tmp_path) -> None:  # noqa: ANN001
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-c", SIGTERM_SCRIPT], cwd=os.getcwd(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        while not [e for e in list_entries() if e.pid == proc.pid]:  # wait for its objects
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(JOIN_TIMEOUT_S) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert [e for e in list_entries() if e.pid == proc.pid] == []


@pytest.mark.timeout(CLI_TIMEOUT_S)
def test_bench_network_rows_have_the_documented_keys() -> None:
    from dmxshm.bench import network

    (row,) = network.as_dicts(network.run(quick=True, configs=[(1, (0, 0))]))
    for key in ("robots", "camera", "steps_per_s", "overhead_fraction", "overhead_us",
                "floor_us"):
        assert key in row
    assert row["robots"] == 1 and row["camera"] == "none"
    assert row["steps_per_s"] > 0 and row["floor_us"] > 0
    assert 0 <= row["overhead_fraction"] < 1
    # Each process's own work per step, which the idle time completes to the step.
    assert set(row["busy_us"]) == {"engine", "renderer-0", "agent-0"}
    step_us = 1e6 / row["steps_per_s"]
    assert all(0 <= busy < step_us for busy in row["busy_us"].values())
    assert row["busy_us"]["engine"] == pytest.approx(row["physics_us"], rel=0.5)


@pytest.mark.timeout(CLI_TIMEOUT_S)
def test_run_command_prints_a_summary_and_writes_json(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "run.json"
    result = CliRunner().invoke(cli, ["run", "--steps", "20", "--camera", "32x24",
                                      "--record", str(tmp_path / "rec"), "--json", str(path)])
    assert result.exit_code == 0, result.output
    data = json.loads(path.read_text())
    for key in ("mode", "steps", "sim_time_s", "wall_time_s", "steps_per_s", "final_poses",
                "trajectory_digest", "sensors", "drops", "timing"):
        assert key in data
    assert data["steps"] == 20 and len(data["final_poses"]) == 2
    assert (tmp_path / "rec" / "contact_sheet.png").read_bytes()[:4] == b"\x89PNG"
    assert "steps/s" in result.output and "trajectory digest" in result.output
    # How each robot drove, and what makes the run reproducible, without opening the JSON.
    table = result.output[result.output.index("worst offset m"):].splitlines()
    assert [line.split()[0] for line in table[1:3]] == ["0", "1"]
    assert float(table[1].split()[1]) == pytest.approx(data["lane"]["distance_m"][0], abs=0.01)
    assert f"seed 0, map loop; trajectory digest {data['trajectory_digest']}" in result.output
    assert data["seed"] == 0 and data["map"] == "loop"


def test_record_refuses_a_camera_off_and_an_earlier_runs_frames(tmp_path, capsys) -> None:  # noqa: ANN001
    from dmxshm.network import ConfigError, NetworkConfig

    rec = tmp_path / "rec"
    with pytest.raises(SystemExit) as exc:
        main(["run", "--steps", "5", "--camera", "0x0", "--record", str(rec)])
    assert exc.value.code == EXIT_USAGE and "turns the camera off" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="turns the camera off"):  # from Python too
        NetworkConfig(camera=(0, 0), record_dir=str(rec))
    rec.mkdir()
    (rec / "robot00_step000000.png").write_bytes(b"old")
    (rec / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit) as exc:
        main(["run", "--steps", "5", "--camera", "32x24", "--record", str(rec)])
    assert exc.value.code == EXIT_USAGE and "earlier run" in capsys.readouterr().err
    result = CliRunner().invoke(cli, ["run", "--steps", "20", "--camera", "32x24", "--record",
                                      str(rec), "--overwrite"])
    assert result.exit_code == 0, result.output
    assert (rec / "robot00_step000000.png").read_bytes()[:4] == b"\x89PNG"  # the new frame
    assert (rec / "notes.txt").read_text() == "mine"  # only frames are removed


def test_a_run_whose_robots_never_moved_fails_after_its_summary(tmp_path) -> None:  # noqa: ANN001
    from dmxshm.network import CommandsRejectedError

    path = tmp_path / "run.json"
    result = CliRunner().invoke(cli, ["run", "--steps", "10", "--camera", "0x0", "--agent",
                                      "tests.agents:nan_wheels", "--json", str(path)])
    assert isinstance(result.exception, CommandsRejectedError) and result.exit_code == 1
    assert "trajectory digest" in result.output  # the summary came first...
    assert json.loads(path.read_text())["rejected_commands"] == [10, 10]  # ...and the JSON


@pytest.mark.parametrize("args, words", [
    (["--robots", "0"], "robots"),
    (["--camera", "100000x100000"], "larger than"),
    (["--camera", "big"], "WIDTHxHEIGHT"),
    (["--map", "no-such-map"], "no-such-map"),
    (["--pin", "engine=9999"], "CPU 9999"),
    (["--mode", "realtime", "--rates", "lidar=10"], "unknown sensor"),
    (["--mode", "realtime", "--rates", "imu=-5"], "positive"),
    (["--rates", "imu"], "SENSOR=HZ"),
])
def test_run_refuses_impossible_values_clearly(args: list[str], words: str, capsys) -> None:  # noqa: ANN001
    with pytest.raises(SystemExit) as exc:
        main(["run", *args])
    assert exc.value.code == EXIT_USAGE  # one rule: what cannot run is a usage error
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_an_exported_option_of_the_other_mode_is_noted_not_refused(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("DMXSHM_RUN_DURATION_S", "60")
    result = CliRunner().invoke(cli, ["run", "--steps", "5", "--camera", "0x0"],
                                auto_envvar_prefix="DMXSHM")
    assert result.exit_code == 0, result.output
    assert "DMXSHM_RUN_DURATION_S has no effect in gym mode" in result.output
    assert "5 steps" in result.output


@pytest.mark.parametrize("args, words", [
    (["--duration", "2"], "--duration applies to realtime mode only"),
    (["--rates", "imu=200"], "--rates applies to realtime mode only"),
    (["--command-timeout", "1"], "--command-timeout applies to realtime mode only"),
    (["--mode", "realtime", "--steps", "50"], "--steps applies to gym mode only"),
    (["--robots", "17"], "room for 16"),
    (["--agent", "no_such_module:act"], "cannot import no_such_module"),
])
def test_options_that_cannot_apply_are_refused_before_anything_starts(
        args: list[str], words: str, capsys) -> None:  # noqa: ANN001
    before = {e.name for e in list_entries()}
    with pytest.raises(SystemExit) as exc:
        main(["run", *args])
    assert exc.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
    assert {e.name for e in list_entries()} <= before  # nothing was created


@pytest.mark.timeout(CLI_TIMEOUT_S)
def test_bench_vector_measures_every_peer_and_draws_them(tmp_path) -> None:  # noqa: ANN001
    from dmxshm.bench import vector
    from dmxshm.bench.plot import plot_vector

    rows = vector.run(num_envs=(2,), configs=(("state", (160, 120)),), seconds=0.3)
    dicts = vector.as_dicts(rows)
    assert [d["impl"] for d in dicts] == ["single", "dmxshm", "dmx-recv", "free", "sync", "async"]
    for d in dicts:
        for key in ("impl", "obs", "num_envs", "num_workers", "env_steps_per_s"):
            assert key in d
        assert d["env_steps_per_s"] > 0 and d["obs"] == "state"
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


def test_maps_lists_each_maps_capacity_and_draws_it(tmp_path) -> None:  # noqa: ANN001
    result = CliRunner().invoke(cli, ["maps", "--json", "--render", str(tmp_path)])
    assert result.exit_code == 0, result.output
    infos = {m["name"]: m for m in json.loads(result.stdout)}
    assert infos["loop"]["capacity"] == 16 and infos["big-loop"]["capacity"] >= 64
    for name in infos:
        assert (tmp_path / f"map-{name}.png").read_bytes()[:4] == b"\x89PNG"


def test_version_names_the_package_version() -> None:
    from dmxshm import __version__

    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"dmxshm, version {__version__}"


def _refused(argv: list[str], capsys) -> str:  # noqa: ANN001
    """Run ``dmxshm ARGV``; it must exit 2 (EXIT_USAGE) with a message and no
    traceback, and leave /dev/shm as it was. Returns stderr."""
    before = {e.name for e in list_entries()}
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == EXIT_USAGE, err
    assert "Traceback" not in err and "Error: " in err
    assert {e.name for e in list_entries()} <= before  # nothing was started
    return err


def test_a_view_beyond_loopback_without_allow_remote_is_refused(capsys) -> None:  # noqa: ANN001
    err = _refused(["run", "--steps", "5", "--camera", "0x0", "--view",
                    "--view-host", "0.0.0.0"], capsys)
    assert "--allow-remote" in err
    err = _refused(["view", "--host", "0.0.0.0"], capsys)
    assert "--allow-remote" in err


@pytest.mark.parametrize("argv", [["run", "--steps", "5", "--camera", "0x0", "--view"],
                                  ["view"]])
def test_a_view_without_its_extra_is_refused(argv: list[str], monkeypatch, capsys) -> None:  # noqa: ANN001
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # import aiohttp fails
    assert "pip install 'dmxshm[view]'" in _refused(argv, capsys)


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
    assert "matplotlib" in _refused(argv, capsys)
    assert not (tmp_path / "p.png").exists()


def test_folders_that_cannot_be_used_are_refused_before_the_work(tmp_path, capsys) -> None:  # noqa: ANN001
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("mine")
    assert "--render" in _refused(["maps", "--render", str(in_the_way)], capsys)
    err = _refused(["bench", "render", "--frames", "1", "--images", str(in_the_way / "x")],
                   capsys)
    assert "--images" in err and "bench render" not in err.split("Error: ")[1]
    assert in_the_way.read_text() == "mine"


def test_a_refusal_raised_anywhere_in_a_command_exits_2(monkeypatch) -> None:  # noqa: ANN001
    # The one place: a RefusedError out of any command is a usage error, with the
    # command's usage line, through click's runner as through main().
    import dmxshm.sysinfo
    from dmxshm.errors import RefusedError

    def refuse() -> dict:
        raise RefusedError("cannot here: do this instead")

    monkeypatch.setattr(dmxshm.sysinfo, "collect", refuse)
    result = CliRunner().invoke(cli, ["info"])
    assert result.exit_code == EXIT_USAGE
    assert "Usage: cli info" in result.output and "cannot here: do this instead" in result.output


@pytest.mark.timeout(CLI_TIMEOUT_S)
def test_the_live_view_is_a_child_of_the_process_layer() -> None:
    # Started by dmxshm.proc.program: named dmx-view, told to stop when we end.
    import socket

    import psutil

    from dmxshm.cli import _view_process

    pytest.importorskip("aiohttp")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with _view_process(None, "127.0.0.1", port, False, follow=True) as url:
        assert url.startswith(f"http://127.0.0.1:{port}/")
        views = [c for c in psutil.Process().children() if c.name() == "dmx-view"]
        assert len(views) == 1
    assert not views[0].is_running()  # stopped with the block

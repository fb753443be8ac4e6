"""MCAP logs of a run, and replaying a realtime run from its log exactly."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

pytest.importorskip("foxglove", reason="the log extra (pip install 'dmxshm[log]')")
pytest.importorskip("mcap")
protobuf = pytest.importorskip("mcap_protobuf.decoder")
image = pytest.importorskip("matplotlib.image")

from dmxshm import logs  # noqa: E402
from dmxshm.cli import cli  # noqa: E402
from dmxshm.network import Network, NetworkConfig, NetworkError  # noqa: E402
from dmxshm.network.replay import ReplayError, load, replay  # noqa: E402
from dmxshm.shm.names import list_entries  # noqa: E402
from tests.networks import runner  # noqa: E402

RUN_TIMEOUT_S = 120
SENSORS = ("camera", "imu", "encoders", "tof")


run = runner(camera=(32, 24), wait_timeout_s=5.0)


def decoded(path: str) -> dict[str, list]:
    """Every message of a log, decoded (protobuf or JSON), by topic."""
    factory = protobuf.DecoderFactory()
    out: dict[str, list] = {}
    for topic, schema, msg in logs.messages(path):
        if schema is not None and schema.encoding == "protobuf":
            value = factory.decoder_for("protobuf", schema)(msg.data)
        else:
            value = json.loads(msg.data)
        out.setdefault(topic, []).append((msg.log_time, value))
    return out


def png(data: bytes) -> np.ndarray:
    return np.round(image.imread(io.BytesIO(data), format="png")[..., :3] * 255).astype(np.uint8)


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_gym_run_is_logged_whole_and_its_images_are_the_renderers_frames(tmp_path) -> None:
    path, frames = str(tmp_path / "run.mcap"), tmp_path / "frames"
    s = run(robots=2, steps=12, log=path, record_dir=str(frames), record_every=1)
    got = decoded(path)
    assert not os.path.exists(logs.parts_dir(path))  # merged, parts removed
    assert [json.loads(json.dumps(v))["robots"] for _, v in got["/dmxshm/config"]] == [2]
    (_, summary), = got["/dmxshm/summary"]
    assert summary["trajectory_digest"] == s.trajectory_digest and summary["steps"] == 12
    for robot in range(2):
        for what in ("pose", "wheels", *SENSORS):  # every step, every sensor (gym mode)
            assert len(got[logs.robot_topic(robot, what)]) == 12, what
        wheels = [v for _, v in got[logs.robot_topic(robot, "wheels")]]
        assert [w["step"] for w in wheels] == list(range(12))
        # The images are the frames the renderer produced (as --record wrote them).
        for k, (_, msg) in enumerate(got[logs.robot_topic(robot, "camera")]):
            assert msg.format == "png" and msg.frame_id == f"robot{robot:02d}/camera"
            written = png((frames / f"robot{robot:02d}_step{k:06d}.png").read_bytes())
            assert np.array_equal(png(msg.data), written)
            assert written.shape == (24, 32, 3) and written.std() > 0
        # Poses in the map frame, with the simulated time; the last is the
        # state of step 11 (the final poses are after step 12).
        (_, pose) = got[logs.robot_topic(robot, "pose")][-1]
        assert pose.frame_id == "map"
        assert pose.timestamp.seconds + pose.timestamp.nanos / 1e9 == pytest.approx(11 / 30)
    # The merged file is in log-time order as written (read raw, not re-sorted).
    from mcap.records import Message
    from mcap.stream_reader import StreamReader

    with open(path, "rb") as f:
        times = [r.log_time for r in StreamReader(f).records if isinstance(r, Message)]
    assert len(times) == sum(len(m) for m in got.values()) and times == sorted(times)
    info = logs.info(path)
    assert info.summary["steps"] == 12 and s.log.size_bytes == info.size_bytes
    assert {t.topic for t in info.topics} == set(got)


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_realtime_log_counts_every_sensor_tick_and_replays_to_the_same_digest(
        tmp_path) -> None:
    path = str(tmp_path / "rt.mcap")
    s = run(mode="realtime", robots=2, duration_s=1.5, agent="random", log=path)
    got = decoded(path)
    for robot in range(2):
        for sensor in SENSORS:  # one renderer: each robot gets every tick
            assert len(got[logs.robot_topic(robot, sensor)]) == s.sensor_ticks[sensor][0]
        assert len(got[logs.robot_topic(robot, "wheels")]) == s.steps
    # Replayed in this process: every state, command and logged sample, images too.
    result = replay(path)
    rec, again = result.recording, result.replayed
    assert result.in_process and result.equal and result.digest_equal
    assert rec.steps == s.steps == again.steps and again.mode == "realtime"
    assert again.trajectory_digest == s.trajectory_digest and again.digests == s.digests
    assert again.pose_digest == s.pose_digest and again.final_poses == s.final_poses
    assert again.samples == sum(len(got[logs.robot_topic(r, k)]) for r in range(2)
                                for k in SENSORS)
    # Without the camera (faster): the other streams, the camera's named as not replayed.
    quick = replay(path, camera=(0, 0))
    assert quick.equal and not quick.digest_equal
    assert quick.not_replayed == ["robot00/camera", "robot01/camera"]
    # What was applied is replayed, an expired command as zeros.
    wheels = [v for _, v in got[logs.robot_topic(0, "wheels")]]
    assert np.array_equal(rec.commands[:, 0], [[w["left_rad_s"], w["right_rad_s"]]
                                              for w in wheels])


@pytest.mark.timeout(RUN_TIMEOUT_S)
@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_replay_with_split_processes_and_expired_commands(tmp_path) -> None:
    # Three robots over two renderers and two agents that answer slower than
    # commands last: some steps apply a command, others the stop of an expired
    # one. The replay applies the same in each step.
    path = str(tmp_path / "split.mcap")
    s = run(mode="realtime", robots=3, renderers=2, agents=2, duration_s=1.5,
            agent="tests.agents:Slow", command_timeout_s=0.01, camera=(0, 0), log=path)
    wheels = [json.loads(m.data) for _, _, m in logs.messages(path, [logs.robot_topic(2,
                                                                                   "wheels")])]
    expired = [w["expired"] for w in wheels]
    assert any(expired) and not all(expired)
    assert all(w["left_rad_s"] == 0.0 for w in wheels if w["expired"])
    result = replay(path)
    assert result.equal and result.replayed.trajectory_digest == s.trajectory_digest
    # As a gym network (--log): its sensors sample once a step; states and commands
    # are the recorded run's.
    again = replay(path, log=str(tmp_path / "again.mcap"))
    assert again.equal and again.compared_streams.keys() == {"states", "commands"}
    assert again.replayed.final_poses == s.final_poses


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_runs_through_the_spine_replay_to_the_same_digest(tmp_path) -> None:
    # Realtime: the spine's CAN cycles were the physics steps, each logged with
    # its command, a state published every 5; the replay steps the physics and
    # recomputes the samples in this process. Gym: the simulation spine.
    rt = str(tmp_path / "rt-spine.mcap")
    s = run(mode="realtime", robots=2, duration_s=0.5, spine=True, camera=(0, 0),
            agent="random", log=rt)
    result = replay(rt)
    rec, again = result.recording, result.replayed
    assert result.in_process and result.equal and result.digest_equal
    assert rec.steps == s.steps == again.steps > 400  # ~1 kHz
    assert again.trajectory_digest == s.trajectory_digest
    assert again.final_poses == s.final_poses
    with pytest.raises(ReplayError, match="in this process"):
        replay(rt, log=str(tmp_path / "again.mcap"))
    gym = str(tmp_path / "gym-spine.mcap")
    g = run(robots=2, steps=40, spine=True, spine_hz=200.0, camera=(0, 0), agent="random",
            log=gym)
    again = replay(gym).replayed
    assert again.trajectory_digest == g.trajectory_digest


def test_damaged_or_incomplete_logs_are_refused_with_the_reason(tmp_path) -> None:
    path = str(tmp_path / "rt.mcap")
    run(mode="realtime", robots=1, duration_s=0.5, agent="random", log=path, camera=(0, 0))
    data = (tmp_path / "rt.mcap").read_bytes()
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(logs.LogError, match="damaged|not a readable"):
        load(str(cut))
    bad = bytearray(data)
    bad[len(bad) // 3: len(bad) // 3 + 64] = b"\xff" * 64
    (tmp_path / "bad.mcap").write_bytes(bytes(bad))
    with pytest.raises((logs.LogError, ReplayError)):
        load(str(tmp_path / "bad.mcap"))
    with pytest.raises(logs.LogError, match="no log"):
        load(str(tmp_path / "missing.mcap"))
    # Not what replay needs: a run that did not finish.
    killed = str(tmp_path / "killed.mcap")
    net = Network(NetworkConfig(mode="realtime", robots=1, duration_s=30, camera=(0, 0),
                                wait_timeout_s=5.0, log=killed))
    net.start()
    try:
        # The engine killed: its part is cut short, and what it holds is kept.
        pid = net.supervisor.child("engine").pid
        killed_at: list[int] = []

        def progress(step: int) -> None:
            if step > 30 and not killed_at:  # a second in: parts reach their file 4 times a second
                os.kill(pid, signal.SIGKILL)
                killed_at.append(step)

        with pytest.raises(NetworkError):
            net.run(progress)
    finally:
        net.close()
    assert not [e for e in list_entries() if e.pid == os.getpid()]
    info = logs.info(killed)  # what the parts held, merged
    assert info.summary is None and info.config["duration_s"] == 30
    # ...and the engine's part is reported as cut, not hidden.
    cut = {c["part"]: c for c in info.cut_parts}
    assert "engine" in cut and cut["engine"]["at_byte"] > 0
    # The killed engine's part kept the steps it logged before the kill.
    poses = {t.topic: t.messages for t in info.topics}[logs.robot_topic(0, "pose")]
    assert poses >= 3
    with pytest.raises(ReplayError, match="did not finish"):
        load(killed)


def test_the_cli_lists_a_log_and_replays_it(tmp_path) -> None:
    path = str(tmp_path / "g.mcap")
    runner = CliRunner()
    r = runner.invoke(cli, ["run", "--steps", "5", "--robots", "1", "--camera", "16x12",
                            "--log", path])
    assert r.exit_code == 0, r.output
    assert "log: " in r.output
    r = runner.invoke(cli, ["log", "info", path])
    assert r.exit_code == 0 and "/robot00/camera" in r.output and "5 steps" in r.output
    r = runner.invoke(cli, ["log", "info", "--json", path])
    assert json.loads(r.output)["config"]["robots"] == 1
    r = runner.invoke(cli, ["replay", path])
    assert r.exit_code == 0 and "digest EQUAL" in r.output, r.output
    r = runner.invoke(cli, ["run", "--steps", "5", "--log", path])  # no silent overwrite
    assert r.exit_code == 2 and "--overwrite" in r.output


def test_a_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setitem(sys.modules, "foxglove", None)
    with pytest.raises(logs.LogError, match=r"pip install 'dmxshm\[log\]'"):
        logs.check_writable(str(tmp_path / "x.mcap"))


CLI_TIMEOUT_S = 60
WHEELS = {"sim_time_s": 0.0, "wall_time_s": 0.0, "left_rad_s": 1.0, "right_rad_s": -1.0,
          "expired": False}


def _part_with_messages(path: str, role: str, n: int) -> tuple[bytes, list[int]]:
    """A closed part of ``n`` wheel messages; its bytes, and where each message ends."""
    from mcap.records import Message
    from mcap.stream_reader import StreamReader

    part = logs.LogPart(path, role)
    for step in range(n):
        part.record(logs.robot_topic(0, "wheels"), "wheels", {"step": step, **WHEELS},
                    wall_ns=1_000_000_000 + step)
    part.close()
    ends = []
    with open(part.path, "rb") as f:
        for rec in StreamReader(f).records:
            if isinstance(rec, Message):
                ends.append(f.tell())
    with open(part.path, "rb") as f:
        return f.read(), ends


def test_a_part_cut_short_is_merged_up_to_the_cut_and_reported(tmp_path) -> None:
    path = str(tmp_path / "cut.mcap")
    logs.start(path, {"robots": 1})
    data, ends = _part_with_messages(path, "engine", 40)
    at = (ends[24] + ends[25]) // 2  # halfway through the 26th message: killed mid-write
    with open(os.path.join(logs.parts_dir(path), "engine.mcap"), "wb") as f:
        f.write(data[:at])
    done = logs.finish(path, {"steps": 40, "wall_time_s": 1.0, "trajectory_digest": "-"})
    assert done.cut_parts == [{"part": "engine", "at_byte": ends[24],
                               "lost_bytes": at - ends[24]}]
    wheels = {t.topic: t.messages for t in done.topics}[logs.robot_topic(0, "wheels")]
    assert wheels == 25  # the whole messages before the cut
    assert logs.info(path).cut_parts == done.cut_parts  # kept in the merged file
    r = CliRunner().invoke(cli, ["log", "info", path])
    assert r.exit_code == 0 and "lacks the end of the part engine" in r.output
    # A log merged from whole parts reports none.
    whole = str(tmp_path / "whole.mcap")
    logs.start(whole, {"robots": 1})
    _part_with_messages(whole, "engine", 3)
    assert logs.finish(whole, {"steps": 3}).cut_parts == logs.info(whole).cut_parts == []


@pytest.mark.parametrize("damage", ["magic", "record length"])
def test_a_corrupted_part_is_an_error_not_a_cut(tmp_path, damage: str) -> None:
    path = str(tmp_path / "bad.mcap")
    logs.start(path, {"robots": 1})
    data, _ = _part_with_messages(path, "engine", 10)
    bad = bytearray(data)
    if damage == "magic":
        bad[:8] = b"NOTMCAP!"
    else:  # the first record's length (after the 8-byte magic and its opcode)
        bad[9:17] = (2**40).to_bytes(8, "little")
    with open(os.path.join(logs.parts_dir(path), "engine.mcap"), "wb") as f:
        f.write(bytes(bad))
    with pytest.raises(logs.LogError, match="engine.mcap is corrupted"):
        logs.finish(path, {"steps": 10})
    assert not os.path.exists(path)  # nothing merged


def _start_elsewhere(path: str, then: str = "") -> subprocess.CompletedProcess[str]:
    """``logs.start(path)`` in another process (``then``: what it does next)."""
    code = ("import sys; from dmxshm import logs\n"
            "try:\n    logs.start(sys.argv[1], {'robots': 1})\n"
            "except logs.LogInUseError as exc:\n    sys.exit(f'in use: {exc.pid}: {exc}')\n"
            + then)
    return subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                          timeout=CLI_TIMEOUT_S)


def test_a_second_run_on_a_log_path_in_use_is_refused_and_leaves_its_parts(tmp_path) -> None:
    path = str(tmp_path / "busy.mcap")
    claim = logs.start(path, {"robots": 1})
    parts = sorted(os.listdir(logs.parts_dir(path)))
    assert parts == ["owner.json", "supervisor-config.mcap"] and logs.owner(path) == os.getpid()
    other = _start_elsewhere(path)
    assert other.returncode == 1 and f"in use: {os.getpid()}" in other.stderr
    assert "Wait for that run to end, or give another --log path" in other.stderr
    # From the command line: refused before anything starts.
    r = subprocess.run([sys.executable, "-m", "dmxshm.cli", "run", "--steps", "5", "--camera",
                        "0x0", "--log", path], capture_output=True, text=True,
                       timeout=CLI_TIMEOUT_S)
    assert r.returncode == 2 and "is being written by a run still going" in r.stderr
    # Another claim (another run of this process) never merges these parts.
    assert logs.finish_unfinished(path, "not-this-claim") is None
    assert sorted(os.listdir(logs.parts_dir(path))) == parts
    done = logs.finish_unfinished(path, claim)
    assert done is not None and not os.path.exists(logs.parts_dir(path))


def test_parts_of_a_run_that_is_gone_are_cleared(tmp_path) -> None:
    import psutil

    path = str(tmp_path / "stale.mcap")
    # A run killed after it made its parts: its folder stays, its owner is dead.
    killed = _start_elsewhere(path, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert killed.returncode == -signal.SIGKILL
    folder = logs.parts_dir(path)
    assert os.path.isdir(folder) and logs.owner(path) is None
    with open(os.path.join(folder, "renderer-0.mcap"), "wb") as f:
        f.write(b"an earlier run's")
    logs.start(path, {"robots": 1})
    assert sorted(os.listdir(folder)) == ["owner.json", "supervisor-config.mcap"]
    assert logs.owner(path) == os.getpid()
    logs.finish(path, None)
    # A pid that a new process took since: its start time says it is not the owner.
    os.makedirs(folder)
    with open(os.path.join(folder, logs.OWNER_FILE), "w") as f:
        json.dump({"pid": os.getpid(), "claim": "old",
                   "started_s": psutil.Process().create_time() - 3600}, f)
    assert logs.owner(path) is None
    logs.start(path, {"robots": 1})
    assert logs.owner(path) == os.getpid()
    # The wall clock's boot time moved by a second since (a VM's clock slewed): the
    # owner is still the owner, by its start in clock ticks since boot.
    owner_file = os.path.join(folder, logs.OWNER_FILE)
    with open(owner_file) as f:
        record = json.load(f)
    with open(owner_file, "w") as f:
        json.dump({**record, "started_s": record["started_s"] - 1.0}, f)
    assert logs.owner(path) == os.getpid()
    # ...and another process's start since boot is not the owner's.
    with open(owner_file, "w") as f:
        json.dump({**record, "started_since_boot_s": record["started_since_boot_s"] - 1.0}, f)
    assert logs.owner(path) is None
    with open(owner_file, "w") as f:
        json.dump(record, f)
    logs.finish(path, None)


def test_refusals_of_replay_and_log_info_exit_2(tmp_path) -> None:
    path = str(tmp_path / "g.mcap")
    run(robots=1, steps=3, camera=(0, 0), log=path)
    runner = CliRunner()
    exists = str(tmp_path / "exists.mcap")
    with open(exists, "w") as f:
        f.write("mine")
    for args, words in [(["replay", path, "--log", exists], "--overwrite"),
                        (["replay", path, "--log", path, "--overwrite"], "overwrite the log"),
                        (["replay", str(tmp_path / "missing.mcap")], "no log at"),
                        (["replay", exists], "not a readable MCAP"),
                        (["replay", path, "--camera", "100000x100000"], "larger than"),
                        (["log", "info", str(tmp_path / "missing.mcap")], "no log at")]:
        r = runner.invoke(cli, args)
        assert r.exit_code == 2 and words in r.output, (args, r.output)
    with open(exists) as f:
        assert f.read() == "mine"


def test_a_run_logged_without_the_extra_is_refused(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    monkeypatch.setitem(sys.modules, "foxglove", None)
    for args in (["run", "--steps", "3", "--log", str(tmp_path / "x.mcap")],
                 ["replay", str(tmp_path / "y.mcap"), "--log", str(tmp_path / "x.mcap")]):
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 2 and "pip install 'dmxshm[log]'" in r.output, r.output


def test_the_recorded_commands_reach_the_replay_agent_in_its_spec() -> None:
    from dmxshm.network.policies import load_policy
    from dmxshm.network.replay import Replayed, commands_agent

    commands = np.arange(5 * 3 * 2, dtype=float).reshape(5, 3, 2)
    environ = dict(os.environ)
    with commands_agent(commands) as spec:
        assert dict(os.environ) == environ  # no hidden channel
        policy = load_policy(spec, (0, 2), 0)
        obs = np.zeros(2, [("step", np.int64)])
        obs["step"] = 3
        assert np.array_equal(policy(obs), commands[3, [0, 2]])
    with pytest.raises(ReplayError, match="commands_agent"):
        Replayed((0,))


def test_a_message_that_does_not_decode_is_a_damaged_log(monkeypatch) -> None:  # noqa: ANN001
    # Damage can land inside a message's payload and leave the records whole:
    # that is a damaged log (LogError), not a JSONDecodeError from replay.
    from types import SimpleNamespace

    from dmxshm.network import replay as replay_module

    def damaged(path: str):  # noqa: ANN202
        yield logs.CONFIG_TOPIC, None, SimpleNamespace(data=b'{"log_format": \xff\xff')

    monkeypatch.setattr(replay_module, "messages", damaged)
    with pytest.raises(logs.LogError, match="damaged: a message on"):
        load("some.mcap")

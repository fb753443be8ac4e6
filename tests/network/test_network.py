"""The simulator network end to end: determinism, the gym barrier, realtime
drops and expiry, and every failure ending cleanly with a named error."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

import pytest

from dmxshm.errors import DmxError
from dmxshm.network import (
    CommandsRejectedError,
    ConfigError,
    Network,
    NetworkConfig,
    NetworkError,
)
from dmxshm.network.policies import AgentError
from dmxshm.shm.names import list_entries
from tests import procs
from tests.networks import runner

RUN_TIMEOUT_S = 120
# A run's processes take about a second to start; a failure must end it
# within 2 s of happening.
DETECT_S = 2.0
SMALL = dict(camera=(32, 24), steps=40, wait_timeout_s=5.0)


run = runner(**SMALL)


def no_entries_of(pid: int) -> bool:
    return not [e for e in list_entries() if e.pid == pid]


def signal_after(net: Network, role: str, signum: int,
                 step: int = 5) -> tuple[int, Callable[[int], None]]:
    """The pid of ``net``'s process ``role`` and an ``on_progress`` that sends it
    ``signum``, once, when the engine has passed ``step``."""
    pid = net.supervisor.child(role).pid
    sent: list[int] = []

    def progress(at: int) -> None:
        if at > step and not sent:
            os.kill(pid, signum)
            sent.append(at)

    return pid, progress


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_same_seed_same_trajectory_whatever_the_process_count() -> None:
    # lane-follow acts on what the camera-era sensors see (lane, time of
    # flight), so a renderer-count difference in observations would show.
    # Two runs of one seed: one split, one not (equal, they are also two runs alike).
    one = run(robots=4, agent="lane-follow", seed=3)
    split = run(robots=4, agent="lane-follow", seed=3, renderers=2, agents=3)
    other = run(robots=4, agent="lane-follow", seed=4)
    rand = run(robots=4, agent="random", seed=3)
    rand_split = run(robots=4, agent="random", seed=3, renderers=4, agents=2)
    assert rand.trajectory_digest == rand_split.trajectory_digest
    assert one.trajectory_digest == split.trajectory_digest
    assert one.final_poses == split.final_poses
    assert other.trajectory_digest != one.trajectory_digest
    assert one.steps == 40 and one.sim_time_s == pytest.approx(40 / 30)


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_gym_barrier_waits_for_a_slow_agent_and_loses_nothing() -> None:
    s = run(agent="tests.agents:Slow", steps=20, camera=(0, 0))
    assert s.steps == 20
    assert s.drops == {"commands": 0, "observations": 0, "states": 0}
    # Every step waited for the agent: the step cannot be shorter than it.
    assert s.timing.step_s >= s.timing.agents_s > 0


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_realtime_slow_agent_causes_counted_drops() -> None:
    s = run(mode="realtime", duration_s=1.5, agent="tests.agents:Slow", camera=(0, 0))
    assert s.drops["observations"] > 0  # IMU at 100 Hz vs an agent at < 50 Hz
    assert s.sim_time_s == pytest.approx(1.5, abs=0.05)


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_realtime_commands_expire_and_the_robot_stops() -> None:
    s = run(mode="realtime", duration_s=2.0, robots=1, agent="tests.agents:AnswersOnce",
            camera=(0, 0), command_timeout_s=0.3)
    assert s.expired_commands == [1]


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_lane_follow_stays_in_lane_for_60_simulated_seconds() -> None:
    s = run(robots=1, steps=1800, camera=(0, 0), agent="lane-follow")
    assert s.sim_time_s == pytest.approx(60.0)
    assert s.lane["off_road_steps"] == [0]
    assert s.lane["max_abs_offset_m"][0] < 0.08  # the lane is 0.23 m wide
    assert s.lane["distance_m"][0] > 10.0  # it drove (0.22 m/s for 60 s), not just stood


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_nan_commands_are_rejected_and_the_robot_stopped() -> None:
    with pytest.raises(CommandsRejectedError, match="never moved") as info:
        run(agent="tests.agents:nan_wheels", camera=(0, 0), steps=10)
    assert info.value.summary.rejected_commands == [10, 10]
    assert "(nan, nan) rad/s from agent-0 at step 0: not finite" in str(info.value)


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_some_rejected_commands_are_told_once_and_the_run_goes_on(
        capfd: pytest.CaptureFixture[str]) -> None:
    s = run(agent="tests.agents:NanEveryThird", camera=(0, 0), steps=9)
    assert s.rejected_commands == [0, 3] and s.received_commands == [9, 9]
    assert s.first_rejections == {1: "(nan, nan) rad/s from agent-0 at step 0: not finite"}
    err = capfd.readouterr().err
    assert err.count("dmxshm: warning: robot 1's command (nan, nan)") == 1


@pytest.mark.timeout(RUN_TIMEOUT_S)
@pytest.mark.parametrize("victim, signum", [
    ("engine", signal.SIGKILL), ("renderer-0", signal.SIGKILL), ("agent-0", signal.SIGKILL),
    ("renderer-0", signal.SIGTERM), ("agent-0", signal.SIGTERM),
])
def test_a_killed_process_ends_the_run_with_its_name(victim: str, signum: int) -> None:
    net = Network(NetworkConfig(**{**SMALL, "steps": 10**6, "camera": (0, 0)}))
    net.start()
    supervisor = os.getpid()
    try:
        pid, progress = signal_after(net, victim, signum)
        with pytest.raises(NetworkError) as info:
            net.run(progress)
        # Named as the root cause, not as a peer's time-out: the others' waits were
        # ended by the death they saw (no RingTimeoutError ranked before it).
        assert info.value.role == victim and info.value.pid == pid
        assert info.value.outcome is not None and info.value.outcome.cause.rank == 0
        assert signal.Signals(signum).name in str(info.value)
    finally:
        net.close()
    assert no_entries_of(supervisor)


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_policy_that_raises_is_reported_with_its_traceback() -> None:
    with pytest.raises(NetworkError) as info:
        run(agent="tests.agents:raises", camera=(0, 0))  # no image needed to raise
    assert info.value.role == "agent-0"
    assert "policy exploded on purpose" in str(info.value)
    assert "Traceback" in str(info.value)


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_an_answer_of_the_wrong_shape_ends_the_run_naming_the_agent() -> None:
    with pytest.raises(NetworkError) as info:
        run(agent="tests.agents:wrong_shape", steps=3, camera=(0, 0))
    assert info.value.role == "agent-0"
    assert "shape (3,)" in str(info.value)
    assert "AgentError" in info.value.cause


@pytest.mark.parametrize("spec, words", [
    ("tests.agents:NOT_CALLABLE", "not a callable"),
    ("no_such_module_xyz:act", "cannot import"),
    ("tests.agents:missing", "has no 'missing'"),
    ("nonsense", "module:callable"),
    ("__main__:act", "never run your __main__"),
])
def test_bad_agents_are_refused_before_any_process_starts(spec: str, words: str) -> None:
    net = Network(NetworkConfig(**{**SMALL, "agent": spec}))
    with pytest.raises(AgentError, match=words):
        net.start()
    assert net.supervisor.children == [] and net.registry is None


@pytest.mark.parametrize("kw, words", [
    ({"robots": 0}, "robots"),
    ({"renderers": 3, "robots": 2}, "renderers"),
    ({"camera": (100000, 100000)}, "larger than"),
    ({"camera": (0, 10)}, "0x0"),
    ({"mode": "fast"}, "mode"),
    ({"pin": {"engine": 4096}}, "CPU 4096"),
    ({"sensor_rates_hz": {"imu": -1.0}}, "above 0"),
    ({"seed": -1}, "seed"),
    ({"mode": "realtime", "duration_s": float("inf")}, "duration"),
    ({"pin": {"renderer-7": 0}}, "renderer-7"),
])
def test_impossible_configs_are_refused_up_front(kw: dict, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        NetworkConfig(**kw)


def test_agent_error_is_a_dmx_error() -> None:
    from dmxshm.errors import DmxError

    assert issubclass(AgentError, DmxError) and issubclass(NetworkError, DmxError)


RUN_FOREVER = ["-m", "dmxshm.cli", "run", "--steps", "100000000", "--camera", "0x0",
               "--agent", "idle"]


@pytest.mark.timeout(RUN_TIMEOUT_S)
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_or_sigterm_stops_the_run_and_leaves_nothing(signum: int, code: int) -> None:
    import subprocess
    import sys

    import psutil

    proc = subprocess.Popen([sys.executable, *RUN_FOREVER], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S / 2
        children: list[psutil.Process] = []
        while len(children) < 3:  # engine, renderer, agent (plus the resource tracker)
            assert proc.poll() is None and time.monotonic() < deadline
            children = procs.dmx_children(proc.pid)
            time.sleep(0.05)
        proc.send_signal(signum)
        assert proc.wait(RUN_TIMEOUT_S / 2) == code
        gone, alive = psutil.wait_procs(children, timeout=DETECT_S)
        assert not alive
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert no_entries_of(proc.pid)


def steps_published(pid: int) -> int:
    """Steps the engine of the run started by ``pid`` has published (its state ring's
    writes, read without taking a side of the ring); 0 before the ring exists."""
    from dmxshm.shm.ring import Ring

    names = [e.name for e in list_entries() if e.pid == pid and e.what == "state.renderer.0"
             and e.kind == "segment"]
    if not names:
        return 0
    try:
        ring = Ring.attach(names[0])
    except DmxError:
        return 0
    try:
        return ring.stats().writes
    finally:
        ring.close()


@pytest.mark.timeout(RUN_TIMEOUT_S)
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_run_shows_and_writes_what_it_did(signum: int, code: int,
                                                    tmp_path: object) -> None:
    import json
    import subprocess
    import sys

    path = tmp_path / "run.json"  # type: ignore[operator]
    proc = subprocess.Popen([sys.executable, *RUN_FOREVER, "--robots", "2", "--json",
                             str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S / 2
        while steps_published(proc.pid) < 20:  # it is stepping: stop it now
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S / 2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err[-2000:]
    assert "INTERRUPTED" in out and "trajectory digest" in out
    data = json.loads(path.read_text())
    # The state ring's first write is step 0, before any physics step: 20 writes
    # seen mean at least 19 steps done (a stop while step 19 waits for commands).
    assert data["interrupted"] and data["steps"] >= 19
    # The steps it reports are the steps physics made (not the planned 10**8).
    assert data["sim_time_s"] == pytest.approx(data["steps"] / 30.0)
    assert len(data["lane"]["distance_m"]) == 2 and data["seed"] == 0
    assert no_entries_of(proc.pid)


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_stopped_process_is_named_when_the_others_time_out() -> None:
    net = Network(NetworkConfig(**{**SMALL, "steps": 10**6, "camera": (0, 0),
                                   "wait_timeout_s": 1.0}))
    net.start()
    try:
        _, progress = signal_after(net, "renderer-0", signal.SIGSTOP)
        with pytest.raises(NetworkError) as info:
            net.run(progress)
        assert info.value.role == "renderer-0" and "stopped" in info.value.cause
    finally:
        net.close()


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_spine_between_agents_and_engine_drives_the_robots() -> None:
    s = run(mode="realtime", duration_s=1.5, spine=True, camera=(0, 0), agent="lane-follow")
    spine = s.to_dict()["spine"]  # the figures under the JSON's frozen names
    # The engine replies after every step and the spine reads until that ring
    # is closed and empty: the last reply it kept is the engine's last step.
    assert spine["last_engine_step"] == s.steps - 1
    # Each CAN cycle of the spine is one physics step (a frame overwritten
    # before the engine took it is counted), at the spine's frequency; the
    # spine sends stops for 5 cycles at the start and 5 at the end.
    assert s.steps + s.drops["commands"] == spine["cycles"]
    assert s.sim_time_s == pytest.approx(s.steps / spine["frequency_hz"])
    # Its per-cycle records (in shared memory as it runs) give the timing
    # report, the engine as its CAN bus, and the states of its cycles: stops
    # until the agents' first command (at least 5), one reset, 1.5 s of
    # acting (idle while no command is fresh), 5 shutdown stops.
    t = spine["timing"]
    states = t["states"]
    assert t["records"] == spine["cycles"]
    assert states["SEND_STOPS"] >= 5 and states["RESET"] == 1 and states["SHUTDOWN"] == 5
    assert states["ACT"] + states.get("IDLE", 0) == round(1.5 * spine["frequency_hz"])
    assert spine["stop_cycles"] == spine["cycles"] - states["ACT"]
    for figure in (t["delivery_us"]["spine_to_engine"], t["delivery_us"]["engine_to_spine"],
                   t["engine_step_us"], t["send_minus_obs_us"]):
        assert 0 <= figure["p50"] <= figure["p99"] <= figure["max"]
    # The engine's only command ring is the spine's, so the robots moved on
    # commands that went through the spine...
    assert min(s.lane["distance_m"]) > 0.1
    assert s.lane["off_road_steps"] == [0, 0]
    # The spine expires the agents' commands, and counts that per robot: the
    # summary's count is the spine's. No engine step has a deadline: the engine
    # reports no late steps (none measured, not 0).
    assert s.expired_commands == spine["expired_commands"] and s.rejected_commands == [0, 0]
    assert len(spine["expired_commands"]) == 2 and min(spine["expired_commands"]) >= 0
    assert s.late_steps is None and s.max_lag_s is None
    # Every robot's commands came from its agent, through the spine.
    assert min(spine["received_commands"]) > 0
    # The law from the configuration alone: 2 robots at 1 kHz, T_o 200 us.
    assert t["predicted"]["send_minus_obs_us"] == pytest.approx(800.0)
    beyond = t["minus_predicted_us"]["send_minus_obs_us"]
    assert beyond["p50"] <= beyond["p99"]
    # Each cycle that began more than half a period late skipped a tick.
    assert 0 <= t["overruns"]["count"] <= spine["skipped_cycles"]
    assert 0 < spine["period_us"]["p50"] <= spine["period_us"]["p99"] <= spine["period_us"]["max"]


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_gym_mode_through_the_simulation_spine_is_deterministic() -> None:
    # --spine in gym mode: Vulp's pipeline in lockstep in the engine, one
    # physics step of 1/spine_hz a step, three stop cycles first; no spine
    # process. The same seed gives the same run whatever the process counts.
    kw: dict = dict(robots=4, agent="lane-follow", seed=3, spine=True, spine_hz=200.0,
                    steps=60, camera=(0, 0))
    one = run(**kw)
    split = run(**{**kw, "renderers": 2, "agents": 3})
    plain = run(**{**kw, "spine": False})
    assert NetworkConfig(spine=True).processes() == NetworkConfig().processes()
    assert one.trajectory_digest == split.trajectory_digest
    assert one.final_poses == split.final_poses
    assert one.trajectory_digest != plain.trajectory_digest
    assert one.steps == 60 and one.spine is None and one.to_dict()["spine"] == {}
    assert one.sim_time_s == pytest.approx((60 + 3) / 200.0)


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_killed_spine_ends_the_run_with_its_name() -> None:
    net = Network(NetworkConfig(**{**SMALL, "mode": "realtime", "duration_s": 60.0,
                                   "spine": True, "camera": (0, 0)}))
    net.start()
    try:
        _, progress = signal_after(net, "spine", signal.SIGKILL)
        with pytest.raises(NetworkError) as info:
            net.run(progress)
        assert info.value.role == "spine" and "SIGKILL" in str(info.value)
    finally:
        net.close()
    assert no_entries_of(os.getpid())


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_slow_camera_never_holds_the_other_sensors_back() -> None:
    # 640x480 takes tens of ms a frame with the CPU renderer, far beyond the
    # IMU's 10 ms: the camera renders in a process of its own, so the IMU,
    # encoders and time of flight of the same robots keep their rates.
    s = run(mode="realtime", robots=2, duration_s=3.0, camera=(640, 480), agent="idle")
    rates = {name: v.achieved_hz for name, v in s.sensors.items()}
    assert NetworkConfig(mode="realtime").processes().count(("camera", 0)) == 1
    assert ("camera", 0) not in NetworkConfig().processes()  # gym: the renderer renders
    camera, imu = s.sensor_ticks["camera"][0], s.sensor_ticks["imu"][0]
    # Held back by the camera, the IMU would tick at the camera's rate: it ticked at
    # least three times as often (an ordering in the run; the rates themselves are a
    # loaded machine's to shrink, and bench network's figures).
    assert camera > 0 and imu >= 3 * camera, (camera, imu)
    assert rates["imu"] > 0 and rates["encoders"] > 0 and rates["tof"] > 0, rates
    assert "camera-0" in s.busy_us


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_camera_processes_send_each_robot_its_own_images_as_they_come(tmp_path) -> None:
    # Three robots over two renderers (two camera processes) and two agents,
    # cheap sensors slower than the camera: every image still goes out as it is
    # made, and each robot's recorded frames are its own view.
    s = run(mode="realtime", robots=3, renderers=2, agents=2, duration_s=2.0,
            camera=(48, 36), agent="idle", record_dir=str(tmp_path), record_every=1,
            sensor_rates_hz={"camera": 30.0, "imu": 1.0, "encoders": 1.0, "tof": 1.0})
    cam = s.sensors["camera"]
    # A camera that waited for the slow sensors would make no more frames than they make
    # ticks: the camera processes made more (an ordering in the run, not a count in a
    # wall-clock window, which a loaded machine shrinks: 6 frames were seen there, and
    # a camera process that started late made 2 where its peer made 8; hence the sums).
    cam_ticks, imu_ticks = s.sensor_ticks["camera"], s.sensor_ticks["imu"]
    assert len(cam_ticks) == 2 and sum(cam_ticks) > sum(imu_ticks), (cam_ticks, imu_ticks)
    assert cam.forwarded_hz is not None and cam.forwarded_hz >= 0.7 * cam.achieved_hz > 0, cam
    firsts = {}
    for robot in range(3):
        frames = sorted(tmp_path.glob(f"robot{robot:02d}_frame*.png"))
        assert frames
        firsts[robot] = frames[-1].read_bytes()
    assert len(set(firsts.values())) == 3  # three robots, three views
    assert s.recorded_frames == sum(len(list(tmp_path.glob(f"robot{r:02d}_*.png")))
                                    for r in range(3))


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_each_sensors_ticks_are_counted_fresh_or_repeated() -> None:
    gym = run(robots=2, renderers=2, camera=(0, 0), steps=15)
    for name, rate in gym.sensors.items():  # lockstep: every step's state is new
        assert (rate.fresh, rate.repeated) == (sum(gym.sensor_ticks[name]), 0), name
    rt = run(mode="realtime", robots=2, camera=(0, 0), duration_s=1.5, agent="idle",
             sensor_rates_hz={"imu": 100.0, "encoders": 10.0, "tof": 10.0})
    for name, rate in rt.sensors.items():
        assert rate.fresh + rate.repeated == sum(rt.sensor_ticks[name]) > 0, name
    # States come every Bullet step (1/240 s), more than twice as fast as the IMU: a
    # tick reads the state of the tick before only when the engine fell behind the
    # wall clock between them (each such stall makes late steps as it catches up), or
    # when the tick before fired late, so that the grid's next tick came less than two
    # states after it (counted as repeated_late; seen in about one run in ten on a
    # loaded machine). A tick after the engine's last state is past the run's end and
    # is not made (a tick there read the last state twice in about half of the runs).
    imu = rt.sensors["imu"]
    assert imu.fresh > 0 and imu.repeated_late is not None
    assert 0 <= imu.repeated_late <= imu.repeated
    assert imu.repeated - imu.repeated_late <= rt.late_steps, (imu, rt.late_steps)
    assert rt.to_dict()["sensors"]["imu"]["repeated"] == rt.sensors["imu"].repeated


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_consecutive_realtime_imu_samples_while_moving_are_of_different_instants(
        tmp_path) -> None:
    import json

    import numpy as np

    from dmxshm import logs

    pytest.importorskip("foxglove")
    path = str(tmp_path / "imu.mcap")
    s = run(mode="realtime", robots=1, camera=(0, 0), duration_s=1.5, agent="random", log=path)
    imu = [json.loads(m.data) for _, _, m in logs.messages(path, [logs.robot_topic(0, "imu")])]
    assert len(imu) == s.sensor_ticks["imu"][0] >= 20  # 150 at 100 Hz, fewer when loaded
    times = np.array([d["sim_time_s"] for d in imu])
    steps = np.array([d["step"] for d in imu])
    # Each sample carries the simulated time of the state it read: its step's.
    assert np.allclose(times, steps * (1 / 240)) and (np.diff(steps) >= 0).all()
    same = int((np.diff(steps) == 0).sum())
    assert same <= s.late_steps
    # Of different instants while the robot moves: what the IMU reads changes.
    values = np.array([d["acceleration_m_s2"] + d["angular_velocity_rad_s"] for d in imu])
    changed = (np.abs(np.diff(values, axis=0)).max(axis=1) > 0)[np.diff(steps) > 0]
    assert changed.mean() > 0.9


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_the_summary_counts_a_robot_running_into_a_barrier(tmp_path) -> None:  # noqa: ANN001
    import numpy as np

    from dmxshm.world.maps import load_map
    from tests.world.test_dtmaps import GYM_MAP

    plain = tmp_path / "plain.yaml"
    plain.write_text(GYM_MAP.split("objects:")[0])
    m = load_map(plain)
    ((x, y, _),) = m.start_poses(1, np.random.default_rng(0))
    start_cell = m.cell_of(x, y)
    # A barrier across the road in every straight but the one the robot starts on.
    lines = ["objects:"]
    for k, (col, row, rotate) in enumerate([(2, 1, 90), (1, 2, 0), (3, 2, 0), (2, 3, 90)]):
        if (row, col) != start_cell:
            lines += [f"  b{k}:", "    kind: barrier", f"    pos: [{col + 0.5}, {row + 0.5}]",
                      f"    rotate: {rotate}", "    height: 0.15"]
    walled = tmp_path / "walled.yaml"
    walled.write_text(GYM_MAP.split("objects:")[0] + "\n".join(lines) + "\n")
    s = run(map=str(walled), robots=1, camera=(0, 0), steps=400,
            agent="tests.agents:BlindLaneFollow")
    assert s.lane["object_collisions"] == [1]  # it hits one and stays against it
    assert s.lane["robot_collisions"] == [0]
    assert s.lane["distance_m"][0] < 2 * 0.6 * 2  # it never got round the loop
    # The lane follower that sees (its time of flight) stops short of the barrier.
    seeing = run(map=str(walled), robots=1, camera=(0, 0), steps=400, agent="lane-follow")
    assert seeing.lane["object_collisions"] == [0]
    assert seeing.lane["distance_m"][0] < s.lane["distance_m"][0]


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_routes_turn_robots_at_intersections_and_keep_them_on_the_road() -> None:
    s = run(map="grid", robots=4, camera=(0, 0), steps=900, route="seed")
    lane = s.lane
    assert lane["off_road_steps"] == [0, 0, 0, 0]
    turns = lane["turns"]
    assert all(turns["left"][i] + turns["right"][i] > 0 for i in range(4))
    assert max(lane["max_still_s"]) < 10.0
    # The same seed, the same turns and the same run; routes off, no turns counted.
    again = run(map="grid", robots=4, camera=(0, 0), steps=900, route="seed")
    assert again.trajectory_digest == s.trajectory_digest and again.lane["turns"] == turns
    off = run(map="grid", robots=4, camera=(0, 0), steps=50)
    assert "turns" not in off.lane and off.trajectory_digest != s.trajectory_digest


@pytest.mark.timeout(RUN_TIMEOUT_S)
@pytest.mark.parametrize("route, turned", [
    ("right,left", {"left": 1, "straight": 0, "right": 2}),
    ("straight", {"left": 0, "straight": 2, "right": 0}),
    # Robot 0 of seed 0 drives the ring clockwise: its 3-ways offer straight and right,
    # so a route of lefts goes straight on there.
    ("left", {"left": 0, "straight": 2, "right": 0}),
])
def test_turns_at_every_intersection_stay_on_the_road(route: str,
                                                       turned: dict[str, int]) -> None:
    s = run(map="grid", robots=1, camera=(0, 0), steps=700, route=route)
    assert s.lane["off_road_steps"] == [0]
    assert {k: v[0] for k, v in s.lane["turns"].items()} == turned


def test_a_bad_route_is_refused_before_start() -> None:
    with pytest.raises(ConfigError, match="turns from left, straight, right"):
        NetworkConfig(route="left,backwards")


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_moving_object_is_where_its_clock_says_in_every_process(tmp_path) -> None:  # noqa: ANN001
    from tests.world.test_dtmaps import GYM_MAP

    tiles = GYM_MAP.split("objects:")[0]
    obj = ("objects:\n  bot:\n    kind: duckiebot\n    pos: [2.5, 1.25]\n"
           "    rotate: 0\n    static: {}\n")
    moving, still = tmp_path / "moving.yaml", tmp_path / "still.yaml"
    moving.write_text(tiles + obj.format("false") + "    speed: 0.3\n")
    still.write_text(tiles + obj.format("true"))
    kw: dict = dict(robots=2, agent="lane-follow", seed=1, camera=(32, 24), steps=40)
    one = run(map=str(moving), **kw)
    split = run(map=str(moving), **{**kw, "renderers": 2, "agents": 2})
    parked = run(map=str(still), **kw)
    # Everything the run produced (poses, every sensor, camera images) is the same
    # over one renderer or two: each places the object by the state's time.
    assert one.trajectory_digest == split.trajectory_digest
    assert one.digests == split.digests
    cams = [k for k in one.digests if k.endswith("/camera")]
    assert cams and any(one.digests[k] != parked.digests[k] for k in cams)  # it moves in view

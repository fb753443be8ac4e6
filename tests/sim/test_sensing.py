"""The sensors' registry: every list of sensors derives from it, and a sensor added
through it alone reaches the record, the digest, the summary, the log and the replay."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from dmxshm import logs
from dmxshm.matrix.obs import obs_dtype as matrix_obs_dtype
from dmxshm.network import renderer
from dmxshm.network.config import NetworkConfig
from dmxshm.network.plan import make_plan, robot_obs_dtype
from dmxshm.network.results import EngineResult, RendererResult
from dmxshm.network.summary import summarize
from dmxshm.network.taps.digest import STREAM_ORDER, SampleDigest, StateDigest, combine
from dmxshm.sim import sensing
from dmxshm.sim.sensing import LogFields, Reading, Sensor, SensorError
from dmxshm.view import rings as view_rings
from dmxshm.world.world import World

STEPS = 6
COMMANDS_RAD_S = np.array([[6.0, 7.0], [5.0, 4.0]])  # both forward


def _speed(s: sensing.Sensing, r: Reading, out: np.ndarray) -> None:
    # forward speed: the world velocity along the robot's heading (x, y only)
    yaw = np.arctan2(2 * (r.rows["quat_xyzw"][:, 3] * r.rows["quat_xyzw"][:, 2]),
                     1 - 2 * r.rows["quat_xyzw"][:, 2] ** 2)
    vel = r.rows["lin_vel_m_s"]
    out[...] = vel[:, 0] * np.cos(yaw) + vel[:, 1] * np.sin(yaw)


SPEED = Sensor("speed", "speed_m_s", "<f4", (), _speed, rate_hz=50.0, log=LogFields(
    {"speed_m_s": "number"}, lambda v: {"speed_m_s": float(v)}, lambda d: d["speed_m_s"]))
"""A test's sensor: forward speed, m/s, 50 Hz."""


@pytest.fixture
def speed() -> Iterator[Sensor]:
    with sensing.registered(SPEED) as sensor:
        yield sensor
    assert "speed" not in sensing.SENSOR_NAMES


# -- derivations --------------------------------------------------------------------

def test_the_lists_are_the_registrys() -> None:
    timed = [s.name for s in sensing.sensors() if s.rate_hz is not None]
    assert list(renderer.SENSORS) == list(view_rings.SENSORS) == list(logs.SENSOR_TOPICS) \
        == list(STREAM_ORDER) == list(sensing.DEFAULT_RATES_HZ) == timed \
        == ["camera", "imu", "encoders", "tof"]
    assert dict(sensing.DEFAULT_RATES_HZ) == {"camera": 30.0, "imu": 100.0, "encoders": 30.0,
                                              "tof": 15.0}
    assert sensing.names(camera=False) == ("imu", "encoders", "tof")


def test_the_lists_follow_a_registration(speed: Sensor) -> None:
    for names in (renderer.SENSORS, view_rings.SENSORS, logs.SENSOR_TOPICS, STREAM_ORDER,
                  sensing.DEFAULT_RATES_HZ):
        assert list(names)[-1] == "speed"
    assert sensing.DEFAULT_RATES_HZ["speed"] == 50.0
    assert NetworkConfig(mode="realtime").sensor_rates_hz["speed"] == 50.0
    assert view_rings.obs_dtype(2, None)["produced"].shape == (5,)
    schema = logs._json_schema("speed")["properties"]
    assert schema["speed_m_s"] == {"type": "number"} and schema["step"] == {"type": "integer"}


@pytest.mark.parametrize("camera", [None, (0, 0), (4, 3), (160, 120)])
@pytest.mark.parametrize("route", [False, True])
def test_the_built_in_record_keeps_its_layout(camera: tuple[int, int] | None,
                                              route: bool) -> None:
    # The record is an ABI (docs/abi.md): the registry lays it out as before.
    assert sensing.obs_dtype(camera, route) == matrix_obs_dtype(camera, route)


def test_a_registered_sensor_is_stamped_in_the_record_before_the_image(
        speed: Sensor) -> None:
    record = sensing.obs_dtype((4, 3))
    assert record.names[-1] == "camera" and record["speed_m_s"] == np.dtype("<f4")
    assert record.names.index("speed_time_s") == record.names.index("tof_time_s") + 1
    before = matrix_obs_dtype((4, 3))
    for name in ("encoders", "imu", "tof_m", "lane"):  # every fixed field keeps its type
        assert record[name] == before[name]


def test_a_taken_name_or_field_is_refused(speed: Sensor) -> None:
    with pytest.raises(SensorError, match="registered already"):
        sensing.register(SPEED)
    with pytest.raises(SensorError, match="taken"):
        sensing.register(dataclasses.replace(SPEED, name="speed2", field="imu"))
    with pytest.raises(SensorError, match="LogFields"):
        sensing.register(dataclasses.replace(SPEED, name="speed3", field="s3", log=None))
    with pytest.raises(SensorError, match="no sensor 'nope'"):
        sensing.get("nope")


def test_sensing_fills_what_each_registered_function_gives(speed: Sensor) -> None:
    # The renderer's sensing: every robot at once, each sensor its registration's.
    cfg = NetworkConfig(robots=3, camera=(0, 0), steps=1)
    with World(cfg.map, cfg.robots, seed=cfg.seed, dt_s=cfg.dt_s,
               substeps=cfg.substeps) as world:
        world.apply_wheel_speeds(np.array([[5.0, 6.0], [4.0, 4.0], [-3.0, 3.0]]))
        world.step()
        states = world.state()
        fill = renderer._Sensing(cfg, world)
        obs = np.zeros(2, robot_obs_dtype(cfg))
        fill.fill(obs, (2, 0), states, 7, 0.25, ("imu", "speed"))
        reading = Reading(states, (2, 0), states[[2, 0]], 7, 0.25)
        for name in ("imu", "speed"):
            field = sensing.get(name).field
            assert np.array_equal(obs[field], fill.sample(name, reading))
            assert obs[f"{name}_time_s"].tolist() == [0.25, 0.25]
        assert obs["step"].tolist() == [7, 7]
        assert not obs["tof_m"].any() and obs["tof_time_s"].tolist() == [0.0, 0.0]
        assert obs["speed_m_s"][0] > 0 and obs["speed_m_s"][1] > 0  # both drive forward


# -- one registration reaches every place ---------------------------------------------

def _run_in_process(cfg: NetworkConfig, path: str) -> tuple[np.ndarray, dict[str, str], Any]:
    """A realtime network's engine and one renderer, in this process, for ``STEPS``
    states: the renderer's sensing, digest and log part, the engine's digest and log
    part, each state's samples all due (as a tick of every sensor). Returns the last
    records, the digests and the summary."""
    plan = make_plan(cfg)
    claim = logs.start(path, {k: v for k, v in dataclasses.asdict(cfg).items()
                              if not k.startswith("_")})
    assert claim
    robots = tuple(range(cfg.robots))
    made = sensing.names(camera=False)
    engine_log, renderer_log = logs.LogPart(path, "engine"), logs.LogPart(path, "renderer-0")
    samples, states_digest = SampleDigest(robots, made), StateDigest()
    obs = np.zeros(cfg.robots, robot_obs_dtype(cfg))
    with cfg.engine_world() as engine, \
            World(cfg.map, cfg.robots, seed=cfg.seed, dt_s=cfg.dt_s,
                  substeps=cfg.substeps) as scene:
        fill = renderer._Sensing(cfg, scene)
        for k in range(STEPS):
            states, sim_time_s, wall_ns = engine.state(), engine.sim_time_s, time.time_ns()
            states_digest.state(k, sim_time_s, states)
            scene.set_poses(states, sim_time_s)
            fill.fill(obs, robots, states, k, sim_time_s, made)
            samples.samples(k, sim_time_s, robots, obs, made)
            renderer_log.sensors(robots, obs, made, wall_ns)
            states_digest.commands(k, sim_time_s, COMMANDS_RAD_S, None)
            engine_log.wheels(k, sim_time_s, wall_ns, COMMANDS_RAD_S)
            engine.apply_wheel_speeds(COMMANDS_RAD_S)
            engine.step()
        states = engine.state()
        states_digest.end(STEPS, engine.sim_time_s, states)
        sim_time_s = engine.sim_time_s
    engine_log.close()
    renderer_log.close()
    produced = dict.fromkeys(made, STEPS)
    results = {
        "engine": EngineResult(steps=STEPS, sim_time_s=sim_time_s, wall_time_s=1.0,
                               physics_s=0.0, metrics_s=0.0, pose_digest="",
                               digests=states_digest.hexdigests(), rejected_commands=[0, 0],
                               expired_commands=[0, 0], lane={}),
        "renderer-0": RendererResult(steps=STEPS, render_s=0.0, produced=produced, frames={},
                                     recorded=0, elapsed_s=1.0, fresh=produced,
                                     digests=samples.hexdigests())}
    summary = summarize(plan, results)
    logs.finish(path, summary.to_dict())
    return obs, {**states_digest.hexdigests(), **samples.hexdigests()}, summary


def test_a_sensor_added_through_the_registry_alone_reaches_every_place(
        speed: Sensor, tmp_path) -> None:
    pytest.importorskip("foxglove", reason="the log extra (pip install 'dmxshm[log]')")
    from dmxshm.network.realtime_replay import replay_realtime
    from dmxshm.network.replay import load

    cfg = NetworkConfig(mode="realtime", robots=2, camera=(0, 0), duration_s=1.0)
    path = str(tmp_path / "run.mcap")
    obs, digests, summary = _run_in_process(cfg, path)
    # the record
    assert "speed_m_s" in obs.dtype.names and "speed_time_s" in obs.dtype.names
    assert (obs["speed_m_s"] > 0).all()
    # the digest: a stream per robot, folded into the trajectory digest
    assert {"robot00/speed", "robot01/speed"} <= set(digests)
    streams = {k: v for k, v in digests.items() if k.startswith("robot")}
    without = {k: v for k, v in streams.items() if not k.endswith("/speed")}
    assert combine(digests["states"], digests["commands"], streams) != \
        combine(digests["states"], digests["commands"], without)
    # the summary
    assert summary.sensors["speed"].configured_hz == 50.0
    assert summary.sensor_ticks["speed"] == [STEPS]
    assert summary.digests["robot01/speed"] == digests["robot01/speed"]
    # the log: a topic per robot, with the sensor's schema, a message per sample
    info = {t.topic: t for t in logs.info(path).topics}
    assert info["/robot01/speed"].schema == "dmxshm.speed"
    assert info["/robot01/speed"].messages == STEPS
    last = [json.loads(m.data) for topic, _, m in logs.messages(path)
            if topic == "/robot01/speed"][-1]
    assert last["step"] == STEPS - 1 and np.float32(last["speed_m_s"]) == obs["speed_m_s"][1]
    # the replay: every logged sample recomputed from its state, the streams rehashed
    rec = load(path)
    assert len(rec.samples[1, "speed"]) == STEPS
    replayed = replay_realtime(rec, camera=False)
    assert replayed.first_difference is None, replayed.first_difference
    assert replayed.samples == 2 * STEPS * 4  # 2 robots, 6 states, imu encoders tof speed
    assert replayed.digests["robot00/speed"] == digests["robot00/speed"]
    assert replayed.trajectory_digest == summary.trajectory_digest

"""The ``--json`` schemas keep their keys and types (docs/json.md).

The tables below are the schema of today, key path -> JSON type: every key of
a table must be in a real run's JSON with that type, and keys not in the
tables are allowed (adding a key changes nothing). A key renamed or removed,
or a type changed, fails here: then bump ``SCHEMA_VERSION``
(``dmxshm/network/summary.py``), list the change in CHANGELOG.md as
**Breaking:**, and change docs/json.md and these tables together.

Paths: ``a.b`` is key ``b`` of object ``a``; ``a.*`` every value of an object
whose keys vary (role names, sensors, states); ``a[].b`` key ``b`` of every
element of array ``a``. Types: ``integer``, ``number`` (an integer or not),
``string``, ``boolean``, ``null``, ``object``, ``array<T>``, ``any``, and
``T|U`` for either. The runs' JSON is what a reader of the file gets: the
summary through ``json`` (object keys become strings), NaN refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dmxshm.network import NetworkConfig
from dmxshm.network import run as run_network
from dmxshm.network.summary import SCHEMA_VERSION
from dmxshm.spine.run import SpineConfig
from dmxshm.spine.run import run as run_spine

RUN_TIMEOUT_S = 60
# Short runs with a small camera: every key there, in a few seconds each.
SMALL = dict(camera=(32, 24), wait_timeout_s=10.0)
SENSORS = ("camera", "imu", "encoders", "tof")

# -- dmxshm run --json: every mode ------------------------------------------------
SUMMARY: dict[str, str] = {
    "schema_version": "integer",
    "mode": "string",
    "robots": "integer",
    "seed": "integer",
    "map": "string",
    "steps": "integer",
    "sim_time_s": "number",
    "wall_time_s": "number",
    "steps_per_s": "number",
    "final_poses": "array<array<number>>",
    "start_poses": "array<array<number>>",
    "physics": "string",
    "physics_dt_s": "number",
    "trajectory_digest": "string",
    "pose_digest": "string",
    "digests": "object",
    "digests.states": "string",
    "digests.commands": "string",
    "digests.*": "string",
    "sensors": "object",
    **{f"sensors.{s}.{k}": "number" for s in SENSORS for k in ("configured_hz", "achieved_hz")},
    "drops": "object",
    "drops.commands": "integer",
    "drops.observations": "integer",
    "drops.states": "integer",
    "rejected_commands": "array<integer>",
    "received_commands": "array<integer>",
    "first_rejections": "object",
    "first_rejections.*": "string",
    "slots": "array<object>",
    "timing": "object",
    **{f"timing.{k}": "number"
       for k in ("step_s", "physics_s", "rendering_s", "agents_s", "metrics_s")},
    "lane": "object",
    "lane.max_abs_offset_m": "array<number>",
    "lane.off_road_steps": "array<integer>",
    "lane.distance_m": "array<number>",
    "lane.robot_collisions": "array<integer>",
    "lane.object_collisions": "array<integer>",
    "noise": "object",
    **{f"noise.{part}": "object" for part in ("imu", "encoders", "tof", "camera")},
    **{f"noise.{part}.*": "number" for part in ("imu", "encoders", "tof", "camera")},
    "camera.model": "string",
    "camera.width": "integer",
    "camera.height": "integer",
    "missed_sensor_ticks": "object",
    **{f"missed_sensor_ticks.{s}": "integer" for s in SENSORS},
    "sensor_ticks": "object",
    **{f"sensor_ticks.{s}": "array<integer>" for s in SENSORS},
    "busy_us": "object",
    "busy_us.*": "number",
    **{f"busy_us.{role}": "number" for role in ("engine", "renderer-0", "agent-0")},
    "busy_fraction": "object",
    "busy_fraction.*": "number",
    **{f"busy_fraction.{role}": "number" for role in ("engine", "renderer-0", "agent-0")},
    "spine": "object",
    "log": "object",
    "renderer": "string",
    "renderer_device": "string|null",
    "recorded_frames": "integer",
    "contact_sheet": "string|null",
    "unfinished": "array<string>",
    "shm_bytes": "integer",
    "processes": "array<object>",
    "profile": "object",
    "start_hook": "any",
    "interrupted": "boolean",
}

GYM = {
    **SUMMARY,
    # No command timeout and no schedule in gym mode: nothing to count.
    "expired_commands": "null",
    "late_steps": "null",
    "max_lag_s": "null",
    "command_latency": "null",
    "timing.framework_s": "number",
    "timing.framework_fraction": "number",
}

REALTIME = {
    **SUMMARY,
    "expired_commands": "array<integer>",
    "late_steps": "integer",
    "max_lag_s": "number",
    "command_latency.agent-0.p50_s": "number",
    "command_latency.agent-0.p99_s": "number",
    "command_latency.agent-0.n": "integer",
    "sensors.camera.forwarded_hz": "number",
    "busy_us.camera-0": "number",
    "busy_fraction.camera-0": "number",
}


def _stats(prefix: str, keys: tuple[str, ...] = ("p50", "p99", "max")) -> dict[str, str]:
    return {prefix: "object", **{f"{prefix}.{k}": "number" for k in keys}}


# -- the network spine's report: "spine" of a realtime --spine run ------------------
NETWORK_SPINE = {
    "spine.cpu": "integer",
    "spine.scheduling": "string",
    "spine.cycles": "integer",
    "spine.stop_cycles": "integer",
    "spine.skipped_cycles": "integer",
    "spine.frequency_hz": "number",
    **_stats("spine.period_us"),
    "spine.period_error_us_p99": "number",
    "spine.expired_commands": "array<integer>",
    "spine.received_commands": "array<integer>",
    "spine.last_engine_step": "integer",
    "spine.agent_command_drops": "integer",
    "spine.host_steal_s": "number",
    "spine.timing": "object",
    "spine.timing.records": "integer",
    "spine.timing.states": "object",
    "spine.timing.states.*": "integer",
    **_stats("spine.timing.period_us"),
    "spine.timing.period_error_us_p99": "number",
    "spine.timing.overruns": "object",
    "spine.timing.overruns.count": "integer",
    "spine.timing.overruns.longest_us": "number",
    "spine.timing.delivery_us": "object",
    **_stats("spine.timing.delivery_us.spine_to_engine"),
    **_stats("spine.timing.delivery_us.engine_to_spine"),
    **_stats("spine.timing.engine_step_us"),
    **_stats("spine.timing.send_minus_obs_us"),
    **_stats("spine.timing.send_minus_act_us"),
    "spine.timing.predicted": "object",
    "spine.timing.predicted.schedule": "string",
    "spine.timing.predicted.reply_at_us": "number",
    "spine.timing.predicted.send_minus_obs_us": "number",
    "spine.timing.minus_predicted_us": "object",
    **_stats("spine.timing.minus_predicted_us.send_minus_obs_us", ("p50", "p99")),
}

SPINE_RUN = {
    **{k: v for k, v in REALTIME.items() if not k.startswith("command_latency.")},
    **NETWORK_SPINE,
    # The spine keeps the schedule (its report has the periods): no engine step is late.
    "late_steps": "null",
    "max_lag_s": "null",
    # The spine takes the agents' commands: the engine measures no agent's latency.
    "command_latency": "null",
}

# -- --profile (docs/profiling.md) and --log (docs/logging.md) ---------------------
PROFILED = {
    "processes[].role": "string",
    "processes[].pid": "integer",
    "processes[].affinity": "array<integer>",
    "processes[].affinity_changes": "integer",
    "processes[].cores_seen": "array<integer>",
    "processes[].stayed_in_affinity": "boolean",
    "processes[].cpu_percent_mean": "number",
    "processes[].cpu_percent_peak": "number",
    "processes[].user_percent_mean": "number",
    "processes[].system_percent_mean": "number",
    "processes[].rss_bytes_peak": "integer",
    "processes[].uss_bytes": "integer|null",
    "processes[].pss_bytes": "integer|null",
    "processes[].ctx_switches_voluntary": "integer",
    "processes[].ctx_switches_involuntary": "integer",
    "processes[].samples": "integer",
    "profile.interval_s": "number",
    "profile.mean_interval_s": "number|null",
    "profile.samples": "integer",
    "profile.cores": "integer",
    "profile.sampler_cpu_fraction": "number",
    "profile.sampler_cpu_s": "number",
    "profile.timeline": "object",
    "profile.timeline.*": "object",
    "profile.timeline.*.t_s": "array<number>",
    "profile.timeline.*.cpu_percent": "array<number>",
    "profile.timeline.*.rss_bytes": "array<integer>",
    "profile.shm": "object",
    "profile.shm.*": "integer",
    "profile.shm_bytes": "integer",
}

LOGGED = {
    "log.path": "string",
    "log.size_bytes": "integer",
    "log.duration_s": "number",
    "log.topics": "array<object>",
    "log.topics[].topic": "string",
    "log.topics[].schema": "string",
    "log.topics[].messages": "integer",
    "log.topics[].rate_hz": "number",
}

# -- dmxshm spine --json (with --agent) ---------------------------------------------
_SPINE_STATS = ("mean", "p50", "p99")
SPINE_REPORT = {
    "schema_version": "integer",
    "schedule": "string",
    "frequency_hz": "number",
    "actuation": "string",
    "cpu": "integer",
    "bus_cpu": "integer|null",
    "scheduling": "string",
    "bus_scheduling": "string|null",
    "cycles": "integer",
    "acting_cycles": "integer",
    "skipped_cycles": "integer",
    "overruns": "object",
    "overruns.count": "integer",
    "overruns.longest_us": "number",
    **_stats("period_us"),
    "period_error_us_p99": "number",
    **_stats("can_cycle_us", ("p50", "p99")),
    "plan_us_p50": "number",
    "reply_at_us_p50": "number",
    "delivery_us": "object",
    **_stats("delivery_us.spine_to_bus", _SPINE_STATS),
    **_stats("delivery_us.bus_to_spine", _SPINE_STATS),
    **_stats("send_minus_obs_us", _SPINE_STATS),
    **_stats("send_minus_act_us", _SPINE_STATS),
    "predicted": "object",
    "predicted.send_minus_obs_us": "number",
    "predicted.send_minus_act_us": "number|null",  # null with an agent: no law
    "minus_predicted_us": "object",
    **_stats("minus_predicted_us.send_minus_obs_us", _SPINE_STATS),
    "minus_predicted_us.send_minus_act_us": "object|null",
    "states": "object",
    **{f"states.{s}": "integer" for s in ("SEND_STOPS", "RESET", "IDLE", "ACT", "SHUTDOWN")},
    "shm_bytes": "integer",
    "host_steal_s": "number|null",
    "config": "object",
    **{f"config.{k}": t for k, t in {
        "schedule": "string", "frequency_hz": "number", "cpu": "integer|null",
        "bus_cpu": "integer|null", "actuation": "string", "can_cycle_s": "number",
        "reply_at_s": "number|null", "jitter_s": "number", "bus_delay_s": "number",
        "plan_s": "number", "duration_s": "number", "stop_cycles": "integer",
        "wheel_speed_rad_s": "number", "realtime_priority": "boolean",
        "timeout_s": "number", "seed": "integer", "agent": "string|null",
        "action_timeout_s": "number"}.items()},
    # With --agent:
    "agent_round_trip_us": "object",
    **_stats("agent_round_trip_us.to_frame", _SPINE_STATS),
    **_stats("agent_round_trip_us.to_observation", _SPINE_STATS),
    "agent": "object",
    "agent.started": "boolean",
    "agent.hung": "boolean",
    "agent.failed": "string|null",
    "agent.actions": "integer",
    "agent.expired_actions": "integer",
    **_stats("agent.round_trip_us", ("p50", "p99")),
    "agent.round_trip_us.samples": "integer",
}


# -- checking ---------------------------------------------------------------------
def is_type(value: Any, name: str) -> bool:
    """Whether ``value`` (parsed JSON) has the JSON type ``name`` (see the module docstring).

    Example:
        >>> is_type([[1, 2.5]], "array<array<number>>"), is_type(True, "integer")
        (True, False)
        >>> is_type(None, "string|null"), is_type(3, "number")
        (True, True)
    """
    if name.startswith("array<") and name.endswith(">"):
        return isinstance(value, list) and all(is_type(v, name[6:-1]) for v in value)
    if "|" in name:
        return any(is_type(value, alt) for alt in name.split("|"))
    checks = {
        "any": lambda v: True,
        "null": lambda v: v is None,
        "boolean": lambda v: isinstance(v, bool),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "string": lambda v: isinstance(v, str),
        "object": lambda v: isinstance(v, dict),
    }
    return checks[name](value)


def resolve(data: Any, path: str) -> Iterator[tuple[str, Any]]:
    """``(concrete path, value)`` of each value that ``path`` names in ``data``;
    a fixed key that is not there gives ``(path, KeyError)``.

    Example:
        >>> list(resolve({"a": [{"b": 1}, {"b": 2}], "c": {"x": 3}}, "a[].b"))
        [('a[0].b', 1), ('a[1].b', 2)]
        >>> list(resolve({"c": {"x": 3}}, "c.*")), list(resolve({}, "d"))
        ([('c.x', 3)], [('d', <class 'KeyError'>)])
    """
    head, _, rest = path.partition(".")
    many = head.endswith("[]")
    key = head[:-2] if many else head
    if key == "*":
        items = list(data.items()) if isinstance(data, dict) else []
    elif isinstance(data, dict) and key in data:
        items = [(key, data[key])]
    else:
        yield path, KeyError
        return
    for name, value in items:
        children = ([(f"{name}[{i}]", v) for i, v in enumerate(value)]
                    if many and isinstance(value, list) else [(name, value)])
        for here, child in children:
            if not rest:
                yield here, child
            else:
                yield from ((f"{here}.{sub}", v) for sub, v in resolve(child, rest))


def mismatches(data: dict[str, Any], table: dict[str, str]) -> list[str]:
    """Every frozen key that ``data`` lacks or holds with another type."""
    out = []
    for path, type_name in table.items():
        for where, value in resolve(data, path):
            if value is KeyError:
                out.append(f"{where}: missing (frozen as {type_name})")
            elif not is_type(value, type_name):
                out.append(f"{where}: {json.dumps(value)[:60]} is not {type_name}")
    return out


def as_read(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as a reader of the JSON file gets it (valid JSON: no NaN)."""
    return json.loads(json.dumps(data, allow_nan=False))


# -- real runs --------------------------------------------------------------------
@pytest.fixture(scope="module")
def gym(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pytest.importorskip("mcap")
    log = tmp_path_factory.mktemp("json") / "run.mcap"
    summary = run_network(NetworkConfig(steps=10, log=str(log), **SMALL))  # type: ignore[arg-type]
    return as_read(summary.to_dict())


@pytest.fixture(scope="module")
def realtime() -> dict[str, Any]:
    summary = run_network(NetworkConfig(mode="realtime", duration_s=1.0, profile=True,
                                        profile_interval_s=0.2, **SMALL))  # type: ignore[arg-type]
    return as_read(summary.to_dict())


@pytest.fixture(scope="module")
def spine_run() -> dict[str, Any]:
    summary = run_network(NetworkConfig(mode="realtime", spine=True, duration_s=0.5,
                                        **SMALL))  # type: ignore[arg-type]
    return as_read(summary.to_dict())


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_gym_summary_keeps_its_keys_and_types(gym: dict[str, Any]) -> None:
    assert gym["schema_version"] == SCHEMA_VERSION == 2
    assert mismatches(gym, {**GYM, **LOGGED}) == []
    assert gym["log"]["topics"], "no topic: the log's rows were not checked"


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_realtime_summary_keeps_its_keys_and_types(realtime: dict[str, Any]) -> None:
    assert mismatches(realtime, {**REALTIME, **PROFILED}) == []
    assert realtime["processes"], "no process row: the profile's rows were not checked"


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_spine_run_summary_keeps_its_keys_and_types(spine_run: dict[str, Any]) -> None:
    assert mismatches(spine_run, SPINE_RUN) == []
    assert spine_run["spine"]["timing"]["states"]


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_spine_report_keeps_its_keys_and_types() -> None:
    report, _ = run_spine(SpineConfig(duration_s=0.3, agent="forward"))
    data = as_read(report.to_dict())
    assert mismatches(data, SPINE_REPORT) == []
    assert data["schema_version"] == SCHEMA_VERSION


def test_a_changed_key_fails_the_check() -> None:
    # The check itself: a rename, a removal and a type change are each found;
    # a new key is not.
    frozen = {"steps": "integer", "timing.step_s": "number", "busy_us.*": "number"}
    today = {"steps": 3, "timing": {"step_s": 0.1}, "busy_us": {"engine": 1.0}}
    assert mismatches({**today, "new_key": "x"}, frozen) == []
    assert mismatches({**today, "timing": {"step_ms": 100.0}}, frozen) == [
        "timing.step_s: missing (frozen as number)"]
    assert mismatches({"timing": {"step_s": 0.1}, "busy_us": {}}, frozen) == [
        "steps: missing (frozen as integer)"]
    assert mismatches({**today, "steps": 3.0, "busy_us": {"engine": "1"}}, frozen) == [
        "steps: 3.0 is not integer", 'busy_us.engine: "1" is not number']


def test_docs_name_every_frozen_top_level_key() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "json.md").read_text()
    tables = (GYM, REALTIME, SPINE_RUN, SPINE_REPORT)
    top = {path.split(".")[0].removesuffix("[]") for table in tables for path in table}
    assert sorted(k for k in top if f"`{k}`" not in doc) == []
    assert "| `schema_version` | integer |" in doc and f"currently {SCHEMA_VERSION}" in doc

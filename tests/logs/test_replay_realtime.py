"""A realtime run replays sample for sample, and a log with one altered message does
not, naming it (dmxshm.network.realtime_replay)."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pytest
from click.testing import CliRunner

pytest.importorskip("mcap")
pytest.importorskip("foxglove")

from dmxshm import logs  # noqa: E402
from dmxshm.cli import EXIT_ERROR, cli  # noqa: E402
from dmxshm.network import NetworkConfig, run  # noqa: E402
from dmxshm.network.realtime_replay import camera_sample  # noqa: E402
from dmxshm.network.replay import ReplayError, replay  # noqa: E402

pytestmark = pytest.mark.timeout(120)


def altered(src: str, dst: str, topic: str, index: int,
            change: Callable[[bytes], bytes]) -> None:
    """Copy the log ``src`` to ``dst`` with message ``index`` of ``topic`` changed."""
    from mcap.reader import make_reader
    from mcap.writer import Writer

    with open(src, "rb") as f, open(dst, "wb") as out:
        writer = Writer(out)
        writer.start()
        schemas: dict[int, int] = {}
        channels: dict[int, int] = {}
        seen = 0
        for schema, channel, msg in make_reader(f).iter_messages(log_time_order=True):
            if schema is not None and schema.id not in schemas:
                schemas[schema.id] = writer.register_schema(schema.name, schema.encoding,
                                                            schema.data)
            if channel.id not in channels:
                channels[channel.id] = writer.register_channel(
                    channel.topic, channel.message_encoding,
                    schemas.get(channel.schema_id, 0), channel.metadata)
            data = msg.data
            if channel.topic == topic:
                if seen == index:
                    data = change(data)
                seen += 1
            writer.add_message(channels[channel.id], msg.log_time, data, msg.publish_time,
                               msg.sequence)
        writer.finish()
    assert seen > index, f"the log has {seen} messages on {topic}, none to change at {index}"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, object]:
    path = str(tmp_path_factory.mktemp("rt") / "rt.mcap")
    summary = run(NetworkConfig(mode="realtime", robots=2, duration_s=1.0, agent="random",
                                camera=(24, 16), log=path, wait_timeout_s=10.0))
    return path, summary


def test_an_untouched_log_replays_equal(recorded: tuple[str, object]) -> None:
    path, s = recorded
    result = replay(path)
    assert result.equal and result.digest_equal and result.first_difference is None
    assert result.replayed.trajectory_digest == s.trajectory_digest  # type: ignore[attr-defined]
    # Its samples are replayed as recorded: another camera size is refused, with why.
    with pytest.raises(ReplayError, match="recorded size or 0x0"):
        replay(path, camera=(48, 32))


def test_one_altered_imu_message_is_named(recorded: tuple[str, object], tmp_path) -> None:
    path, _ = recorded
    topic = logs.robot_topic(1, "imu")
    d = [json.loads(m.data) for _, _, m in logs.messages(path, [topic])][7]

    def nudge(data: bytes) -> bytes:
        msg = json.loads(data)
        msg["angular_velocity_rad_s"][2] = float(np.nextafter(np.float32(
            msg["angular_velocity_rad_s"][2]), np.float32(1.0)))  # one float32 step
        return json.dumps(msg).encode()

    bad = str(tmp_path / "bad.mcap")
    altered(path, bad, topic, 7, nudge)
    result = replay(bad)
    assert not result.equal
    diff = result.first_difference
    assert (diff.step, diff.robot, diff.topic) == (d["step"], 1, topic)
    # The recomputed samples still hash to the recorded digest: what differs is the log.
    assert result.digest_equal
    r = CliRunner().invoke(cli, ["replay", bad])
    assert r.exit_code == EXIT_ERROR, r.output
    assert f"first difference: step {d['step']}, robot 1, {topic}" in r.output


def test_one_altered_command_is_found(recorded: tuple[str, object], tmp_path) -> None:
    path, _ = recorded
    topic = logs.robot_topic(0, "wheels")

    def faster(data: bytes) -> bytes:
        msg = json.loads(data)
        msg["left_rad_s"] += 1.0
        return json.dumps(msg).encode()

    bad = str(tmp_path / "bad-command.mcap")
    altered(path, bad, topic, 40, faster)
    result = replay(bad)
    assert not result.equal and not result.digest_equal
    assert "commands" in result.differing and "states" in result.differing
    assert result.first_difference is not None and result.first_difference.step > 40


def test_a_damaged_frame_is_a_log_error_naming_it(recorded: tuple[str, object],
                                                  tmp_path) -> None:
    path, _ = recorded
    bad = str(tmp_path / "bad-frame.mcap")
    # The first frame: a loaded machine's realtime camera may make few in its second.
    altered(path, bad, logs.robot_topic(0, "camera"), 0, lambda data: data[:-40])
    with pytest.raises(logs.LogError, match="/robot00/camera"):
        replay(bad)


def test_a_logged_frame_is_read_without_a_protobuf_library() -> None:
    from foxglove import messages as m

    msg = m.CompressedImage(timestamp=m.Timestamp(3, 500), frame_id="robot00/camera",
                            data=b"\x89PNG-bytes", format="png")
    sample = camera_sample(msg.encode())
    assert (sample.step, sample.sim_ns, sample.value) == (None, 3_000_000_500, b"\x89PNG-bytes")

"""dmxshm.network.replay's result: the verdict travels with the replay, to the CLI and its JSON.

(Replays of real runs, and the refusals of logs that cannot be replayed, are in
tests/logs/test_logs.py, beside the logs they read.)
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from dmxshm.cli import EXIT_ERROR, cli
from dmxshm.network import NetworkConfig
from dmxshm.network import replay as rp
from dmxshm.network.realtime_replay import Difference, RealtimeReplay

pytestmark = pytest.mark.timeout(60)

RECORDED = "ab" * 32
STREAMS = {"states": "11" * 32, "commands": "22" * 32, "robot00/imu": "33" * 32}


def recording(**config: object) -> rp.Recording:
    """A recording of a 5-step run of one robot whose digest is :data:`RECORDED`."""
    base = {"mode": "realtime", "robots": 1, "renderers": 1, "agents": 1, "camera": [0, 0],
            "seed": 3, "map": "loop", "dt_s": 0.05, "substeps": 2, "wait_timeout_s": 4.0}
    return rp.Recording({**base, **config},
                        {"trajectory_digest": RECORDED, "wall_time_s": 2.5, "steps": 5,
                         "digests": STREAMS},
                        np.zeros((5, 1, 2)))


def replayed(digest: str, **streams: str) -> RealtimeReplay:
    return RealtimeReplay("realtime", 5, 0.1, digest, "ee" * 32,
                          {**STREAMS, **{k.replace("_", "/"): v for k, v in streams.items()}},
                          [[0.0, 0, 0]], samples=5)


def test_the_verdict_is_every_streams_equality_and_no_differing_sample() -> None:
    same = rp.ReplayResult(recording(), replayed(RECORDED))
    assert same.equal and same.digest_equal and same.in_process
    data = same.to_dict()
    assert data["recorded_digest"] == RECORDED and data["digest_equal"] and data["equal"]
    assert data["trajectory_digest"] == RECORDED and data["steps"] == 5
    other = rp.ReplayResult(recording(), replayed("cd" * 32, robot00_imu="44" * 32))
    assert not other.equal and not other.digest_equal and other.differing == ["robot00/imu"]
    sample = replayed(RECORDED)
    sample.first_difference = Difference(3, 0, "/robot00/imu", "[1.]", "[2.]")
    named = rp.ReplayResult(recording(), sample)
    assert not named.equal and named.digest_equal
    assert named.to_dict()["first_difference"]["step"] == 3
    # A replay that left a stream out is equal on what it compared, not digest-equal.
    part = replayed("cd" * 32)
    del part.digests["robot00/imu"]
    partial = rp.ReplayResult(recording(), part)
    assert partial.equal and not partial.digest_equal
    assert partial.not_replayed == ["robot00/imu"]


def test_the_recorded_runs_figures_are_read_from_its_log() -> None:
    rec = recording()
    assert (rec.mode, rec.steps, rec.wall_time_s, rec.trajectory_digest) == (
        "realtime", 5, 2.5, RECORDED)


def test_a_log_older_than_a_field_replays_with_the_fields_default() -> None:
    cfg = rp.replay_config(recording(), "idle")
    defaults = NetworkConfig()
    assert (cfg.renderer, cfg.spine, cfg.spine_hz) == (defaults.renderer, defaults.spine,
                                                       defaults.spine_hz)
    # A realtime run's gym replay steps its Bullet step (0.05 / 2 / 5: at most half
    # the 100 Hz IMU's period), one a step.
    assert (cfg.mode, cfg.steps, cfg.seed, cfg.dt_s, cfg.substeps) == ("gym", 5, 3, 0.005, 1)
    assert rp.replay_config(recording(mode="gym"), "idle").dt_s == 0.05
    assert rp.replay_config(recording(spine_hz=250.0, spine=True), "idle").spine_hz == 250.0


@pytest.mark.parametrize("digest, code, word", [(RECORDED, 0, "EQUAL"),
                                                ("cd" * 32, EXIT_ERROR, "DIFFERENT")])
def test_the_cli_prints_the_libraries_verdict_and_exits_on_it(
        digest: str, code: int, word: str, tmp_path, monkeypatch) -> None:  # noqa: ANN001
    rec = recording()
    monkeypatch.setattr(rp, "prepare", lambda path, **kw: rec)
    monkeypatch.setattr(rp, "run_recording",
                        lambda rec, path, **kw: rp.ReplayResult(
                            rec, replayed(digest, **({} if digest == RECORDED
                                                     else {"robot00_imu": "44" * 32}))))
    out = tmp_path / "replay.json"
    result = CliRunner().invoke(cli, ["replay", str(tmp_path / "run.mcap"), "--json", str(out)])
    assert result.exit_code == code, result.output
    assert f"recorded run (realtime mode, 5 steps, 2.5 s): digest {RECORDED}" in result.output
    assert f"replay: 5 steps in 0.1 s; its digest {digest}" in result.output
    assert f"replay: digest {word}" in result.output
    assert json.loads(out.read_text())["digest_equal"] is (code == 0)

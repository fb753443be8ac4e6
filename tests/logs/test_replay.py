"""dmxshm.replay's result: the verdict travels with the replay, to the CLI and its JSON.

(Replays of real runs, and the refusals of logs that cannot be replayed, are in
tests/logs/test_logs.py, beside the logs they read.)
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from dmxshm import replay as rp
from dmxshm.cli import EXIT_ERROR, cli
from dmxshm.network import NetworkConfig

pytestmark = pytest.mark.timeout(60)

RECORDED = "ab" * 32


def recording(**config: object) -> rp.Recording:
    """A recording of a 5-step run of one robot whose digest is :data:`RECORDED`."""
    base = {"mode": "realtime", "robots": 1, "renderers": 1, "agents": 1, "camera": [0, 0],
            "seed": 3, "map": "loop", "dt_s": 0.05, "substeps": 2, "wait_timeout_s": 4.0}
    return rp.Recording({**base, **config},
                        {"trajectory_digest": RECORDED, "wall_time_s": 2.5, "steps": 5},
                        np.zeros((5, 1, 2)))


def physics(digest: str) -> rp.PhysicsReplay:
    return rp.PhysicsReplay("physics of the spine's CAN cycles", 5, 0.1, digest, [[0.0, 0, 0]])


@pytest.mark.parametrize("digest, equal", [(RECORDED, True), ("cd" * 32, False)])
def test_the_verdict_is_the_digests_equality(digest: str, equal: bool) -> None:
    result = rp.ReplayResult(recording(), physics(digest))
    assert result.digest_equal is equal and result.physics_only
    data = result.to_dict()
    assert data["recorded_digest"] == RECORDED and data["digest_equal"] is equal
    assert data["trajectory_digest"] == digest and data["steps"] == 5


def test_the_recorded_runs_figures_are_read_from_its_log() -> None:
    rec = recording()
    assert (rec.mode, rec.steps, rec.wall_time_s, rec.trajectory_digest) == (
        "realtime", 5, 2.5, RECORDED)


def test_a_log_older_than_a_field_replays_with_the_fields_default() -> None:
    cfg = rp.replay_config(recording(), "idle")
    defaults = NetworkConfig()
    assert (cfg.renderer, cfg.spine, cfg.spine_hz) == (defaults.renderer, defaults.spine,
                                                       defaults.spine_hz)
    assert (cfg.mode, cfg.steps, cfg.seed, cfg.dt_s, cfg.substeps) == ("gym", 5, 3, 0.05, 2)
    assert rp.replay_config(recording(spine_hz=250.0, spine=True), "idle").spine_hz == 250.0


@pytest.mark.parametrize("digest, code, word", [(RECORDED, 0, "EQUAL"),
                                                ("cd" * 32, EXIT_ERROR, "DIFFERENT")])
def test_the_cli_prints_the_libraries_verdict_and_exits_on_it(
        digest: str, code: int, word: str, tmp_path, monkeypatch) -> None:  # noqa: ANN001
    rec = recording()
    monkeypatch.setattr(rp, "prepare", lambda path, **kw: rec)
    monkeypatch.setattr(rp, "run_recording",
                        lambda rec, path, **kw: rp.ReplayResult(rec, physics(digest)))
    out = tmp_path / "replay.json"
    result = CliRunner().invoke(cli, ["replay", str(tmp_path / "run.mcap"), "--json", str(out)])
    assert result.exit_code == code, result.output
    assert f"recorded run (realtime mode, 5 steps, 2.5 s): digest {RECORDED}" in result.output
    assert f"replay: 5 steps in 0.1 s; digest {word}" in result.output
    assert json.loads(out.read_text())["digest_equal"] is (code == 0)

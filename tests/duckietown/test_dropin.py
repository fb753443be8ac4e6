"""The gym-duckietown drop-in (dmxshm.duckietown): gymnasium's checker, gym-duckietown's
constructor arguments (honoured or refused with the reason), its action conventions
and reward, a script written for gym-duckietown with one import changed, batches."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from dmxshm import duckietown as dropin
from dmxshm.duckietown import DropInError, DuckietownEnv, Simulator, legacy

pytestmark = pytest.mark.timeout(120)
SMALL = dict(camera_width=32, camera_height=24)
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("cls", [Simulator, DuckietownEnv])
def test_both_pass_gymnasiums_checker(cls: type) -> None:
    env = cls(map_name="loop", **SMALL)
    check_env(env, skip_render_check=True)
    env.close()


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(draw_curve=True), "draw_curve=True is not supported"),
    (dict(draw_bbox=True), "draw_bbox=True is not supported"),
    (dict(randomize_maps_on_reset=True), "an env keeps its map"),
    (dict(style="synthetic"), "style='synthetic' is not supported"),
    (dict(num_tris_distractors=3), "no distractor triangles"),
    (dict(enable_leds=True), "enable_leds=True"),
    (dict(camera_rand=True), "camera_rand=True needs distortion=True"),
    (dict(map_name="udem1"), "gym-duckietown's maps (udem1, small_loop, ...) are not bundled"),
    (dict(frame_skip=0), "frame_skip must be an integer >= 1"),
    (dict(user_tile_start=(0, 0)), "is not a road tile of loop"),
])
def test_what_it_cannot_honour_is_refused_with_the_reason(
        kwargs: dict, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # (no gym-duckietown maps anywhere: not from the environment, not installed)
    monkeypatch.delenv(dropin.MAPS_ENV, raising=False)
    monkeypatch.setattr(dropin, "duckietown_world_maps", lambda: None)
    args = {"map_name": "loop", **SMALL, **kwargs}
    with pytest.raises(DropInError) as err:
        Simulator(**args)
    assert message in str(err.value)


def test_a_map_file_in_gym_duckietowns_format_by_path_or_by_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = ROOT / "examples" / "maps" / "town.yaml"
    by_path = Simulator(map_name=str(src), **SMALL)
    shutil.copy(src, tmp_path / "mytown.yaml")
    by_name = Simulator(map_name="mytown", maps_dir=str(tmp_path), **SMALL)
    assert by_path.world.road_map.tiles == by_name.world.road_map.tiles
    by_path.close()
    by_name.close()
    # by name from the folder the environment names, and from an installed
    # duckietown-world's maps (its data/gd1/maps, found without importing it)
    monkeypatch.setenv(dropin.MAPS_ENV, str(tmp_path))
    assert dropin.resolve_map("mytown") == str(tmp_path / "mytown.yaml")
    monkeypatch.delenv(dropin.MAPS_ENV)
    package = tmp_path / "site" / "duckietown_world"
    (package / "data" / "gd1" / "maps").mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('never imported')\n")
    shutil.copy(src, package / "data" / "gd1" / "maps" / "udem1.yaml")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert dropin.resolve_map("udem1") == str(package / "data" / "gd1" / "maps" / "udem1.yaml")
    env = Simulator(map_name="udem1", **SMALL)
    assert env.world.road_map.tiles == by_path.world.road_map.tiles
    env.close()


def test_duckietown_envs_action_is_velocity_and_steering_through_its_formula() -> None:
    env = DuckietownEnv(map_name="loop", domain_rand=False, **SMALL)
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.array([0.2, 0.0]))
    # gym-duckietown's formula: omega = vel / radius; duty = omega * (gain -+ trim) / k
    assert info["DuckietownEnv"]["omega_l"] == pytest.approx(0.2 / 0.0318)
    assert info["Simulator"]["action"] == pytest.approx([0.2 / 0.0318 / 27] * 2)
    _, _, _, _, info = env.step(np.array([0.0, 2.0]))  # steering only: wheels opposite
    left, right = info["Simulator"]["action"]
    assert left == pytest.approx(-right) and right > 0
    env.close()


def test_the_reward_is_gym_duckietowns_and_the_invalid_pose_ends_the_episode() -> None:
    env = Simulator(map_name="loop", domain_rand=False, full_transparency=True, **SMALL)
    env.reset(seed=1)
    _, reward, terminated, truncated, info = env.step(np.array([0.3, 0.3]))
    lp = info["Simulator"]["lane_position"]
    expected = 1.2 * lp["dot_dir"] - 10 * abs(lp["dist"]) + 40 * info["Simulator"][
        "proximity_penalty"]
    assert reward == pytest.approx(expected) and reward > 0
    assert not terminated and not truncated and info["Simulator"]["msg"] == ""
    for _ in range(300):  # spin off the road
        _, reward, terminated, truncated, info = env.step(np.array([1.0, 0.2]))
        if terminated:
            break
    assert terminated and reward == -1000
    assert info["Simulator"]["msg"] == "Stopping the simulator because we are at an invalid pose."
    env.close()


def test_max_steps_counts_physics_steps_with_frame_skip() -> None:
    env = Simulator(map_name="loop", max_steps=6, frame_skip=3, domain_rand=False, **SMALL)
    env.reset(seed=0)
    assert env.step(np.zeros(2))[3] is False
    _, reward, terminated, truncated, info = env.step(np.zeros(2))
    assert truncated and not terminated and reward == 0.0
    assert info["Simulator"]["msg"] == "Stopping the simulator because we reached max_steps = 6"
    env.close()


def test_the_constructors_seed_and_domain_rand_and_distortion() -> None:
    a = Simulator(map_name="loop", seed=4, **SMALL)
    b = Simulator(map_name="loop", seed=4, **SMALL)
    oa, ia = a.reset()
    ob, ib = b.reset()
    assert np.array_equal(oa, ob) and ia["randomization"] == ib["randomization"]
    assert ia["randomization"]["brightness"] != 0.0  # domain_rand is on by default
    plain = Simulator(map_name="loop", domain_rand=False, **SMALL)
    assert "randomization" not in plain.reset(seed=4)[1]
    lens = Simulator(map_name="loop", distortion=True, **SMALL)
    assert lens.reset(seed=0)[1]["calibration"]["model"] == "plumb_bob"
    for e in (a, b, plain, lens):
        e.close()


GYM_DUCKIETOWN_SCRIPT = '''
import numpy as np
from gym_duckietown.envs import DuckietownEnv

env = DuckietownEnv(map_name="loop", domain_rand=False, camera_width=32, camera_height=24,
                    max_steps=500)
env.seed(3)
obs = env.reset()
assert obs.shape == (24, 32, 3)
obs, reward, done, info = env.step(np.array([0.2, 0.0]))
print("on the lane", reward > 0, done)
total = 0
while not done:
    obs, reward, done, info = env.step(np.array([0.5, 1.0]))  # turning: off the road
    total += 1
print("off the lane", reward, info["Simulator"]["msg"][:40])
env.close()
'''


@pytest.mark.skipif(legacy.NEW_API, reason="with gym 0.26 installed the legacy module "
                    "speaks gym 0.26's API (test_gym_versions.py), not this script's")
def test_a_script_for_gym_duckietown_runs_with_one_import_changed(tmp_path: Path) -> None:
    script = GYM_DUCKIETOWN_SCRIPT.replace("from gym_duckietown.envs import DuckietownEnv",
                                           "from dmxshm.duckietown.legacy import DuckietownEnv")
    assert script.count("\n") == GYM_DUCKIETOWN_SCRIPT.count("\n")
    path = tmp_path / "drive.py"
    path.write_text(script)
    # The batch renderer's compiled code on disk first (this test process needs it
    # anyway): the script's renderer choice loads it instead of compiling it again.
    from dmxshm.matrix.batch_render import ensure_compiled

    ensure_compiled()
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                         timeout=100)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "on the lane True False",
        "off the lane -1000.0 Stopping the simulator because we are at"]


def test_a_batch_of_drop_ins_is_the_single_envs() -> None:
    from dmxshm.batch.vector import make_vec

    kw = dict(map_name="loop", **SMALL)
    vec = make_vec(2, num_workers=2, version="duckietown", **kw)
    singles = [DuckietownEnv(**kw) for _ in range(2)]
    obs, info = vec.reset(seed=[7, 8])
    assert np.array_equal(obs, np.array([e.reset(seed=s)[0] for e, s in
                                         zip(singles, (7, 8), strict=True)]))
    for _ in range(10):
        act = np.array([[0.2, 0.5], [0.3, -0.5]], np.float32)
        obs, rew, *_ = vec.step(act)
        ref = [e.step(a) for e, a in zip(singles, act, strict=True)]
        assert np.array_equal(obs, np.array([r[0] for r in ref]))
        assert rew.tolist() == pytest.approx([r[1] for r in ref], abs=0)
    vec.close()
    for e in singles:
        e.close()
    with pytest.raises(ValueError, match="leave make_vec's obs and camera out"):
        make_vec(1, version="duckietown", obs="camera", **kw)
    assert math.isfinite(rew.sum())


def test_the_constructors_seed_is_for_the_first_reset_only() -> None:
    fresh = Simulator(map_name="loop", seed=1, **SMALL)
    first = fresh.reset()[1]["randomization"]
    env = Simulator(map_name="loop", seed=1, **SMALL)
    env.reset(seed=5)
    assert env.reset()[1]["randomization"] != first  # not the constructor's seed again
    fresh.close()
    env.close()

"""Domain randomisation (dmxshm.world.randomize) in DuckieLane-v1 and make_vec: drawn
per env and per reset from the env's seed, within the config's ranges, reported in
``info``, and applied to the robot, its motors, its camera and its images."""

from __future__ import annotations

import json

import gymnasium
import numpy as np
import pybullet as pb
import pytest

import dmxshm  # noqa: F401  (registers the envs)
from dmxshm.batch.vector import make_vec
from dmxshm.world import randomize as rand

pytestmark = pytest.mark.timeout(120)


def test_the_config_is_the_defaults_or_what_it_names() -> None:
    assert rand.parse(None) is None and rand.parse(False) is None
    assert rand.parse(True) == rand.DEFAULTS
    assert rand.parse({"physics": {"mass": [0.5, 2]}}) == {"physics": {"mass": (0.5, 2.0)}}
    assert set(rand.NOMINAL) == {p for g in rand.DEFAULTS.values() for p in g}


@pytest.mark.parametrize(("config", "message"), [
    ({"weather": {}}, "unknown group 'weather'; the groups are physics, sensing, appearance"),
    ({"physics": {"gravity": [1, 2]}}, "unknown physics parameter 'gravity'"),
    ({"physics": {"mass": [2, 1]}}, "physics.mass: needs finite low <= high"),
    ({"physics": {"mass": 3}}, "physics.mass: a range is [low, high]"),
    ([1, 2], "a randomisation config is a mapping"),
])
def test_a_bad_config_is_refused_with_the_reason(config: object, message: str) -> None:
    with pytest.raises(rand.RandomizeError, match=None) as err:
        rand.parse(config)  # type: ignore[arg-type]
    assert message in str(err.value)


def test_a_config_file_in_yaml_or_json(tmp_path) -> None:  # noqa: ANN001
    y = tmp_path / "r.yaml"
    y.write_text("appearance:\n  brightness: [-10, 10]\n")
    j = tmp_path / "r.json"
    j.write_text(json.dumps({"sensing": {"noise_scale": [1, 3]}}))
    assert rand.parse(str(y)) == {"appearance": {"brightness": (-10.0, 10.0)}}
    assert rand.parse(j) == {"sensing": {"noise_scale": (1.0, 3.0)}}
    with pytest.raises(rand.RandomizeError, match="cannot read"):
        rand.parse(str(tmp_path / "missing.yaml"))


def test_draws_are_within_range_the_same_for_a_seed_and_differ_between_seeds() -> None:
    env = gymnasium.make("dmxshm/DuckieLane-v1", randomize=True).unwrapped
    seen = [env.reset(seed=s)[1]["randomization"] for s in (0, 0, 1)]
    env.close()
    assert seen[0] == seen[1] and seen[0] != seen[2]
    for params in seen:
        for group in rand.DEFAULTS.values():
            for name, (low, high) in group.items():
                assert low <= params[name] <= high, name
    plain = gymnasium.make("dmxshm/DuckieLane-v1")
    assert "randomization" not in plain.reset(seed=0)[1]  # as SyncVectorEnv would omit it
    plain.close()


def test_the_draw_is_applied_to_the_robot_and_its_motors() -> None:
    fixed = {"physics": {"mass": [1.5, 1.5], "friction": [0.6, 0.6], "motor_gain": [1.2, 1.2]}}
    env = gymnasium.make("dmxshm/DuckieLane-v1", randomize=fixed, noise=False,
                         route=None).unwrapped
    plain = gymnasium.make("dmxshm/DuckieLane-v1", noise=False, route=None).unwrapped
    _, info = env.reset(seed=0)
    plain.reset(seed=0)
    body, c = env.world.robot_ids[0], env.world.client
    nominal = pb.getDynamicsInfo(plain.world.robot_ids[0], -1, physicsClientId=plain.world.client)
    got = pb.getDynamicsInfo(body, -1, physicsClientId=c)
    assert got[0] == pytest.approx(1.5 * nominal[0]) and got[1] == pytest.approx(0.6 * nominal[1])
    assert info["motor"]["gain"] == 1.2
    for _ in range(40):  # steady state: duty 0.5 through gain 1.2 is 0.5 * 27 / 1.2 rad/s
        env.step(np.array([0.5, 0.5], np.float32))
    speed = pb.getJointState(body, 0, physicsClientId=c)[1]
    assert speed == pytest.approx(0.5 * 27 / 1.2, rel=0.03)
    env.close()
    plain.close()


def test_appearance_changes_the_image_and_nominal_leaves_it() -> None:
    def image(**kw: object) -> np.ndarray:
        env = gymnasium.make("dmxshm/DuckieLane-v1", obs="camera", camera=(64, 48),
                             noise=False, route=None, **kw)
        obs, _ = env.reset(seed=0)
        env.close()
        return obs.astype(int)

    base = image()
    brighter = image(randomize={"appearance": {"brightness": [40, 40]}})
    assert (brighter - base).mean() > 25
    same = image(randomize={"appearance": {"brightness": [0, 0], "contrast": [1, 1]}})
    assert np.array_equal(same, base)
    turned = image(randomize={"sensing": {"camera_tilt_deg": [8, 8]}})
    assert not np.array_equal(turned, base)
    # The road's own colour, not the rest: where the road is (its nominal grey), a
    # shade of 0.5 halves it; the grass keeps its green; and an env after it in the
    # same process (the scene is shared) sees the road as built again.
    dark = image(randomize={"appearance": {"road_shade": [0.5, 0.5]}})
    road = (np.abs(base - base[..., :1]).max(axis=-1) < 6) & (base[..., 0] > 20) & (
        base[..., 0] < 120)  # the asphalt grey (not the white lines, not the sky)
    assert road.sum() > 100
    assert np.abs(dark[road] - base[road] * 0.5).mean() < 4
    grass = base[..., 1] > base[..., 0] + 30
    assert grass.sum() > 100  # (the lens blends pixels at the road's edge: a few differ)
    assert np.mean(np.all(dark[grass] == base[grass], axis=-1)) > 0.9
    assert np.array_equal(image(), base)


def test_make_vec_reports_each_envs_draw_at_reset_and_autoreset() -> None:
    vec = make_vec(4, num_workers=0, version="v1", randomize=True, max_episode_steps=3)
    singles = [gymnasium.make("dmxshm/DuckieLane-v1", randomize=True,
                              max_episode_steps=3).unwrapped for _ in range(4)]
    obs, info = vec.reset(seed=[5, 6, 7, 8])
    assert info["_randomization"].all()
    frictions = info["randomization"]["friction"]
    assert len(set(frictions.tolist())) == 4
    for j, (e, s) in enumerate(zip(singles, (5, 6, 7, 8), strict=True)):
        o, i = e.reset(seed=s)
        assert np.array_equal(obs[j], o)
        assert info["randomization"]["friction"][j] == i["randomization"]["friction"]
    act = np.full((4, 2), 0.3, np.float32)
    for _ in range(3):
        _, _, _, truncated, info = vec.step(act)
        assert "randomization" not in info
    assert truncated.all()
    _, _, _, _, info = vec.step(act)  # NextStep autoreset: this step is the resets
    assert info["_randomization"].all()
    assert not np.array_equal(info["randomization"]["friction"], frictions)
    vec.close()
    for e in singles:
        e.close()


def test_physics_draws_scale_the_nominal_robot_every_reset_not_the_last_one() -> None:
    fixed = {"physics": {"mass": [1.5, 1.5], "friction": [0.6, 0.6]}}
    env = gymnasium.make("dmxshm/DuckieLane-v1", randomize=fixed, route=None).unwrapped
    plain = gymnasium.make("dmxshm/DuckieLane-v1", route=None).unwrapped
    plain.reset(seed=0)
    nominal = pb.getDynamicsInfo(plain.world.robot_ids[0], -1, physicsClientId=plain.world.client)
    for seed in range(3):  # the body is kept from episode to episode: no compounding
        env.reset(seed=seed)
        got = pb.getDynamicsInfo(env.world.robot_ids[0], -1, physicsClientId=env.world.client)
        assert got[0] == pytest.approx(1.5 * nominal[0])
        assert got[1] == pytest.approx(0.6 * nominal[1])
        # the URDF's inertia, scaled with the mass (not Bullet's from the collision box)
        np.testing.assert_allclose(got[2], np.array(nominal[2]) * 1.5, rtol=1e-9)
    look = gymnasium.make("dmxshm/DuckieLane-v1", route=None,
                          randomize={"appearance": {"brightness": [5, 5]}}).unwrapped
    look.reset(seed=0)
    kept = pb.getDynamicsInfo(look.world.robot_ids[0], -1, physicsClientId=look.world.client)
    assert kept[:3] == nominal[:3]  # nothing physical drawn: the robot as loaded
    for e in (env, plain, look):
        e.close()


def test_the_calibration_in_info_is_the_episodes_lens() -> None:
    env = gymnasium.make("dmxshm/DuckieLane-v1", obs="camera", camera=(64, 48),
                         randomize={"sensing": {"camera_focal_scale": [1.1, 1.1]}})
    plain = gymnasium.make("dmxshm/DuckieLane-v1", obs="camera", camera=(64, 48))
    k = env.reset(seed=0)[1]["calibration"]["K"]
    k0 = plain.reset(seed=0)[1]["calibration"]["K"]
    assert k[0] == pytest.approx(1.1 * k0[0]) and k[4] == pytest.approx(1.1 * k0[4])
    env.close()
    plain.close()


def test_make_vec_of_v0_refuses_randomize_naming_the_version_that_takes_it() -> None:
    import os

    before = set(os.listdir("/dev/shm"))
    with pytest.raises(TypeError, match=r"DuckieLane-v0 takes no randomize: .*version='v1'"):
        make_vec(4, randomize=True, num_workers=1)  # v0 is the default version
    with pytest.raises(TypeError, match=r"takes no colour; it takes camera, "):
        make_vec(2, version="v1", colour="red", num_workers=1)
    assert set(os.listdir("/dev/shm")) <= before  # refused before anything was made

"""The trajectory digest sees everything a run produces (dmxshm.network.taps.digest):
every state in full, every command, every sample; whatever the process split."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dmxshm.matrix.obs import obs_dtype
from dmxshm.network import Network, NetworkConfig
from dmxshm.network.taps.digest import SampleDigest, StateDigest, combine
from dmxshm.world.renderers import RendererError
from dmxshm.world.state import rest_states
from dmxshm.world.world import World
from tests.networks import Runs, runner

RUN_TIMEOUT_S = 120
DOCS = Path(__file__).resolve().parents[2] / "docs"


def digest_of(states: np.ndarray, commands: np.ndarray, obs: np.ndarray,
              images: np.ndarray) -> str:
    """The digest of a two-step run of two robots through the taps themselves."""
    engine = StateDigest()
    renderer = SampleDigest((0, 1), ("imu", "encoders", "tof"))
    camera = SampleDigest((0, 1), ("camera",))
    for k in range(2):
        engine.state(k, k * 0.1, states[k])
        renderer.samples(k, k * 0.1, (0, 1), obs[k], ("imu", "encoders", "tof"))
        camera.images(k + 1, k, k * 0.1, (0, 1), images[k])
        engine.commands(k, k * 0.1, commands[k], None)
    engine.end(2, 0.2, states[1])
    d = engine.hexdigests()
    return combine(d["states"], d["commands"], {**renderer.hexdigests(), **camera.hexdigests()})


def test_one_pixel_one_imu_sample_one_command_or_one_state_field_changes_it() -> None:
    rng = np.random.default_rng(0)
    states = np.stack([rest_states([(0.0, 0.0, 0.0), (1.0, 1.0, 1.0)])] * 2)
    commands = rng.uniform(-5, 5, (2, 2, 2))
    obs = np.zeros((2, 2), obs_dtype(None))
    obs["imu"] = rng.normal(size=(2, 2, 6))
    images = rng.integers(0, 255, (2, 2, 12, 16, 3), dtype=np.uint8)
    before = digest_of(states, commands, obs, images)
    assert digest_of(states, commands.copy(), obs.copy(), images.copy()) == before
    pixel = images.copy()
    pixel[1, 0, 5, 7, 2] ^= 1
    imu = obs.copy()
    imu["imu"][0, 1, 4] = np.nextafter(imu["imu"][0, 1, 4], np.float32(9))
    command = commands.copy()
    command[1, 1, 0] += 1e-12
    wheel = states.copy()  # a field the pose digest never saw
    wheel["wheel_rate_rad_s"][0, 1, 0] = 1e-9
    changed = {digest_of(states, commands, obs, pixel), digest_of(states, commands, imu, images),
               digest_of(states, command, obs, images), digest_of(wheel, commands, obs, images)}
    assert before not in changed and len(changed) == 4


SPLIT = dict(robots=3, steps=20, camera=(32, 24), agent="random", seed=5, wait_timeout_s=10.0)
run = runner(**SPLIT)


@pytest.fixture(scope="module")
def splits() -> Runs:
    """The split runs, each made once for the tests that read them."""
    return Runs(**SPLIT)


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_the_split_between_processes_does_not_change_it(splits: Runs) -> None:
    digests = {(r, a): splits(renderers=r, agents=a)
               for r, a in ((1, 1), (2, 1), (1, 3), (2, 3))}
    assert len({s.trajectory_digest for s in digests.values()}) == 1
    one = digests[1, 1]
    assert set(one.digests) == {"states", "commands"} | {
        f"robot{r:02d}/{s}" for r in range(3) for s in ("camera", "imu", "encoders", "tof")}
    # The camera's samples are in it: off, the poses are the same, the digest is not.
    off = run(camera=(0, 0))
    assert off.pose_digest == one.pose_digest and off.trajectory_digest != one.trajectory_digest


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_the_same_noise_whatever_the_process_split(splits: Runs) -> None:
    # Sensor noise is on by default: the runs above are noisy. Here what it changes:
    # with it off the robots drive the same (random agents do not look), and every
    # noisy sensor's samples differ; the noisy ones are the same for every split. The
    # splits put each robot at another place in its renderer's and its agent's share
    # (all three in one process, or each alone), so noise keyed by a robot's place in
    # a process, not by the robot, would show.
    noisy = {r: splits(renderers=r, agents=r) for r in (1, 3)}
    assert noisy[1].digests == noisy[3].digests
    exact = run(renderers=2, agents=2, noise=False)
    assert exact.digests["states"] == noisy[1].digests["states"]
    assert exact.digests["commands"] == noisy[1].digests["commands"]
    for r in range(3):
        for sensor in ("camera", "imu", "tof"):
            key = f"robot{r:02d}/{sensor}"
            assert exact.digests[key] != noisy[1].digests[key], key


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_tiny_and_egl_images_give_different_digests() -> None:
    try:
        World("loop", 0, renderer="egl").close()
    except RendererError as exc:
        pytest.skip(f"EGL cannot load here: {exc}")
    tiny = run(robots=1, steps=5, renderer="tiny")
    egl = run(robots=1, steps=5, renderer="egl")
    assert tiny.pose_digest == egl.pose_digest
    assert tiny.trajectory_digest != egl.trajectory_digest
    same = {k for k in tiny.digests if tiny.digests[k] == egl.digests[k]}
    assert same == {"states", "commands", "robot00/imu", "robot00/encoders", "robot00/tof"}


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_the_pose_digest_is_the_digest_of_earlier_versions() -> None:
    # scripts/digests.py's row "gym robots=2 renderers=2 agents=2 random camera=0x0":
    # the table of 7636419 (pose digests only) and today's, written with both.
    key = "gym robots=2 renderers=2 agents=2 random camera=0x0"
    old = json.loads((DOCS / "digests-7636419.json").read_text())[key]
    today = json.loads((DOCS / "digests.json").read_text())[key]
    with Network(NetworkConfig(robots=2, renderers=2, agents=2, agent="random", camera=(0, 0),
                               steps=120, seed=7, noise=False)) as net:
        s = net.run()  # the tables pin noise-free runs (scripts/digests.py)
    assert s.pose_digest == old == today["pose_digest"]
    assert s.trajectory_digest == today["trajectory_digest"]

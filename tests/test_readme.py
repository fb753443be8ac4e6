"""The README's example and set-up commands stay true."""

from __future__ import annotations

import ast
import contextlib
import inspect
import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dmxshm.network.runs import live_runs

README = Path(__file__).resolve().parent.parent / "README.md"
EXAMPLE_TIMEOUT_S = 60
EPISODE_STEPS = 1000  # what the README says of the single environment's episodes


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README.read_text(), re.S)


def _run_block(tmp_path: Path, needle: str, cwd: Path | None = None) -> str:
    (block,) = [b for b in _blocks("python") if needle in b]
    script = tmp_path / "example.py"
    script.write_text(block)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=EXAMPLE_TIMEOUT_S, cwd=cwd or tmp_path)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _mean_returns(example: Path, tmp_path: Path) -> tuple[list[float], str]:
    """Run a training example; the mean returns it printed, and its output."""
    out = subprocess.run([sys.executable, str(example)], capture_output=True, text=True,
                         timeout=EXAMPLE_TIMEOUT_S, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return [float(m) for m in re.findall(r"mean return +(-?[0-9.]+) m", out.stdout)], out.stdout


@pytest.mark.timeout(EXAMPLE_TIMEOUT_S + 10)
def test_ring_example_runs(tmp_path: Path) -> None:
    lines = [line for line in _run_block(tmp_path, "Ring.create").splitlines()
             if line.startswith("agent got")]
    assert [line.split()[3] for line in lines] == ["0", "1", "2"]


@pytest.mark.timeout(EXAMPLE_TIMEOUT_S + 10)
def test_network_example_runs(tmp_path: Path) -> None:
    last = _run_block(tmp_path, "Network(NetworkConfig(").strip().splitlines()[-1]
    steps_per_s = float(last.split()[0])
    assert steps_per_s > 0


def test_exactly_two_setup_commands() -> None:
    setup = [cmd for block in _blocks("sh") for cmd in block.splitlines()
             if cmd.startswith("python3 -m venv")]
    assert len(setup) == 2
    assert any("pytest" in c for c in setup)
    assert any("pytest" not in c and "dmxshm" in c for c in setup)


@pytest.mark.slow
@pytest.mark.timeout(EXAMPLE_TIMEOUT_S + 10)
def test_batch_docs_example_is_the_example_file_and_it_learns(tmp_path: Path) -> None:
    doc = (README.parent / "docs" / "batch.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, re.S)
    example = README.parent / "examples" / "train_linear.py"
    assert blocks[0] == example.read_text()  # the page's first example is the file
    returns, _ = _mean_returns(example, tmp_path)
    assert len(returns) == 20
    # Random search makes the policy drive further: the last iterations beat the first.
    assert np.mean(returns[-3:]) > np.mean(returns[:3]) + 1.0, returns


@pytest.mark.timeout(EXAMPLE_TIMEOUT_S + 10)
def test_batch_example_runs_and_counts_the_episodes_of_every_step(tmp_path: Path) -> None:
    last = _run_block(tmp_path, 'make_vec(16, obs="state"').strip().splitlines()[-1]
    match = re.fullmatch(r"\(16, 11\) float64 (\d+) episodes ended in 300 steps of 16 envs", last)
    assert match, last
    # Random wheels drive some robots off the road within 300 steps; a count of
    # the last step's flags alone would read 0.
    assert int(match[1]) > 0


@pytest.mark.timeout(EXAMPLE_TIMEOUT_S + 10)
def test_sb3_example_prints_its_steps_and_returns(tmp_path: Path) -> None:
    pytest.importorskip("stable_baselines3")
    last = _run_block(tmp_path, "PPO(").strip().splitlines()[-1]
    # learn(20_480) is whole rollouts of n_steps x num_envs: exactly that many steps.
    match = re.fullmatch(r"(\d+) env-steps; mean return of the last (\d+) episodes (-?[\d.]+) m",
                         last)
    assert match, last
    assert int(match[1]) == 20_480 and int(match[2]) > 0


@pytest.mark.timeout(EXAMPLE_TIMEOUT_S + 10)
def test_sb3_subproc_vec_env_takes_the_module_prefixed_id(tmp_path: Path) -> None:
    # What the README says of SB3's own SubprocVecEnv: its workers find the id
    # with the dmxshm: prefix, though this script imports nothing of dmxshm.
    pytest.importorskip("stable_baselines3")
    script = tmp_path / "subproc.py"
    script.write_text(
        "from stable_baselines3.common.env_util import make_vec_env\n"
        "from stable_baselines3.common.vec_env import SubprocVecEnv\n"
        "if __name__ == '__main__':\n"
        "    venv = make_vec_env('dmxshm:dmxshm/DuckieLane-v0', n_envs=2,\n"
        "                        vec_env_cls=SubprocVecEnv)\n"
        "    print(venv.reset().shape)\n"
        "    venv.close()\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=EXAMPLE_TIMEOUT_S, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(2, 11)"


def _first_end(step: Any, num_envs: int = 0) -> tuple[int, bool]:
    """The step (from 1) at which an env standing still first ends, and whether it
    was truncated (not terminated); ``num_envs`` 0: a single env."""
    action = np.zeros((num_envs, 2) if num_envs else 2, np.float32)
    for k in range(1, EPISODE_STEPS + 2):
        _, _, terminated, truncated, _ = step(action)
        if np.any(terminated) or np.any(truncated):
            return k, bool(np.all(truncated) and not np.any(terminated))
    return EPISODE_STEPS + 1, False


@pytest.mark.timeout(EXAMPLE_TIMEOUT_S)
def test_registered_episode_length_is_the_envs_own() -> None:
    # The README: the spec's max_episode_steps is 1000, the step at which the
    # env truncates. gymnasium.make wraps the env in a TimeLimit of that length,
    # which must not end an episode earlier than the env does; the batch
    # (dmxshm.make_vec, or gymnasium.make_vec through the vector entry point,
    # which hands it the spec's length) truncates at the same step.
    import gymnasium

    import dmxshm
    from dmxshm.batch.env import DuckieLaneEnv

    default = inspect.signature(DuckieLaneEnv).parameters["max_episode_steps"].default
    assert gymnasium.spec("dmxshm/DuckieLane-v0").max_episode_steps == default == EPISODE_STEPS
    env = gymnasium.make("dmxshm/DuckieLane-v0")
    try:
        assert env.spec is not None and env.spec.max_episode_steps == EPISODE_STEPS
        env.reset(seed=0)
        assert _first_end(env.step) == (EPISODE_STEPS, True)
    finally:
        env.close()
    for make in (lambda: dmxshm.make_vec(1, num_workers=1, seed=0),
                 lambda: gymnasium.make_vec("dmxshm/DuckieLane-v0", num_envs=1,
                                            vectorization_mode="vector_entry_point",
                                            num_workers=1, seed=0)):
        envs = make()
        try:
            envs.reset(seed=0)
            assert _first_end(envs.step, num_envs=1) == (EPISODE_STEPS, True)
        finally:
            envs.close()


@pytest.mark.slow
@pytest.mark.timeout(EXAMPLE_TIMEOUT_S + 10)
def test_async_example_learns(tmp_path: Path) -> None:
    returns, stdout = _mean_returns(README.parent / "examples" / "async_cem.py", tmp_path)
    assert len(returns) == 30
    # The order in which envs finish varies from run to run, so the numbers do;
    # four runs went from -0.55..-0.68 (first three) to 1.39..1.83 (last five).
    assert np.mean(returns[-5:]) > np.mean(returns[:3]) + 0.5, returns
    assert "env-steps/s" in stdout.splitlines()[-1]


@contextlib.contextmanager
def _cli_run(tmp_path: Path, args: list[str], name: str) -> Iterator[subprocess.Popen[str]]:
    """``dmxshm <args>`` started in the background; yields once the run named ``name``
    is listed (an example's connect fails at once when no such run is there)."""
    net = subprocess.Popen([sys.executable, "-m", "dmxshm.cli", *args],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           cwd=tmp_path)
    try:
        t0 = time.monotonic()
        while not [r for r in live_runs() if r.name == name]:
            assert time.monotonic() - t0 < 30, "the run did not start"
            time.sleep(0.05)
        yield net
    finally:
        if net.poll() is None:
            net.kill()
            net.wait(10)


@pytest.mark.timeout(120)
def test_outside_agent_example_drives_a_run(tmp_path: Path) -> None:
    """The README's outside agent, against the run its command line starts."""
    with _cli_run(tmp_path, ["run", "--external-agents", "1", "--name", "demo", "--steps",
                             "40", "--camera", "0x0"], "demo") as net:
        out = _run_block(tmp_path, 'dmxshm.connect("demo")')
        assert "the run ended after step 39" in out
        summary, err = net.communicate(timeout=60)
        assert net.returncode == 0, err
        assert "slot-0 (robots 0, 1): held by pid" in summary


@pytest.mark.timeout(120)
def test_connect_parallel_example_drives_a_run(tmp_path: Path) -> None:
    """The README's ParallelEnv over a network, against the run its command line
    starts (with fewer steps)."""
    (line,) = [c for b in _blocks("sh") for c in b.splitlines() if "--name arena" in c]
    args = line.split("#")[0].split()[1:]
    args[args.index("--steps") + 1] = "400"
    with _cli_run(tmp_path, [*args, "--camera", "0x0"], "arena") as net:
        out = _run_block(tmp_path, 'dmxshm.connect_parallel("arena")')
        returns = ast.literal_eval(out.strip().splitlines()[-1])
        assert sorted(returns) == ["duckiebot0", "duckiebot1", "duckiebot2"]
        net.terminate()  # the example left; the run would wait for another client
        net.communicate(timeout=60)


@pytest.mark.timeout(EXAMPLE_TIMEOUT_S + 30)
def test_the_readme_objects_example_runs_from_the_repository(tmp_path: Path) -> None:
    from dmxshm.world.maps import load_map

    out = _run_block(tmp_path, "w.add_object(", cwd=README.parent).strip()
    town = load_map(README.parent / "examples" / "maps" / "town.yaml")
    assert out == f"{len(town.objects) + 2} objects; []"


@pytest.mark.timeout(EXAMPLE_TIMEOUT_S + 30)
def test_the_v1_batch_example_runs(tmp_path: Path) -> None:
    out = _run_block(tmp_path, 'make_vec("dmxshm/DuckieLane-v1", 16)').strip()
    assert out == "(16, 14) Box(-1.0, 1.0, (2,), float32)"


@pytest.mark.timeout(EXAMPLE_TIMEOUT_S + 30)
def test_the_randomisation_example_runs(tmp_path: Path) -> None:
    out = _run_block(tmp_path, 'randomize=True)').strip()
    assert out == "['blue_gain', 'brightness', 'camera_focal_scale'] True"


@pytest.mark.timeout(EXAMPLE_TIMEOUT_S + 30)
def test_the_network_randomisation_example_runs(tmp_path: Path) -> None:
    out = _run_block(tmp_path, 'randomize={"physics"').strip()
    frictions = [float(v) for v in out.strip("[]").split(",")]
    assert len(frictions) == 2 and frictions[0] != frictions[1]
    assert all(0.5 <= f <= 1.5 for f in frictions)


@pytest.mark.timeout(EXAMPLE_TIMEOUT_S + 30)
def test_the_gym_duckietown_example_runs_with_its_module_path(tmp_path: Path) -> None:
    out = _run_block(tmp_path, "from dmxshm.duckietown.envs import").strip()
    assert out == "(120, 160, 3) True False"


@pytest.mark.timeout(EXAMPLE_TIMEOUT_S + 10)
def test_the_db18_batch_example_runs(tmp_path: Path) -> None:
    # In this process (its compiled kernels are the tests' own: a fresh interpreter would
    # load or compile them again for one print).
    import contextlib
    import io

    (block,) = [b for b in _blocks("python") if 'make_vec(256, version="v1"' in b]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {"__name__": "__readme__"})
    assert out.getvalue().strip() == "(256, 14) float64", out.getvalue()


@pytest.mark.timeout(EXAMPLE_TIMEOUT_S + 10)
def test_the_multi_agent_example_runs(tmp_path: Path) -> None:
    out = _run_block(tmp_path, "dmxshm.parallel_env(robots=4")
    steps, rest = out.splitlines()[0].split(" ", 1)
    assert int(steps) > 0 and "(4, 4)" in rest
    last = out.splitlines()[1]
    assert last.startswith("(16, 14) [0 0 0 0 1 1 1 1] [0 1 2 3 0 1 2 3]")


@pytest.mark.timeout(EXAMPLE_TIMEOUT_S + 10)
def test_db18_example_runs(tmp_path: Path) -> None:
    """The DB18 robot at full duty: 0.6 m/s, the nominal model's ``u1``."""
    out = _run_block(tmp_path, 'physics="db18", noise=False').strip().splitlines()[-1]
    assert out == "speed 0.600 m/s, u1 = 5.0", out


@pytest.mark.timeout(EXAMPLE_TIMEOUT_S + 10)
def test_db18_multi_robot_example_runs(tmp_path: Path) -> None:
    """16 worlds of 4 DB18 robots (where they run is measured: not asserted); in this
    process, as the example above."""
    import io

    (block,) = [b for b in _blocks("python")
                if 'robots_per_world=4, map="loop", physics="db18"' in b]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {"__name__": "__readme__"})
    text = out.getvalue().strip()
    assert text.rsplit(" ", 1)[0] == "(64, 14) bool", text


def test_the_duckietown_look_example_draws_a_sky(tmp_path: Path) -> None:
    out = _run_block(tmp_path, 'look="duckietown"').strip().splitlines()[-1]
    shape, rest = out.split(" sky ")
    sky, texture = rest.split(" texture ")
    assert shape == "(480, 640, 3)"
    r, g, b = (int(v) for v in sky.strip("[]").split(","))
    assert b > r + 30  # blue above, where the flat look is white
    assert 0.0 <= float(texture) <= 1.0  # the look's own draw, in its range


@pytest.mark.timeout(EXAMPLE_TIMEOUT_S + 10)
def test_the_duckietown_look_run_command_runs(tmp_path: Path) -> None:
    (line,) = [c for b in _blocks("sh") for c in b.splitlines() if "--look duckietown" in c]
    argv = shlex.split(line)
    assert argv[0] == "dmxshm"
    out = subprocess.run([sys.executable, "-m", "dmxshm.cli", *argv[1:], "--steps", "20",
                          "--json", str(tmp_path / "run.json")], capture_output=True,
                         text=True, timeout=EXAMPLE_TIMEOUT_S, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp_path / "run.json").read_text())["look"] == "duckietown"

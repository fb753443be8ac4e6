"""The user's own agents just work: from the current folder, from a file, as a callable."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dmxshm.network import ConfigError, Network, NetworkConfig
from dmxshm.network.policies import AgentError, agent_spec, resolve
from dmxshm.shm.names import list_entries
from tests import agents

RUN_TIMEOUT_S = 120
POLICY = textwrap.dedent("""
    import numpy as np

    def policy(obs):
        return np.full((len(obs), 2), 4.0)
""")


def test_a_module_level_function_is_kept_by_name() -> None:
    assert agent_spec(agents.forward) == "tests.agents:forward"
    assert agent_spec(agents.Slow) == "tests.agents:Slow"
    assert resolve(agent_spec(agents.forward)) is agents.forward


def test_what_cannot_reach_an_agent_process_is_refused_with_the_reason() -> None:
    with pytest.raises(AgentError, match="lambda"):
        agent_spec(lambda obs: obs)

    def closure(obs: object) -> object:
        return obs

    with pytest.raises(AgentError, match="inside another"):
        agent_spec(closure)
    agents.forward.__module__ = "__main__"
    try:
        with pytest.raises(AgentError, match="defined in __main__"):
            agent_spec(agents.forward)
    finally:
        agents.forward.__module__ = "tests.agents"
    with pytest.raises(ConfigError, match="lambda"):
        NetworkConfig(agent=lambda obs: obs)  # type: ignore[arg-type]
    with pytest.raises(AgentError, match="not int"):
        agent_spec(3)  # type: ignore[arg-type]
    policy = agents.NanEveryThird((0,), 0)
    with pytest.raises(AgentError, match="not what tests.agents:NanEveryThird.__call__"):
        agent_spec(policy.__call__)  # a bound method: its class's function has no self


def test_a_file_path_is_made_absolute_and_loads(tmp_path: Path) -> None:
    path = tmp_path / "mine.py"
    path.write_text(POLICY)
    spec = agent_spec(f"{path}:policy")
    assert spec == f"{path}:policy"
    policy = resolve(spec)
    assert policy.__name__ == "policy" and resolve(spec) is policy  # loaded once
    assert agent_spec(policy) == f"{os.path.realpath(path)}:policy"  # back to its file
    with pytest.raises(AgentError, match="no file"):
        resolve(f"{tmp_path / 'missing.py'}:policy")
    with pytest.raises(AgentError, match="has no 'nope'"):
        resolve(f"{path}:nope")


def test_a_missing_module_says_where_it_looked() -> None:
    with pytest.raises(AgentError, match="current folder"):
        resolve("surely_not_a_module_here:policy")


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_callable_config_drives_the_robots() -> None:
    cfg = NetworkConfig(robots=1, steps=30, camera=(0, 0), agent=agents.forward)
    assert cfg.agent == "tests.agents:forward"
    with Network(cfg) as net:
        summary = net.run()
    assert summary.lane["distance_m"][0] > 0.05  # 5 rad/s for 1 s: about 0.15 m


@pytest.mark.timeout(RUN_TIMEOUT_S)
@pytest.mark.parametrize("how", ["module in the current folder", "file path"])
def test_the_cli_runs_the_users_own_agent(how: str, tmp_path: Path) -> None:
    (tmp_path / "mymod.py").write_text(POLICY)
    spec = "mymod:policy" if how.startswith("module") else "./mymod.py:policy"
    # The console script, as a user types it: its sys.path does not hold the
    # current folder by itself (python -m would add it).
    script = Path(sys.executable).with_name("dmxshm")
    assert script.exists(), "the dmxshm console script is not installed beside python"
    proc = subprocess.Popen(
        [str(script), "run", "--agent", spec, "--robots", "1", "--steps", "20",
         "--camera", "0x0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S - 10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err[-2000:]
    assert "20 steps" in out
    # What this run made is gone (names carry the creator's pid: another run's
    # objects on the same machine are not this test's business).
    assert not [e for e in list_entries() if e.pid == proc.pid]


def test_more_robots_than_the_map_holds_are_refused_before_any_process_starts() -> None:
    from dmxshm.world.maps import MapError

    net = Network(NetworkConfig(robots=17, steps=5, camera=(0, 0)))
    with pytest.raises(MapError, match="room for 16"):
        net.start()
    assert net.supervisor.children == [] and net.registry is None


def test_random_wheels_draw_what_each_robots_generator_draws_uniformly() -> None:
    import numpy as np

    from dmxshm.policies import POLICY_MAX_RAD_S as hi
    from dmxshm.policies import RandomWheels

    policy = RandomWheels((2, 5, 7), seed=11)
    reference = [np.random.default_rng([11, rid]) for rid in (2, 5, 7)]
    for _ in range(200):
        expected = np.array([g.uniform(-hi / 2, hi, size=2) for g in reference])
        assert policy(None).tobytes() == expected.tobytes()  # bit for bit, robot by robot

"""The plan's ports: every ring a role uses is asked for by name, never by position."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import dmxshm
from dmxshm.network import Network, NetworkConfig
from dmxshm.network.plan import make_plan
from dmxshm.network.ports import PORTS

RUN_TIMEOUT_S = 120
ROOT = Path(dmxshm.__file__).parent


def template(port: str) -> str:
    """``state.renderer.3`` -> ``state.renderer.N``."""
    return re.sub(r"\.\d+$", ".N", port)


@pytest.mark.timeout(RUN_TIMEOUT_S)
@pytest.mark.parametrize("kw", [dict(mode="gym", renderers=2, agents=2, camera=(0, 0)),
                                dict(mode="realtime", spine=True, camera=(32, 24))],
                         ids=["gym, 2 renderers, 2 agents", "realtime spine with a camera"])
def test_every_ring_of_a_run_is_a_named_port(kw: dict) -> None:
    with Network(NetworkConfig(robots=2, **kw)) as net:
        plan = net.plan
        assert plan is not None
        assert {template(p) for p in plan.rings} <= {p.name for p in PORTS}
        assert plan.indexed("cmd.agent") == [plan.ring(f"cmd.agent.{a}")
                                             for a in range(net.config.agents)]
        assert plan.has("spine.frames") == net.config.spine_process
        assert plan.has("camera.0") == net.config.camera_processes
        assert len(set(plan.rings.values())) == len(plan.rings)  # one ring, one port


def test_a_missing_port_names_the_ports_there_are() -> None:
    plan = make_plan(NetworkConfig(camera=(0, 0)))
    with pytest.raises(KeyError, match="no port 'spine.frames'"):
        plan.ring("spine.frames")


def test_no_role_asks_for_a_ring_by_position() -> None:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bplan\.(rings\.values\(\)|indexed\([^)]*\))\[", line) or \
                    re.search(r"\bplan\.\w+_rings\b", line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "ask the plan for a port by name:\n" + "\n".join(found)

"""The rings of a run are made from the port declarations: one name per port, the
declared record type, size and discipline, and only the ports the run has."""

from __future__ import annotations

import pytest

from dmxshm.network import NetworkConfig
from dmxshm.network.plan import make_plan
from dmxshm.network.ports import PORTS, create_rings, port
from dmxshm.shm.registry import Registry
from dmxshm.shm.slot import SlotSegment

CONFIGS = {
    "gym, 2 renderers, a slot with episodes": dict(
        mode="gym", robots=3, renderers=2, agents=1, external_agents=1, episodes=True,
        camera=(0, 0)),
    "realtime, camera processes": dict(mode="realtime", robots=2, renderers=2,
                                       camera=(16, 12)),
    "realtime with a spine": dict(mode="realtime", robots=2, spine=True, camera=(0, 0)),
}


@pytest.mark.parametrize("kw", list(CONFIGS.values()), ids=list(CONFIGS))
def test_every_ring_is_its_ports_declaration(kw: dict) -> None:
    cfg = NetworkConfig(**kw)
    plan = make_plan(cfg)
    with Registry() as reg:
        made, opened = create_rings(reg, plan)
        try:
            expected = {name for p in PORTS if not p.name.startswith("obs.")
                        for name in p.names(plan)}
            assert set(made.rings) == expected
            for p in PORTS:
                for i, name in enumerate(p.names(plan)):
                    ring_name = (made.rings[name] if not name.startswith("obs.")
                                 else made.links[i].ring)
                    assert ring_name.endswith("-" + name)  # one name per port
                    if p.kind == "slot":
                        slot = SlotSegment.attach(ring_name)
                        try:
                            assert slot.record == p.dtype(plan, i)
                        finally:
                            slot.close()
                        continue
                    ring = opened[name]
                    assert ring.dtype == p.dtype(plan, i), name
                    assert ring.nslots == p.slots(cfg), name
                    assert ring.discipline.value == p.discipline(cfg), name
        finally:
            for ring in opened.values():
                ring.close()


def test_a_run_has_only_the_ports_its_config_asks_for() -> None:
    plan = make_plan(NetworkConfig(mode="gym", robots=2, camera=(0, 0)))
    assert port("spine.frames").names(plan) == []
    assert port("camera.N").names(plan) == []
    assert port("score.slot.N").names(plan) == []
    assert port("cmd.agent.N").names(plan) == ["cmd.agent.0"]
    with pytest.raises(KeyError, match="state.renderer.N"):
        port("state.N")

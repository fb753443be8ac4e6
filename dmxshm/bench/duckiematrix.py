"""``dmxshm bench duckiematrix``: a duckietown-sdk agent through the Duckiematrix bridge.

One realtime run of one robot with the Duckiebot's 640x480 camera, its bridge
(:mod:`dmxshm.duckiematrix.bridge`) and an SDK agent (:mod:`dmxshm.bench.sdk_agent`)
that answers each frame with ``motors.publish()``. Figures:

- camera frames the agent received over the frames the run's camera made (the
  summary's ``fresh`` camera samples: counted by the renderer, independently of the
  bridge and the agent); target >= 0.9;
- the age of each PWM command from ``motors.publish()`` to the engine step that
  applied it (the summary's ``command_latency`` of the robot's slot, started at the
  agent's stamp); target p50 <= 5 ms;
- the bridge's and the agent's CPU share (CPU seconds over the run's wall time).

Needs the ``duckiematrix`` extra and ``duckietown-sdk`` (with Debian's
``libturbojpeg0``) in the same environment.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from dmxshm.errors import RefusedError

FRAMES_TARGET = 0.9
LATENCY_TARGET_S = 5e-3
NAME = "duckiebot01"


@dataclass
class Result:
    duration_s: float
    renderer: str
    camera: tuple[int, int]
    frames_made: int
    frames_received: int
    frames_ratio: float
    camera_hz: float
    commands_published: int
    commands_forwarded: int  # by the robot's slot to the engine
    commands_applied: int  # by the engine (a newer record in the same step supersedes one)
    latency: dict[str, float]
    bridge_cpu_share: float
    agent_cpu_share: float
    bridge: dict[str, Any] = field(default_factory=dict)
    date: str = ""

    def targets(self) -> list[tuple[str, float, bool]]:
        p50 = self.latency.get("p50_s", float("inf"))
        return [("camera frames received / made >= 0.9", self.frames_ratio,
                 self.frames_ratio >= FRAMES_TARGET),
                ("PWM publish -> applied p50 <= 5 ms", p50 * 1e3, p50 <= LATENCY_TARGET_S)]

    def lines(self) -> list[str]:
        lat = self.latency
        w, h = self.camera
        return [
            f"realtime, 1 robot, {w}x{h} camera ({self.renderer}), {self.duration_s:g} s; "
            "agent: duckietown-sdk DB21J, capture() then motors.publish()",
            f"  camera: {self.frames_made} frames made ({self.camera_hz:.1f} Hz), "
            f"{self.frames_received} received by the agent: {self.frames_ratio:.3f}",
            f"  PWM: {self.commands_published} published, {self.commands_forwarded} forwarded "
            f"by the slot, {self.commands_applied} applied; "
            f"publish -> applied p50 {lat.get('p50_s', float('nan')) * 1e3:.2f} ms, p99 "
            f"{lat.get('p99_s', float('nan')) * 1e3:.2f} ms, max "
            f"{lat.get('max_s', float('nan')) * 1e3:.2f} ms (of which publish -> bridge p50 "
            f"{(self.bridge.get('made_to_received_p50_s') or float('nan')) * 1e3:.2f} ms)",
            f"  CPU share of the run's wall time: bridge {self.bridge_cpu_share:.0%}, "
            f"agent {self.agent_cpu_share:.0%}",
        ]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def require_sdk() -> None:
    from dmxshm.duckiematrix import require

    require()
    if importlib.util.find_spec("duckietown") is None or \
            importlib.util.find_spec("duckietown.sdk") is None:
        raise RefusedError("bench duckiematrix drives the bridge with duckietown-sdk: pip "
                           "install duckietown-sdk==0.2.0 (it needs Debian's libturbojpeg0)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(duration_s: float = 10.0, renderer: str = "egl",
        camera: tuple[int, int] = (640, 480)) -> Result:
    """One run (see the module docstring)."""
    import psutil

    from dmxshm.duckiematrix.launch import bridge_process
    from dmxshm.network import Network, NetworkConfig
    from dmxshm.proc import program

    require_sdk()
    port = _free_port()
    cfg = NetworkConfig(mode="realtime", robots=1, agents=0, external_agents=1, action="pwm",
                        camera=camera, renderer=renderer, duration_s=duration_s,
                        name=f"bench-duckiematrix-{port}")
    with tempfile.TemporaryDirectory() as tmp:
        stats = os.path.join(tmp, "bridge.json")
        with bridge_process(cfg, [NAME], "127.0.0.1", port, False, stats) as served:
            agent = program.start("sdk-agent", "dmxshm.bench.sdk_agent", [NAME, str(port)])
            try:
                bridge = psutil.Process(served.pid)
                c0 = bridge.cpu_times()
                t0 = time.monotonic()
                with Network(cfg) as net:
                    summary = net.run()
                wall = time.monotonic() - t0
                c1 = bridge.cpu_times()
                out, err = agent.communicate(timeout=60)
            finally:
                program.stop(agent)
        with open(stats) as f:
            bridge_stats = json.load(f)[NAME]
    lines = [ln for ln in out.decode().splitlines() if ln.startswith("{")]
    if agent.returncode != 0 or not lines:
        raise RuntimeError("the SDK agent failed: " + err.decode()[-2000:])
    got = json.loads(lines[-1])
    cam = summary.sensors["camera"]
    made = int(cam.fresh or 0)
    (slot,) = summary.slots
    latency = dict((summary.command_latency or {}).get("slot-0", {}))
    return Result(
        duration_s=duration_s, renderer=summary.renderer or renderer, camera=camera,
        frames_made=made, frames_received=got["frames"],
        frames_ratio=got["frames"] / made if made else 0.0, camera_hz=cam.achieved_hz,
        commands_published=got["published"], commands_forwarded=int(slot["accepted"]),
        commands_applied=int(latency.get("n", 0)), latency=latency,
        bridge_cpu_share=(c1.user + c1.system - c0.user - c0.system) / wall,
        agent_cpu_share=got["cpu_s"] / wall, bridge=bridge_stats,
        date=time.strftime("%Y-%m-%d"))

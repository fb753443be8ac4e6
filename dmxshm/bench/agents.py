"""``dmxshm bench agents``: an outside agent beside a built-in one, in the same run.

*Gym*: pairs of runs, alternating, on the same world (4 robots, no camera, the
built-in ``lane-follow`` policy): one with a built-in agent process, one with an
outside program (``python -m dmxshm.bench.agents NAME``) that runs the same policy
through :func:`dmxshm.connect`. Each run's pace is timed by a tap in the engine from
step ``WARM`` (after the client connected) to the end, so that neither the start
nor the wait for the client counts; the figure is the ratio of the medians
(outside / built-in; the digests of each pair are compared too: the same policy
must give the same run). *Realtime*: one run with a built-in agent and an outside
one on the same world; each agent's command age from its making (``act()``, or the
built-in agent's send) to the engine step that applied it (the summary's
``command_latency``), the built-in agent's beside the outside one's.
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from dmxshm.network import Network, NetworkConfig
from dmxshm.network.plan import Plan
from dmxshm.network.taps import Tap
from dmxshm.proc import program

WARM = 20
ROBOTS = 4
GYM_TARGET = 0.9


class Pace(Tap):
    """The engine's time from publishing state ``warm`` to the run's end."""

    def __init__(self, warm: int) -> None:
        self.warm = warm
        self.t0 = self.t1 = 0.0
        self.steps = 0

    def state(self, step: int, sim_time_s: float, states: Any) -> None:
        if step == self.warm:
            self.t0 = time.perf_counter()

    def end(self, step: int, sim_time_s: float, states: Any) -> None:
        self.t1 = time.perf_counter()
        self.steps = step - self.warm

    def result(self) -> dict[str, float]:
        return {"steps": self.steps, "seconds": self.t1 - self.t0}


@dataclass
class PaceSpec:
    """:class:`Pace` in the engine (a :class:`~dmxshm.network.plan.TapSpec`)."""

    name: str = "pace"
    warm: int = WARM

    def prepare(self, plan: Plan, registry: Any) -> None:
        pass

    def __call__(self, plan: Plan, role: str, index: int) -> Tap | None:
        return Pace(self.warm) if role == "engine" else None


@dataclass
class Result:
    """What ``dmxshm bench agents`` measured."""

    robots: int
    steps: int
    pairs: int
    built_in_steps_per_s: list[float] = field(default_factory=list)
    outside_steps_per_s: list[float] = field(default_factory=list)
    same_digest: list[bool] = field(default_factory=list)
    ratio: float = 0.0  # median outside / median built-in: the figure of the target
    pair_ratios: list[float] = field(default_factory=list)  # outside / built-in, pair by pair
    realtime_duration_s: float = 0.0
    latency: dict[str, dict[str, float]] = field(default_factory=dict)

    def targets(self) -> list[tuple[str, float, bool]]:
        return [(f"gym, {self.robots} robots: outside / built-in steps/s >= {GYM_TARGET}",
                 self.ratio, self.ratio >= GYM_TARGET)]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _client(name: str) -> subprocess.Popen[bytes]:
    """The outside agent, a program of its own (:func:`main`)."""
    return program.start("bench-agent", "dmxshm.bench.agents", [name], capture=False)


def _pace(summary: Any) -> float:
    p = summary.taps["pace"]
    return float(p["steps"] / max(p["seconds"], 1e-9))


def _run(cfg: NetworkConfig, outside: bool) -> Any:
    with Network(cfg, taps=[PaceSpec()]) as net:
        client = _client(str(cfg.name)) if outside else None
        try:
            return net.run()
        finally:
            if client is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    client.wait(30)  # it ends with the run (NetworkEnded)
                program.stop(client)


def run(*, pairs: int = 5, steps: int = 1000, duration_s: float = 5.0,
        progress: Any = None) -> Result:
    """Measure (see the module docstring)."""
    res = Result(robots=ROBOTS, steps=steps, pairs=pairs, realtime_duration_s=duration_s)
    common: dict[str, Any] = dict(mode="gym", robots=ROBOTS, steps=steps, camera=(0, 0),
                                  agent="lane-follow")
    for i in range(pairs):
        if progress:
            progress(f"gym pair {i + 1}/{pairs}")
        built = _run(NetworkConfig(**common, agents=1), outside=False)
        out = _run(NetworkConfig(**common, agents=0, external_agents=1,
                                 name=f"bench-agents-{i}"), outside=True)
        res.built_in_steps_per_s.append(_pace(built))
        res.outside_steps_per_s.append(_pace(out))
        res.same_digest.append(built.trajectory_digest == out.trajectory_digest)
    res.ratio = (statistics.median(res.outside_steps_per_s)
                 / statistics.median(res.built_in_steps_per_s))
    res.pair_ratios = [o / b for o, b in zip(res.outside_steps_per_s,
                                             res.built_in_steps_per_s, strict=True)]
    if progress:
        progress("realtime")
    rt = _run(NetworkConfig(mode="realtime", robots=ROBOTS, agents=1, external_agents=1,
                            duration_s=duration_s, camera=(0, 0), name="bench-agents-rt"),
              outside=True)
    res.latency = dict(rt.command_latency or {})
    return res


def main(name: str) -> None:
    """The outside agent: lane-follow through dmxshm.connect until the run ends."""
    import dmxshm
    from dmxshm.policies import load_policy

    with dmxshm.connect(name, timeout_s=30, client_name="bench") as agent:
        agent.run(load_policy("lane-follow", agent.robots))


if __name__ == "__main__":
    main(sys.argv[1])

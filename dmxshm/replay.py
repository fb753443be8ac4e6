"""Replaying a recorded run exactly: ``dmxshm replay run.mcap``.

A realtime run is not reproducible: which command each robot had at each
engine step depends on timing. Its log (:mod:`dmxshm.logs`) keeps exactly
that, the command physics applied in every step (``/robotNN/wheels``, one
message per robot per step, an expired command as zeros). Replay re-runs
the same map, seed, robots and physics step in gym mode, where an agent
answers each step with the command recorded for that step, and compares the
trajectory digest with the recorded run's: equal means the replay went
through the same states, bit for bit. :func:`replay` returns a
:class:`ReplayResult` that carries that verdict (``digest_equal``).

A realtime run through the spine (``--spine``) is replayed physics only, in
this process: its physics steps are the spine's CAN cycles, each logged
with its command (:func:`replay_spine_physics`). A gym run through the
spine replays through the simulation spine, as any gym run.

A log is refused, with the reason, when it lacks what replay needs: no
configuration or summary (not a dmxshm log, or a run that did not finish),
or a missing step of some robot.

The recorded commands reach the replay's agent processes through the agent
spec itself: :func:`commands_agent` saves them in a temporary folder of the
replay's own, beside a small agent file (:data:`AGENT_FILE`) that subclasses
:class:`Replayed` with their path, and the spec names that file
(``FOLDER/agent.py:Agent``, an agent given as a file).
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dmxshm.errors import DmxError
from dmxshm.logs import CONFIG_TOPIC, LOG_FORMAT, SUMMARY_TOPIC, LogError, messages

if TYPE_CHECKING:
    from dmxshm.network.config import NetworkConfig
    from dmxshm.network.summary import Summary

AGENT_FILE = '''"""The agent of one replay (dmxshm.replay): its commands are in commands.npy here."""
from pathlib import Path

from dmxshm.replay import Replayed


class Agent(Replayed):
    commands_path = str(Path(__file__).with_name("commands.npy"))
'''
"""The agent file of a replay: no value written into it, its folder says where the
commands are."""


class ReplayError(DmxError):
    """A log cannot be replayed; the message says what it lacks."""


@dataclass
class Recording:
    """What replay takes from a log."""

    config: dict[str, Any]
    summary: dict[str, Any]
    commands: np.ndarray  # (steps, robots, 2) rad/s, as applied in each step

    @property
    def steps(self) -> int:
        return int(self.commands.shape[0])

    @property
    def mode(self) -> str:
        """The recorded run's mode."""
        return str(self.config["mode"])

    @property
    def wall_time_s(self) -> float:
        """The recorded run's wall time."""
        return float(self.summary["wall_time_s"])

    @property
    def trajectory_digest(self) -> str:
        """The recorded run's trajectory digest, which the replay's must equal."""
        return str(self.summary["trajectory_digest"])


def load(path: str) -> Recording:
    """The configuration, summary and per-step commands of the log at ``path``.

    Raises:
        ReplayError: the log lacks something replay needs (the message says what).
        LogError: the file is missing, truncated or corrupted.
    """
    config = summary = None
    wheels: dict[int, list[tuple[int, float, float]]] = {}
    for topic, _, msg in messages(path):
        try:
            if topic == CONFIG_TOPIC:
                config = json.loads(msg.data)
            elif topic == SUMMARY_TOPIC:
                summary = json.loads(msg.data)
            elif topic.endswith("/wheels"):
                d = json.loads(msg.data)
                wheels.setdefault(int(topic[len("/robot"):].split("/")[0]), []).append(
                    (int(d["step"]), float(d["left_rad_s"]), float(d["right_rad_s"])))
        except (ValueError, KeyError, TypeError) as exc:  # a damaged message, not a bug here
            raise LogError(f"{path} is damaged: a message on {topic} does not decode "
                           f"({type(exc).__name__}: {exc}); record the run again") from None
    if config is None:
        raise ReplayError(f"{path} has no {CONFIG_TOPIC}: not a log of dmxshm run --log")
    if config.get("log_format") != LOG_FORMAT:
        raise ReplayError(f"{path} is a log of format {config.get('log_format')}; this dmxshm "
                          f"replays format {LOG_FORMAT}")
    if summary is None:
        raise ReplayError(f"{path} has no {SUMMARY_TOPIC}: the run did not finish (it failed "
                          "or was stopped), so the log may lack the commands of its last steps")
    if summary.get("interrupted"):
        raise ReplayError(f"{path} is a run that was stopped before its end")
    steps, robots = int(summary["steps"]), int(config["robots"])
    commands = np.zeros((steps, robots, 2))
    for robot in range(robots):
        got = wheels.get(robot, [])
        seen = np.zeros(steps, bool)
        for step, left, right in got:
            if 0 <= step < steps:
                seen[step] = True
                commands[step, robot] = left, right
        if not seen.all() or len(got) != steps:
            missing = np.flatnonzero(~seen)
            raise ReplayError(
                f"{path}: robot {robot} has {len(got)} wheel commands for {steps} steps"
                + (f" (missing from step {missing[0]})" if len(missing) else "")
                + "; replay needs the command of every step")
    return Recording(config, summary, commands)


class Replayed:
    """The replay's policy: each robot's recorded command for the step observed.

    The policy of a replay is a subclass that sets :attr:`commands_path` (see
    :func:`commands_agent`); this class alone has no commands.
    """

    commands_path: str | None = None
    """The ``.npy`` file of the commands, ``(steps, robots, 2)``."""

    def __init__(self, robot_ids: tuple[int, ...], seed: int = 0) -> None:
        if self.commands_path is None:
            raise ReplayError("Replayed has no commands: a replay's agent is the spec that "
                              "dmxshm.replay.commands_agent() gives (dmxshm replay makes it)")
        self.commands = np.load(self.commands_path, mmap_mode="r")
        self.rows = np.asarray(robot_ids)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return np.asarray(self.commands[obs["step"].astype(np.int64), self.rows])


@contextmanager
def commands_agent(commands: np.ndarray) -> Iterator[str]:
    """The agent spec of a replay of ``commands`` (``(steps, robots, 2)``), valid in
    the block: a folder of its own holds the commands and the agent file
    (:data:`AGENT_FILE`), removed at the end."""
    with tempfile.TemporaryDirectory(prefix="dmxshm-replay-") as folder:
        np.save(os.path.join(folder, "commands.npy"), commands)
        agent = os.path.join(folder, "agent.py")
        with open(agent, "w") as f:
            f.write(AGENT_FILE)
        yield f"{agent}:Agent"


def replay_config(rec: Recording, agent: str, log: str | None = None,
                  camera: tuple[int, int] | None = None, **overrides: Any) -> NetworkConfig:
    """The gym-mode configuration that replays ``rec`` (same map, seed, robots, physics)
    with ``agent`` (:func:`commands_agent` of ``rec.commands``)."""
    from dmxshm.network.config import NetworkConfig

    c = rec.config
    # A log written before a field existed ran with that field's default.
    default = {f.name: f.default for f in dataclasses.fields(NetworkConfig)}
    return NetworkConfig(
        mode="gym", robots=int(c["robots"]), renderers=int(c["renderers"]),
        agents=int(c["agents"]), agent=agent, steps=rec.steps,
        camera=tuple(camera if camera is not None else c["camera"]),
        seed=int(c["seed"]), map=str(c["map"]), dt_s=float(c["dt_s"]),
        substeps=int(c["substeps"]), wait_timeout_s=float(c["wait_timeout_s"]), log=log,
        renderer=str(c.get("renderer", default["renderer"])),
        spine=bool(c.get("spine", default["spine"])),
        spine_hz=float(c.get("spine_hz", default["spine_hz"])), **overrides)


@dataclass
class PhysicsReplay:
    """What a physics-only replay gives (a realtime spine run's)."""

    mode: str
    steps: int
    wall_time_s: float
    trajectory_digest: str
    final_poses: list[list[float]]

    def to_dict(self) -> dict[str, Any]:
        """Its figures, as ``dmxshm replay --json`` writes them."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class ReplayResult:
    """A replay and its verdict: whether it went through the recorded run's states.

    Attributes:
        recording: what was replayed.
        replayed: the replay's :class:`~dmxshm.network.summary.Summary`, or a
            :class:`PhysicsReplay` for a realtime spine run (:attr:`physics_only`).
    """

    recording: Recording
    replayed: Summary | PhysicsReplay

    @property
    def digest_equal(self) -> bool:
        """The verdict: the replay's trajectory digest is the recorded run's, so it went
        through the same states, bit for bit."""
        return self.replayed.trajectory_digest == self.recording.trajectory_digest

    @property
    def physics_only(self) -> bool:
        """The replay stepped the recorded physics alone, in this process (a realtime
        spine run): it has no sensors and no processes."""
        return isinstance(self.replayed, PhysicsReplay)

    def to_dict(self) -> dict[str, Any]:
        """``dmxshm replay --json``: the replay's figures, the recorded digest and the
        verdict."""
        return {**self.replayed.to_dict(), "recorded_digest": self.recording.trajectory_digest,
                "digest_equal": self.digest_equal}


def replay(path: str, log: str | None = None, camera: tuple[int, int] | None = None,
           on_progress: Callable[[int], None] | None = None) -> ReplayResult:
    """Replay the run logged at ``path`` in gym mode.

    Args:
        path: the log of the run (``dmxshm run --log``).
        log: record the replay too (its sensors rendered again).
        camera: the replay's camera size (default: the recorded one).
        on_progress: called with the replay's step count.

    Returns:
        the replay and its verdict (:attr:`ReplayResult.digest_equal`).

    Raises:
        ReplayError, LogError: the log cannot be replayed (the message says why).
    """
    return run_recording(load(path), path, log, camera, on_progress)


def prepare(path: str, log: str | None = None, camera: tuple[int, int] | None = None,
            overwrite: bool = False) -> Recording:
    """Load the log at ``path`` and check that its replay can run as asked, before
    anything starts (what ``dmxshm replay`` refuses with exit code 2).

    Args:
        path, log, camera: as :func:`replay`.
        overwrite: ``log`` may replace an existing file.

    Raises:
        LogRefusedError: ``log`` cannot be written, or exists without ``overwrite``.
        the errors of :func:`load` and :func:`check`.
    """
    if log is not None:
        from dmxshm.network.recording import check_log_path

        check_log_path(log, overwrite)
    rec = load(path)
    check(rec, path, log, camera)
    return rec


def _physics_only(rec: Recording) -> bool:
    """A realtime run through the spine: replayed physics only, in this process."""
    return bool(rec.config.get("spine")) and rec.config.get("mode") == "realtime"


def check(rec: Recording, path: str, log: str | None = None,
          camera: tuple[int, int] | None = None) -> None:
    """What can refuse the replay of ``rec`` (loaded from ``path``) refuses now, before
    anything starts: its --log, its configuration, the map and the renderer.

    Raises:
        ReplayError, LogError: the replay cannot be run as asked (the message says why).
        ConfigError, MapError, RendererError: its configuration cannot run here.
    """
    _check_log(rec, path, log)
    if not _physics_only(rec):  # the agent is Replayed itself: loaded, not made
        replay_config(rec, f"{__name__}:Replayed", log, camera).preflight()


def _check_log(rec: Recording, path: str, log: str | None) -> None:
    if log is not None and os.path.realpath(log) == os.path.realpath(path):
        raise LogError("the replay's --log would overwrite the log being replayed; give "
                       "another path")
    if log is not None and _physics_only(rec):
        raise ReplayError("a realtime spine run replays its physics only (no sensors, "
                          "no processes): --log is not available for it")


def run_recording(rec: Recording, path: str, log: str | None = None,
                  camera: tuple[int, int] | None = None,
                  on_progress: Callable[[int], None] | None = None) -> ReplayResult:
    """Run the replay of ``rec`` (loaded from ``path``); returns it with its verdict.

    Raises:
        the errors of :func:`check`, then those of the run.
    """
    from dmxshm.network import run

    _check_log(rec, path, log)
    if _physics_only(rec):
        return ReplayResult(rec, replay_spine_physics(rec, on_progress))
    with commands_agent(rec.commands) as agent:
        return ReplayResult(rec, run(replay_config(rec, agent, log, camera),
                                     on_progress=on_progress))


def replay_spine_physics(rec: Recording,
                         on_progress: Callable[[int], None] | None = None) -> PhysicsReplay:
    """Replay a realtime run through the spine: its physics, step for step.

    The engine of such a run stepped physics once per CAN cycle of the spine
    (``1 / spine_hz``), each with the frame's command, and published (and
    hashed) the state every ``dt_s`` of simulated time. This does the same in
    this process with the logged commands, and hashes the same states.
    """
    import hashlib
    import time

    from dmxshm.network.engine import state_due
    from dmxshm.world.state import poses_2d
    from dmxshm.world.world import World

    c = rec.config
    t0 = time.perf_counter()
    digest = hashlib.sha256()
    dt_s = float(c["dt_s"])
    with World(str(c["map"]), int(c["robots"]), seed=int(c["seed"]),
               dt_s=1.0 / float(c["spine_hz"]), substeps=1) as world:
        published = 0

        def publish(states: np.ndarray) -> None:
            nonlocal published
            digest.update(poses_2d(states).tobytes())
            published += 1

        publish(world.state())
        for k in range(rec.steps):  # as the engine's spine loop (network/engine.py)
            world.apply_wheel_speeds(rec.commands[k])
            world.step()
            if state_due(world.sim_time_s, published, dt_s):
                publish(world.state())
            if on_progress is not None and k % 1000 == 0:
                on_progress(k)
        final = poses_2d(world.state()).tolist()
    return PhysicsReplay("physics of the spine's CAN cycles", rec.steps,
                         time.perf_counter() - t0, digest.hexdigest(), final)

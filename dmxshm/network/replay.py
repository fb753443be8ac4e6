"""Replaying a recorded run exactly: ``dmxshm replay run.mcap``.

A realtime run is not reproducible: which command each robot had at each
engine step, and which state each sensor sample read, depend on timing. Its
log (:mod:`dmxshm.logs`) keeps exactly that: the command physics applied in
every step (``/robotNN/wheels``, one message per robot per step, an expired
command as zeros), and every sample with the state it read. A realtime run
(through the spine or not) is replayed in this process
(:func:`dmxshm.network.realtime_replay.replay_realtime`): its physics with the logged
commands, every logged sample recomputed from the state it read and compared
with the log, all of it hashed as the run did. A gym run is replayed as a gym
network again, where an agent answers each step with the command recorded
for that step; so is a realtime run replayed with ``--log`` (its sensors then
sample once a step: the verdict covers its states and commands).

:func:`replay` returns a :class:`ReplayResult` with the verdict
(:attr:`ReplayResult.equal`): every stream of the trajectory digest that the
replay compared (states, commands, each robot's sensors) is the recorded
run's, and no logged sample differs from its recomputation; where it
compared every stream, that is the same ``trajectory_digest``, bit for bit
(:attr:`ReplayResult.digest_equal`).

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
from dmxshm.logs import CONFIG_TOPIC, LOG_FORMAT, SENSOR_TOPICS, SUMMARY_TOPIC, LogError, messages
from dmxshm.network.realtime_replay import RealtimeReplay, Sample, camera_sample, json_sample

if TYPE_CHECKING:
    from dmxshm.network.config import NetworkConfig
    from dmxshm.network.summary import Summary

AGENT_FILE = '''"""One replay's agent (dmxshm.network.replay): its commands are in commands.npy."""
from pathlib import Path

from dmxshm.network.replay import Replayed


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
    # (robot, sensor) -> its samples in log order (a realtime log's; gym logs: empty)
    samples: dict[tuple[int, str], list[Sample]] = dataclasses.field(default_factory=dict)

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

    @property
    def digests(self) -> dict[str, str]:
        """The recorded run's digest streams (``states``, ``commands``, ``robot03/imu``...)."""
        return dict(self.summary.get("digests") or {})


def load(path: str) -> Recording:
    """The configuration, summary and per-step commands of the log at ``path``.

    Raises:
        ReplayError: the log lacks something replay needs (the message says what).
        LogError: the file is missing, truncated or corrupted.
    """
    config = summary = None
    wheels: dict[int, list[tuple[int, float, float]]] = {}
    samples: dict[tuple[int, str], list[Sample]] = {}
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
            elif topic.startswith("/robot") and topic.split("/")[-1] in SENSOR_TOPICS:
                robot, sensor = int(topic[len("/robot"):].split("/")[0]), topic.split("/")[-1]
                samples.setdefault((robot, sensor), []).append(
                    camera_sample(msg.data) if sensor == "camera"
                    else json_sample(sensor, json.loads(msg.data)))
        except (ValueError, KeyError, TypeError) as exc:  # a damaged message, not a bug here
            raise LogError(f"{path} is damaged: a message on {topic} does not decode "
                           f"({type(exc).__name__}: {exc}); record the run again") from None
    if config is None:
        raise ReplayError(f"{path} has no {CONFIG_TOPIC}: not a log of dmxshm run --log")
    if config.get("log_format") != LOG_FORMAT:
        raise ReplayError(f"{path} is a log of format {config.get('log_format')}; this dmxshm "
                          f"replays format {LOG_FORMAT} (format 1 was written before every "
                          "sample was hashed and realtime states came every dt: replay it "
                          "with the dmxshm that recorded it)")
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
    if config.get("mode") != "realtime":
        samples = {}  # a gym run replays as a network: its samples are not needed
    return Recording(config, summary, commands, samples)


class Replayed:
    """The replay's policy: each robot's recorded command for the step observed.

    The policy of a replay is a subclass that sets :attr:`commands_path` (see
    :func:`commands_agent`); this class alone has no commands.
    """

    commands_path: str | None = None
    """The ``.npy`` file of the commands, ``(steps, robots, 2)``."""

    answers_in_run_units = True
    """Its answers are the run's commands as they were applied (a PWM run's duties), not
    wheel speeds for the agent to turn into duties."""

    def __init__(self, robot_ids: tuple[int, ...], seed: int = 0) -> None:
        if self.commands_path is None:
            raise ReplayError("Replayed has no commands: a replay's agent is the spec that "
                              "dmxshm.network.replay.commands_agent() gives (dmxshm replay "
                              "makes it)")
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
    with ``agent`` (:func:`commands_agent` of ``rec.commands``). A realtime run's
    physics step is its Bullet step (a state each), so its gym replay steps that."""
    from dmxshm.network.config import NetworkConfig

    c = rec.config
    # A log written before a field existed ran with that field's default.
    default = {f.name: f.default for f in dataclasses.fields(NetworkConfig)}
    dt_s, substeps = float(c["dt_s"]), int(c["substeps"])
    if rec.mode == "realtime" and not c.get("spine"):
        from dmxshm.network.realtime_replay import realtime_config

        dt_s, substeps = realtime_config(rec).physics_dt_s, 1
    physics = str(c.get("physics", "bullet"))  # a log from before DB18 ran Bullet
    if physics != "bullet":
        # The logged commands are what the model was given (duties in a PWM run), and
        # each robot's drawn gain and trim are its model's own: both kept.
        overrides = {"action": str(c.get("action", default["action"])),
                     "randomize": c.get("randomize"), **overrides}
    else:
        # The robots' physics and sensing drawn again; their motors are in the logged
        # wheel speeds already (a replay's commands are wheel speeds).
        overrides = {"randomize": _without_motors(c.get("randomize")), **overrides}
    return NetworkConfig(
        mode="gym", robots=int(c["robots"]), renderers=int(c["renderers"]),
        agents=int(c["agents"]), agent=agent, steps=rec.steps,
        camera=tuple(camera if camera is not None else c["camera"]),
        seed=int(c["seed"]), map=str(c["map"]), dt_s=dt_s,
        substeps=substeps, wait_timeout_s=float(c["wait_timeout_s"]), log=log,
        # the renderer the run used ("auto" resolved there, not here)
        renderer=str(rec.summary.get("renderer", c.get("renderer", default["renderer"]))),
        spine=bool(c.get("spine", default["spine"])),
        spine_hz=float(c.get("spine_hz", default["spine_hz"])),
        camera_model=str(c.get("camera_model", default["camera_model"])),
        route=c.get("route", default["route"]),
        noise=bool(c.get("noise", False)),  # a log from before noise was made without it
        look=str(c.get("look", default["look"])),  # (a log from before looks: flat)
        physics=physics, **overrides)


def _without_motors(config: Any) -> Any:
    from dmxshm.world import randomize as rand

    parsed = rand.parse(config)
    return (rand.without(parsed, rand.MOTOR_PARAMETERS) or None) if parsed else None


@dataclass(frozen=True)
class ReplayResult:
    """A replay and its verdict: whether it went through the recorded run's states,
    commands and samples.

    Attributes:
        recording: what was replayed.
        replayed: the replay's :class:`~dmxshm.network.summary.Summary` (a gym
            network), or a :class:`~dmxshm.network.realtime_replay.RealtimeReplay` (a
            realtime run, replayed in this process: :attr:`in_process`).
        compared: the digest streams the verdict covers (None: every stream the
            replay made): a realtime run replayed as a gym network compares its
            states and commands only, a replay at another camera size leaves the
            camera out.
    """

    recording: Recording
    replayed: Summary | RealtimeReplay
    compared: tuple[str, ...] | None = None

    @property
    def in_process(self) -> bool:
        """A realtime run, replayed sample for sample in this process."""
        return isinstance(self.replayed, RealtimeReplay)

    @property
    def first_difference(self) -> Any:
        """The first logged sample that its replayed state does not give (an in-process
        replay's :class:`~dmxshm.network.realtime_replay.Difference`), or None."""
        return self.replayed.first_difference if self.in_process else None  # type: ignore[union-attr]

    @property
    def compared_streams(self) -> dict[str, str]:
        """The replay's digest streams that the verdict covers, by name."""
        made = dict(self.replayed.digests)
        if self.compared is not None:
            made = {k: v for k, v in made.items() if k in self.compared}
        return made

    @property
    def differing(self) -> list[str]:
        """The compared streams whose digest is not the recorded run's (or that the
        recorded run did not have)."""
        recorded = self.recording.digests
        return [k for k, v in self.compared_streams.items() if recorded.get(k) != v]

    @property
    def not_replayed(self) -> list[str]:
        """The recorded run's streams the verdict does not cover."""
        made = self.compared_streams
        return [k for k in self.recording.digests if k not in made]

    @property
    def digest_equal(self) -> bool:
        """The replay's ``trajectory_digest`` is the recorded run's: it made every state,
        command and sample of the run, bit for bit."""
        return self.replayed.trajectory_digest == self.recording.trajectory_digest

    @property
    def equal(self) -> bool:
        """The verdict: every compared stream is the recorded run's, and (in process)
        every logged sample is what its replayed state gives and read a state the
        replay published."""
        unread = self.replayed.unread if self.in_process else []  # type: ignore[union-attr]
        return (bool(self.compared_streams) and not self.differing
                and self.first_difference is None and not unread)

    def to_dict(self) -> dict[str, Any]:
        """``dmxshm replay --json``: the replay's figures, the recorded digest and the
        verdict."""
        out = self.replayed.to_dict()
        difference = self.first_difference
        out.update(recorded_digest=self.recording.trajectory_digest,
                   digest_equal=self.digest_equal, equal=self.equal, differing=self.differing,
                   not_replayed=self.not_replayed,
                   first_difference=(dataclasses.asdict(difference)
                                     if difference is not None else None))
        return out


def replay(path: str, log: str | None = None, camera: tuple[int, int] | None = None,
           on_progress: Callable[[int], None] | None = None) -> ReplayResult:
    """Replay the run logged at ``path`` (see the module docstring).

    Args:
        path: the log of the run (``dmxshm run --log``).
        log: record the replay too (a gym network, its sensors rendered again).
        camera: the replay's camera size (default: the recorded one; ``(0, 0)``:
            none, faster; the camera's streams are then not compared).
        on_progress: called with the replay's step count.

    Returns:
        the replay and its verdict (:attr:`ReplayResult.equal`).

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


def _in_process(rec: Recording, log: str | None) -> bool:
    """A realtime run, replayed in this process (without a --log of the replay)."""
    return rec.mode == "realtime" and log is None


def check(rec: Recording, path: str, log: str | None = None,
          camera: tuple[int, int] | None = None) -> None:
    """What can refuse the replay of ``rec`` (loaded from ``path``) refuses now, before
    anything starts: its --log, its configuration, the map and the renderer.

    Raises:
        ReplayError, LogError: the replay cannot be run as asked (the message says why).
        ConfigError, MapError, RendererError: its configuration cannot run here.
    """
    _check_log(rec, path, log, camera)
    # The agent is Replayed itself: loaded, not made; the renderer probed where asked.
    replay_config(rec, f"{__name__}:Replayed", log, camera).preflight()


def _check_log(rec: Recording, path: str, log: str | None,
               camera: tuple[int, int] | None = None) -> None:
    if log is not None and os.path.realpath(log) == os.path.realpath(path):
        raise LogError("the replay's --log would overwrite the log being replayed; give "
                       "another path")
    if log is not None and rec.mode == "realtime" and rec.config.get("spine"):
        raise ReplayError("a realtime spine run replays in this process (its CAN cycles' "
                          "physics and its samples): --log is not available for it")
    if _in_process(rec, log) and camera not in (None, (0, 0)) \
            and tuple(camera) != tuple(rec.config["camera"]):
        raise ReplayError("a realtime run replays its samples as recorded: --camera can only "
                          "be the recorded size or 0x0 (no camera, faster)")


def run_recording(rec: Recording, path: str, log: str | None = None,
                  camera: tuple[int, int] | None = None,
                  on_progress: Callable[[int], None] | None = None) -> ReplayResult:
    """Run the replay of ``rec`` (loaded from ``path``); returns it with its verdict.

    Raises:
        the errors of :func:`check`, then those of the run.
    """
    from dmxshm.network import run
    from dmxshm.network.realtime_replay import replay_realtime

    camera = None if camera is None else (int(camera[0]), int(camera[1]))
    _check_log(rec, path, log, camera)
    if _in_process(rec, log):
        return ReplayResult(rec, replay_realtime(rec, camera != (0, 0), on_progress))
    compared: tuple[str, ...] | None = None
    if rec.mode == "realtime":  # a gym network's sensors sample once a step
        compared = ("states", "commands")
    elif camera is not None and tuple(camera) != tuple(rec.config["camera"]):
        compared = tuple(k for k in rec.digests if not k.endswith("/camera"))
    with commands_agent(rec.commands) as agent:
        return ReplayResult(rec, run(replay_config(rec, agent, log, camera),
                                     on_progress=on_progress), compared)

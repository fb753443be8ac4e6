"""``dmxshm run``'s options: :class:`~dmxshm.network.NetworkConfig`'s fields, with its
defaults, and the live servers' (:mod:`dmxshm.settings`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from dmxshm import settings
from dmxshm.cli.options import (
    DURATION,
    PORT,
    RATE_HZ,
    SEED,
    STEPS,
    TIMEOUT,
    count,
    field_default,
    fmt_wh,
    json_file_option,
    parse_camera,
    parse_pin,
    parse_rates,
    profile_options,
    seconds,
)
from dmxshm.duckiematrix import DEFAULT_PORT
from dmxshm.matrix.camera import LOOKS
from dmxshm.network.config import (
    DEFAULT_SENSOR_RATES_HZ,
    DEFAULT_SPINE_REPLY_AT_S,
    MAX_ROBOTS,
    MODES,
    NetworkConfig,
)
from dmxshm.sim.spec import PHYSICS
from dmxshm.world.motor import ACTIONS
from dmxshm.world.renderers import RENDERERS

F = TypeVar("F", bound=Callable[..., Any])

FIELDS = {"rates": "sensor_rates_hz", "timeout_s": "wait_timeout_s", "use_spine": "spine",
          "map_name": "map", "log_path": "log"}
"""The parameters of ``dmxshm run`` named otherwise than the fields they set."""


def _default(name: str) -> Any:
    return field_default(NetworkConfig, name)


OPTIONS = [
    click.option("--mode", type=click.Choice(MODES), default=_default("mode"),
                 show_default=True,
                 help="gym: lockstep and reproducible; realtime: nobody waits, drops are "
                      "counted."),
    click.option("--robots", type=count(1, MAX_ROBOTS), default=_default("robots"),
                 show_default=True,
                 help="Robots in the world."),
    click.option("--renderers", type=count(1, MAX_ROBOTS), default=_default("renderers"),
                 show_default=True,
                 help="Renderer processes (robots are split between them)."),
    click.option("--agents", type=count(0, MAX_ROBOTS), default=None,
                 help=f"Built-in agent processes (robots are split between them and the "
                      f"external slots, built-in first)  [default: {_default('agents')}, or 0 "
                      "with --external-agents]"),
    click.option("--external-agents", type=click.IntRange(max=MAX_ROBOTS), default=None,
                 help="Agent slots for programs the network does not start: each takes one "
                      "with dmxshm.connect() (or the C ABI of docs/abi.md). Gym mode waits "
                      "for their commands; realtime: an unclaimed slot's robots stand still."),
    click.option("--connect-timeout", "connect_timeout_s",
                 type=seconds(settings.MIN_TIMEOUT_S),
                 default=_default("connect_timeout_s"), show_default=True,
                 help="Gym mode with --external-agents: seconds a slot may wait for a client "
                      "(at the start, or after its client left) before the run fails."),
    click.option("--episodes", is_flag=True, default=False,
                 help="Gym mode with --external-agents: score the slots' robots as "
                      "episodes (a reward, off-road and collision terminations, truncation "
                      "at --episode-steps) in the slots' reserved fields; an ended robot "
                      "stands still until its slot asks for a reset. What "
                      "dmxshm.connect_parallel() drives (docs/marl.md)."),
    click.option("--episode-steps", type=count(0, settings.MAX_STEPS),
                 default=_default("episode_steps"), show_default=True,
                 help="With --episodes: steps after which a robot's episode is truncated "
                      "(0: never)."),
    click.option("--agent", default=_default("agent"), show_default=True,
                 help="Built-in agent (idle, random, lane-follow), module:callable (found in "
                      "--app-dir or on sys.path) or path/to/file.py:callable."),
    click.option("--action", type=click.Choice(ACTIONS), default=_default("action"),
                 show_default=True,
                 help="Units of every agent's commands (built-in agents and slots alike): "
                      "wheel-speed (rad/s, within +-27) or pwm (each motor's duty in [-1, 1], "
                      "through the Duckiebot's motor model: gain 1, trim 0, 27 rad/s at duty 1; "
                      "docs/motors.md)."),
    click.option("--app-dir", type=click.Path(exists=True, file_okay=False), default=".",
                 show_default=True,
                 help="Folder searched first for the --agent module (as uvicorn's --app-dir)."),
    click.option("--steps", type=STEPS, default=_default("steps"), show_default=True,
                 help="Gym mode: steps."),
    click.option("--duration", "duration_s", type=DURATION, default=_default("duration_s"),
                 show_default=True, help="Realtime mode: seconds to run."),
    click.option("--camera", default=fmt_wh(_default("camera")), show_default=True,
                 callback=parse_camera,
                 help="Camera size WxH (dmxshm's 60-degree pinhole camera), or "
                      "'duckiebot': the Duckiebot's 640x480 camera with its wide-angle "
                      "lens, height and tilt (Duckietown's default calibration, in the "
                      "summary as camera.calibration); 0x0 disables the camera."),
    click.option("--renderer", type=click.Choice(RENDERERS), default=_default("renderer"),
                 show_default=True,
                 help="Camera renderer: batch (dmxshm's own: every camera of a process "
                      "in one call, the same pixels everywhere; the default, the fastest "
                      "measured: docs/renderers.md), tiny (pybullet's CPU renderer, the "
                      "default before; its pixels are those of digests pinned then), egl "
                      "(its EGL plugin: a GPU, or Mesa's software OpenGL), or auto (the "
                      "fastest of these here for the camera, measured once on this "
                      "machine)."),
    click.option("--physics", type=click.Choice(list(PHYSICS)), default=_default("physics"),
                 show_default=True,
                 help="How robots move: bullet (rigid bodies in pybullet: contacts, "
                      "tipping, slipping) or db18 (Duckietown's DB18 motion model, as the "
                      "Duckiematrix and gym-duckietown move their robots: full duty is "
                      "0.6 m/s; contacts between footprints in the plane; cameras drawn "
                      "by the batch renderer). docs/physics.md compares them."),
    click.option("--look", type=click.Choice(LOOKS), default=_default("look"),
                 show_default=True,
                 help="How the cameras draw the world: flat (every part one colour on "
                      "white, as every renderer draws it; what digests pinned before "
                      "were drawn in) or duckietown (the batch renderer only: signs with "
                      "their symbol and tag36h11 AprilTag, which Duckietown's detector "
                      "reads, the markings in dt-core's line-detector colours, a ground "
                      "lit from above, a floor and a sky). docs/renderers.md shows both."),
    click.option("--seed", type=SEED, default=_default("seed"), show_default=True,
                 help="Seed of world and agents."),
    click.option("--map", "map_name", default=_default("map"), show_default=True,
                 help="Bundled map name, a .json map, a gym-duckietown .yaml map or a "
                      "Duckiematrix layered map folder (docs/maps.md)."),
    click.option("--route", default=None,
                 help="Turns at intersections: 'seed' (each robot's turn at each "
                      "intersection drawn by the seed) or turns like left,straight,right "
                      "(cycled per robot; an impossible one skipped). Robots then follow "
                      "their turn's lane and yield at stop lines, first come first served; "
                      "observations gain 'route' (turn, may_go). Without it robots go "
                      "straight through where they can, as before [default: off]."),
    click.option("--noise/--no-noise", default=_default("noise"), show_default=True,
                 help="Sensor noise as the Duckiebot's parts have it (IMU white noise and "
                      "bias walk, missed encoder ticks, time-of-flight spread and its 8.0 m "
                      "out-of-range reading, camera pixel noise and exposure), seeded by "
                      "--seed; --no-noise: exact readings (docs/sensors.md)."),
    click.option("--motor-dynamics/--no-motor-dynamics", default=_default("motor_dynamics"),
                 show_default=True,
                 help="With --action pwm: each wheel follows its duty through the motor's "
                      "first-order lag (0.1 s) and dead band (0.05); --no-motor-dynamics: "
                      "at once (docs/motors.md)."),
    click.option("--randomize", metavar="FILE|defaults", default=None,
                 help="Domain randomisation: each robot's friction, mass, wheel radius, "
                      "motor gain/trim/lag (--action pwm), noise scale, camera pose and "
                      "focal length, light and colours drawn once, at the start, from the "
                      "ranges of a YAML/JSON FILE, or 'defaults' for every parameter's "
                      "default range; keyed by --seed and the robot, in the summary's "
                      "'randomization' and the log (docs/randomization.md) [default: "
                      "off: every robot is the nominal Duckiebot]."),
    click.option("--name", default=None,
                 help="Name the run ('dmxshm ps' lists it); refused if a running network "
                      "of yours has it [default: unnamed]."),
    click.option("--pin", callback=parse_pin, default="",
                 help="Pin processes to CPUs: ROLE=CPU,... (roles: engine, renderer-N, "
                      "agent-N, camera-N in realtime with a camera, spine), or 'auto': the "
                      "spine alone on the last CPU, the rest dealt round the others."),
    click.option("--record", "record_dir", type=click.Path(file_okay=False),
                 help="Write camera frames as PNG here, plus contact_sheet.png (a folder that "
                      "holds frames of an earlier run is refused unless --overwrite)."),
    click.option("--overwrite", is_flag=True,
                 help="With --record: remove the frames of an earlier run from the folder "
                      "first; with --log: replace an existing log."),
    click.option("--log", "log_path", type=click.Path(dir_okay=False),
                 help="Record the run to this MCAP file: camera images, poses, applied wheel "
                      "commands, IMU, encoders, time of flight, config and summary (opens in "
                      "Foxglove; replay a realtime run with 'dmxshm replay'). Needs "
                      "pip install 'dmxshm[log]'."),
    json_file_option("Write the summary as JSON to this file."),
    click.option("--timeout", "timeout_s", type=TIMEOUT, default=_default("wait_timeout_s"),
                 show_default=True,
                 help="Longest wait of any process for another before it gives up; a "
                      "process stopped (SIGSTOP) this long ends the run, in every mode "
                      f"({settings.MIN_TIMEOUT_S:g} s to {settings.MAX_TIMEOUT_S:g} s)."),
    click.option("--spine", "use_spine", is_flag=True,
                 help="Realtime: put a pinned spine between the agents and the engine "
                      "(pin it with --pin spine=CPU; default the last CPU). Gym: step through "
                      "the spine's pipeline in lockstep, one physics step of 1/frequency a "
                      "step, each observation two cycles old (deterministic)."),
    click.option("--spine-frequency", "spine_hz", type=RATE_HZ, default=_default("spine_hz"),
                 show_default=True, help="Frequency of the --spine, Hz."),
    click.option("--spine-reply-at", "spine_reply_at_s",
                 type=seconds(0.0, settings.MAX_TIMEOUT_S),
                 default=None,
                 help="Realtime --spine: the instant after a frame's send, in seconds, at "
                      "which the engine's reply counts as the observation (T_o). The report "
                      "predicts t_send - t_obs from the frequency and this alone, beside the "
                      f"measured [default: {DEFAULT_SPINE_REPLY_AT_S:g}, "
                      "NetworkConfig.spine_reply_at_s]."),
    click.option("--command-timeout", "command_timeout_s", type=TIMEOUT,
                 default=_default("command_timeout_s"), show_default=True,
                 help="Realtime: a wheel command older than this stops its robot."),
    profile_options("Sample every process with psutil: a live table while it runs, CPU, "
                    "memory and context switches per role at the end (and in --json).",
                    _default("profile_interval_s")),
    click.option("--rates", callback=parse_rates, default="",
                 help="Realtime sensor rates in Hz, e.g. camera=15,imu=200 [default: "
                      + ",".join(f"{k}={v:g}" for k, v in DEFAULT_SENSOR_RATES_HZ.items())
                      + "]. Physics steps and publishes a state at least twice as fast "
                        "as the fastest sensor, so each sample is of its own instant."),
    click.option("--view", "view", is_flag=True,
                 help="Serve a live view of the run in the browser (map, poses and trails, "
                      "cameras, sensor rates, steps/s; the spine's histograms). Needs "
                      "pip install 'dmxshm[view]'."),
    click.option("--view-port", type=PORT, default=settings.VIEW_PORT, show_default=True,
                 help="Port of the --view server."),
    click.option("--view-host", default=settings.LOCAL_HOST, show_default=True,
                 help="Address of the --view server; beyond loopback needs --allow-remote."),
    click.option("--foxglove", "foxglove", is_flag=True,
                 help="Stream the run live to Foxglove (its WebSocket protocol, the topics "
                      "and schemas of --log): open ws://HOST:PORT in Foxglove. Needs "
                      "pip install 'dmxshm[log]'."),
    click.option("--foxglove-port", type=PORT, default=settings.FOXGLOVE_PORT,
                 show_default=True,
                 help="Port of the --foxglove server, Foxglove's default; with --view on the "
                      "same port by default, the view takes the next free one and says so."),
    click.option("--foxglove-host", default=settings.LOCAL_HOST, show_default=True,
                 help="Address of the --foxglove server; beyond loopback needs "
                      "--allow-remote."),
    click.option("--duckiematrix", is_flag=True,
                 help="Serve the robots to Duckietown's SDK (duckietown-sdk's DB21J(name, "
                      "simulated=True)) over DTPS, as the Duckiematrix does: one agent slot a "
                      "robot, realtime mode, PWM commands (docs/duckiematrix.md). Needs pip "
                      "install 'dmxshm[duckiematrix]'."),
    click.option("--duckiematrix-port", type=PORT, default=DEFAULT_PORT, show_default=True,
                 help="Port of the --duckiematrix server (the SDK's default)."),
    click.option("--duckiematrix-host", default=settings.LOCAL_HOST, show_default=True,
                 help="Address of the --duckiematrix server; beyond loopback needs "
                      "--allow-remote (the protocol has no authentication)."),
    click.option("--robot-names", default=None,
                 help="--duckiematrix: the robots' names, comma-separated, one per robot  "
                      "[default: duckiebot01, duckiebot02, ...]"),
    click.option("--allow-remote", is_flag=True,
                 help="Let --view listen beyond loopback (its URL's token is then all "
                      "that keeps other machines out). Let --foxglove and --duckiematrix "
                      "too (they have no token: anyone who reaches the port connects)."),
]
"""The options, in the order ``dmxshm run --help`` lists them."""


def run_options(f: F) -> F:
    """Apply every option of ``dmxshm run`` to the command ``f``."""
    for option in reversed(OPTIONS):
        f = option(f)
    return f

"""Foxglove live: a run's topics streamed to Foxglove while the run goes.

``dmxshm run --foxglove`` starts it beside a run (``python -m
dmxshm.view.foxglove``, the live view's command line): it finds the run as
the live view does (:func:`dmxshm.view.server.open_run`), peeks at the same
view rings (:mod:`dmxshm.view.rings`) and logs what is new in them to
channels of a foxglove-sdk WebSocket server, which Foxglove opens as it
opens a log (Open connection -> Foxglove WebSocket -> ``ws://127.0.0.1:8765``).

The channels are the log's (:func:`dmxshm.logs.make_channel`): same topics,
same schemas, each message stamped with the run's simulated time and logged
at the wall time the run wrote it. What the view rings hold is what it can
stream, at their rates:

=====================  ====================  ==================================
topic                  schema                rate
=====================  ====================  ==================================
``/robotNN/pose``      foxglove.PoseInFrame  the engine's view state, at most
                                             :data:`~dmxshm.view.rings.STATE_HZ`
``/robotNN/camera``    foxglove.Compressed-  each renderer's newest images, at
                       Image (png)           most :data:`~dmxshm.view.rings.OBS_HZ`
=====================  ====================  ==================================

Who can connect: anyone who reaches its port, with no token. foxglove-sdk's
server (0.30) cannot authenticate a client: ``start_server`` takes no token or
password and its listener has no hook that could refuse a connection (TLS
only encrypts), and the Foxglove WebSocket protocol has no authentication. So
it runs only when asked (``dmxshm run --foxglove``, off by default), and the
run's start message says who can connect (on loopback: any local user of this
machine; :func:`dmxshm.view.launch.open_to`).

Like the live view, it binds no side of any ring: the run never waits for
it, and a client that does not keep up loses messages in the SDK's buffer,
not in the run. It needs the ``foxglove`` extra (``pip install
'dmxshm[foxglove]'``, or the ``log`` extra).
"""

from __future__ import annotations

import importlib
import math
import signal
import sys
import time
from typing import Any

import numpy as np
import psutil

from dmxshm import settings
from dmxshm.logs import image_message, make_channel, pose_message, robot_topic
from dmxshm.view import rings as vr
from dmxshm.view.server import RunReader, ViewRefusedError, command_line, is_loopback, open_run

DEFAULT_PORT = settings.FOXGLOVE_PORT
POLL_HZ = vr.STATE_HZ  # the rings' fastest rate; a poll takes every state slot written since
LOOK_HZ = 4.0  # how often it looks for a run, and whether the run (or --exit-with) lives
SERVER_NAME = "dmxshm"


def require_foxglove() -> Any:
    """foxglove-sdk's ``foxglove`` module.

    Raises:
        ViewRefusedError: the foxglove extra is not installed (the message says how).
    """
    try:
        return importlib.import_module("foxglove")
    except ImportError:
        raise ViewRefusedError("Foxglove live needs the foxglove extra: "
                               "pip install 'dmxshm[foxglove]'") from None


def check_remote(host: str, allow_remote: bool) -> None:
    """Refuse a host beyond loopback unless ``allow_remote``.

    Raises:
        ViewRefusedError: a host beyond loopback without ``allow_remote``.

    Example:
        >>> check_remote("127.0.0.1", allow_remote=False)
        >>> check_remote("0.0.0.0", allow_remote=True)
        >>> check_remote("0.0.0.0", allow_remote=False)
        Traceback (most recent call last):
        ...
        dmxshm.view.server.ViewRefusedError: the Foxglove server would be reachable ...
    """
    if not is_loopback(host) and not allow_remote:
        raise ViewRefusedError(f"the Foxglove server would be reachable from other machines "
                               f"on {host}, with no token (the Foxglove WebSocket protocol "
                               "has none); give --allow-remote to mean it")


class Streamer:
    """One run's view rings to one foxglove context: the pose and camera channels of
    each robot, and :meth:`poll`, which logs what is new in the rings."""

    def __init__(self, reader: RunReader, context: Any) -> None:
        self.reader = reader
        meta = reader.meta
        self.dt_s = float(meta.get("state_dt_s", meta["dt_s"]))  # a state's step
        robots = range(int(meta["robots"]))
        # Made at once (not at the first message) so that a client's first
        # advertise lists every topic of the run.
        self.poses = [make_channel(context, robot_topic(r, "pose"), "pose") for r in robots]
        self.cameras = ([make_channel(context, robot_topic(r, "camera"), "camera")
                         for r in robots] if meta["camera"] != [0, 0] else [])
        self.state_wall_s = 0.0
        self.obs_wall_s = [0.0] * len(reader.obs)
        self.messages = 0

    def poll(self) -> None:
        """Log the view states and images written since the last poll."""
        for st in self.reader.state.peek(self.reader.state.nslots):
            wall_s = float(st["wall_time_s"])
            if wall_s > self.state_wall_s:
                self.state_wall_s = wall_s
                self._poses(st, wall_s)
        if not self.cameras:
            return
        for r, ring in enumerate(self.reader.obs):
            got = ring.peek(1)  # written at a third of POLL_HZ: the newest is the one new
            if len(got) and float(got[0]["wall_time_s"]) > self.obs_wall_s[r]:
                self.obs_wall_s[r] = float(got[0]["wall_time_s"])
                self._images(got[0])

    def _poses(self, st: np.void, wall_s: float) -> None:
        sim_time_s, wall_ns = float(st["sim_time_s"]), round(wall_s * 1e9)
        for robot, (x, y, yaw) in enumerate(st["poses"].tolist()):
            channel = self.poses[robot]
            if channel.has_sinks():
                # The view state has no height: the pose is on the floor (z = 0).
                quat = (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))
                channel.log(pose_message(sim_time_s, (x, y, 0.0), quat), log_time=wall_ns)
                self.messages += 1

    def _images(self, slot: np.void) -> None:
        # Stamped with the simulated time of the state the renderer sensed with
        # (the view ring keeps no camera time; states come every state_dt_s).
        sim_time_s = int(slot["step"]) * self.dt_s
        wall_ns = round(float(slot["wall_time_s"]) * 1e9)
        for j, robot in enumerate(slot["robots"].tolist()):
            channel = self.cameras[robot]
            if channel.has_sinks():  # no PNG encoded for nobody
                channel.log(image_message(robot, slot["camera"][j], sim_time_s),
                            log_time=wall_ns)
                self.messages += 1

    def close(self) -> None:
        """Close the channels (clients are told they are gone) and the rings."""
        for channel in (*self.poses, *self.cameras):
            channel.close()
        self.reader.close()


class Stop:
    """Records SIGTERM and SIGINT; the loop acts on it."""

    def __init__(self) -> None:
        self.signum: int | None = None
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._record)

    def _record(self, signum: int, frame: Any) -> None:
        self.signum = signum


def stream(pid: int | None, context: Any, *, follow: bool, exit_with: int | None,
           stop: Stop) -> None:
    """Stream the run of ``pid`` (None: the newest) into ``context`` until it ends
    (with ``follow``: the next run then, until ``pid`` is gone), ``exit_with``
    is gone, or ``stop`` records a signal. Waits for a run that has not
    started yet."""
    streamer: Streamer | None = None
    ended = False  # the run streamed has ended (with follow: waiting for the next)
    # Who is alive is looked at LOOK_HZ times a second, not at every poll: a
    # pid check costs 75 us, the run's end 110 us, a poll of the rings 30 us.
    look = vr.Throttle(LOOK_HZ)
    try:
        while stop.signum is None:
            if look.due():
                if exit_with is not None and not psutil.pid_exists(exit_with):
                    return
                if streamer is not None and streamer.reader.ended:
                    streamer.poll()  # what it wrote before it ended
                    if not follow:
                        return
                    ended = True
                if streamer is None or ended:
                    if pid is not None and not psutil.pid_exists(pid):
                        return  # no run of that process can come any more
                    reader = open_run(pid, streamer.reader if streamer is not None else None)
                    if reader is not None:
                        if streamer is not None:
                            streamer.close()
                        streamer, ended = Streamer(reader, context), False
            streaming = streamer is not None and not ended
            if streaming:
                assert streamer is not None
                streamer.poll()
            time.sleep(1.0 / (POLL_HZ if streaming else LOOK_HZ))
    finally:
        if streamer is not None:
            streamer.close()


def main(argv: list[str] | None = None) -> None:
    """``python -m dmxshm.view.foxglove``: what ``dmxshm run --foxglove`` starts.

    Prints its URL (``ws://host:port``) on standard output once it listens, and
    nothing else there; errors go to standard error.
    """
    args = command_line("dmxshm-foxglove", DEFAULT_PORT).parse_args(argv)
    stop = Stop()
    try:
        check_remote(args.host, args.allow_remote)
        fg = require_foxglove()
    except ViewRefusedError as exc:
        sys.exit(f"dmxshm foxglove: {exc}")
    context = fg.Context()
    try:
        server = fg.start_server(name=SERVER_NAME, host=args.host, port=args.port,
                                 context=context)
    except (RuntimeError, OSError, ValueError) as exc:
        sys.exit(f"dmxshm foxglove: cannot listen on {args.host}:{args.port}: {exc}. Is "
                 "another server on that port? Give another --port")
    try:
        host = f"[{args.host}]" if ":" in args.host else args.host
        print(f"ws://{host}:{server.port}", flush=True)
        if not is_loopback(args.host):
            print(f"dmxshm foxglove: warning: anyone who can reach {host}:{server.port} "
                  "sees the run (there is no token)", file=sys.stderr, flush=True)
        stream(args.pid, context, follow=args.follow, exit_with=args.exit_with, stop=stop)
    finally:
        server.stop()


if __name__ == "__main__":
    main(sys.argv[1:])

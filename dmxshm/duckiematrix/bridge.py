"""The Duckiematrix bridge: a DTPS server for duckietown-sdk agents, an outside agent
of a dmxshm network (``python -m dmxshm.duckiematrix.bridge``; ``dmxshm run
--duckiematrix`` starts it as ``dmx-duckiematrix``).

Order of its start, so that an SDK agent, which never retries a topic (or a server)
it did not find, finds everything:

1. every topic of every robot and the three map layers are created, the layers
   published, and only then does the port accept connections; it prints its URL;
2. it claims one agent slot per robot of the network named ``--network``
   (:func:`dmxshm.connect`, waiting for the network to start), and from then on
   publishes each robot's fresh sensor samples and passes each command on.

Per robot, a thread takes the slot's observations (realtime: the newest one each
time) and publishes what is new in it: a camera frame as JPEG, the time of flight
(metres; ``None`` beyond the sensor's range, as duckietown-messages' ``Range``
says), each encoder's cumulative ticks (135 a revolution), ``delta_t`` (simulated
seconds since the last observation published) and the pose (the live view's feed
of the engine's poses, at most 30 a second). Commands come on the server's loop:
a ``DifferentialPWM`` is passed on as it is (the network checks it: a duty beyond
+-1 or NaN is rejected and counted there, as any bad command), a ``Boolean``
``state/reset`` that is true puts the robot back at its start pose, a ``CarLights``
pattern (RGBA of front left, front right, back left and back right) goes to the
network, which shows it in the live view and logs it.

The SDK's publisher wakes its event loop only when something arrives on it (a
plain ``asyncio.Queue`` fed from another thread), so the bridge pings every
websocket an agent publishes through, every 5 ms and every 1 ms in the 30 ms after
each camera frame: without it a motors-only agent's commands are never sent.
Messages are kept only until sent (``DTPS_DATA_AVAILABILITY_TIMEOUT`` 0, a swept
store), not dtps-http's 60 s.

Who can connect: anyone who reaches its port, and they drive the robots (PWM,
lights, resets). The SDK's protocol has no authentication, and the SDK, which must
run unchanged, sends none; so it listens on loopback unless ``--allow-remote``
(any local user of this machine can connect there), refuses a ``Host`` that is not
loopback there (DNS rebinding), and ``dmxshm run``'s start message says who can
connect (:func:`dmxshm.view.launch.open_to`).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import math
import os
import signal
import sys
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dmxshm.duckiematrix import MAP_OUT, ROBOT_IN, ROBOT_OUT
from dmxshm.duckiematrix.layers import layers, map_position
from dmxshm.shm.slot import LIGHTS

PING_S = 0.005
"""How often every publishing websocket is pinged (see the module docstring)..."""
BURST_PING_S, BURST_S = 0.001, 0.03
"""... and how often in the 30 ms after a camera frame, when an agent that answers
frames publishes: each ping is where its command may leave (measured with
``dmxshm bench duckiematrix``: publish -> applied p50 7.4 ms pinging every 5 ms,
4.6-4.8 ms every 1 ms)."""
SWEEP_S = 0.2
"""How often dtps-http's store of sent messages is swept."""
TOF_MAX_M = 1.2
"""The time of flight's range: beyond it, ``Range.data`` is None."""
JPEG_QUALITY = 90


@dataclass
class Counts:
    """What the bridge did for one robot (printed at its end, ``--stats`` as JSON)."""

    observations: int = 0
    frames: int = 0
    tof: int = 0
    encoders: int = 0
    poses: int = 0
    commands: int = 0
    malformed: int = 0
    resets: int = 0
    lights: int = 0
    last_lights: list[list[float]] | None = None
    first_malformed: str | None = None
    jpeg_s: float = 0.0
    hop_s: list[float] = field(default_factory=list)  # stamped commands: made -> received


@dataclass
class Robot:
    """One robot of the bridge: its name, slot, topics and figures."""

    name: str
    index: int
    queues: dict[str, Any] = field(default_factory=dict)
    conn: Any = None
    counts: Counts = field(default_factory=Counts)
    wheels: np.ndarray = field(default_factory=lambda: np.zeros((1, 2)))
    lock: threading.Lock = field(default_factory=threading.Lock)


def header() -> dict[str, Any]:
    """duckietown-messages' ``Header``, stamped now (Unix time)."""
    return {"version": "1.0", "frame": None, "txt": None, "timestamp": time.time()}


def jpeg(rgb: np.ndarray) -> bytes:
    """``rgb`` (H, W, 3 uint8) as JPEG (the SDK decodes it to BGR itself)."""
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(rgb).save(out, format="JPEG", quality=JPEG_QUALITY)
    return out.getvalue()


class Bridge:
    """The server and its robots (see the module docstring)."""

    def __init__(self, args: argparse.Namespace) -> None:
        from dmxshm.world.maps import load_map

        self.args = args
        self.names: list[str] = args.names.split(",")
        self.robots = [Robot(n, i) for i, n in enumerate(self.names)]
        self.road_map = load_map(args.map)
        self.push_ws: weakref.WeakSet[Any] = weakref.WeakSet()
        self.stop_event: asyncio.Event | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.threads: list[threading.Thread] = []
        self.ended = threading.Event()
        self.poses: Any = None  # the run's view.state ring (peeked at)
        self.burst_until = 0.0  # pinging every BURST_PING_S until then

    # -- the server ---------------------------------------------------------------------
    async def main(self) -> None:
        import cbor2
        from aiohttp import web
        from dtps_http import (
            MIME_CBOR,
            REL_STREAM_PUSH_SUFFIX,
            Bounds,
            ContentInfo,
            DTPSServer,
            RawData,
            TopicNameV,
            TopicProperties,
        )
        from dtps_http.utils_every_once_in_a_while import EveryOnceInAWhile

        args = self.args
        self.loop = asyncio.get_running_loop()
        self.stop_event = asyncio.Event()
        self.cbor, self.RawData, self.MIME = cbor2, RawData, MIME_CBOR
        server = DTPSServer.create(nickname="dmxshm", enable_clock=False)
        hosts = {f"{h}:{args.port}" for h in ("127.0.0.1", "localhost", "[::1]")}
        loopback = not args.allow_remote

        @web.middleware
        async def host_guard(request: Any, handler: Any) -> Any:
            # On loopback, a page of another site (DNS rebinding) must not reach us.
            if loopback and request.host not in hosts:
                raise web.HTTPForbidden(text=f"Host {request.host!r} refused: this server "
                                        "answers on loopback only\n")
            return await handler(request)

        async def on_prepare(request: Any, response: Any) -> None:
            if isinstance(response, web.WebSocketResponse) and request.path.endswith(
                    REL_STREAM_PUSH_SUFFIX + "/"):
                self.push_ws.add(response)

        server.app.middlewares.append(host_guard)
        server.app.on_response_prepare.append(on_prepare)
        runner = web.AppRunner(server.app, auto_decompress=False, shutdown_timeout=1.0)
        await runner.setup()
        await server.started.wait()
        server.blob_manager.cleanup_time = EveryOnceInAWhile(SWEEP_S)
        info = ContentInfo.simple(MIME_CBOR)

        async def queue(path: str, pushable: bool) -> Any:
            tp = TopicProperties.rw_pushable() if pushable else \
                TopicProperties.streamable_readonly()
            return await server.create_oq(TopicNameV.from_dash_sep(path), info, tp=tp,
                                          bounds=Bounds.max_length(1))

        frames, tiles, tile_maps = layers(self.road_map)
        for key, data in (("frames", frames), ("tiles", tiles), ("tile_maps", tile_maps)):
            oq = await queue(MAP_OUT[key], pushable=False)
            await oq.publish(RawData(content=cbor2.dumps({"header": header(), "data": data}),
                                     content_type=MIME_CBOR))
        for robot in self.robots:
            base = f"robot/{robot.name}/"
            for key, path in ROBOT_OUT.items():
                robot.queues[key] = await queue(base + path, pushable=False)
            for key, path in ROBOT_IN.items():
                robot.queues[key] = oq = await queue(base + path, pushable=True)
                oq.subscribe(self._receiver(robot, key))
        # Only now does the port accept connections: every topic exists.
        site = web.TCPSite(runner, args.host, args.port)
        try:
            await site.start()
        except OSError as exc:
            await server.aclose()
            await runner.cleanup()
            raise SystemExit(f"dmxshm duckiematrix: cannot listen on {args.host}:{args.port}: "
                             f"{exc.strerror or exc}. Is another server on that port? Give "
                             "another --duckiematrix-port") from None
        host = f"[{args.host}]" if ":" in args.host else args.host
        url = f"http://{host}:{args.port}/"
        await server.add_available_url(url)
        print(url, flush=True)
        if not loopback:
            print(f"dmxshm duckiematrix: warning: anyone who can reach {host}:{args.port} "
                  "drives the robots (the protocol has no authentication)",
                  file=sys.stderr, flush=True)
        tasks = [asyncio.create_task(self._pinger()), asyncio.create_task(self._connect())]
        try:
            await self.stop_event.wait()
        finally:
            self.ended.set()
            for task in tasks:
                task.cancel()
            for t in self.threads:
                await asyncio.to_thread(t.join, 2.0)
            await server.aclose()
            await runner.cleanup()
            for robot in self.robots:
                if robot.conn is not None:
                    robot.conn.close()
            if self.poses is not None:
                self.poses.close()

    def stop(self) -> None:
        """End the server (from any thread)."""
        if self.loop is not None and self.stop_event is not None:
            self.loop.call_soon_threadsafe(self.stop_event.set)

    async def _pinger(self) -> None:
        while True:
            burst = time.monotonic() < self.burst_until
            await asyncio.sleep(BURST_PING_S if burst else PING_S)
            for ws in list(self.push_ws):
                if ws.prepared and not ws.closed:
                    try:
                        await ws.ping()
                    except Exception:  # noqa: BLE001 - a socket closing under us
                        pass

    # -- the network ----------------------------------------------------------------------
    async def _connect(self) -> None:
        """Claim a slot per robot (the network may not have started yet), then start
        each robot's observation thread."""
        import dmxshm
        from dmxshm.shm.ring import Ring
        from dmxshm.view import rings as vr

        args = self.args
        for robot in self.robots:
            robot.conn = await asyncio.to_thread(
                dmxshm.connect, args.network, (robot.index,), args.connect_timeout,
                client_name="duckiematrix")
            if robot.conn.action != "pwm":
                raise SystemExit(f"dmxshm duckiematrix: network {args.network!r} takes wheel "
                                 "speeds; the Duckiematrix protocol sends PWM (--action pwm)")
        segment = self.robots[0].conn._open().name
        try:
            self.poses = Ring.attach(segment.rsplit("slot.", 1)[0] + vr.STATE)
        except Exception:  # noqa: BLE001 - no pose feed: state/pose stays empty
            self.poses = None
        for robot in self.robots:
            t = threading.Thread(target=self._observe, args=(robot,),
                                 name=f"observe-{robot.name}", daemon=True)
            t.start()
            self.threads.append(t)

    def _observe(self, robot: Robot) -> None:
        """One robot's observations into its topics, until the network ends."""
        from dmxshm import NetworkEnded
        from dmxshm.errors import DmxTimeoutError

        assert self.loop is not None
        last = {"camera": -1.0, "encoders": -1.0, "tof": -1.0, "pose": -1}
        sim_before: float | None = None
        while not self.ended.is_set():
            try:
                obs = robot.conn.observe(timeout_s=0.5)[0]
            except DmxTimeoutError:
                continue
            except NetworkEnded:
                self.stop()
                return
            c = robot.counts
            c.observations += 1
            out: list[tuple[str, dict[str, Any]]] = []
            sim = float(obs["sim_time_s"])
            if sim_before is not None:
                out.append(("delta_t", {"header": header(), "data": sim - sim_before}))
            sim_before = sim
            names = obs.dtype.names or ()
            if "camera" in names and obs["camera_time_s"] != last["camera"]:
                last["camera"] = float(obs["camera_time_s"])
                t0 = time.perf_counter()
                data = jpeg(obs["camera"])
                c.jpeg_s += time.perf_counter() - t0
                out.append(("camera", {"header": header(), "format": "jpeg", "data": data}))
                c.frames += 1
            if obs["tof_time_s"] != last["tof"]:
                last["tof"] = float(obs["tof_time_s"])
                r = float(obs["tof_m"])
                out.append(("tof", {"header": header(),
                                    "data": r if math.isfinite(r) and r < TOF_MAX_M else None}))
                c.tof += 1
            if obs["encoders_time_s"] != last["encoders"]:
                last["encoders"] = float(obs["encoders_time_s"])
                left, right = (int(v) for v in obs["encoders"])
                out.append(("encoder_left", {"header": header(), "data": left}))
                out.append(("encoder_right", {"header": header(), "data": right}))
                c.encoders += 1
            pose = self._pose(robot.index, last)
            if pose is not None:
                out.append(("pose", pose))
                c.poses += 1
            payloads = [(robot.queues[k], self.cbor.dumps(m)) for k, m in out]
            asyncio.run_coroutine_threadsafe(
                self._publish(payloads, any(k == "camera" for k, _ in out)), self.loop)

    def _pose(self, index: int, last: dict[str, Any]) -> dict[str, Any] | None:
        """The robot's newest pose from the engine's view feed, if it is new."""
        if self.poses is None:
            return None
        got = self.poses.peek(1)
        if not len(got) or int(got[0]["step"]) == last["pose"]:
            return None
        last["pose"] = int(got[0]["step"])
        x, y, yaw = (float(v) for v in got[0]["poses"][index])
        mx, _, mz = map_position(self.road_map, x, y)
        return {"header": header(), "x": x, "y": y, "yaw": yaw,
                "sim_time_s": float(got[0]["sim_time_s"]),
                "map": {"x": mx, "z": mz, "angle": yaw}}

    async def _publish(self, payloads: list[tuple[Any, bytes]], frame: bool) -> None:
        for oq, data in payloads:
            await oq.publish(self.RawData(content=data, content_type=self.MIME))
        if frame:
            self.burst_until = time.monotonic() + BURST_S

    # -- commands -------------------------------------------------------------------------
    def _receiver(self, robot: Robot, key: str) -> Any:
        async def receive(_oq: Any, notification: Any) -> None:
            try:
                msg = self.cbor.loads(notification.raw_data.content)
                if not isinstance(msg, dict):
                    raise ValueError(f"a CBOR {type(msg).__name__}, not a map")
                self._command(robot, key, msg)
            except Exception as exc:  # noqa: BLE001 - a bad message is counted, not fatal
                c = robot.counts
                c.malformed += 1
                if c.first_malformed is None:
                    c.first_malformed = f"{ROBOT_IN[key]}: {type(exc).__name__}: {exc}"
                    print(f"dmxshm duckiematrix: warning: {robot.name}: a malformed message "
                          f"on {c.first_malformed} (malformed messages are counted)",
                          file=sys.stderr, flush=True)
        return receive

    def _command(self, robot: Robot, key: str, msg: dict[str, Any]) -> None:
        conn = robot.conn
        if conn is None:
            return  # the network is not there yet: nothing to drive
        c = robot.counts
        with robot.lock:
            if key == "pwm":
                left, right = _number(msg, "left"), _number(msg, "right")
                robot.wheels[0] = left, right
                sent = _sent(msg)
                if sent is not None and len(c.hop_s) < 100_000:
                    c.hop_s.append(time.monotonic() - sent)
                conn.act(robot.wheels, sent_time_s=sent)
                c.commands += 1
            elif key == "reset":
                if bool(msg.get("data")):
                    conn.act(robot.wheels * 0.0, reset=True, sent_time_s=_sent(msg))
                    robot.wheels[:] = 0.0
                    c.resets += 1
            else:
                pattern = np.array([[_number(msg.get(led) or {}, ch) for ch in "rgba"]
                                    for led in LIGHTS], np.float32)
                conn.set_lights(pattern[None])
                c.lights += 1
                c.last_lights = pattern.tolist()

    def report(self) -> dict[str, Any]:
        out = {}
        for r in self.robots:
            got = {k: v for k, v in vars(r.counts).items() if k != "hop_s"}
            hops = sorted(r.counts.hop_s)
            got["stamped_commands"] = len(hops)
            got["made_to_received_p50_s"] = hops[len(hops) // 2] if hops else None
            out[r.name] = got
        return out


def _number(msg: dict[str, Any], key: str) -> float:
    v = msg.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{key!r} is {v!r}, not a number")
    return float(v)  # NaN and +-2 pass: the network rejects and counts them


def _sent(msg: dict[str, Any]) -> float | None:
    """When the agent made the message, on this machine's monotonic clock: from its
    header's Unix timestamp where it set one (duckietown-sdk leaves it None)."""
    stamp = (msg.get("header") or {}).get("timestamp") if isinstance(msg.get("header"),
                                                                      dict) else None
    if isinstance(stamp, (int, float)) and math.isfinite(stamp):
        age = time.time() - float(stamp)
        if 0.0 <= age < 10.0:
            return time.monotonic() - age
    return None


def command_line() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="dmxshm-duckiematrix",
        description="Serve a dmxshm network's robots to duckietown-sdk agents over DTPS.")
    ap.add_argument("--network", required=True, help="the network's --name")
    ap.add_argument("--names", required=True, help="robot names, comma-separated, in order")
    ap.add_argument("--map", default="loop", help="the network's map")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=7501)
    ap.add_argument("--allow-remote", action="store_true")
    ap.add_argument("--connect-timeout", type=float, default=60.0)
    ap.add_argument("--exit-with", type=int, help="end when this pid is gone")
    ap.add_argument("--stats", help="write what it did per robot here, as JSON, at its end")
    return ap


def main(argv: list[str] | None = None) -> None:
    """``python -m dmxshm.duckiematrix.bridge``: prints its URL once it listens."""
    # dtps-http reads this once, at its import: messages are kept until sent, not 60 s.
    os.environ.setdefault("DTPS_DATA_AVAILABILITY_TIMEOUT", "0")
    args = command_line().parse_args(argv)
    bridge = Bridge(args)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: bridge.stop())
    if args.exit_with:
        threading.Thread(target=_watch, args=(args.exit_with, bridge), daemon=True).start()
    try:
        asyncio.run(bridge.main())
    finally:
        report = bridge.report()
        if args.stats:
            with open(args.stats, "w") as f:
                json.dump(report, f, indent=1)
        for name, c in report.items():
            print(f"duckiematrix {name}: {c['frames']} camera frames, {c['commands']} PWM "
                  f"commands, {c['resets']} resets, {c['lights']} light patterns, "
                  f"{c['malformed']} malformed messages", file=sys.stderr, flush=True)


def _watch(pid: int, bridge: Bridge) -> None:
    import psutil

    while psutil.pid_exists(pid):
        time.sleep(0.25)
    bridge.stop()


if __name__ == "__main__":
    main(sys.argv[1:])

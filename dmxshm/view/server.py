"""The live view: a small web server that shows a run as it goes.

``dmxshm run --view`` starts it beside a run, ``dmxshm view`` attaches it to
a run already going. It serves one page on 127.0.0.1 (another host needs
``--allow-remote``): the map from above with
every robot's pose and trail, each robot's camera image, each sensor's
achieved rate and missed ticks, steps/s, and in a spine run the histograms
of the spine's period error and of the age of the wheel states behind its
frames.

Every request needs the run's token, Jupyter's way: the URL printed at start
ends in ``?token=...`` (made with :func:`secrets.token_urlsafe` for each server,
compared with :func:`hmac.compare_digest`), the page passes it on to its
websocket and its fetches, and a request without it, or with another, gets 403.
The segments a run makes are 0600, but a port on loopback is open to every user
of the machine: without the token any of them would see the run's camera
images and poses. On loopback the Host and Origin headers are checked as well
(no other website's script, no DNS rebinding).

It reads the run only by peeking at overwrite rings
(:mod:`dmxshm.view.rings`, :meth:`~dmxshm.shm.ring.Ring.peek`): it binds no
side of any ring, so it never slows the run down and never holds a writer
back. It needs the ``view`` extra (``pip install 'dmxshm[view]'``: aiohttp).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hmac
import ipaddress
import json
import os
import secrets
import sys
import time
from importlib import resources
from typing import Any

import numpy as np
import psutil

from dmxshm import settings
from dmxshm.errors import DmxError, RefusedError, ShmError
from dmxshm.pngio import encode_png
from dmxshm.shm.names import SHM_DIR, list_entries
from dmxshm.shm.ring import Ring
from dmxshm.view import rings as vr

DEFAULT_HOST = settings.LOCAL_HOST
DEFAULT_PORT = settings.VIEW_PORT
UPDATE_HZ = 10.0
SEND_TIMEOUT_S = 1.0
SPINE_RECORDS = 2000  # the newest spine cycles in the histograms
HIST_BINS = 30
FIND_TIMEOUT_S = 30.0
TOKEN_ENV = "DMXSHM_VIEW_TOKEN"
"""Where a view program started by a run finds its token (a command line is readable
by every user of the machine, an environment only by its owner)."""
TOKEN_BYTES = 24


class ViewError(DmxError):
    """The view cannot start: the extra is missing, no run to show, a bad host."""


class ViewRefusedError(ViewError, RefusedError):
    """The view was refused before it started: the extra is missing, or a host beyond
    loopback was asked for without ``allow_remote``."""


def require_aiohttp() -> Any:
    """aiohttp's ``web``.

    Raises:
        ViewRefusedError: the view extra is not installed (the message says how).
    """
    try:
        from aiohttp import web
    except ImportError:
        raise ViewRefusedError("the live view needs the view extra: "
                               "pip install 'dmxshm[view]'") from None
    return web


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def find_run(pid: int | None = None) -> str | None:
    """The name prefix (``/dmx-<pid>-<token>-``) of a live run's view rings: the run of
    ``pid``, or the newest live one; None when there is none."""
    found = []
    for e in list_entries():
        if e.kind == "segment" and e.what == vr.META and (pid is None or e.pid == pid) \
                and psutil.pid_exists(e.pid):
            with contextlib.suppress(OSError):
                st = os.stat(e.path)
                if st.st_uid == os.getuid():  # this user's runs only
                    found.append((st.st_mtime, e.name[:-len(vr.META)]))
    return max(found)[1] if found else None


class RunReader:
    """Peeks at one run's view rings and turns them into what the page shows."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        meta_ring = Ring.attach(prefix + vr.META)
        try:
            meta = vr.read_meta(meta_ring)
        finally:
            meta_ring.close()
        if meta is None:
            raise ViewError(f"the run {prefix} has not written what the view needs yet")
        self.meta = meta
        self._mover_list: list[Any] | None = None
        self.meta_path = os.path.join(SHM_DIR, (prefix + vr.META).lstrip("/"))
        opened: list[Ring] = []
        try:
            self.state = Ring.attach(prefix + vr.STATE)
            opened.append(self.state)
            self.obs = []
            for r in range(len(meta["renderer_robots"])):
                self.obs.append(Ring.attach(prefix + vr.obs_name(r)))
                opened.append(self.obs[-1])
        except BaseException:
            for ring in opened:
                ring.close()
            raise
        self.records: Ring | None = None
        if meta.get("spine"):
            with contextlib.suppress(ShmError):
                self.records = Ring.attach(prefix + "spine.records")
        self.last: dict[str, Any] = {"ended": False}
        self._prev_state: tuple[float, int] | None = None
        self._prev_obs: dict[int, tuple[float, np.ndarray]] = {}
        self._cams: dict[int, str] = {}
        self._cam_wall: dict[int, float] = {}

    def close(self) -> None:
        for ring in (self.state, *self.obs, *([self.records] if self.records else [])):
            ring.close()

    @property
    def ended(self) -> bool:
        """The engine closed its view ring (the run ended), or the run's process is gone."""
        return (self.state.closed or not os.path.exists(self.meta_path)
                or not psutil.pid_exists(int(self.meta["pid"])))

    def _movers(self, sim_time_s: float) -> list[list[float]]:
        """Each moving object's ``[x, y, yaw]`` at ``sim_time_s`` (its pose is a function
        of the run's map, seed and time: :mod:`dmxshm.world.movers`)."""
        if self._mover_list is None:
            from dmxshm.world.maps import load_map
            from dmxshm.world.movers import movers_of

            try:
                m = load_map(self.meta["map"])
                self._mover_list = list(movers_of(m, list(m.objects),
                                                  int(self.meta["seed"])).values())
            except DmxError:  # a map this process cannot read: none drawn
                self._mover_list = []
        return [[round(v, 4) for v in mv.pose(sim_time_s)] for mv in self._mover_list]

    def snapshot(self) -> dict[str, Any]:
        """What the page shows now (the last known figures once the run ended)."""
        out = dict(self.last)
        got = self.state.peek(1)
        if len(got):
            st = got[0]
            wall, step = float(st["wall_time_s"]), int(st["step"])
            if self._prev_state is not None and wall > self._prev_state[0]:
                rate = (step - self._prev_state[1]) / (wall - self._prev_state[0])
                out["steps_per_s"] = rate if step != self._prev_state[1] or not self.ended \
                    else out.get("steps_per_s", 0.0)
            if self._prev_state is None or wall - self._prev_state[0] >= 0.5:
                self._prev_state = (wall, step)
            out |= {"step": step, "sim_time_s": float(st["sim_time_s"]),
                    "late_steps": int(st["late_steps"]),
                    "poses": np.round(st["poses"], 4).tolist(),
                    "movers": self._movers(float(st["sim_time_s"])),
                    # Each robot's LEDs as an outside agent set them; null: never set.
                    "lights": [np.round(rgba, 3).tolist() if rgba.any() else None
                               for rgba in st["lights"]]}
        newest = [ring.peek(1) for ring in self.obs]  # one copy of each, for both below
        sensors = self._sensors(newest)
        if sensors:
            out["sensors"] = sensors
        out["cameras"] = self._cameras(newest)
        if self.records is not None:
            out["spine"] = self._spine()
        out["ended"] = self.ended
        self.last = {k: v for k, v in out.items() if k != "cameras"}
        return out

    def _sensors(self, newest: list[np.ndarray]) -> dict[str, dict[str, Any]]:
        rates: dict[str, list[float]] = {s: [] for s in vr.SENSORS}
        missed = dict.fromkeys(vr.SENSORS, 0)
        for r, got in enumerate(newest):
            if not len(got):
                continue
            slot = got[0]
            wall, produced = float(slot["wall_time_s"]), slot["produced"].copy()
            prev = self._prev_obs.get(r)
            if prev is not None and wall > prev[0]:
                for i, s in enumerate(vr.SENSORS):
                    rates[s].append(float(produced[i] - prev[1][i]) / (wall - prev[0]))
            if prev is None or wall - prev[0] >= 1.0:
                self._prev_obs[r] = (wall, produced)
            for i, s in enumerate(vr.SENSORS):
                missed[s] += int(slot["missed"][i])
        camera_on = self.meta["camera"] != [0, 0]
        configured = self.meta["sensor_rates_hz"] if self.meta["mode"] == "realtime" else {}
        return {s: {"achieved_hz": min(rates[s]) if rates[s] else None, "missed": missed[s],
                    "configured_hz": configured.get(s)}
                for s in vr.SENSORS if s != "camera" or camera_on}

    def _cameras(self, newest: list[np.ndarray]) -> dict[int, str]:
        """Camera images (PNG data URLs) that changed since the last snapshot."""
        if self.meta["camera"] == [0, 0]:
            return {}
        new = {}
        for got in newest:
            if not len(got) or "camera" not in (got.dtype.names or ()):
                continue
            slot = got[0]
            wall = float(slot["wall_time_s"])
            for j, robot in enumerate(slot["robots"].tolist()):
                if self._cam_wall.get(robot) == wall:
                    continue
                self._cam_wall[robot] = wall
                url = "data:image/png;base64," + base64.b64encode(
                    encode_png(slot["camera"][j], 1)).decode()
                self._cams[robot] = new[robot] = url
        return new

    def cameras(self) -> dict[int, str]:
        """Every robot's newest camera image (for a page that just connected)."""
        return dict(self._cams)

    def _spine(self) -> dict[str, Any]:
        assert self.records is not None
        recs = self.records.peek(SPINE_RECORDS)
        if not len(recs):
            return {}
        period_s = 1.0 / float(self.meta["spine_hz"])
        err = np.abs(recs["period_s"][np.isfinite(recs["period_s"])] - period_s) * 1e6
        age = (recs["t_send"] - recs["t_obs"]) * 1e6
        age = age[np.isfinite(age)]

        def hist(x: np.ndarray) -> dict[str, Any]:
            if not len(x):
                return {}
            counts, edges = np.histogram(x, bins=HIST_BINS)
            return {"counts": counts.tolist(), "edges": np.round(edges, 1).tolist(),
                    "p50": float(np.percentile(x, 50)), "p99": float(np.percentile(x, 99))}

        return {"cycles": int(recs["cycle"][-1]) + 1, "skipped": int(recs["skipped"][-1]),
                "period_error_us": hist(err), "wheel_states_age_us": hist(age)}


def open_run(pid: int | None, current: RunReader | None = None) -> RunReader | None:
    """A reader of the live run of ``pid`` (None: the newest live run), or None when
    there is none, it is the one ``current`` reads, or it is starting or just went."""
    prefix = find_run(pid)
    if prefix is None or (current is not None and current.prefix == prefix):
        return None
    try:
        return RunReader(prefix)
    except DmxError:
        return None


class ViewServer:
    """The page, its websocket and the loop that pushes snapshots to every page."""

    def __init__(self, pid: int | None, host: str, port: int, token: str,
                 follow: bool, exit_with: int | None) -> None:
        if not token:
            raise ViewError("the view needs a token (check_host makes one)")
        self.pid, self.host, self.port, self.token = pid, host, port, token
        self.follow = follow  # attach to the next run when this one ended (dmxshm view)
        self.exit_with = exit_with  # stop when this process is gone (dmxshm run --view)
        self.reader: RunReader | None = None
        self.sockets: set[Any] = set()
        self.map_png: bytes | None = None
        self.map_key: tuple[str, int] | None = None
        self.updates = 0

    # -- HTTP -------------------------------------------------------------
    def app(self) -> Any:
        web = require_aiohttp()

        @web.middleware
        async def check_access(request: Any, handler: Any) -> Any:
            refused = self.refusal(request.query.get("token"), request.headers.get("Host", ""),
                                   request.headers.get("Origin"))
            if refused is not None:
                return web.Response(status=403, text=f"dmxshm view: {refused}\n")
            return await handler(request)

        app = web.Application(middlewares=[check_access])
        app.on_shutdown.append(self._close_sockets)
        app.router.add_get("/", self.page)
        app.router.add_get("/map.png", self.map)
        app.router.add_get("/snapshot", self.snapshot_json)
        app.router.add_get("/ws", self.websocket)
        return app

    def refusal(self, token: str | None, host: str, origin: str | None) -> str | None:
        """Why a request with ``token`` (its ``?token=``), ``Host`` and ``Origin`` is
        refused; None: it is let in."""
        if token is None:
            return "a token is needed: open the URL printed at start (it ends in ?token=...)"
        if not hmac.compare_digest(token.encode(), self.token.encode()):
            return "wrong token: open the URL printed at start (it ends in ?token=...)"
        if is_loopback(self.host) and not self.same_site(host, origin):
            # Only this machine's own pages (no other website's script, no DNS rebinding).
            return "refused: not from this machine's own page"
        return None

    def same_site(self, host: str, origin: str | None) -> bool:
        """A request to a loopback name for this server, from no page or a page of it."""
        from urllib.parse import urlsplit

        name = urlsplit(f"//{host}").hostname or ""
        if not (is_loopback(name) or name == self.host):
            return False
        if origin is None:  # not from a page: curl, a script
            return True
        return urlsplit(origin).netloc == host

    async def _close_sockets(self, app: Any) -> None:
        from aiohttp import WSCloseCode

        for ws in list(self.sockets):
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"view stopped")

    async def page(self, request: Any) -> Any:
        web = require_aiohttp()
        html = resources.files("dmxshm.view").joinpath("page.html").read_text()
        return web.Response(text=html, content_type="text/html")

    async def map(self, request: Any) -> Any:
        web = require_aiohttp()
        if self.map_png is None:
            return web.Response(status=404, text="no run yet\n")
        return web.Response(body=self.map_png, content_type="image/png",
                            headers={"Cache-Control": "no-store"})

    async def snapshot_json(self, request: Any) -> Any:
        web = require_aiohttp()
        return web.json_response(self._hello())

    async def websocket(self, request: Any) -> Any:
        web = require_aiohttp()
        ws = web.WebSocketResponse(heartbeat=10.0)
        await ws.prepare(request)
        self.sockets.add(ws)
        try:
            await ws.send_str(json.dumps(self._hello()))
            async for _ in ws:  # the page sends nothing; this ends when it goes
                pass
        finally:
            self.sockets.discard(ws)
        return ws

    def _hello(self) -> dict[str, Any]:
        if self.reader is None:
            return {"kind": "waiting"}
        return {"kind": "snapshot", "meta": self.reader.meta, **self.reader.last,
                "cameras": self.reader.cameras(), "updates": self.updates}

    # -- the run ----------------------------------------------------------
    def _attach(self) -> bool:
        reader = open_run(self.pid, self.reader)
        if reader is None:
            return False
        if self.reader is not None:
            self.reader.close()
        self.reader = reader
        key = (reader.meta["map"], int(reader.meta["seed"]))
        if key != self.map_key:
            try:
                self.map_png = _map_png(reader.meta["map"])
            except DmxError as exc:  # a map file this process cannot read: no background
                print(f"dmxshm view: no map picture: {exc}", file=sys.stderr)
                self.map_png = None
            self.map_key = key
        return True

    async def pump(self) -> None:
        """Push a snapshot to every page UPDATE_HZ times a second."""
        while True:
            if self.exit_with is not None and not psutil.pid_exists(self.exit_with):
                return
            looking = self.reader is None or (self.follow and self.reader.ended)
            if looking and self._attach() and self.reader is not None:
                await self._send({"kind": "run", "meta": self.reader.meta})
            if self.reader is not None:
                snap = self.reader.snapshot()
                self.updates += 1
                await self._send({"kind": "snapshot", **snap, "updates": self.updates})
            await asyncio.sleep(1.0 / UPDATE_HZ)

    async def _send(self, message: dict[str, Any]) -> None:
        if not self.sockets:
            return
        text = json.dumps(message)
        for ws in list(self.sockets):
            try:  # a page that does not keep up is dropped, not waited for
                await asyncio.wait_for(ws.send_str(text), SEND_TIMEOUT_S)
            except (ConnectionError, RuntimeError, asyncio.TimeoutError):
                self.sockets.discard(ws)
                with contextlib.suppress(Exception):
                    await ws.close()

    async def serve(self, on_ready: Any = None) -> None:
        web = require_aiohttp()
        runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        await site.start()
        if on_ready is not None:
            on_ready(self.url())
        try:
            await self.pump()
        finally:
            await runner.cleanup()
            if self.reader is not None:
                self.reader.close()

    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/?token={self.token}"


def _map_png(name: str) -> bytes:
    from dmxshm.matrix.camera import top_view
    from dmxshm.world.maps import load_map

    # Moving objects are drawn by the page where they are, not in the background.
    return encode_png(top_view(load_map(name).still(), 640))


def check_host(host: str, allow_remote: bool, token: str | None) -> str:
    """The token a server bound to ``host`` needs: ``token``, or a new one.

    Raises:
        ViewRefusedError: a host beyond loopback without ``allow_remote``.
    """
    if not is_loopback(host) and not allow_remote:
        raise ViewRefusedError(f"the view would be reachable from other machines on {host}; "
                               "give --allow-remote to mean it (its URL's token is then all "
                               "that keeps them out)")
    return token or secrets.token_urlsafe(TOKEN_BYTES)


def command_line(prog: str, port: int) -> argparse.ArgumentParser:
    """The command line of a program that shows a run (the view, Foxglove live)."""
    ap = argparse.ArgumentParser(prog=prog)
    ap.add_argument("--pid", type=int)
    ap.add_argument("--host", default=DEFAULT_HOST)
    ap.add_argument("--port", type=int, default=port)
    ap.add_argument("--allow-remote", action="store_true")
    ap.add_argument("--exit-with", type=int)
    ap.add_argument("--follow", action="store_true")
    return ap


def main(argv: list[str] | None = None) -> None:
    """``python -m dmxshm.view.server``: what ``dmxshm run --view`` starts."""
    args = command_line("dmxshm-view", DEFAULT_PORT).parse_args(argv)
    # The token comes in the environment (another user can read a command line);
    # without one, it makes its own.
    try:
        token = check_host(args.host, args.allow_remote, os.environ.get(TOKEN_ENV) or None)
    except ViewError as exc:
        sys.exit(f"dmxshm view: {exc}")
    server = ViewServer(args.pid, args.host, args.port, token, args.follow, args.exit_with)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(server.serve(lambda url: print(url, flush=True)))


def wait_for_url(proc: Any, timeout_s: float = FIND_TIMEOUT_S, what: str = "the view") -> str:
    """The URL a server process (the view, Foxglove live) printed once it listens (it
    prints nothing else).

    Raises:
        ViewError: it ended first (its last error line says why), or it said
            nothing within ``timeout_s`` (``what``: who, in the message).
    """
    import select

    assert proc.stdout is not None and proc.stderr is not None  # started with capture
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([proc.stdout], [], [], min(left, 0.5))
        if ready:
            line = proc.stdout.readline()
            if line:
                return line.decode().strip()
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace").strip().splitlines()
            raise ViewError(f"{what} did not start" + (f": {err[-1]}" if err else ""))
    raise ViewError(f"{what} did not start within {timeout_s:g} s")


def stop_process(proc: Any, grace_s: float = 5.0) -> None:
    """Stop a view process (SIGTERM, then SIGKILL after ``grace_s``) and close its pipes
    (:func:`dmxshm.proc.program.stop`)."""
    from dmxshm.proc import program

    program.stop(proc, grace_s)


if __name__ == "__main__":
    main(sys.argv[1:])

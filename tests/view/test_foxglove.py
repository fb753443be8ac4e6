"""Foxglove live (dmxshm.view.foxglove): a client of the Foxglove WebSocket protocol
gets the run's channels with the log's schemas, then their messages; the program
stops with its run, with SIGTERM and with --exit-with, and creates nothing in
/dev/shm.

foxglove-sdk's server (0.30) names protocol v1 ``foxglove.sdk.v1``: the same
protocol as ``foxglove.websocket.v1`` under the name the SDK's handshake
requires (it refuses the old name with HTTP 400).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="the websocket client (pip install 'dmxshm[view]')")
pytest.importorskip("foxglove", reason="the foxglove extra (pip install 'dmxshm[foxglove]')")

import aiohttp  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from dmxshm.cli import cli  # noqa: E402
from dmxshm.network import Network, NetworkConfig  # noqa: E402
from dmxshm.proc import program  # noqa: E402
from dmxshm.shm.names import SHM_DIR, list_entries  # noqa: E402
from dmxshm.view.foxglove import require_foxglove  # noqa: E402
from dmxshm.view.server import ViewError, ViewRefusedError, wait_for_url  # noqa: E402

TIMEOUT_S = 180
RECEIVE_TIMEOUT_S = 30.0  # the longest wait for one websocket message
EXIT_TIMEOUT_S = 30.0  # the longest wait for the program to end by itself
SUBPROTOCOL = "foxglove.sdk.v1"
MESSAGE_DATA = 0x01  # the opcode of a binary message-data frame
POSES_WANTED = 5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_foxglove(*args: str) -> tuple[subprocess.Popen[bytes], str]:
    """The program as the launcher starts it; its URL once it listens."""
    proc = program.start("foxglove", "dmxshm.view.foxglove", args)
    try:
        return proc, wait_for_url(proc)
    except BaseException:
        program.stop(proc)
        raise


def non_dmx_shm() -> set[str]:
    return {n for n in os.listdir(SHM_DIR) if not n.startswith(("dmx-", "sem.dmx-"))}


def decoder(channel: dict[str, Any]) -> Any:
    """The protobuf message class of an advertised channel, from its schema."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    assert channel["schemaEncoding"] == "protobuf"
    files = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(channel["schema"]))
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(channel["schemaName"]))


async def watch(url: str, robots: int, start_run: Any) -> dict[str, Any]:
    """Connect, read serverInfo and the advertised channels (every robot's pose and
    camera), subscribe to robot 0's pose and camera, start the run, and collect
    message-data frames of both."""
    async with aiohttp.ClientSession() as session, session.ws_connect(
            url, protocols=(SUBPROTOCOL,)) as ws:
        assert ws.protocol == SUBPROTOCOL

        async def receive() -> aiohttp.WSMessage:
            msg = await asyncio.wait_for(ws.receive(), RECEIVE_TIMEOUT_S)
            assert msg.type in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY), msg
            return msg

        info = json.loads((await receive()).data)
        assert info["op"] == "serverInfo"
        channels: dict[str, dict[str, Any]] = {}
        wanted = {f"/robot{r:02d}/{kind}" for r in range(robots) for kind in ("pose", "camera")}
        while not wanted <= channels.keys():  # one advertise for all, or one each
            msg = json.loads((await receive()).data)
            assert msg["op"] == "advertise", msg
            channels |= {c["topic"]: c for c in msg["channels"]}
        pose, camera = channels["/robot00/pose"], channels["/robot00/camera"]
        await ws.send_str(json.dumps({"op": "subscribe", "subscriptions": [
            {"id": 1, "channelId": pose["id"]}, {"id": 2, "channelId": camera["id"]}]}))
        start_run()
        frames: dict[int, list[tuple[int, bytes]]] = {1: [], 2: []}
        while len(frames[1]) < POSES_WANTED or not frames[2]:
            msg = await receive()
            assert msg.type == aiohttp.WSMsgType.BINARY, msg.data
            opcode, sub, log_time_ns = struct.unpack_from("<BIQ", msg.data)
            assert opcode == MESSAGE_DATA and sub in frames
            frames[sub].append((log_time_ns, msg.data[13:]))
        return {"channels": channels, "frames": frames}


@pytest.mark.timeout(TIMEOUT_S)
def test_a_client_gets_the_runs_channels_then_their_messages() -> None:
    cfg = NetworkConfig(mode="realtime", robots=2, duration_s=4.0, camera=(32, 24),
                        agent="lane-follow", wait_timeout_s=5.0)
    net = Network(cfg)
    shm_before = non_dmx_shm()
    fox = None
    summary: list[Any] = []
    runner = threading.Thread(target=lambda: summary.append(net.run()))
    try:
        net.start()
        port = free_port()
        fox, url = start_foxglove("--pid", str(os.getpid()), "--port", str(port),
                                  "--exit-with", str(os.getpid()))
        assert url == f"ws://127.0.0.1:{port}"
        t0_ns = time.time_ns()
        got = asyncio.run(watch(url, cfg.robots, runner.start))
        t1_ns = time.time_ns()
        runner.join(TIMEOUT_S / 2)
        assert summary, "the run did not finish"
        # The run ended: the program ends by itself, cleanly, and said nothing.
        assert fox.wait(EXIT_TIMEOUT_S) == 0
        assert fox.stdout is not None and fox.stderr is not None
        assert fox.stdout.read() == b"" and fox.stderr.read() == b""
    finally:
        if fox is not None:
            program.stop(fox)
        if runner.is_alive():
            net.close()
            runner.join(TIMEOUT_S / 2)
        net.close()
    channels, frames = got["channels"], got["frames"]
    # Every robot's pose and camera, with the log's schemas (dmxshm.logs.make_channel).
    assert {t: c["schemaName"] for t, c in channels.items()} == {
        "/robot00/pose": "foxglove.PoseInFrame", "/robot01/pose": "foxglove.PoseInFrame",
        "/robot00/camera": "foxglove.CompressedImage",
        "/robot01/camera": "foxglove.CompressedImage"}
    Pose, Image = decoder(channels["/robot00/pose"]), decoder(channels["/robot00/camera"])
    poses = [(t, Pose.FromString(data)) for t, data in frames[1]]
    # Logged at the wall time the run wrote them, in order, while the client watched.
    times = [t for t, _ in poses]
    assert times == sorted(times) and t0_ns <= times[0] and times[-1] <= t1_ns
    # Stamped with the simulated time: the time of a state, a whole number of steps.
    sim = [p.timestamp.seconds + p.timestamp.nanos / 1e9 for _, p in poses]
    assert sim == sorted(sim) and sim[-1] > sim[0]
    assert all(abs(s / cfg.state_dt_s - round(s / cfg.state_dt_s)) < 1e-6 for s in sim)
    assert {p.frame_id for _, p in poses} == {"map"}
    # A unit quaternion about z (the view state's yaw).
    q = poses[-1][1].pose.orientation
    assert q.x == q.y == 0.0 and abs(q.z ** 2 + q.w ** 2 - 1.0) < 1e-9
    image = Image.FromString(frames[2][0][1])
    assert image.format == "png" and image.data.startswith(b"\x89PNG\r\n\x1a\n")
    assert image.frame_id == "robot00/camera"
    # It only attached: nothing of it is left in /dev/shm (the run's own are checked
    # by the suite's fixture).
    assert not [e for e in list_entries() if e.pid == fox.pid]
    assert non_dmx_shm() <= shm_before


@pytest.mark.timeout(TIMEOUT_S)
def test_sigterm_stops_it_cleanly_while_it_waits_for_a_run() -> None:
    # This process has no run: the program listens and waits for one.
    fox, url = start_foxglove("--pid", str(os.getpid()), "--port", str(free_port()),
                              "--exit-with", str(os.getpid()))
    try:
        assert url.startswith("ws://127.0.0.1:")
        fox.send_signal(signal.SIGTERM)
        assert fox.wait(EXIT_TIMEOUT_S) == 0
        assert fox.stderr is not None and fox.stderr.read() == b""
    finally:
        program.stop(fox)


@pytest.mark.timeout(TIMEOUT_S)
def test_it_ends_with_the_exit_with_process() -> None:
    parent = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                              stdin=subprocess.PIPE)
    fox = None
    try:
        # No run in this process: only the end of --exit-with can end it.
        fox, _ = start_foxglove("--pid", str(os.getpid()), "--port", str(free_port()),
                                "--exit-with", str(parent.pid))
        assert parent.stdin is not None
        parent.stdin.close()  # the parent ends
        parent.wait(EXIT_TIMEOUT_S)
        assert fox.wait(EXIT_TIMEOUT_S) == 0
    finally:
        if fox is not None:
            program.stop(fox)
        parent.kill()
        parent.wait()


@pytest.mark.timeout(TIMEOUT_S)
def test_beyond_loopback_without_allow_remote_it_refuses_to_start() -> None:
    with pytest.raises(ViewError, match="--allow-remote"):
        start_foxglove("--host", "0.0.0.0", "--port", str(free_port()))


@pytest.mark.timeout(TIMEOUT_S)
def test_a_port_in_use_is_named() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(ViewError, match=f"127.0.0.1:{port}.*--port"):
            start_foxglove("--port", str(port))


def test_without_foxglove_sdk_the_error_names_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "foxglove", None)  # import foxglove: ImportError
    with pytest.raises(ViewRefusedError, match=r"pip install 'dmxshm\[foxglove\]'"):
        require_foxglove()


@pytest.mark.timeout(TIMEOUT_S)
def test_a_run_says_who_can_connect_to_its_foxglove_server(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    # foxglove-sdk's server cannot authenticate (issue 42): it runs only when asked,
    # and the run's start message says that any local user can connect.
    port = free_port()
    out = subprocess.run([sys.executable, "-m", "dmxshm.cli", "run", "--steps", "30",
                          "--camera", "0x0", "--foxglove", "--foxglove-port", str(port)],
                         capture_output=True, text=True, timeout=TIMEOUT_S / 2, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (f"foxglove: ws://127.0.0.1:{port} (no authentication: any local user of this "
            "machine can connect and see the run)") in out.stderr
    monkeypatch.chdir(tmp_path)
    plain = CliRunner().invoke(cli, ["run", "--steps", "5", "--camera", "0x0"])
    assert plain.exit_code == 0 and "foxglove" not in plain.output  # off unless asked

"""What Foxglove live costs a realtime run: sensor rates without and with it.

Runs ``dmxshm run --mode realtime --duration 10 --robots 2 --json out.json``
``--reps`` times each way, in turns: plain, then with Foxglove live
(``python -m dmxshm.view.foxglove --pid RUN``, as ``dmxshm run --foxglove``
starts it) and one WebSocket client subscribed to every channel it
advertises. Reports each sensor's achieved rate both ways (the summary's
``sensors``), their ratio (target: within 5%), the messages the client got,
and Foxglove live's CPU share: its process's CPU seconds (psutil
``cpu_times``) from its first message to the end of the run's process,
over that wall time (1.0 is one core); the client's (this process's)
beside it.

Needs the foxglove extra and aiohttp (the client).

Usage: ``python scripts/foxglove_rates.py [--robots 2] [--duration 10] [--reps 2]
[--json FILE]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

import psutil

from dmxshm.proc import program
from dmxshm.view.server import wait_for_url

SUBPROTOCOL = "foxglove.sdk.v1"  # foxglove-sdk's name of foxglove.websocket.v1
CONNECT_TIMEOUT_S = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_command(args: argparse.Namespace, out: str) -> list[str]:
    return [sys.executable, "-m", "dmxshm.cli", "run", "--mode", "realtime", "--duration",
            str(args.duration), "--robots", str(args.robots), "--json", out]


def sensors(out: str) -> dict[str, float]:
    with open(out) as f:
        return {name: s["achieved_hz"] for name, s in json.load(f)["sensors"].items()}


def start_run(args: argparse.Namespace, folder: str, name: str) -> subprocess.Popen[bytes]:
    with open(os.path.join(folder, f"{name}.err"), "wb") as err:
        return subprocess.Popen(run_command(args, os.path.join(folder, f"{name}.json")),
                                stdout=subprocess.DEVNULL, stderr=err, cwd=folder)


def end_run(run: subprocess.Popen[bytes], folder: str, name: str) -> dict[str, float]:
    if run.wait() != 0:
        with open(os.path.join(folder, f"{name}.err")) as err:
            raise RuntimeError(f"the run failed (exit code {run.returncode}): "
                               + err.read().strip()[-500:])
    return sensors(os.path.join(folder, f"{name}.json"))


def plain(args: argparse.Namespace, folder: str) -> dict[str, Any]:
    return {"sensors": end_run(start_run(args, folder, "plain"), folder, "plain")}


class Client:
    """A Foxglove WebSocket client in a thread: subscribes to every channel advertised,
    counts the message-data frames per topic, ends when the server goes."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.counts: dict[str, int] = {}
        self.bytes = 0
        self.advertised = threading.Event()
        self.streaming = threading.Event()  # the first message came: the run goes
        self.thread = threading.Thread(target=lambda: asyncio.run(self._watch()), daemon=True)
        self.thread.start()

    async def _watch(self) -> None:
        import aiohttp

        topics: dict[int, str] = {}
        async with aiohttp.ClientSession() as session, session.ws_connect(
                self.url, protocols=(SUBPROTOCOL,)) as ws:
            async for msg in ws:
                if msg.type == aiohttp.WSMsgType.TEXT:
                    data = json.loads(msg.data)
                    if data["op"] != "advertise":
                        continue
                    subs = []
                    for channel in data["channels"]:
                        topics[channel["id"]] = channel["topic"]
                        subs.append({"id": channel["id"], "channelId": channel["id"]})
                    await ws.send_str(json.dumps({"op": "subscribe", "subscriptions": subs}))
                    self.advertised.set()
                elif msg.type == aiohttp.WSMsgType.BINARY:
                    self.streaming.set()
                    _, sub, _ = struct.unpack_from("<BIQ", msg.data)
                    topic = topics[sub]
                    self.counts[topic] = self.counts.get(topic, 0) + 1
                    self.bytes += len(msg.data)


def _cpu_s(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system


def streamed(args: argparse.Namespace, folder: str) -> dict[str, Any]:
    run = start_run(args, folder, "foxglove")
    fox = None
    try:
        fox = program.start("foxglove", "dmxshm.view.foxglove",
                            ["--pid", str(run.pid), "--port", str(free_port()),
                             "--exit-with", str(os.getpid())])
        client = Client(wait_for_url(fox))
        if not client.streaming.wait(CONNECT_TIMEOUT_S + args.duration):
            raise RuntimeError("no message from Foxglove live: did the run start? "
                               f"({'no' if not client.advertised.is_set() else 'a'} channel "
                               "advertised)")
        fp, me = psutil.Process(fox.pid), psutil.Process()
        fox0, me0, t0 = _cpu_s(fp), _cpu_s(me), time.perf_counter()
        got = end_run(run, folder, "foxglove")
        # Read before the process is reaped (a zombie still has its CPU times).
        fox1, me1, t1 = _cpu_s(fp), _cpu_s(me), time.perf_counter()
        client.thread.join(CONNECT_TIMEOUT_S)  # it ends when the server goes, after the run
        return {"sensors": got, "fox_cpu_cores": (fox1 - fox0) / (t1 - t0),
                "client_cpu_cores": (me1 - me0) / (t1 - t0), "streamed_s": t1 - t0,
                "messages": dict(sorted(client.counts.items())), "bytes": client.bytes}
    finally:
        if fox is not None:
            program.stop(fox)
        if run.poll() is None:
            run.terminate()
            run.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", type=int, default=2)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        for rep in range(args.reps):
            row = {"plain": plain(args, folder), "foxglove": streamed(args, folder)}
            a, b = row["plain"]["sensors"], row["foxglove"]["sensors"]
            row["ratio"] = {name: b[name] / a[name] for name in a}
            rows.append(row)
            fx = row["foxglove"]
            print(f"rep {rep + 1}: " + " | ".join(
                f"{n} {a[n]:.2f} -> {b[n]:.2f} Hz ({row['ratio'][n]:.3f})" for n in a)
                + f" | foxglove CPU {fx['fox_cpu_cores']:.3f} cores, client "
                f"{fx['client_cpu_cores']:.3f} cores over {fx['streamed_s']:.1f} s; "
                f"{sum(fx['messages'].values())} messages, {fx['bytes'] / 1e6:.2f} MB: "
                + ", ".join(f"{t} {c}" for t, c in fx["messages"].items()), flush=True)
    names = list(rows[0]["ratio"])
    ratios = {n: statistics.median(r["ratio"][n] for r in rows) for n in names}
    worst = min(min(r["ratio"].values()) for r in rows)
    fox_cpu = statistics.median(r["foxglove"]["fox_cpu_cores"] for r in rows)
    out = {"config": {"robots": args.robots, "duration_s": args.duration, "reps": args.reps,
                      "cpus": os.cpu_count()},
           "rows": rows, "ratio_median": ratios, "ratio_worst": worst,
           "fox_cpu_cores_median": fox_cpu}
    print("median with / without: " + ", ".join(f"{n} {v:.3f}" for n, v in ratios.items())
          + f"; worst {worst:.3f} (target >= 0.95); foxglove CPU {fox_cpu:.3f} cores "
          f"({fox_cpu / (os.cpu_count() or 1):.1%} of this machine's {os.cpu_count()} CPUs)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

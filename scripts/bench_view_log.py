"""What --log and --view cost a gym run, measured against the same run without them.

One run of each, in turns, ``--reps`` times: a gym run (4 robots, cameras,
lane-follow) plain, with ``log`` (MCAP), and with the live view attached and
a browser connected (Debian's headless Chromium through Selenium; one tab,
or two with ``--tabs 2``). Reports steps/s of each, their ratio to the
plain run of the same turn, the view's own CPU use (its process, in CPU
seconds per wall second: 1.0 is one core), and the log's size per robot and
per minute of simulated time and of wall time.

Needs the log and view extras and Debian's chromium and chromium-driver.

Usage: ``python scripts/bench_view_log.py [--robots 4] [--steps 600] [--camera 160x120]
[--reps 3] [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

import psutil

from dmxshm.network import Network, NetworkConfig
from dmxshm.view.server import stop_process, wait_for_url


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(executable_path=shutil.which("chromedriver")),
                            options=opts)


def plain(cfg: NetworkConfig) -> dict[str, Any]:
    with Network(cfg) as net:
        s = net.run()
    return {"steps_per_s": s.steps_per_s, "digest": s.trajectory_digest}


def logged(cfg: NetworkConfig, folder: str) -> dict[str, Any]:
    path = os.path.join(folder, "run.mcap")
    if os.path.exists(path):
        os.unlink(path)
    t0 = time.perf_counter()
    with Network(_with(cfg, log=path)) as net:
        s = net.run()
    total = time.perf_counter() - t0
    size = os.path.getsize(path)
    return {"steps_per_s": s.steps_per_s, "digest": s.trajectory_digest, "bytes": size,
            "wall_s_with_merge": total, "run_wall_s": s.wall_time_s, "sim_s": s.sim_time_s}


def viewed(cfg: NetworkConfig, tabs: int, driver: Any) -> dict[str, Any]:
    net = Network(cfg)
    proc = None
    try:
        net.start()
        proc = subprocess.Popen([sys.executable, "-m", "dmxshm.view.server", "--pid",
                                 str(os.getpid()), "--port", str(free_port()), "--exit-with",
                                 str(os.getpid())], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        url = wait_for_url(proc)
        handles = []
        for i in range(tabs):
            if i:
                driver.switch_to.new_window("tab")
            driver.get(url)
            handles.append(driver.current_window_handle)
        deadline = time.monotonic() + 30
        while not driver.execute_script("return window.dmxView && window.dmxView.messages"):
            if time.monotonic() > deadline:
                raise RuntimeError("the page did not connect")
            time.sleep(0.1)
        view = psutil.Process(proc.pid)
        browser_procs = psutil.Process(driver.service.process.pid).children(recursive=True)
        cpu0, t0 = view.cpu_times(), time.perf_counter()
        b0 = _cpu(browser_procs)
        box: list[Any] = []
        runner = threading.Thread(target=lambda: box.append(net.run()))
        runner.start()
        runner.join()
        cpu1, t1 = view.cpu_times(), time.perf_counter()
        b1 = _cpu(browser_procs)
        updates = driver.execute_script("return window.dmxView.updates")
        for h in handles[1:]:
            driver.switch_to.window(h)
            driver.close()
        driver.switch_to.window(handles[0])
        s = box[0]
        cpu = (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / (t1 - t0)
        return {"steps_per_s": s.steps_per_s, "digest": s.trajectory_digest,
                "view_cpu_cores": cpu, "browser_cpu_cores": (b1 - b0) / (t1 - t0),
                "page_updates": updates}
    finally:
        if proc is not None:
            stop_process(proc, grace_s=10.0)
        net.close()


def _cpu(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def _with(cfg: NetworkConfig, **kw: Any) -> NetworkConfig:
    fields = {k: getattr(cfg, k) for k in cfg.__dataclass_fields__ if not k.startswith("_")}
    return NetworkConfig(**{**fields, **kw})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", type=int, default=4)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--camera", default="160x120")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tabs", type=int, default=1)
    ap.add_argument("--json")
    args = ap.parse_args()
    w, h = (int(v) for v in args.camera.split("x"))
    cfg = NetworkConfig(robots=args.robots, steps=args.steps, camera=(w, h),
                        agent="lane-follow")
    driver = browser()
    rows: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            for rep in range(args.reps):
                row = {"plain": plain(cfg), "log": logged(cfg, folder),
                       "view": viewed(cfg, args.tabs, driver)}
                base = row["plain"]["steps_per_s"]
                row["log_ratio"] = row["log"]["steps_per_s"] / base
                row["view_ratio"] = row["view"]["steps_per_s"] / base
                rows.append(row)
                lg = row["log"]
                print(f"rep {rep + 1}: plain {base:.1f} steps/s | log "
                      f"{lg['steps_per_s']:.1f} ({row['log_ratio']:.3f}), "
                      f"{lg['bytes'] / 1e6:.2f} MB, merge+run {lg['wall_s_with_merge']:.1f} s "
                      f"for a {lg['run_wall_s']:.1f} s run | view "
                      f"{row['view']['steps_per_s']:.1f} ({row['view_ratio']:.3f}), view CPU "
                      f"{row['view']['view_cpu_cores']:.3f} cores, browser "
                      f"{row['view']['browser_cpu_cores']:.3f} cores, "
                      f"{row['view']['page_updates']} page updates", flush=True)
    finally:
        driver.quit()
    same = all(r["log"]["digest"] == r["plain"]["digest"] == r["view"]["digest"] for r in rows)
    lg = [r["log"] for r in rows]
    per_robot_sim_min = statistics.median(x["bytes"] / args.robots / (x["sim_s"] / 60)
                                          for x in lg)
    per_robot_wall_min = statistics.median(x["bytes"] / args.robots / (x["run_wall_s"] / 60)
                                           for x in lg)
    out = {
        "config": {"robots": args.robots, "steps": args.steps, "camera": args.camera,
                   "tabs": args.tabs, "cpus": os.cpu_count()},
        "rows": rows, "digests_equal": same,
        "log_ratio_median": statistics.median(r["log_ratio"] for r in rows),
        "view_ratio_median": statistics.median(r["view_ratio"] for r in rows),
        "view_cpu_cores_median": statistics.median(r["view"]["view_cpu_cores"] for r in rows),
        "browser_cpu_cores_median": statistics.median(r["view"]["browser_cpu_cores"]
                                                      for r in rows),
        "log_mb_per_robot_sim_minute": per_robot_sim_min / 1e6,
        "log_mb_per_robot_wall_minute": per_robot_wall_min / 1e6,
    }
    print(f"median: log / plain {out['log_ratio_median']:.3f} (target >= 0.9), view / plain "
          f"{out['view_ratio_median']:.3f} (target >= 0.95), view CPU "
          f"{out['view_cpu_cores_median']:.3f} cores (the browser "
          f"{out['browser_cpu_cores_median']:.3f}); log "
          f"{out['log_mb_per_robot_sim_minute']:.1f} MB per robot-minute simulated "
          f"({out['log_mb_per_robot_wall_minute']:.1f} per robot-minute of wall time); "
          f"digests equal: {same}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

"""How long a supervisor's child takes to start, forked by the fork server or spawned.

    python scripts/child_start_kinds.py --runs 7

For each kind (``DMXSHM_CHILD_START``: ``fork``, ``spawn``), a fresh interpreter (its
own fork server) starts one network role's child after another: each child imports its
role's module (``dmxshm.network.engine``, ``renderer``, ``agent``) and reports at once
(its main, called without arguments, raises a TypeError). Per child, the wall time from
``Supervisor.start`` to its report, and the CPU time of the children together (this
process's children's rusage, the server's included once it is reaped): the median and
range over ``--runs`` processes. Each role's child is started four times, one supervisor
each; the first and the fourth are reported. A process's first child pays for the
server's start (fork); the fourth is what a process that starts runs again gets, once
the server has imported the roles' modules (which it does, one at a time, when a
supervisor has closed and no request waits: during the second and third rounds). """

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
ROLES = ("engine", "renderer", "agent")

_ONE = """
import json, resource, time
from dmxshm.proc.supervisor import Supervisor
from dmxshm.proc import forkserver
def start(name, module):
    with Supervisor() as sup:
        t0 = time.perf_counter()
        main = getattr(__import__("importlib").import_module(module), "run_" + name)
        child = sup.start(name, main)  # no arguments: it raises at once (a TypeError)
        while not child.ended:
            sup.wait(0.01)
        assert child.outcome.error_type == "TypeError", child.outcome
        return time.perf_counter() - t0
walls = {}
for round in ("first", "2", "3", "later"):
    for role in %r:
        took = start(role, "dmxshm.network." + role)
        if round in ("first", "later"):
            walls[f"{round}-{role}"] = took
forkserver._client is not None and forkserver._client.close()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"walls": walls, "cpu_s": ru.ru_utime + ru.ru_stime}))
"""


def one(kind: str) -> dict[str, object]:
    env = {**os.environ, "DMXSHM_CHILD_START": kind, "PYTHONPATH": str(HERE)}
    out = subprocess.run([sys.executable, "-c", _ONE % (ROLES,)], env=env, check=True,
                         capture_output=True, text=True, timeout=300).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    load = os.getloadavg()
    print(f"{time.strftime('%Y-%m-%d %H:%M')} load {load[0]:.2f}; {a.runs} processes per "
          "kind, alternated; per child: start to report, ms, median (range)", flush=True)
    got: dict[str, list[dict[str, object]]] = {"spawn": [], "fork": []}
    for _ in range(a.runs):
        for kind in got:
            got[kind].append(one(kind))
    for kind, runs in got.items():
        cells = []
        for key in runs[0]["walls"]:  # type: ignore[union-attr]
            ms = [r["walls"][key] * 1e3 for r in runs]  # type: ignore[index]
            cells.append(f"{key} {statistics.median(ms):.0f} ({min(ms):.0f}-{max(ms):.0f})")
        cpu = [float(r["cpu_s"]) for r in runs]  # type: ignore[arg-type]
        print(f"{kind:6} " + ", ".join(cells) + f"; children's CPU, all 12 starts: "
              f"{statistics.median(cpu):.2f} s ({min(cpu):.2f}-{max(cpu):.2f})", flush=True)
    load = os.getloadavg()
    print(f"load at the end {load[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Fault injection: kill one process of a run at a random moment, check how it ends.

Each :class:`Target` is a command (``dmxshm run``, ``dmxshm spine``, a batch
loop) started in a subprocess of its own session. :func:`inject` waits until
the victim (a process named ``dmx-<role>`` among the command's descendants)
has been up ``delay_s``, sends it a signal, and then measures:

* how long the command took to end after the signal (goal: under 2 s);
* its exit status (goal: non-zero);
* whether its error names the role, the pid and the signal;
* the dmxshm entries its supervisor left in /dev/shm (goal: none) and any of
  its processes still alive 2 s after it ended (goal: none).

``scripts/faults.py`` repeats this over every target, role and signal; the
fast suite in ``tests/faults/`` runs each once.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import psutil

from dmxshm.shm.names import list_entries
from dmxshm.shm.peers import pid_alive

DETECT_S = 2.0
"""How soon after the fault the run must have ended."""

_BATCH = """
import numpy as np
import dmxshm
envs = dmxshm.make_vec(4, num_workers=2, seed=0, camera=(32, 24), timeout_s=5.0)
envs.reset()
actions = np.zeros((4, 2), np.float32)
try:
    while True:
        envs.step(actions)
finally:
    envs.close()
"""


@dataclass(frozen=True)
class Target:
    """A run to inject faults into.

    Attributes:
        name: its name in reports.
        argv: the command (``sys.executable`` first).
        roles: names of its processes that are victims (``dmx-<role>``).
        words: for each role, the words its error must contain to name it.
    """

    name: str
    argv: tuple[str, ...]
    roles: tuple[str, ...]
    words: dict[str, str] = field(default_factory=dict)

    def named_by(self, role: str) -> str:
        """The words an error names ``role`` with."""
        return self.words.get(role, role)


def _cli(*args: str) -> tuple[str, ...]:
    return (sys.executable, "-m", "dmxshm.cli", *args)


TARGET_TIMEOUT_S = 5.0
"""The targets' ``--timeout``: how long a stopped process may stall a run."""

_T = ("--timeout", f"{TARGET_TIMEOUT_S:g}")

TARGETS: dict[str, Target] = {
    "gym": Target("gym", _cli("run", "--steps", "1000000", "--robots", "2", "--renderers",
                              "2", "--agents", "2", "--camera", "32x24", *_T),
                  ("engine", "renderer-0", "renderer-1", "agent-0", "agent-1")),
    "realtime": Target("realtime", _cli("run", "--mode", "realtime", "--duration", "600",
                                        "--robots", "2", "--renderers", "2", "--agents", "2",
                                        "--camera", "32x24", *_T),
                       ("engine", "renderer-0", "renderer-1", "camera-0", "camera-1",
                        "agent-0", "agent-1")),
    "realtime-spine": Target("realtime-spine",
                             _cli("run", "--mode", "realtime", "--duration", "600",
                                  "--spine", "--camera", "0x0", *_T),
                             ("spine", "engine", "renderer-0", "agent-0")),
    "spine": Target("spine", _cli("spine", "--duration", "600"), ("spine", "can-bus")),
    # An outside agent's slot nobody took (the run waits for it at step 0): its process
    # and those around it.
    "gym-slot": Target("gym-slot", _cli("run", "--steps", "1000000", "--robots", "2",
                                        "--agents", "1", "--external-agents", "1",
                                        "--camera", "32x24", *_T),
                       ("engine", "renderer-0", "agent-0", "slot-0")),
    # Realtime with an outside agent's slot nobody took (its robot stands still).
    "realtime-slot": Target("realtime-slot", _cli("run", "--mode", "realtime", "--duration",
                                                  "600", "--robots", "2", "--agents", "1",
                                                  "--external-agents", "1", "--camera",
                                                  "0x0", *_T),
                            ("engine", "renderer-0", "agent-0", "slot-0")),
    "batch": Target("batch", (sys.executable, "-c", _BATCH), ("batch-0", "batch-1"),
                    {"batch-0": "batch worker 0", "batch-1": "batch worker 1"}),
}
"""Every run the suite knows, by name. The spine's own agent (``dmxshm spine
--agent``) is left out on purpose: the spine does not wait for its agent, it
expires the agent's actions and reports the failure at the end."""

SIGNALS = {"SIGKILL": signal.SIGKILL, "SIGTERM": signal.SIGTERM, "SIGSTOP": signal.SIGSTOP}
"""SIGSTOP freezes the victim: where somebody waits for it (gym mode, a batch),
the wait times out naming it; where nobody waits (realtime, the spine), the
supervisor's watch sees it stopped for longer than the run's ``--timeout``
(:class:`dmxshm.proc.watch.WatchPolicy`'s ``stall_limit_s``). Either way the run
ends, naming it."""

STOP_TARGETS = tuple(TARGETS)
"""The targets where a stopped process must end the run: every one. The standalone
spine's timeout is its bus timeout (``SpineConfig.timeout_s``)."""

STOP_LIMIT_S = TARGET_TIMEOUT_S + 1.0
"""How soon after a SIGSTOP the run must have ended: the wait timeout, plus a second
(the figure, on a quiet machine; the tests allow :data:`DETECT_S` instead)."""


@dataclass
class Outcome:
    """How one injected fault ended (see the module docstring)."""

    target: str
    role: str
    signal: str
    delay_s: float
    victim_pid: int = 0
    exit_code: int | None = None
    ended_s: float | None = None
    named: bool = False
    leaked: list[str] = field(default_factory=list)
    survivors: list[int] = field(default_factory=list)
    message: str = ""
    stop_limit_s: float = STOP_LIMIT_S
    kill_limit_s: float = DETECT_S

    @property
    def limit_s(self) -> float:
        """How soon the run must end after this fault."""
        return self.stop_limit_s if self.signal == "SIGSTOP" else self.kill_limit_s

    @property
    def clean(self) -> bool:
        """Ended in time, non-zero, named the victim, left nothing behind."""
        return (self.ended_s is not None and self.ended_s < self.limit_s
                and self.exit_code not in (0, None) and self.named and not self.leaked
                and not self.survivors)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with ``clean``."""
        return {**asdict(self), "clean": self.clean, "limit_s": self.limit_s}


def _find(root: psutil.Process, name: str) -> psutil.Process | None:
    try:
        for proc in root.children(recursive=True):
            try:
                if proc.name() == name:
                    return proc
            except psutil.NoSuchProcess:
                continue
    except psutil.NoSuchProcess:
        pass
    return None


def inject(target: Target, role: str, sig: str, delay_s: float,
           start_timeout_s: float = 60.0, end_timeout_s: float = 30.0,
           stop_limit_s: float = STOP_LIMIT_S, kill_limit_s: float = DETECT_S) -> Outcome:
    """Run ``target``, send ``sig`` to its ``role`` after ``delay_s``, report the end.

    Every wait here is bounded: a run that does not end within ``end_timeout_s`` of
    the signal is killed with its whole session (a stopped child holding its pipes
    open included) and reported as not ended.

    Raises:
        RuntimeError: the run did not start its victim within ``start_timeout_s``.
    """
    out = Outcome(target.name, role, sig, delay_s, stop_limit_s=stop_limit_s,
                  kill_limit_s=kill_limit_s)
    proc = subprocess.Popen(target.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        root = psutil.Process(proc.pid)
        deadline = time.monotonic() + start_timeout_s
        victim = None
        while victim is None:
            if proc.poll() is not None or time.monotonic() > deadline:
                _, err = _end(proc, end_timeout_s)
                raise RuntimeError(f"{target.name}: no process dmx-{role} came up "
                                   f"(exit {proc.returncode}): {err[-2000:]}")
            victim = _find(root, f"dmx-{role}")
            time.sleep(0.02)
        time.sleep(delay_s)
        family = [p.pid for p in root.children(recursive=True)]
        out.victim_pid = victim.pid
        killed_at = time.monotonic()
        os.kill(victim.pid, SIGNALS[sig])
        try:
            _, err = proc.communicate(timeout=end_timeout_s)
            out.ended_s = time.monotonic() - killed_at
        except subprocess.TimeoutExpired:
            _, err = _end(proc, end_timeout_s)
        out.exit_code = proc.returncode
        lines = [line for line in err.strip().splitlines() if line.strip()]
        out.message = lines[-1] if lines else ""
        # The error, not the whole stderr: the last line names the victim.
        how = r"is stopped" if sig == "SIGSTOP" else re.escape(sig)
        out.named = bool(re.search(re.escape(target.named_by(role)), out.message)
                         and re.search(rf"\bpid {victim.pid}\b", out.message)
                         and re.search(how, out.message))
        grace = time.monotonic() + DETECT_S
        while True:
            out.survivors = [pid for pid in family if pid_alive(pid)]
            if not out.survivors or time.monotonic() > grace:
                break
            time.sleep(0.05)
        out.leaked = [e.name for e in list_entries() if e.pid == proc.pid]
        return out
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _end(proc: subprocess.Popen[str], timeout_s: float) -> tuple[str, str]:
    """Kill ``proc``'s whole session (its children may be stopped and hold its pipes
    open) and take what it wrote, in bounded time."""
    try:
        return proc.communicate(timeout=timeout_s if proc.poll() is not None else 0.01)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # a stopped process dies of SIGKILL too
    except ProcessLookupError:
        pass
    try:
        return proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:  # a grandchild left the session with our pipes
        proc.kill()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait(timeout_s)
        return "", "(its output was lost: a process outside its session held its pipes)"


# -- bounded load on one ring -------------------------------------------------

LOAD_WORDS = 64
_LOAD_DT = np.dtype([("seq", "<u8"), ("payload", "<u4", (LOAD_WORDS,)), ("checksum", "<u8")])


def _load_payload(seq: int) -> np.ndarray:
    return ((np.uint64(seq) * np.uint64(2654435761) + np.arange(LOAD_WORDS, dtype=np.uint64)
             * np.uint64(40503)) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def _load_item(seq: int) -> np.ndarray:
    item = np.zeros((), _LOAD_DT)
    item["seq"] = seq
    item["payload"] = _load_payload(seq)
    item["checksum"] = int(item["payload"].astype(np.uint64).sum()) + seq
    return item


def _load_writer(name: str, stop: Any, drained: Any) -> None:
    from dmxshm.shm.ring import Ring

    ring = Ring.attach(name, side="writer", role="load-writer")
    try:
        seq = 0
        items = [_load_item(s) for s in range(4096)]  # payload of seq: that of seq % 4096
        while not stop.is_set():
            for _ in range(1024):
                item = items[seq % 4096].copy()
                item["checksum"] += seq - int(item["seq"])
                item["seq"] = seq
                ring.write(item)
                seq += 1
        ring.close_writer()
        drained.wait(30.0)
    finally:
        ring.close()


def ring_load(seconds: float, read_every_s: float = 100e-6, nslots: int = 8,
              sample_s: float = 1.0) -> dict[str, Any]:
    """A writer at full speed against a reader that reads once per ``read_every_s``.

    Overwrite discipline. Returns the counts (``writes``, ``reads``, ``drops``
    as the ring counted them, ``gaps``: the holes the reader saw in the
    sequence plus what was left after its last read; with reads in strictly
    increasing order, ``backwards`` 0, every slot was then read once or
    counted as dropped), ``torn`` reads (payload or checksum not of one
    write), and RSS samples of both sides.
    """
    import multiprocessing as mp

    from dmxshm.errors import RingClosedError
    from dmxshm.shm.registry import Registry
    from dmxshm.shm.ring import Ring

    ctx = mp.get_context("spawn")
    stop, drained = ctx.Event(), ctx.Event()
    with Registry() as reg:
        ring = Ring.create(reg, "load", _LOAD_DT, nslots, "overwrite")
        ring.bind("reader", "load-reader")
        child = ctx.Process(target=_load_writer, args=(ring.name, stop, drained), daemon=True)
        child.start()
        me, writer = psutil.Process(), psutil.Process(child.pid)
        rss: dict[str, list[int]] = {"reader": [], "writer": []}
        reads = torn = gaps = backwards = 0
        last = -1
        try:
            t0 = time.monotonic()
            next_sample = t0
            while True:
                now = time.monotonic()
                if now >= next_sample:
                    rss["reader"].append(me.memory_info().rss)
                    rss["writer"].append(writer.memory_info().rss)
                    next_sample += sample_s
                if now - t0 >= seconds:
                    stop.set()
                try:
                    item = ring.read(timeout_s=30.0, newest=False)
                except RingClosedError:
                    break
                seq = int(item["seq"])
                backwards += seq <= last  # read twice, or out of order: never allowed
                gaps += seq - last - 1
                last = seq
                reads += 1
                whole = (int(item["payload"].astype(np.uint64).sum()) + seq
                         == int(item["checksum"])
                         and bool((item["payload"] == _load_payload(seq % 4096)).all()))
                torn += not whole
                until = time.perf_counter() + read_every_s  # the slow reader
                while time.perf_counter() < until:
                    pass
            stats = ring.stats()
        finally:
            stop.set()
            drained.set()
            child.join(10.0)
            if child.is_alive():
                child.kill()
                child.join()
            ring.close()
    return {"seconds": seconds, "writes": stats.writes, "reads": reads, "drops": stats.drops,
            "gaps": gaps + (stats.writes - 1 - last), "backwards": backwards, "torn": torn,
            "rss": rss,
            "writer_exit": child.exitcode}

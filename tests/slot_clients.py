"""Outside agents for the slot tests, run as programs of their own:

    python tests/slot_clients.py KIND NAME [ARG]

KIND: ``lane`` (the built-in lane follower through dmxshm.connect, to the end),
``die`` (the same, then SIGKILL itself after ARG commands), ``garbage`` (claims the
slot through the raw ABI and writes ARG malformed commands, then well-formed ones
to the end), ``pwm`` (duty 0.3 on both wheels to the end, and at step ARG a left duty
of 1.5; prints the slot's ``action``), ``reasons`` (at its first step, ARG commands
malformed for each reason the network rejects, one reason each, then the lane
follower to the end), ``leave-<what>`` (the lane follower for ARG steps, then leaves
garbage of :data:`LEAVINGS` and SIGKILLs itself; ``leave-pid`` claims the slot with
its parent's pid in the holder line). Prints ``claimed PID`` once it holds the slot
(``left`` before a leaver dies) and ``sent N`` at the end; ``ready`` on stderr once it
starts looking for the network.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np

import dmxshm
from dmxshm.network.client import Connection
from dmxshm.network.runs import live_runs
from dmxshm.policies import load_policy
from dmxshm.shm import slot as abi
from dmxshm.shm.slot import O_STATUS, SERVING, SlotSegment

REASONS = ("step", "sequence", "reset", "time", "flags")
"""The reasons the network rejects a command for (docs/abi.md), as ``reasons`` sends."""
LEAVINGS = ("seq", "header", "line", "commands", "observation", "pid", "everything")
"""What a ``leave-`` client leaves behind, once the network has published the next
step's observation: ``cmd_seq`` at 2^64-2; random bytes over the header (with the
field table and descr), the network line, the command area (and ``cmd_seq`` at
2^64-1) or the observation's records; a holder line naming another live process (its
parent); random bytes over the whole segment."""


def main(kind: str, name: str, arg: int) -> None:
    print("ready", file=sys.stderr, flush=True)  # imported: it looks for the network now
    with (liar(name) if kind == "leave-pid" else dmxshm.connect(name, timeout_s=30)) as agent:
        print("claimed", os.getpid(), flush=True)
        if kind == "pwm":
            print("action", agent.action, agent.command_limit, flush=True)
            n = len(agent.robots)
            policy = lambda obs: [[1.5 if agent.step == arg else 0.3, 0.3]] * n  # noqa: E731
        else:
            policy = load_policy("lane-follow", agent.robots, 0)
        if kind == "garbage":
            garbage(agent, arg)
        if kind == "reasons":
            reasons(agent, arg)
        sent = 0
        try:
            while True:
                obs = agent.observe()
                agent.act(policy(obs))
                sent += 1
                if kind == "die" and sent == arg:
                    os.kill(os.getpid(), signal.SIGKILL)
                if kind.startswith("leave-") and sent == arg:
                    leave(agent, kind.removeprefix("leave-"))
        except dmxshm.NetworkEnded:
            pass
        print("sent", sent, flush=True)


def garbage(agent: dmxshm.network.client.Connection, count: int) -> None:
    """Malformed commands straight into the slot: random steps, sequence words that go
    back or stay odd, reserved fields set, random bytes over the whole command area."""
    seg = agent._seg
    assert seg is not None
    rng = np.random.default_rng(7)
    lay = seg.layout
    deadline = time.monotonic() + 30  # a client may claim before the network serves
    while seg.word(O_STATUS) != SERVING and time.monotonic() < deadline:
        time.sleep(0.001)
    area = np.frombuffer(seg.buf, np.uint8, lay.size - lay.cmd, lay.cmd)
    for i in range(count):
        how = i % 4
        if how == 0:  # random bytes over everything the client may write
            area[:] = rng.integers(0, 256, area.size, dtype=np.uint8)
        elif how == 1:  # a step nobody asked for
            seg.write_cmd(agent._m, 10**9 + i, np.zeros((len(agent.robots), 2)))
            agent._m += 1
        elif how == 2:  # a reserved field set
            seg.cmd_head["reset"] = 2  # neither 0 nor 1: rejected in either mode
            seg.cmd_head["seq"] = 2 * agent._m + 2
            agent._m += 1
        else:  # the sequence word back to 2
            seg.cmd_head["seq"] = 2
        seg.ring(seg.cmd_bell)
        for _ in range(int(rng.integers(0, 50))):
            seg.cmd_bell.release()  # bells rung for nothing
        examined(seg)
    # Well-formed from here: after any sequence word the garbage left.
    agent._m = int(seg.cmd_head["seq"][0]) // 2 + 1


def liar(name: str) -> Connection:
    """A connection whose holder line names this process's parent (a live process
    that does not hold the claim) instead of itself."""
    deadline = time.monotonic() + 30
    while True:
        runs = [r for r in live_runs() if r.name == name and r.free_slots]
        if runs or time.monotonic() > deadline:
            break
        time.sleep(0.01)  # polling for the network to appear, as connect's timeout_s does
    (run,) = runs
    seg = SlotSegment.attach(run.free_slots[0].segment)
    seg.claim(os.getppid(), "liar")
    return Connection(seg, run)


def command(seg: SlotSegment, m: int, step: int, *, seq: int | None = None,
            sent_time_s: float = 1.0, reset: int = 0, flags: int = 0) -> None:
    """Command ``m`` with these fields (``seq``: its sequence word, if not 2m+2), wheels
    0; then wait until the network has looked at it."""
    head = seg.cmd_head
    head["seq"] = 2 * m + 1
    head["step"], head["sent_time_s"] = step, sent_time_s
    head["reset"], head["flags"] = reset, flags
    seg.wheels[...] = 0.0
    head["seq"] = 2 * m + 2 if seq is None else seq
    seg.ring(seg.cmd_bell)
    examined(seg)


def reasons(agent: dmxshm.network.client.Connection, count: int) -> None:
    """``count`` commands for each of :data:`REASONS`, each wrong in that one way only
    (the others answer the step the network waits for, and would be taken but for
    it), in rounds, so that a sequence word can go back each round."""
    seg = agent._seg
    assert seg is not None
    agent.observe()  # gym: the step the network waits for is agent.step now
    step, m = agent.step, 1000
    for i in range(count):
        command(seg, m, step + 1000)  # step
        command(seg, m + 1, step, seq=2 * i + 2)  # sequence: back below the last
        command(seg, m + 2, step, reset=2)  # reset: neither 0 nor 1
        command(seg, m + 3, step, sent_time_s=float("nan"))  # time
        command(seg, m + 4, step, flags=4)  # flags: a bit that means nothing
        m += 5
    agent._m = m
    agent._pending = False
    agent._last_seq = 0  # the step's observation again: it is still awaited


def leave(agent: dmxshm.network.client.Connection, what: str) -> None:
    """Leave ``what`` of :data:`LEAVINGS` behind, say so, and die."""
    seg = agent._seg
    assert seg is not None
    examined(seg)  # its last command taken: what it leaves is all garbage
    deadline = time.monotonic() + 5  # and the next step's observation published
    while time.monotonic() < deadline:
        got = seg.read_obs(agent._last_seq)
        if got is not None and got[1] > agent.step:
            break
        time.sleep(0.0005)
    lay, rng = seg.layout, np.random.default_rng(11)

    def scribble(start: int, stop: int) -> None:
        seg.buf[start:stop] = rng.integers(0, 256, stop - start, dtype=np.uint8).tobytes()

    if what == "seq":
        seg.cmd_head["seq"] = 2**64 - 2
    elif what == "header":
        scribble(0, abi.NET_LINE)
        scribble(abi.TABLE, lay.obs)
    elif what == "line":
        scribble(abi.NET_LINE, abi.HOLDER_LINE)
    elif what == "commands":
        scribble(lay.cmd, lay.size)
        seg.cmd_head["seq"] = 2**64 - 1  # a write left half done, near 2^64
    elif what == "observation":  # the records and scores: the step stays as it was
        scribble(lay.records, lay.cmd)
    elif what == "everything":
        scribble(0, lay.size)
    seg.ring(seg.cmd_bell)
    print("left", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def examined(seg: SlotSegment, timeout_s: float = 5.0) -> None:
    """Wait until the network has looked at the command there (an incomplete one, an
    odd sequence word, is never looked at), so that every junk command is examined
    whatever the machine's load; give up after ``timeout_s`` or once the slot stops
    serving."""
    deadline = time.monotonic() + timeout_s
    while seg.unexamined() and seg.word(O_STATUS) == SERVING and time.monotonic() < deadline:
        time.sleep(0.0005)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0)

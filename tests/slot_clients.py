"""Outside agents for the slot tests, run as programs of their own:

    python tests/slot_clients.py KIND NAME [ARG]

KIND: ``lane`` (the built-in lane follower through dmxshm.connect, to the end),
``die`` (the same, then SIGKILL itself after ARG commands), ``garbage`` (claims the
slot through the raw ABI and writes ARG malformed commands, then well-formed ones
to the end), ``pwm`` (duty 0.3 on both wheels to the end, and at step ARG a left duty
of 1.5; prints the slot's ``action``). Prints ``claimed PID`` once it holds the slot
and ``sent N`` at the end; ``ready`` on stderr once it starts looking for the network.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np

import dmxshm
from dmxshm.policies import load_policy
from dmxshm.shm.slot import O_STATUS, SERVING, SlotSegment


def main(kind: str, name: str, arg: int) -> None:
    print("ready", file=sys.stderr, flush=True)  # imported: it looks for the network now
    with dmxshm.connect(name, timeout_s=30) as agent:
        print("claimed", os.getpid(), flush=True)
        if kind == "pwm":
            print("action", agent.action, agent.command_limit, flush=True)
            n = len(agent.robots)
            policy = lambda obs: [[1.5 if agent.step == arg else 0.3, 0.3]] * n  # noqa: E731
        else:
            policy = load_policy("lane-follow", agent.robots, 0)
        if kind == "garbage":
            garbage(agent, arg)
        sent = 0
        try:
            while True:
                obs = agent.observe()
                agent.act(policy(obs))
                sent += 1
                if kind == "die" and sent == arg:
                    os.kill(os.getpid(), signal.SIGKILL)
        except dmxshm.NetworkEnded:
            pass
        print("sent", sent, flush=True)


def garbage(agent: dmxshm.client.Connection, count: int) -> None:
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

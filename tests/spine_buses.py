"""CAN buses for the spine tests that fail on purpose, importable by a child process.

Each has :func:`dmxshm.spine.can.run_mock_bus`'s signature, so that a test
puts it in its place. Both answer ``REPLIES`` CAN cycles at once, then:

* :func:`goes_mute`: reads every command and never replies again; it ends
  when the spine closes the command ring, so the spine's stops reach it.
* :func:`goes_deaf`: neither reads nor replies (a hung bus); it is stopped.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from dmxshm.errors import RingClosedError
from dmxshm.proc.gate import wait_for_start
from dmxshm.settings import START_TIMEOUT_S
from dmxshm.shm.ring import Ring
from dmxshm.spine.can import BusResult
from dmxshm.spine.gate import SpinePorts, party

REPLIES = 30  # CAN cycles answered before the bus fails: acting has begun by then


def _serve(ports: SpinePorts, deaf: bool) -> BusResult:
    cmd = Ring.attach(ports.cmd, side="reader", role="can-bus", spin_us=0)
    reply = Ring.attach(ports.reply, side="writer", role="can-bus", spin_us=0)
    wait_for_start(ports.start, party=party("can-bus"), role="can-bus")
    out = np.zeros((), reply.dtype)
    replies = 0
    try:
        while True:
            try:
                # The spine ends the stream (its shutdown may take its timeout first).
                c = cmd.read(START_TIMEOUT_S)
            except RingClosedError:
                return BusResult(cycles=replies, scheduling="test bus")
            if replies == REPLIES:
                if deaf:
                    threading.Event().wait()  # hung: its supervisor stops it
                continue  # mute: takes the command, never answers
            out["cycle"] = c["cycle"]
            out["t_start"] = out["t_reply"] = out["t_end"] = time.perf_counter()
            reply.write(out, START_TIMEOUT_S)
            replies += 1
    finally:
        cmd.close()
        reply.close()


def goes_mute(ports: SpinePorts, can_cycle_s: float, reply_at_s: float, jitter_s: float,
              seed: int, timeout_s: float, bus_delay_s: float = 0.0,
              poll_us: float = 0.0) -> BusResult:
    """Answers ``REPLIES`` CAN cycles, then takes the commands without answering."""
    return _serve(ports, deaf=False)


def goes_deaf(ports: SpinePorts, can_cycle_s: float, reply_at_s: float, jitter_s: float,
              seed: int, timeout_s: float, bus_delay_s: float = 0.0,
              poll_us: float = 0.0) -> BusResult:
    """Answers ``REPLIES`` CAN cycles, then hangs: takes nothing more, answers nothing."""
    return _serve(ports, deaf=True)

"""CAN actuation interfaces: the bus process that runs CAN cycles.

The bus runs in its own process (on another CPU where there is one), so a
CAN cycle really runs in parallel with the spine's plan or sleep. The spine
starts a cycle by writing the servo commands into the command ring; the bus
answers in the reply ring when the cycle is over.

``mock``: a simulated bus on its own clock. It starts a CAN cycle when it
receives the frame (its own clock reading, ``bus_delay_s`` later if asked),
makes its last servo reply ``reply_at_s`` into the cycle and ends it
``can_cycle_s`` (0.9 ms as measured on a pi3hat) after its start, plus
optional Gaussian jitter: the delay of handing the frame to the bus shows in
every latency the spine measures. The wheel states integrate the commanded
speeds.

``sim``: a pybullet world with the robot; a CAN cycle is one physics step
of ``dt = 1/f`` with the commanded wheel speeds, and the replies are the
wheels' state after it, made when the step is done.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dmxshm.errors import RingClosedError
from dmxshm.proc.gate import wait_for_start
from dmxshm.shm.ring import Ring
from dmxshm.spine.clock import ask_realtime, spin_until_time
from dmxshm.spine.gate import SpinePorts, party

BUS_RT_PRIORITY = 9  # below the spine's
SPIN_MARGIN_S = 150e-6
BUS_POLL_US = 200.0
"""How long the bus polls for the next frame before it sleeps on the ring. At
1 kHz the next frame comes about 70 us after a cycle ends, in both schedules:
polling takes it in a few us, where a sleeping bus took 27 us (p50) to wake
and start the cycle, late enough at p99 to push the cycle's end past the
next tick."""


@dataclass(frozen=True)
class BusResult:
    """What the bus process did.

    Attributes:
        cycles: CAN cycles run (commands answered).
        scheduling: the scheduling policy it got.
    """

    cycles: int
    scheduling: str


def _sleep_until(t: float) -> float:
    """Sleep to just before ``t``, then spin: exact, yet the core is mostly free."""
    ahead = t - SPIN_MARGIN_S - time.perf_counter()
    if ahead > 0:
        time.sleep(ahead)
    return spin_until_time(t)


def _serve(ports: SpinePorts, timeout_s: float,
           cycle: Callable[[np.ndarray, np.ndarray, float], None],
           poll_us: float = BUS_POLL_US) -> BusResult:
    """The bus loop: take each CAN cycle from the spine, run it, send the replies.

    ``cycle(command, out, received)`` runs one CAN cycle and fills the reply
    slot ``out`` (its ``t_start`` included); ``received`` is when the bus got
    the frame, on its own clock.
    The bus runs SCHED_FIFO just below the spine: the spine waits for it in
    step 3, so a bus preempted by another process stalls the spine (measured:
    ~1 ms late replies, skipped ticks). It must sleep between and within
    cycles, or the kernel's real-time throttling (95% of each second) stops
    it for 50 ms.
    """
    scheduling = ask_realtime(BUS_RT_PRIORITY)
    cmd = Ring.attach(ports.cmd, side="reader", role="can-bus", spin_us=poll_us)
    reply = Ring.attach(ports.reply, side="writer", role="can-bus", spin_us=0)
    wait_for_start(ports.start, party=party("can-bus"), role="can-bus")
    out = np.zeros((), reply.dtype)
    cycles = 0
    try:
        while True:
            try:
                c = cmd.read(timeout_s)
            except RingClosedError:
                break
            received = time.perf_counter()
            out["cycle"] = c["cycle"]
            cycle(c, out, received)
            reply.write(out, timeout_s)
            cycles += 1
        reply.close_writer()
        return BusResult(cycles=cycles, scheduling=scheduling)
    finally:
        cmd.close()
        reply.close()


def run_sim_bus(ports: SpinePorts, frequency_hz: float, seed: int,
                timeout_s: float, poll_us: float = BUS_POLL_US) -> BusResult:
    """Main loop of the sim bus process: one physics step per CAN cycle."""
    from dmxshm.world.world import World

    world = World("loop", 1, seed=seed, dt_s=1.0 / frequency_hz, substeps=1)

    def cycle(c: np.ndarray, out: np.ndarray, received: float) -> None:
        out["t_start"] = received
        world.apply_wheel_speeds(c["wheels_rad_s"][None, :])
        world.step()
        state = world.state()[0]
        out["t_reply"] = out["t_end"] = time.perf_counter()
        out["wheel_angle_rad"] = state["wheel_angle_rad"]
        out["wheel_rate_rad_s"] = state["wheel_rate_rad_s"]

    try:
        return _serve(ports, timeout_s, cycle, poll_us)
    finally:
        world.close()


def run_mock_bus(ports: SpinePorts, can_cycle_s: float, reply_at_s: float,
                 jitter_s: float, seed: int, timeout_s: float,
                 bus_delay_s: float = 0.0, poll_us: float = BUS_POLL_US) -> BusResult:
    """Main loop of the mock bus process (see the module docstring)."""
    rng = np.random.default_rng(seed)
    angle = np.zeros(2)

    def cycle(c: np.ndarray, out: np.ndarray, received: float) -> None:
        # The bus's own clock: the spine's t_send is never read here.
        start = _sleep_until(received + bus_delay_s) if bus_delay_s > 0 else received
        out["t_start"] = start
        jitter = float(rng.normal(0.0, jitter_s)) if jitter_s > 0 else 0.0
        out["t_reply"] = _sleep_until(start + max(reply_at_s + jitter, 0.0))
        out["t_end"] = _sleep_until(start + max(can_cycle_s + jitter, reply_at_s))
        angle[:] += c["wheels_rad_s"] * can_cycle_s
        out["wheel_angle_rad"] = angle
        out["wheel_rate_rad_s"] = c["wheels_rad_s"]

    return _serve(ports, timeout_s, cycle, poll_us)

"""What the spine's loop drives: a bus, seen from the spine.

:class:`~dmxshm.spine.loop.SpineLoop` starts each CAN cycle with
:meth:`Bus.send` and collects the replies of the one in flight with
:meth:`Bus.collect`; it never knows what is at the other end. Two buses:

* :class:`CanLink`: the rings to a ``dmxshm spine`` bus process
  (:mod:`dmxshm.spine.can`: the mock bus, or a pybullet world), which answers
  every CAN cycle; the spine waits for each reply, up to its timeout.
* :class:`~dmxshm.spine.engine_bus.EngineBus`: a network's engine, which
  runs a physics step of every robot per frame; the spine never waits for it.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

import numpy as np

from dmxshm.shm.ring import Ring


class BusReply(NamedTuple):
    """The replies of one CAN cycle, on the bus's own clock (perf_counter seconds)."""

    cycle: int  # the spine cycle that sent its frame
    t_start: float  # when the bus started it
    t_reply: float  # when its last servo reply was made (the observation's instant)
    t_end: float  # when it ended


class Bus(Protocol):
    """The spine's side of a bus (its errors are :class:`~dmxshm.errors.DmxError`'s)."""

    def send(self, cycle: int, t_send: float, wheels_rad_s: np.ndarray, wait_s: float) -> None:
        """Start a CAN cycle: the servo commands of spine cycle ``cycle``, sent at
        ``t_send``; waits at most ``wait_s`` for the bus to take them.

        Raises:
            DmxError: the bus did not take them (a full ring, a closed one).
        """

    def collect(self, wait_s: float | None) -> BusReply | None:
        """The replies of the CAN cycle in flight, or None (none yet, and this bus
        is not waited for). ``wait_s``: how long the bus may be waited for (None:
        not at all: it already failed).

        Raises:
            DmxError: no reply came in ``wait_s`` (the bus fell silent or died).
        """

    def end(self) -> None:
        """No more CAN cycles: close the frames (the bus ends with them)."""


class CanLink:
    """The command and reply rings of a ``dmxshm spine`` bus process (:mod:`~dmxshm.spine.can`).

    Args:
        cmd: ring of CAN commands to the bus (writer side).
        reply: ring of the bus's replies (reader side).
    """

    def __init__(self, cmd: Ring, reply: Ring) -> None:
        self.cmd, self.reply = cmd, reply
        self._slot = np.zeros((), cmd.dtype)

    def send(self, cycle: int, t_send: float, wheels_rad_s: np.ndarray, wait_s: float) -> None:
        slot = self._slot
        slot["cycle"] = cycle
        slot["t_send"] = t_send
        slot["wheels_rad_s"] = wheels_rad_s
        self.cmd.write(slot, wait_s)

    def collect(self, wait_s: float | None) -> BusReply | None:
        # The bus answers every CAN cycle, in order: the next reply is this one's.
        r = self.reply.read(wait_s) if wait_s is not None else self.reply.try_read()
        if r is None:
            return None
        return BusReply(int(r["cycle"]), float(r["t_start"]), float(r["t_reply"]),
                        float(r["t_end"]))

    def end(self) -> None:
        self.cmd.close_writer()

    def close(self) -> None:
        self.cmd.close()
        self.reply.close()

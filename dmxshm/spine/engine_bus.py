"""A network's engine as the spine's bus (``dmxshm run --mode realtime --spine``).

A CAN cycle is one frame on the ``spine.frames`` port: every robot's wheel
command, which the engine applies in one physics step of ``1 / spine_hz``;
its reply on ``spine.replies`` holds the wheel states after that step. The
engine takes the frames in order (a frame overwritten before it took it is
one of its command drops) and replies to each.

The spine never waits for the engine: :meth:`EngineBus.collect` takes the
newest reply there is, whichever frame it answers, and the observation stays
that reply until a newer one comes. The newest reply held at a send is
therefore that of the frame ``floor(T_o / T) + 1`` cycles back (T_o: the
reply's instant after its frame's send), which is the network spine's latency
law (:func:`~dmxshm.spine.network_spine.predicted_send_minus_obs_s`).
"""

from __future__ import annotations

import time

import numpy as np

from dmxshm.settings import LIVENESS_POLL_S
from dmxshm.shm.peers import DEAD, peer_state
from dmxshm.shm.ring import Ring
from dmxshm.spine.bus import BusReply


def spine_reply_dtype(robots: int) -> np.dtype:
    """The engine's reply to the spine: wheel states after the physics step of one
    frame (``frame``: the spine cycle that sent it; ``t_start``: when the engine
    took it; ``t_reply``: when the step was done)."""
    return np.dtype([("step", "<u8"), ("frame", "<i8"), ("t_start", "<f8"), ("t_reply", "<f8"),
                     ("wheel_angle_rad", "<f8", (robots, 2)),
                     ("wheel_rate_rad_s", "<f8", (robots, 2))])


class EngineBus:
    """The engine behind the ``spine.frames`` and ``spine.replies`` ports.

    Args:
        frames: the frame ring to the engine (writer side).
        replies: the engine's reply ring (reader side).
        end_timeout_s: at the end, how long to wait for the engine's replies to
            the last frames.

    Attributes:
        last_step: the last engine step whose reply the spine had (-1: none).
    """

    def __init__(self, frames: Ring, replies: Ring, end_timeout_s: float) -> None:
        self.frames, self.replies = frames, replies
        self.end_timeout_s = end_timeout_s
        self.last_step = -1
        self._slot = np.zeros((), frames.dtype)

    def send(self, cycle: int, t_send: float, wheels_rad_s: np.ndarray, wait_s: float) -> None:
        """One frame: ``wheels_rad_s`` per robot (``(robots, 2)``, or one pair for all)."""
        slot = self._slot
        slot["step"] = cycle
        slot["wall_time_s"] = slot["sent_time_s"] = time.monotonic()
        slot["wheels"] = wheels_rad_s
        self.frames.write(slot, wait_s)  # an overwrite ring: it never waits

    def collect(self, wait_s: float | None) -> BusReply | None:
        """The newest reply there is, or None: the engine is never waited for."""
        r = self.replies.try_read(newest=True)
        if r is None:
            return None
        self.last_step = int(r["step"])
        # The reply is made when the step is done: the step's end is the reply.
        return BusReply(int(r["frame"]), float(r["t_start"]), float(r["t_reply"]),
                        float(r["t_reply"]))

    def end(self) -> None:
        """Close the frames (the engine's physics ends with them), then take the
        engine's replies to the last frames until it closes them, or is gone (a
        dead engine closes nothing: its stops went nowhere)."""
        self.frames.close_writer()
        replies = self.replies
        deadline = time.monotonic() + self.end_timeout_s
        look_at = time.monotonic() + LIVENESS_POLL_S
        while not (replies.closed and replies.stats().pending == 0) \
                and time.monotonic() < deadline:
            if self.collect(None) is not None:
                continue
            if time.monotonic() >= look_at:
                if peer_state(replies.peer("writer")) == DEAD:
                    break
                look_at = time.monotonic() + LIVENESS_POLL_S
            time.sleep(0.001)

    def close(self) -> None:
        self.frames.close()
        self.replies.close()

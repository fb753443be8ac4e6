"""Outside agents: a program the network did not start drives its robots.

:func:`connect` joins a running network started with ``--external-agents N`` (the
only one, or the one of that ``name``), claims a free agent slot and returns a
:class:`Connection`::

    import dmxshm

    with dmxshm.connect() as agent:          # or connect("my-run", robots=[2, 3])
        while True:
            obs = agent.observe()            # the records built-in agents get
            agent.act(my_policy(obs))        # (len(agent.robots), 2) wheel speeds, rad/s

The slot is held until the connection closes (or its process dies: the kernel
drops the claim). A network that ends raises :class:`NetworkEnded` from the next
call; one that dies under the client raises it within a fraction of a second
(every wait looks every :data:`~dmxshm.settings.LIVENESS_POLL_S`). The slot
layout is the ABI of docs/abi.md (:mod:`dmxshm.shm.slot`); a C client does the same.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dmxshm import settings
from dmxshm.errors import DmxError, DmxTimeoutError, LayoutError
from dmxshm.network.runs import RunInfo, live_runs
from dmxshm.shm.slot import (
    ENDED,
    FAILED,
    O_AWAITING,
    O_OBS_SEQ,
    SERVING,
    SlotSegment,
    SlotTakenError,
    first_command,
)
from dmxshm.shm.waiting import EMPTY_OR_INTERRUPTED, acquire, spin_until
from dmxshm.world.motor import DUCKIEBOT

__all__ = ["Connection", "NetworkEnded", "NoNetworkError", "ProtocolError", "SlotTakenError",
           "choose_run", "claim", "connect"]


class NetworkEnded(DmxError):
    """The network of a connection ended (or died): nothing more to observe or do."""


class NoNetworkError(DmxError):
    """No running network matches what :func:`connect` was asked (or it has no free slot)."""


class ProtocolError(DmxError):
    """A call out of turn: in gym mode ``act`` before ``observe``, or twice for one step,
    or ``observe`` again before answering."""


def _describe(run: RunInfo) -> str:
    name = f"{run.name!r}" if run.name else "unnamed"
    return (f"{name} (pid {run.pid}, {run.mode}, {len(run.free_slots)} of "
            f"{len(run.slots)} slots free)")


def choose_run(name: str | None) -> RunInfo:
    """The running network of yours named ``name``, or (None) the only one with agent
    slots (run discovery: :func:`~dmxshm.network.runs.live_runs`).

    Raises:
        NoNetworkError: none, none of that name, it has no slots, or several have slots
            and no name was given (the message lists them).
    """
    runs = live_runs()
    if name is not None:
        named = [r for r in runs if r.name == name]
        if not named:
            others = ", ".join(_describe(r) for r in runs) or "none"
            raise NoNetworkError(f"no running network of yours is named {name!r} (running: "
                                 f"{others}); 'dmxshm ps' lists them")
        run = named[0]
        if not run.slots:
            raise NoNetworkError(f"network {name!r} (pid {run.pid}) has no agent slots: start "
                                 "it with --external-agents N")
        return run
    with_slots = [r for r in runs if r.slots]
    if not with_slots:
        hint = (f" ({len(runs)} running without slots: start one with --external-agents N)"
                if runs else "")
        raise NoNetworkError("no running network of yours has agent slots" + hint
                             + "; 'dmxshm run --external-agents 1' starts one")
    if len(with_slots) > 1:
        raise NoNetworkError("several networks have agent slots: "
                             + "; ".join(_describe(r) for r in with_slots)
                             + ". Say which: dmxshm.connect(name=...)")
    return with_slots[0]


def connect(name: str | None = None, robots: Sequence[int] | None = None,
            timeout_s: float | None = None, *, client_name: str = "python") -> Connection:
    """Join a running network and claim one of its agent slots.

    Args:
        name: the network's ``--name``; None: the only running network with slots.
        robots: the robots wanted (a slot's exact robots); None: the first free slot.
        timeout_s: how long to wait for such a network and a free slot to appear
            (None or 0: not at all).
        client_name: what the slot's holder line and ``dmxshm ps`` call this client.

    Raises:
        NoNetworkError: no such network, no slot with those robots, or none free.
        SlotTakenError: the slot asked for is held (the message names its holder's pid).
        LayoutError: the slot's header is not that of an agent slot of this ABI (a
            departed client wrote over it, and the network has yet to write it back).
    """
    deadline = time.monotonic() + (timeout_s or 0.0)
    while True:
        try:
            return claim(choose_run(name), robots, client_name)
        except (NoNetworkError, SlotTakenError, LayoutError):
            if time.monotonic() >= deadline:
                raise
        time.sleep(settings.LIVENESS_POLL_S)


def claim(run: RunInfo, robots: Sequence[int] | None = None,
          client_name: str = "python") -> Connection:
    """Claim a free agent slot of ``run`` (of exactly ``robots``; None: the first free
    one) for this process: what :func:`connect` does once it has chosen the run.

    Raises:
        NoNetworkError: ``run`` has no slot of those robots.
        SlotTakenError: every such slot is held (the message names the holders).
        LayoutError: the only such slots were written over (their network writes them
            back).
    """
    slots = list(run.slots)
    if robots is not None:
        want = tuple(int(r) for r in robots)
        slots = [s for s in slots if s.robots == want]
        if not slots:
            have = "; ".join(f"slot {s.index}: robots {list(s.robots)}" for s in run.slots)
            raise NoNetworkError(f"network {_describe(run)} has no slot of robots {list(want)} "
                                 f"({have})")
    taken: list[SlotTakenError] = []
    damaged: list[LayoutError] = []
    for info in slots:
        try:
            seg = SlotSegment.attach(info.segment)
        except LayoutError as exc:  # written over: its network writes it back
            damaged.append(exc)
            continue
        try:
            seg.claim(os.getpid(), client_name)
        except SlotTakenError as exc:
            seg.close()
            taken.append(exc)
            continue
        except BaseException:
            seg.close()
            raise
        return Connection(seg, run)
    if damaged and not taken:
        raise damaged[0]
    if len(taken) == 1:
        raise taken[0]
    raise SlotTakenError(f"every slot of network {_describe(run)} is held: "
                         + "; ".join(str(e) for e in taken), pid=taken[0].pid if taken else 0)


class Connection:
    """A claimed agent slot (made by :func:`connect`).

    Attributes:
        robots: the robots this client drives, in the order of the observation's rows
            and of the commands.
        mode: ``"gym"`` or ``"realtime"``.
        slot: the slot's index; ``network``: the network's name (None: unnamed).
        step: the engine step of the last observation returned (-1: none yet).
        action: the units :meth:`act` takes: ``"wheel-speed"`` (rad/s) or ``"pwm"``
            (duty in [-1, 1]; ``dmxshm run --action pwm``).
        command_limit: the largest command magnitude the network accepts in those units.
        episodes: the network scores this slot's robots (``dmxshm run --episodes``):
            each observation comes with :attr:`scores`, and gym mode takes resets.
        scores: the last observation's ``reward``, ``terminated`` and ``truncated``, one
            entry per robot (a numpy record; all 0 without ``episodes``).
    """

    def __init__(self, segment: SlotSegment, run: RunInfo) -> None:
        self._seg: SlotSegment | None = segment
        self.robots = segment.robots
        self.mode = segment.mode
        self.action = segment.action
        self.command_limit = DUCKIEBOT.limit if self.action == "pwm" else segment.max_wheel_speed
        self.slot = segment.index
        self.network = run.name
        self.network_pid = run.pid
        self.record = segment.record
        self.episodes = run.episodes
        # the last observation's reserved fields: reward, terminated, truncated per robot
        self.scores: np.ndarray = np.zeros((), segment.scores.dtype)
        self.step = -1
        self._last_seq = 0
        self._pending = False  # gym: an observation returned and not answered
        # the next command's number: after any before ours, or 0 if what a departed
        # client left is near 2^64 (the network takes a new holder's sequence afresh)
        self._m = first_command(int(segment.cmd_head["seq"][0]))
        self._last: dict[str, Any] | None = None  # what our last command carried
        self._started = time.monotonic()
        # Gym mode: poll as the network's own waits do before sleeping on the bell.
        self._spin_s = run.spin_us / 1e6 if self.mode == "gym" else 0.0

    # -- the two calls ----------------------------------------------------------------
    def observe(self, timeout_s: float | None = None) -> np.ndarray:
        """The next observation: ``(len(robots),)`` records of
        :func:`dmxshm.matrix.obs.obs_dtype`.

        Gym mode: the observation of the step the network waits on (blocks for it).
        Realtime: the newest one newer than the last returned (blocks for one).

        Args:
            timeout_s: the longest wait (None: as long as the network lives).

        Raises:
            NetworkEnded: the network ended or died.
            ProtocolError: gym mode, the last observation is not answered yet.
            DmxTimeoutError: nothing came within ``timeout_s``.
        """
        seg = self._open()
        if self._pending:
            raise ProtocolError(f"step {self.step}'s observation was returned and not "
                                "answered: call act() first (gym mode)")
        t0 = time.monotonic()
        while True:
            seen = seg.word(O_OBS_SEQ)
            got = seg.read_obs(self._last_seq)
            if got is not None and self.mode == "gym" and (
                    seg.word(O_AWAITING) != got[1] or seg.unexamined()):
                # Answered already, or maybe (a command of a client before this one that
                # the network has yet to look at): wait for what the network does next.
                got = None
            if got is not None:
                self._last_seq, self.step, _, records, self.scores = got
                self._pending = self.mode == "gym"
                return records
            if self._spin_s:  # gym: poll a while (yielding) for the next observation
                spin_until(functools.partial(seg.obs_moved, seen), self._spin_s)
                if seg.obs_moved(seen):
                    continue
            self._alive(seg)
            if timeout_s is not None and time.monotonic() - t0 >= timeout_s:
                raise DmxTimeoutError(f"no observation within {timeout_s:g} s (slot "
                                      f"{self.slot}, last step {self.step})")
            try:
                acquire(seg.obs_bell, settings.LIVENESS_POLL_S)
            except EMPTY_OR_INTERRUPTED:
                pass

    def act(self, commands: Any, *, reset: bool = False, sent_time_s: float | None = None,
            lights: Any = None) -> None:
        """Send ``commands``: ``(len(robots), 2)``, left then right, in the network's
        units (:attr:`action`: wheel speeds in rad/s, or PWM duties), answering the
        last observation. The network checks them (finite, within
        :attr:`command_limit`) and counts what it rejects. ``reset`` (realtime):
        this slot's robots go back to their start poses, at rest, before the
        commands apply; in a gym run with ``episodes``, the same, and their
        episodes start over (other gym runs reject it: the field is reserved there).
        ``sent_time_s``: when the commands were made, ``time.monotonic()`` (None: now),
        where the realtime command latency of the summary starts (a bridge passes on
        its agent's time). ``lights``: ``(len(robots), 4, 4)`` RGBA in [0, 1] of each
        robot's LEDs (front left, front right, back left, back right), shown in the live
        view and logged (None: as they were).

        Raises:
            NetworkEnded: the network ended or died.
            ProtocolError: gym mode, no observation to answer (none yet, or answered).
            ValueError: ``commands`` has another shape.
        """
        seg = self._open()
        wheels = np.asarray(commands, dtype=np.float64)
        n = len(self.robots)
        if wheels.shape != (n, 2):
            if wheels.size == 2 * n:
                wheels = wheels.reshape(n, 2)
            else:
                raise ValueError(f"commands must be ({n}, 2) (left, right) for robots "
                                 f"{list(self.robots)}, got shape {wheels.shape}")
        self._alive(seg)  # an ended network says so first, whatever the turn
        if self.mode == "gym" and not self._pending:
            raise ProtocolError("no observation to answer: call observe() first" if
                                self.step < 0 else f"step {self.step} was answered already; "
                                "call observe() for the next step (gym mode)")
        if reset and self.mode == "gym" and not self.episodes:
            raise ProtocolError("a gym run takes resets only with episodes (dmxshm run "
                                "--episodes); this network was started without")
        self._send(seg, wheels, reset, sent_time_s, self._lights(lights), False)
        self._pending = False

    def set_lights(self, lights: Any) -> None:
        """Realtime: set the robots' LEDs now (``(len(robots), 4, 4)`` RGBA, as
        :meth:`act`'s ``lights``) without a wheel command: the robots keep driving on
        their last one, which expires as it would have.

        Raises:
            ProtocolError: gym mode (lights go with a step's :meth:`act` there).
        """
        seg = self._open()
        self._alive(seg)
        if self.mode == "gym":
            raise ProtocolError("gym mode: give the lights to act(), with the step's commands")
        self._send(seg, None, False, None, self._lights(lights), True)

    def _send(self, seg: SlotSegment, wheels: np.ndarray | None, reset: bool,
              sent_time_s: float | None, lights: np.ndarray | None, lights_only: bool) -> None:
        """Write the next command. Realtime: one the network has not looked at yet is
        replaced (the newest wins), so what it carried that this one does not (wheels,
        a reset, lights) is carried over: a light pattern never hides a wheel command."""
        last = self._last
        if last is not None and self.mode == "realtime" and seg.unexamined():
            if lights_only and not last["lights_only"]:  # lights onto the waiting wheels
                wheels, sent_time_s, lights_only = last["wheels"], last["sent"], False
            reset = reset or last["reset"]
            if lights is None:
                lights = last["lights"]
        if wheels is None:
            wheels = seg.wheels
        seg.write_cmd(self._m, max(self.step, 0), wheels, reset, sent_time_s, lights,
                      lights_only)
        self._last = {"wheels": np.array(wheels), "sent": float(seg.cmd_head["sent_time_s"][0]),
                      "reset": reset, "lights": lights, "lights_only": lights_only}
        # 2^62 commands on from a start below 2^62 before the words run out: wrap then
        self._m = self._m + 1 if self._m < 2**63 - 2 else 0

    def _lights(self, lights: Any) -> np.ndarray | None:
        if lights is None:
            return None
        n = len(self.robots)
        got = np.asarray(lights, dtype=np.float32)
        if got.shape != (n, 4, 4):
            raise ValueError(f"lights must be ({n}, 4, 4): RGBA of front left, front right, "
                             f"back left and back right LEDs per robot, got {got.shape}")
        return got

    def run(self, policy: Callable[[np.ndarray], Any], steps: int | None = None) -> int:
        """Answer observations with ``policy(obs)`` until the network ends (or for
        ``steps`` steps); the number of commands sent."""
        sent = 0
        try:
            while steps is None or sent < steps:
                obs = self.observe()
                self.act(policy(obs))
                sent += 1
        except NetworkEnded:
            pass
        return sent

    @property
    def answer_due(self) -> bool:
        """Gym mode: the last observation returned is not answered yet (:meth:`act`
        comes next, not :meth:`observe`)."""
        return self._pending

    # -- the rest ---------------------------------------------------------------------
    def _open(self) -> SlotSegment:
        if self._seg is None:
            raise NetworkEnded("this connection is closed")
        return self._seg

    def _alive(self, seg: SlotSegment) -> None:
        status = seg.status
        if status in (ENDED, FAILED):
            raise NetworkEnded(f"the network {'ended' if status == ENDED else 'failed'} "
                               f"(slot {self.slot}, last step {self.step})")
        if status == SERVING and not seg.served():
            raise NetworkEnded(f"the network died: slot {self.slot}'s process (of network "
                               f"pid {self.network_pid}) is gone (last step {self.step})")
        if status != SERVING and time.monotonic() - self._started > settings.START_TIMEOUT_S:
            raise NetworkEnded(f"the network never served slot {self.slot} in "
                               f"{settings.START_TIMEOUT_S:g} s")

    @property
    def closed(self) -> bool:
        return self._seg is None

    def close(self) -> None:
        """Give the slot back (another client may take it)."""
        if self._seg is not None:
            self._seg.close()
            self._seg = None

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Connection(network={self.network!r}, slot={self.slot}, "
                f"robots={list(self.robots)}, mode={self.mode!r}, step={self.step})")

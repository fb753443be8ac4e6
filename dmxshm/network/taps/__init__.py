"""Taps: work that watches a role's data at declared points, outside its loop.

A role's loop does its own job (the engine steps physics, a renderer makes
sensor samples) and calls its taps at a few declared points; everything
else that looks at the data (the digest, lane metrics, the MCAP log, the
live view, recording frames, a benchmark's floor, a test's counter) is a
:class:`Tap`, added without editing a loop. The points, each called once
for every robot at once, never once per robot:

========================  =============  ==========================================
point                     role           when
========================  =============  ==========================================
``start()``               every role     after the start gate, before the loop
``state(k, t, states)``   engine         each published state (every robot's record)
``commands(k, t, a, e)``  engine         the commands applied in step ``k``
``lights(k, t, l, r)``    engine         robots ``r``'s LEDs were set (``l``: all)
``end(k, t, states)``      engine         the loop ended; the state after its last step
``samples(k, t, r, o, d)`` renderer      a sample of sensors ``d`` of robots ``r``
``sent(k, made, missed)`` renderer       a tick's samples went out (slow work here)
``images(n, k, t, r, i)``  camera         camera frame ``n`` of robots ``r``
========================  =============  ==========================================

Arrays passed at a point are only valid during the call (``samples`` gets
the slot an agent is about to read): a tap that keeps data copies it, and
does slow work (encoding, writing files) at ``sent``, once the slots went
out. A tap never changes what it is given.

A role's taps are the built-in ones its config asks for, then those the
network was given (:class:`~dmxshm.network.plan.TapSpec`, also
``dmxshm.network.TapSpec``: picklable, made in each process of the run;
:meth:`dmxshm.network.role.Role.tap`). What a given tap's :meth:`Tap.result` returns
in the engine lands in the summary (``Summary.taps``, by the spec's name).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import numpy as np

from dmxshm.world.state import poses_2d

POINTS = ("start", "state", "commands", "lights", "end", "samples", "sent", "images")
"""The declared points a tap may watch (see the module docstring)."""


class Tap:
    """Watches a role's data at some of the :data:`POINTS`; every point does nothing
    unless a subclass overrides it (only overridden points are called)."""

    def start(self) -> None:
        """After the start gate, before the role's loop."""

    def state(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        """Engine: state ``step`` was published (``states``: every robot's record)."""

    def commands(self, step: int, sim_time_s: float, applied: np.ndarray,
                 expired: np.ndarray | None) -> None:
        """Engine: the ``(R, 2)`` wheel speeds physics applied in step ``step`` (and which
        robots' commands had expired; None where none can)."""

    def lights(self, step: int, sim_time_s: float, lights: np.ndarray,
               rows: np.ndarray) -> None:
        """Engine: the LEDs of robots ``rows`` were set (``lights``: every robot's,
        ``(R, 4, 4)`` RGBA of front left, front right, back left, back right)."""

    def end(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        """Engine: the loop ended after ``step`` steps; ``states``: the state after the
        last one (never published)."""

    def samples(self, step: int, sim_time_s: float, robots: tuple[int, ...],
                obs: np.ndarray, due: tuple[str, ...]) -> None:
        """Renderer: ``obs`` (one record per robot of ``robots``) holds new samples of
        the ``due`` sensors, made from state ``step``."""

    def sent(self, step: int, produced: dict[str, int], missed: dict[str, int]) -> None:
        """Renderer: a tick's samples went out; the sensors' counts so far."""

    def images(self, frame: int, step: int, sim_time_s: float, robots: tuple[int, ...],
               images: np.ndarray) -> None:
        """Camera process: frame ``frame`` (from 1), ``(len(robots), H, W, 3)``, made from
        state ``step``."""

    def close(self) -> None:
        """The role ends (normally or not); release what the tap holds."""

    def result(self) -> Any:
        """What the tap reports when the role ends (None: nothing)."""
        return None


T = TypeVar("T", bound=Tap)


class Taps:
    """A role's taps, called at each point (a point no tap watches costs one empty loop).

    Example:
        >>> class Count(Tap):
        ...     n = 0
        ...     def state(self, step, sim_time_s, states): self.n += 1
        >>> taps = Taps([Count()])
        >>> taps.state(0, 0.0, np.zeros(1)); taps.state(1, 0.1, np.zeros(1))
        >>> taps.get(Count).n
        2
    """

    def __init__(self, taps: Iterable[Tap | None], named: dict[str, Tap] | None = None) -> None:
        self.all = [t for t in taps if t is not None]
        self.named = dict(named or {})
        self.all += [t for t in self.named.values() if t not in self.all]
        watching: dict[str, list[Callable[..., None]]] = {p: [] for p in POINTS}
        for tap in self.all:
            for point in POINTS:
                if getattr(type(tap), point) is not getattr(Tap, point):
                    watching[point].append(getattr(tap, point))
        self._start, self._state = watching["start"], watching["state"]
        self._commands, self._end = watching["commands"], watching["end"]
        self._lights = watching["lights"]
        self._samples, self._sent = watching["samples"], watching["sent"]
        self._images = watching["images"]

    def watched(self, point: str) -> bool:
        """Whether any tap watches ``point`` (a loop may skip preparing its arguments)."""
        return bool(getattr(self, f"_{point}"))

    def get(self, kind: type[T]) -> T:
        """The tap of type ``kind`` (a built-in one the role reads its figures from).

        Raises:
            LookupError: none of that type.
        """
        for tap in self.all:
            if isinstance(tap, kind):
                return tap
        raise LookupError(f"no {kind.__name__} tap in this role")

    def find(self, kind: type[T]) -> T | None:
        """The tap of type ``kind``, or None."""
        return next((t for t in self.all if isinstance(t, kind)), None)

    def start(self) -> None:
        for f in self._start:
            f()

    def state(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        for f in self._state:
            f(step, sim_time_s, states)

    def commands(self, step: int, sim_time_s: float, applied: np.ndarray,
                 expired: np.ndarray | None = None) -> None:
        for f in self._commands:
            f(step, sim_time_s, applied, expired)

    def lights(self, step: int, sim_time_s: float, lights: np.ndarray,
               rows: np.ndarray) -> None:
        for f in self._lights:
            f(step, sim_time_s, lights, rows)

    def end(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        for f in self._end:
            f(step, sim_time_s, states)

    def samples(self, step: int, sim_time_s: float, robots: tuple[int, ...],
                obs: np.ndarray, due: tuple[str, ...]) -> None:
        for f in self._samples:
            f(step, sim_time_s, robots, obs, due)

    def sent(self, step: int, produced: dict[str, int], missed: dict[str, int]) -> None:
        for f in self._sent:
            f(step, produced, missed)

    def images(self, frame: int, step: int, sim_time_s: float, robots: tuple[int, ...],
               images: np.ndarray) -> None:
        for f in self._images:
            f(frame, step, sim_time_s, robots, images)

    def results(self) -> dict[str, Any]:
        """What each given (named) tap reports, by its spec's name; None dropped."""
        found = {name: tap.result() for name, tap in self.named.items()}
        return {name: value for name, value in found.items() if value is not None}

    def close(self) -> None:
        """Close every tap, the last one first, each even if another fails."""
        errors = []
        for tap in reversed(self.all):
            try:
                tap.close()
            except Exception as exc:  # noqa: BLE001 - closed in order, first error raised
                errors.append(exc)
        if errors:
            raise errors[0]


class _Poses:
    """``poses_2d`` of the states a point was given, computed once for all its taps
    (the digest, the lanes and the view each want them)."""

    def __init__(self) -> None:
        self._states: np.ndarray | None = None
        self._poses: np.ndarray | None = None

    def __call__(self, states: np.ndarray) -> np.ndarray:
        """The ``(R, 3)`` poses of ``states`` (the same array object as the last call:
        no new work). Read only."""
        if states is not self._states or self._poses is None:
            self._poses = poses_2d(states)
            self._states = states  # held: its id cannot be reused while it is compared
        return self._poses


poses_of = _Poses()
"""The engine's taps' shared ``poses_2d`` (one process, one engine: one cache)."""

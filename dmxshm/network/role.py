"""One skeleton for every role of a network: attach, gate, loop, stop, close.

A role (the engine, a renderer, a camera process, an agent) is a
:class:`Role`: :meth:`Role.attach` opens its ports (``self.port(name,
side)``), its world and its taps, each registered to be closed;
:func:`run_role` then passes the start gate, calls the taps' ``start``,
runs :meth:`Role.loop` (the role's own job, nothing else) and returns
:meth:`Role.finish`'s result. A stop (:class:`~dmxshm.proc.outcome.Terminated`,
a SIGTERM or Ctrl-C) during the loop or its finish turns into the role's
typed partial result (:meth:`Role.partial`: what a finished run would count,
so far) on its way to the supervisor. Whatever ends it, everything attached
is closed, last attached first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Generic, TypeVar

from dmxshm.network.config import role_name
from dmxshm.network.plan import Plan
from dmxshm.network.taps import Tap, Taps
from dmxshm.proc.outcome import Terminated
from dmxshm.shm.ring import Ring

R = TypeVar("R")


class Role(Generic[R]):
    """A process of a network (see the module docstring).

    Args:
        plan: the run's plan.
        index: which of its kind (renderer 1, agent 0...).
    """

    kind: ClassVar[str]
    """The role's kind as the plan knows it (``"engine"``, ``"renderer"``...)."""

    def __init__(self, plan: Plan, index: int = 0) -> None:
        self.plan = plan
        self.cfg = plan.config
        self.index = index
        self.name = role_name(self.kind, index)
        self.taps = Taps(())
        self._closing = contextlib.ExitStack()

    # -- what a role defines ---------------------------------------------------
    def attach(self) -> None:
        """Open the role's ports, world and taps (:meth:`port`, :meth:`own`, :meth:`tap`)."""

    def loop(self) -> R:
        """The role's own job, until its input ends; returns its result."""
        raise NotImplementedError

    def partial(self, result: R | None) -> R | None:
        """What a stop reports: ``result`` if the loop had ended, else the counts so far
        (None: nothing to report)."""
        raise NotImplementedError

    def finish(self, result: R) -> R:
        """After the loop: tell the readers it ended (close writers); the final result."""
        return result

    # -- helpers for attach() --------------------------------------------------
    def port(self, name: str, side: str, **kwargs: Any) -> Ring:
        """Attach the ring of port ``name`` (:data:`~dmxshm.network.ports.PORTS`) as
        ``side``; it is closed when the role ends."""
        return self.ring(self.plan.ring(name), side, **kwargs)

    def ring(self, ring_name: str, side: str, **kwargs: Any) -> Ring:
        """Attach a ring by its name (an observation link's); closed at the end."""
        kwargs.setdefault("spin_us", self.plan.spin_us)
        ring = Ring.attach(ring_name, side=side, role=self.name, **kwargs)
        self._closing.callback(ring.close)
        return ring

    def own(self, thing: Any, close: Callable[[], object] | None = None) -> Any:
        """Close ``thing`` (its ``close()``, or ``close``) when the role ends."""
        self._closing.callback(close if close is not None else thing.close)
        return thing

    def tap(self, built_in: Iterable[Tap | None]) -> Taps:
        """The role's taps: ``built_in`` and those its network was given; closed at the end."""
        named = {}
        for spec in self.plan.taps:  # those the network was given (Plan.taps)
            tap = spec(self.plan, self.kind, self.index)
            if tap is not None:
                named[spec.name] = tap
        self.taps = Taps(built_in, named)
        self._closing.callback(self.taps.close)
        return self.taps


def run_role(role: Role[R]) -> R:
    """Run ``role`` through the skeleton (see the module docstring); its result."""
    with role._closing:
        role.attach()
        role.plan.wait_for_start(role.kind, role.index)
        result: R | None = None
        try:
            role.taps.start()
            result = role.loop()
            return role.finish(result)
        except Terminated as exc:  # stopped: what was done so far reaches the summary
            exc.partial = role.partial(result)
            raise

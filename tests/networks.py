"""Networks run to their end for the tests: one helper, where each file had its copy.

A test file names its small network once and runs variations of it::

    run = runner(camera=(0, 0), steps=12, wait_timeout_s=5.0)

    def test_...() -> None:
        summary = run(agent="tests.agents:too_fast")  # raises what Network.run raises

Where several tests only read the outcome of the same runs, a module-scoped
:class:`Runs` runs each configuration once and hands every test its summary.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dmxshm.network import Network, NetworkConfig, Summary


def run(base: Mapping[str, Any] | NetworkConfig | None = None, /, **kw: Any) -> Summary:
    """Run ``NetworkConfig(**{**base, **kw})`` (or the config ``base``) to its end.

    Returns:
        Its summary.

    Raises:
        Whatever :meth:`Network.run` raises (a failed run's error holds its summary).
    """
    if isinstance(base, NetworkConfig):
        if kw:
            raise TypeError("settings are given either as a NetworkConfig or by name")
        cfg = base
    else:
        cfg = NetworkConfig(**{**(base or {}), **kw})
    with Network(cfg) as net:
        return net.run()


def runner(**base: Any) -> Callable[..., Summary]:
    """:func:`run` with ``base`` as its defaults: a test file's small network."""

    def run_with(**kw: Any) -> Summary:
        return run(base, **kw)

    return run_with


class Runs:
    """The summaries of runs made once each, for tests that only read them.

    ``runs(**kw)`` runs ``NetworkConfig(**{**base, **kw})`` the first time it is
    asked for and gives the same summary after; a run that fails raises each time
    it is asked for (it is not run again).
    """

    def __init__(self, **base: Any) -> None:
        self.base = base
        self._done: dict[str, Summary | BaseException] = {}

    def __call__(self, **kw: Any) -> Summary:
        key = repr(sorted({**self.base, **kw}.items()))
        if key not in self._done:
            try:
                self._done[key] = run(self.base, **kw)
            except Exception as exc:  # noqa: BLE001  raised again to each test that asks
                self._done[key] = exc
        done = self._done[key]
        if isinstance(done, BaseException):
            raise done
        return done

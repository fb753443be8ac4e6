"""Which CPUs a process may use, and pinning plans for a run's processes."""

from __future__ import annotations

import os


def usable_cpus() -> list[int]:
    """The CPUs this process may run on (its affinity), sorted."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def cpu_ranges(cpus: list[int]) -> str:
    """``0-3,6``: sorted CPUs as ``taskset -c`` writes them.

    Example:
        >>> cpu_ranges([0, 1, 2, 3, 6, 8, 9])
        '0-3,6,8-9'
    """
    spans: list[list[int]] = []
    for c in sorted(cpus):
        if spans and c == spans[-1][1] + 1:
            spans[-1][1] = c
        else:
            spans.append([c, c])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)


def auto_pins(roles: list[str], spine: bool = False,
              cpus: list[int] | None = None) -> dict[str, int]:
    """A pinning plan for ``roles`` on ``cpus`` (default: :func:`usable_cpus`).

    With a spine and 2 CPUs or more, the spine gets the last CPU alone (its
    cycle must not wait for anybody). The other roles are dealt round the
    remaining CPUs in start order (engine, renderers, agents, then the
    realtime camera processes), so that with as many CPUs as processes each
    has its own, and otherwise neighbours in the step's pipeline (which take
    turns in gym mode) share.

    Example:
        >>> auto_pins(["engine", "renderer-0", "agent-0", "spine"], spine=True, cpus=[0, 1])
        {'spine': 1, 'engine': 0, 'renderer-0': 0, 'agent-0': 0}
        >>> auto_pins(["engine", "renderer-0", "renderer-1", "agent-0"], cpus=[0, 1, 2, 3])
        {'engine': 0, 'renderer-0': 1, 'renderer-1': 2, 'agent-0': 3}
        >>> auto_pins(["engine", "renderer-0", "camera-0", "agent-0"], cpus=[0, 1])
        {'engine': 0, 'renderer-0': 1, 'agent-0': 0, 'camera-0': 1}
    """
    cpus = list(cpus if cpus is not None else usable_cpus())
    pins: dict[str, int] = {}
    # Camera processes last: each is busy all the time, and dealt after the
    # others it does not land on the engine's CPU while there is another.
    rest = ([r for r in roles if r != "spine" and not r.startswith("camera-")]
            + [r for r in roles if r.startswith("camera-")])
    if spine and "spine" in roles:
        pins["spine"] = cpus[-1]
        if len(cpus) >= 2:
            cpus = cpus[:-1]
    for i, role in enumerate(rest):
        pins[role] = cpus[i % len(cpus)]
    return pins

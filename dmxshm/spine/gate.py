"""The start gate of a ``dmxshm spine`` run: who passes it, in which slot.

Every process of the run waits at one barrier before its first cycle; each
has its slot by its role, never by a number written where it waits.

Example:
    >>> party("can-bus"), parties(agent=True)
    (1, 3)
"""

from __future__ import annotations

PARTIES = ("spine", "can-bus", "spine-agent")
"""The roles at the start gate, in slot order (the agent only with ``--agent``)."""


def party(role: str) -> int:
    """The start-gate slot of ``role``.

    Raises:
        ValueError: not a role of a spine run.
    """
    try:
        return PARTIES.index(role)
    except ValueError:
        raise ValueError(f"{role!r} is not a role of a spine run: {', '.join(PARTIES)}") from None


def parties(agent: bool) -> int:
    """How many processes pass the gate: the spine and its bus, and its agent if any."""
    return len(PARTIES) if agent else PARTIES.index("spine-agent")

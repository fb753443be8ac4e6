"""The start gate of a ``dmxshm spine`` run: who passes it, in which slot.

Every process of the run waits at one barrier before its first cycle; each
has its slot by its role, never by a number written where it waits.

Example:
    >>> party("can-bus"), parties(agent=True)
    (1, 3)
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class SpinePorts:
    """The shared-memory objects of a ``dmxshm spine`` run, by what they carry (their
    names): ``cmd`` spine -> CAN bus (each cycle's frame), ``reply`` CAN bus -> spine,
    ``records`` the spine's per-cycle records, ``start`` the start gate, and with
    ``--agent`` ``agent_obs`` spine -> agent and ``agent_action`` agent -> spine.
    """

    cmd: str
    reply: str
    records: str
    start: str
    agent_obs: str | None = None
    agent_action: str | None = None

    def agent_rings(self) -> tuple[str, str]:
        """``(agent_obs, agent_action)``.

        Raises:
            ValueError: this run has no agent.
        """
        if self.agent_obs is None or self.agent_action is None:
            raise ValueError("this spine run has no agent: it has no agent rings")
        return self.agent_obs, self.agent_action

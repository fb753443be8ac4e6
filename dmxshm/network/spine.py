"""The network's spine process (realtime ``--spine``), through the roles' skeleton.

Its work is :class:`dmxshm.spine.network_spine.NetworkSpine`: pinned to its
CPU, it runs :class:`~dmxshm.spine.loop.SpineLoop` with the engine as its bus.
As a :class:`~dmxshm.network.role.Role` it attaches, passes the start gate,
calls its taps' ``start``, cycles and closes like every other process of a
network. A stop never interrupts its loop (its handler records it, and the
loop sends its SHUTDOWN stops), so a stop reports what the loop returned.
"""

from __future__ import annotations

from dmxshm.network.plan import Plan
from dmxshm.network.role import Role, run_role
from dmxshm.spine.network_spine import NetworkSpine, NetworkSpineResult


class Spine(Role[NetworkSpineResult]):
    """The network spine (see the module docstring)."""

    kind = "spine"

    def attach(self) -> None:
        self.spine = self.own(NetworkSpine(self.plan))
        self.tap(())

    def loop(self) -> NetworkSpineResult:
        return self.spine.cycle()

    def partial(self, result: NetworkSpineResult | None) -> NetworkSpineResult | None:
        return result  # stopped before its loop ended: nothing measured to report


def run_spine(plan: Plan, index: int = 0) -> NetworkSpineResult:
    """Main function of the network's spine process; returns its report."""
    return run_role(Spine(plan, index))

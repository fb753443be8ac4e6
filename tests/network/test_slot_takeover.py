"""After any garbage left by a departed client, the next client's run gives the same
digest as a clean one: the network writes back its own parts of the slot, gives the
next holder a clean command area and names only a pid that holds the claim
(docs/abi.md, "What the network rewrites")."""

from __future__ import annotations

import signal

import pytest

from dmxshm.network import Network
from tests.network.test_slots import client, finish, gym, run
from tests.slot_clients import LEAVINGS

pytestmark = pytest.mark.timeout(120)
STEPS, LEAVE_AT = 12, 4
"""The run's steps; the steps the departing client drives before it leaves garbage."""
CLIENT_EXIT_S = 30
"""The longest wait for a departing client to die."""


@pytest.fixture(scope="module")
def clean_digest() -> str:
    """The built-in lane follower's run: what an outside one gives (test_slots)."""
    return run(gym(None, agents=1, robots=1, steps=STEPS)).trajectory_digest  # type: ignore[arg-type]


@pytest.mark.parametrize("what", LEAVINGS)
def test_after_any_garbage_the_next_client_gives_a_clean_runs_digest(
        what: str, clean_digest: str, capfd: pytest.CaptureFixture[str]) -> None:
    name = f"slots-leave-{what}"
    with Network(gym(name, agents=0, external_agents=1, robots=1, steps=STEPS,
                     connect_timeout_s=20.0)) as net:
        leaver = client(f"leave-{what}", name, LEAVE_AT)
        assert leaver.stdout is not None
        assert leaver.stdout.readline().startswith("claimed")
        assert leaver.stdout.readline().strip() == "left"
        leaver.communicate(timeout=CLIENT_EXIT_S)  # departed: the kernel dropped its claim
        later = client("lane", name)  # connects after the garbage is there
        summary = net.run()
    assert f"sent {STEPS - LEAVE_AT}" in finish(later)
    assert leaver.returncode == -signal.SIGKILL
    assert summary.trajectory_digest == clean_digest
    (slot,) = summary.slots
    assert len(slot["holders"]) == 2, f"{slot}"
    assert slot["accepted"] == summary.steps == STEPS, f"{slot}"
    first, second = slot["holders"]  # (the message: the whole slot row)
    assert (first["claimed_step"], first["left_step"]) == (0, LEAVE_AT)
    assert second["pid"] == later.pid and second["claimed_step"] == LEAVE_AT
    err = capfd.readouterr().err
    if what == "pid":
        # It named its parent (this process, alive, not holding the claim): never echoed.
        assert first["pid"] is None and first["name"] == "liar"
        assert "slot-0's client (of unknown pid) left at step" in err
        assert all("unknown pid" in v for v in slot["first_rejections"].values())
    else:
        assert first["pid"] == leaver.pid
        assert f"slot-0's client (pid {leaver.pid}) left at step {LEAVE_AT}" in err

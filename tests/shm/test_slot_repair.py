"""What a departed client left in an agent slot does not reach the next one: the
network writes back its own parts, gives a free slot a clean command area, and names
only a pid that holds the claim (docs/abi.md, "What the network rewrites")."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dmxshm.errors import LayoutError
from dmxshm.matrix.obs import obs_dtype
from dmxshm.shm import slot as abi
from dmxshm.shm.registry import Registry
from dmxshm.shm.slot import SlotSegment, SlotTakenError, first_command

pytestmark = pytest.mark.timeout(30)
ROBOTS = (3, 5)


@pytest.fixture
def served() -> Iterator[tuple[SlotSegment, SlotSegment]]:
    """A served slot with one observation published, and a client's open of it."""
    record = obs_dtype(None)
    with Registry() as reg:
        made = SlotSegment.create(reg, 1, "gym", ROBOTS, record, 27.0)
        client = SlotSegment.attach(made.name)
        try:
            made.serve(os.getpid())
            obs = np.zeros(len(ROBOTS), record)
            obs["step"], obs["lane"] = 7, 0.25
            made.publish(7, 0.35, obs)
            made.set_word(abi.O_AWAITING, 7)
            yield made, client
        finally:
            client.close()
            made.close()


def scribble(seg: SlotSegment, start: int, stop: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    seg.buf[start:stop] = rng.integers(0, 256, stop - start, dtype=np.uint8).tobytes()


def test_the_network_writes_back_its_header_line_and_observation(
        served: tuple[SlotSegment, SlotSegment]) -> None:
    made, client = served
    before = bytes(made.buf[:made.layout.cmd])
    seq, _, _, records, _ = client.read_obs(0)  # type: ignore[misc]
    assert made.restore() == ()  # nothing written over: nothing written back
    client.claim(os.getpid(), "scribbler")
    # Everything before the command area but the holder line: the header, the network
    # line, the field table with the robot ids and descr, the observation.
    scribble(client, 0, abi.HOLDER_LINE, 1)
    scribble(client, abi.TABLE, client.layout.cmd, 2)
    with pytest.raises(LayoutError, match="wrote over the header"):
        SlotSegment.attach(made.name)
    assert made.restore() == ("header", "network line", "observation")
    after = bytes(made.buf[:made.layout.cmd])
    holder = slice(abi.HOLDER_LINE, abi.TABLE)
    assert after[holder] != before[holder]  # the client's own line: not the network's
    obs = slice(made.layout.obs, made.layout.reward + made.scores.dtype.itemsize)
    for part in (slice(0, abi.O_OBS_SEQ), slice(abi.O_STATUS, holder.start),
                 slice(holder.stop, made.layout.obs), obs):
        assert after[part] == before[part], part
    # The observation again, whole, under a newer sequence word (readers never take
    # the bytes that were written over for it).
    again = SlotSegment.attach(made.name)
    try:
        got = again.read_obs(seq)
        assert got is not None and got[0] > seq and got[1] == 7
        assert (got[3] == records).all()
        assert again.word(abi.O_AWAITING) == 7 and again.word(abi.O_NET_PID) == os.getpid()
    finally:
        again.close()
    assert made.restore() == ()


def test_a_free_slot_gets_a_clean_command_area_and_holder_line(
        served: tuple[SlotSegment, SlotSegment]) -> None:
    made, client = served
    client.claim(os.getpid(), "leaver")
    client.write_cmd(2**63 - 2, 7, np.ones((2, 2)))  # cmd_seq 2^64 - 2
    scribble(client, client.layout.cmd + 8, client.layout.size, 3)
    assert not made.reset_commands()  # held: the network keeps off the client's part
    assert int(made.cmd_head["seq"][0]) == 2**64 - 2
    client.close()  # departs
    assert not made.commands_clean()
    assert made.reset_commands() and made.commands_clean()
    assert made.word(abi.O_EXAMINED) == 0 and not made.held()
    nxt = SlotSegment.attach(made.name)
    try:
        nxt.claim(os.getpid(), "next")  # byte 1 was let go after the reset
        assert first_command(int(nxt.cmd_head["seq"][0])) == 0
    finally:
        nxt.close()


def test_a_pid_that_does_not_hold_the_claim_is_never_named(
        served: tuple[SlotSegment, SlotSegment]) -> None:
    made, client = served
    assert not made.holds(os.getpid())
    client.claim(os.getpid(), "honest")
    assert made.holds(os.getpid())
    assert not made.holds(os.getppid()) and not made.holds(2**40) and not made.holds(0)
    # The holder writes another live process's pid over its own.
    client.set_word(abi.O_HOLDER_PID, os.getppid())
    other = SlotSegment.attach(made.name)
    try:
        with pytest.raises(SlotTakenError, match="pid cannot be verified") as caught:
            other.claim(os.getpid(), "second")
        assert caught.value.pid == 0 and str(os.getppid()) not in str(caught.value)
    finally:
        other.close()


@given(st.integers(0, 2**64 - 1))
def test_a_client_starts_its_commands_where_the_words_cannot_run_out(seq: int) -> None:
    m = first_command(seq)
    assert 2 * m + 2 <= abi.SEQ_WRAP  # 2^62 commands before the words run out
    if 2 * ((seq + 1) // 2) < abi.SEQ_WRAP:
        assert 2 * m + 1 > seq  # after whatever was there


def test_dmxshm_ps_names_a_holder_only_once_its_pid_is_checked(
        served: tuple[SlotSegment, SlotSegment]) -> None:
    from dmxshm.network.runs import slot_states

    made, client = served
    meta = [{"index": 1, "robots": list(ROBOTS), "segment": made.name}]
    (free,) = slot_states(meta)
    assert not free.held and free.holder is None
    client.claim(os.getpid(), "honest")
    (mine,) = slot_states(meta)
    assert mine.held and mine.holder == os.getpid() and mine.holder_name == "honest"
    client.set_word(abi.O_HOLDER_PID, os.getppid())  # another live process's pid
    (forged,) = slot_states(meta)
    assert forged.held and forged.holder is None  # held, by nobody it may name


def test_a_claim_is_refused_when_the_header_changed_since_it_was_read(
        served: tuple[SlotSegment, SlotSegment]) -> None:
    made, client = served
    original = bytes(made.buf[abi.TABLE:abi.TABLE + 8])
    made.buf[abi.TABLE:abi.TABLE + 8] = bytes(8)  # the field table, as a departed client
    with pytest.raises(LayoutError, match="header changed since it was opened"):
        client.claim(os.getpid(), "late")  # its layout came from the table before
    assert not made.held()  # the lock was let go
    made.buf[abi.TABLE:abi.TABLE + 8] = original  # as the network writes it back
    client.claim(os.getpid(), "late")
    assert made.holds(os.getpid())

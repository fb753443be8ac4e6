"""The agent slot ABI of docs/abi.md is frozen: a change here is a new ABI version."""

from __future__ import annotations

import os

import numpy as np
import pytest

from dmxshm.matrix.obs import obs_dtype
from dmxshm.shm import slot as abi
from dmxshm.shm.registry import Registry
from dmxshm.shm.slot import SlotSegment, SlotTakenError, field_table

pytestmark = pytest.mark.timeout(30)


def test_the_offsets_are_those_of_docs_abi_md() -> None:
    assert abi.ABI_VERSION == 1 and abi.MAGIC == b"DMXSLOT\x01"
    assert abi.HEADER.size == 64 and abi.HEADER.format == "<8sIIIIIIIIIIIId"
    assert (abi.O_OBS_SEQ, abi.O_STATUS, abi.O_ACCEPTED, abi.O_REJECTED, abi.O_NET_PID,
            abi.O_AWAITING, abi.O_EXAMINED, abi.O_UNITS) == (64, 72, 80, 88, 96, 104, 112, 120)
    assert abi.UNITS == {"wheel-speed": 0, "pwm": 1}
    assert (abi.O_HOLDER_PID, abi.O_HOLDER_AT, abi.O_HOLDER_NAME) == (128, 136, 144)
    assert abi.TABLE == 192 and abi.FIELD_ENTRY.size == 32
    assert abi.OBS_HEAD == 64 and abi.CMD_HEAD == 64
    assert abi.LIGHTS == ("front_left", "front_right", "back_left", "back_right")
    assert (abi.LIGHTS_SET, abi.LIGHTS_ONLY, abi.LIGHTS_BYTES) == (1, 2, 64)
    assert (abi.NETWORK_BYTE, abi.CLIENT_BYTE) == (0, 1)
    assert (abi.SERVING, abi.ENDED, abi.FAILED, abi.NOT_AWAITING) == (1, 2, 3, 2**64 - 1)
    assert field_table(obs_dtype(None)) == [
        ("step", 0, 1, "u", 8), ("sim_time_s", 8, 1, "f", 8), ("imu_time_s", 16, 1, "f", 8),
        ("encoders_time_s", 24, 1, "f", 8), ("tof_time_s", 32, 1, "f", 8),
        ("encoders", 40, 2, "i", 8), ("imu", 56, 6, "f", 4), ("tof_m", 80, 1, "f", 4),
        ("lane", 84, 3, "f", 4),
        # Appended in 0.2 (the state vectors' source, dmxshm.sim.obs): within ABI 1 a
        # record gains fields at its end (before the camera); none moves or goes.
        ("motion", 96, 3, "f", 4)]


def test_a_slot_reads_back_as_written_and_claims_exclude_each_other() -> None:
    record = obs_dtype((4, 3))
    with Registry() as reg:
        made = SlotSegment.create(reg, 2, "realtime", (5, 7), record, 25.0)
        a, b = SlotSegment.attach(made.name), SlotSegment.attach(made.name)
        try:
            assert (a.index, a.mode, a.robots, a.record, a.max_wheel_speed) == (
                2, "realtime", (5, 7), record, 25.0)
            made.serve(1234)
            assert a.served() and not a.held()
            obs = np.zeros(2, record)
            obs["camera"] = 9
            obs["step"] = 3
            made.publish(3, 0.1, obs)
            seq, step, sim, got, scores = a.read_obs(0)  # type: ignore[misc]
            assert (seq, step, sim) == (2, 3, 0.1) and (got == obs).all()
            # the reward and flag fields: 0 unless the network scores (--episodes)
            assert scores["reward"].tolist() == [0.0, 0.0]
            assert scores["terminated"].tolist() == scores["truncated"].tolist() == [0, 0]
            assert a.read_obs(seq) is None  # nothing newer
            given = np.zeros((), made.scores.dtype)
            given["reward"], given["terminated"], given["truncated"] = [0.5, -1.0], [0, 1], [1, 0]
            made.publish(4, 0.2, obs, given)
            seq, step, _, _, scores = a.read_obs(seq)  # type: ignore[misc]
            assert step == 4 and scores["reward"].tolist() == [0.5, -1.0]
            assert scores["terminated"].tolist() == [0, 1]
            assert scores["truncated"].tolist() == [1, 0]
            a.claim(os.getpid(), "first")
            assert made.held() and made.holder()[0] == os.getpid()
            with pytest.raises(SlotTakenError, match=f"held by pid {os.getpid()} \\(first\\)"):
                b.claim(99, "second")  # another open of the same process: refused too
            a.write_cmd(0, 3, np.ones((2, 2)))
            assert int(made.cmd_head["seq"][0]) == 2 and made.unexamined()
            a.close()  # the claim goes with the descriptor
            assert not made.held()
            b.claim(99, "second")
        finally:
            for s in (a, b, made):
                if s.fd >= 0:
                    s.close()


def _publisher(name: str, seconds: float) -> None:
    """Publishes observations for ``seconds``, observation q's bytes all q % 251, with a
    pause of ~0.1 ms between two (back to back, a reader of a 115 KB copy would almost
    never find the slot still: a seqlock's reader starves under a writer that never
    stops, and no network publishes that fast)."""
    import time

    seg = SlotSegment.attach(name)
    try:
        seg.serve(0)
        obs = np.zeros(2, seg.record)
        raw = obs.view(np.uint8)
        q, end = 0, time.monotonic() + seconds
        while time.monotonic() < end:
            raw[...] = q % 251
            seg.publish(q, 0.0, obs)
            q += 1
            time.sleep(1e-4)
    finally:
        seg.close()


def test_an_observation_read_while_it_is_overwritten_is_never_torn() -> None:
    """The realtime case: a camera-sized observation rewritten without pause by another
    process while this one reads; every copy read_obs returns is one observation whole."""
    from tests import procs

    record = obs_dtype((160, 120))
    with Registry() as reg:
        made = SlotSegment.create(reg, 0, "realtime", (0, 1), record, 25.0)
        reader = SlotSegment.attach(made.name)
        writer = procs.start(_publisher, made.name, 1.0)
        try:
            seen, torn, last = 0, 0, 0
            while writer.is_alive():
                got = reader.read_obs(last)
                if got is None:
                    continue
                last, step, _, records, _ = got
                data = records.view(np.uint8)
                torn += int(data.min() != data.max() or data[0] != step % 251)
                seen += 1
            assert seen > 10, "the reader never overlapped the writer"
            assert torn == 0
        finally:
            procs.stop(writer)
            reader.close()
            made.close()

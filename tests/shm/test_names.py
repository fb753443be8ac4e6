"""Tests of dmxshm.shm.names: POSIX names and /dev/shm entries."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dmxshm.shm import names
from dmxshm.shm.barrier import Barrier
from dmxshm.shm.clean import scan
from dmxshm.shm.names import (
    MAX_NAME_LEN,
    PREFIX,
    SEM_PREFIX,
    list_entries,
    make_name,
    new_token,
    own_pidns,
    parse_entry,
    token_pidns,
)
from dmxshm.shm.registry import Registry
from dmxshm.shm.ring import Ring
from tests.shm.slots import FIELD_DT

tokens = st.text("0123456789abcdef", min_size=1, max_size=16)
_part = st.text("abcXYZ019_.", min_size=1, max_size=8)
whats = st.lists(_part, min_size=1, max_size=4).map("-".join)
pids = st.integers(min_value=0, max_value=2**22)


@given(token=tokens, what=whats, pid=pids)
def test_segment_name_round_trips(token: str, what: str, pid: int) -> None:
    name = make_name(token, what, pid=pid)
    entry = parse_entry(name[1:], shm_dir="/somewhere")
    assert entry is not None
    assert (entry.kind, entry.name, entry.pid, entry.token, entry.what) == (
        "segment", name, pid, token, what)
    assert entry.path == "/somewhere/" + name[1:]


@given(token=tokens, what=whats, pid=pids)
def test_semaphore_name_round_trips(token: str, what: str, pid: int) -> None:
    name = make_name(token, what, pid=pid)
    entry = parse_entry(SEM_PREFIX + name[1:])
    assert entry is not None
    assert (entry.kind, entry.name, entry.pid, entry.token, entry.what) == (
        "semaphore", name, pid, token, what)
    assert entry.path == f"/dev/shm/{SEM_PREFIX}{name[1:]}"


def test_make_name_defaults_to_this_process() -> None:
    assert make_name("0badcafe", "obs.0") == f"/{PREFIX}-{os.getpid()}-0badcafe-obs.0"


def test_new_token_is_fresh_hex_that_carries_the_pid_namespace() -> None:
    tokens_seen = {new_token() for _ in range(64)}
    assert len(tokens_seen) == 64
    ns = os.stat("/proc/self/ns/pid").st_ino
    assert all(re.fullmatch(rf"[0-9a-f]{{8}}{ns:08x}", t) for t in tokens_seen)
    assert {token_pidns(t) for t in tokens_seen} == {ns} == {own_pidns()}
    make_name(tokens_seen.pop(), "ok")  # a fresh token is always a valid one


@pytest.mark.parametrize("token", ["0badcafe", "ab", "0badcafe0badcafe0"])
def test_a_token_of_another_length_carries_no_namespace(token: str) -> None:
    assert token_pidns(token) is None
    assert parse_entry(f"dmx-12-{token}-obs").pidns is None  # type: ignore[union-attr]


def test_an_entry_reads_the_namespace_from_its_token() -> None:
    entry = parse_entry("sem.dmx-12-0badcafeeffffffc-obs.free")
    assert entry is not None and entry.pidns == 0xEFFFFFFC == 4026531836


def test_without_proc_a_token_is_8_random_hex_digits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(names, "_PIDNS_PATH", "/nonexistent/ns/pid")
    monkeypatch.setattr(names, "_pidns", None)
    token = new_token()
    assert re.fullmatch(r"[0-9a-f]{8}", token) and token_pidns(token) is None


@pytest.mark.parametrize("token", ["", "0BAD", "xyz", "ab-cd", "ab/cd", " ab", "ab\n"])
def test_bad_token_rejected(token: str) -> None:
    with pytest.raises(ValueError, match="token"):
        make_name(token, "obs")


@pytest.mark.parametrize(
    "what", ["", "-obs", "obs-", "a--b", "a/b", "/obs", "a b", "ob*s", "é", "a\0b", "a\nb"]
)
def test_bad_what_rejected(what: str) -> None:
    with pytest.raises(ValueError, match="name part"):
        make_name("ab", what)


def test_trailing_newline_in_what_rejected() -> None:
    with pytest.raises(ValueError):
        make_name("ab", "obs\n")


def test_too_long_name_rejected() -> None:
    fixed = len(make_name("ab", "x", pid=1)) - 1
    assert len(make_name("ab", "x" * (MAX_NAME_LEN - fixed), pid=1)) == MAX_NAME_LEN
    with pytest.raises(ValueError, match="longer"):
        make_name("ab", "x" * (MAX_NAME_LEN - fixed + 1), pid=1)


@pytest.mark.parametrize(
    "filename",
    ["other", "dmx", "dmx-12-ab", "dmx-x-ab-obs", "dmx-12-AB-obs", "dmxx-12-ab-obs",
     "sem.other", "sem.dmx-12-zz-obs", "mp-abc", "psm_1234"],
)
def test_foreign_files_are_not_entries(filename: str) -> None:
    assert parse_entry(filename) is None


def test_list_entries_reads_a_directory(tmp_path: Path) -> None:
    for filename in ("dmx-12-ab-obs.0", "sem.dmx-12-ab-obs.0.free", "other", "sem.other"):
        (tmp_path / filename).touch()
    entries = list_entries(str(tmp_path))
    assert [(e.kind, e.name) for e in entries] == [
        ("segment", "/dmx-12-ab-obs.0"), ("semaphore", "/dmx-12-ab-obs.0.free")]
    assert list_entries(str(tmp_path / "missing")) == []


# -- the contract with outside tools --------------------------------------------
# Written out here, not taken from names.py: tools outside dmxshm parse names
# with this grammar, so a change to it must break this test first.
FROZEN_SEGMENT = re.compile(
    r"dmx-(?P<pid>[0-9]+)-(?P<token>[0-9a-f]+)-(?P<what>[A-Za-z0-9_.]+(?:-[A-Za-z0-9_.]+)*)")
FROZEN_SEMAPHORE_PREFIX = "sem."


def test_the_name_grammar_is_frozen_by_example() -> None:
    assert make_name("0badcafe", "obs.0", pid=1234) == "/dmx-1234-0badcafe-obs.0"
    entry = parse_entry("sem.dmx-1234-0badcafe-obs.0.free", shm_dir="/dev/shm")
    assert entry is not None
    assert (entry.kind, entry.name, entry.path, entry.pid, entry.token, entry.what) == (
        "semaphore", "/dmx-1234-0badcafe-obs.0.free", "/dev/shm/sem.dmx-1234-0badcafe-obs.0.free",
        1234, "0badcafe", "obs.0.free")
    entry = parse_entry("dmx-1-0badcafeeffffffc-state.0-a")
    assert entry is not None
    assert (entry.kind, entry.pid, entry.token, entry.what) == (
        "segment", 1, "0badcafeeffffffc", "state.0-a")


def test_what_dmxshm_creates_follows_the_frozen_grammar(registry: Registry) -> None:
    ring = Ring.create(registry, "obs.0", FIELD_DT, nslots=2)
    bell = Ring.create(registry, "state.0", FIELD_DT, nslots=2, discipline="overwrite")
    barrier = Barrier.create(registry, "start", parties=1)
    plain = registry.create_segment("batch-x.1", 4096)
    try:
        files = sorted(f for f in os.listdir("/dev/shm") if f"-{registry.token}-" in f)
        segments = [f for f in files if not f.startswith(FROZEN_SEMAPHORE_PREFIX)]
        semaphores = [f[len(FROZEN_SEMAPHORE_PREFIX):] for f in files
                      if f.startswith(FROZEN_SEMAPHORE_PREFIX)]
        whats = set()
        for file_part in segments + semaphores:
            m = FROZEN_SEGMENT.fullmatch(file_part)
            assert m is not None, f"{file_part} does not follow dmx-<pid>-<token>-<what>"
            assert (int(m["pid"]), m["token"]) == (os.getpid(), registry.token)
            whats.add(m["what"])
        assert sorted(segments) == sorted(n[1:] for n in
                                          (ring.name, bell.name, barrier.name, plain.name))
        assert whats == {"obs.0", "obs.0.free", "obs.0.filled", "state.0", "state.0.bell",
                         "start", "start.mutex", "start.gate0", "start.gate1", "batch-x.1"}
        # ...and what parses and sweeps them reads them as written.
        parsed = {e.path.rsplit("/", 1)[-1]: e for e in list_entries()
                  if e.token == registry.token}
        assert sorted(parsed) == files
        for f, e in parsed.items():
            assert e.kind == ("semaphore" if f.startswith("sem.") else "segment")
            assert (e.pid, e.token) == (os.getpid(), registry.token)
        swept = {f.entry.name: f for f in scan() if f.entry.token == registry.token}
        assert set(swept) == {e.name for e in parsed.values()}
        assert all(f.creator_alive and not f.other_namespace for f in swept.values())
    finally:
        for obj in (ring, bell, barrier, plain):
            obj.close()

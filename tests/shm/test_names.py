"""Tests of dmxshm.shm.names: POSIX names and /dev/shm entries."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dmxshm.shm.names import (
    MAX_NAME_LEN,
    PREFIX,
    SEM_PREFIX,
    list_entries,
    make_name,
    new_token,
    parse_entry,
)

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


def test_new_token_is_fresh_hex() -> None:
    tokens_seen = {new_token() for _ in range(64)}
    assert len(tokens_seen) == 64
    assert all(re.fullmatch(r"[0-9a-f]{8}", t) for t in tokens_seen)
    make_name(tokens_seen.pop(), "ok")  # a fresh token is always a valid one


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

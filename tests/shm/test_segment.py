"""Tests of dmxshm.shm.segment and dmxshm.shm.registry."""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import numpy as np
import posix_ipc
import pytest

from dmxshm.errors import (
    DmxError,
    DmxTimeoutError,
    SegmentExistsError,
    SegmentMissingError,
    ShmError,
    ShmSpaceError,
)
from dmxshm.shm.names import SHM_DIR, list_entries, make_name, new_token
from dmxshm.shm.registry import Registry
from dmxshm.shm.ring import Ring
from dmxshm.shm.segment import PAGE_SIZE, Segment
from tests import procs
from tests.shm.slots import FIELD_DT

GIB = 2**30
# A fresh interpreter that imports numpy and dmxshm starts well within this.
SUBPROCESS_TIMEOUT_S = 60.0


def shm_path(name: str) -> str:
    return os.path.join(SHM_DIR, name[1:])


def token_entries(token: str) -> list[str]:
    return [e.name for e in list_entries() if e.token == token]


@pytest.fixture
def seg_name() -> Iterator[str]:
    """A fresh name of this process; the test unlinks what it creates."""
    name = make_name(new_token(), "seg")
    yield name
    with contextlib.suppress(posix_ipc.ExistentialError):
        posix_ipc.unlink_shared_memory(name)


def test_create_attach_unlink(seg_name: str) -> None:
    seg = Segment.create(seg_name, 3 * PAGE_SIZE + 1)
    assert seg.owner and seg.size_bytes == 3 * PAGE_SIZE + 1
    assert os.stat(shm_path(seg_name)).st_size == seg.size_bytes
    seg.ndarray(np.uint32, (4,), offset=PAGE_SIZE)[:] = [1, 2, 3, 4]

    other = Segment.attach(seg_name)
    assert not other.owner and other.size_bytes == seg.size_bytes
    view = other.ndarray(np.uint32, (4,), offset=PAGE_SIZE)
    assert view.tolist() == [1, 2, 3, 4]
    view[0] = 9  # same memory, both ways
    assert seg.ndarray(np.uint32, (1,), offset=PAGE_SIZE)[0] == 9
    del view

    other.unlink()  # an attacher only closes: the name stays
    assert os.path.exists(shm_path(seg_name))
    with pytest.raises(ShmError, match="closed"):
        other.buf  # noqa: B018
    seg.unlink()
    assert not os.path.exists(shm_path(seg_name))
    seg.unlink()  # twice is fine
    seg.close()


def test_new_segment_is_zeroed(seg_name: str) -> None:
    with Segment.create(seg_name, 2 * PAGE_SIZE) as seg:
        assert not np.frombuffer(seg.buf, dtype=np.uint8).any()
    assert not os.path.exists(shm_path(seg_name))


def test_mode_is_0600(seg_name: str) -> None:
    old = os.umask(0)  # the mode must not depend on a permissive umask
    try:
        seg = Segment.create(seg_name, PAGE_SIZE)
    finally:
        os.umask(old)
    try:
        st = os.stat(shm_path(seg_name))
        assert stat.S_IMODE(st.st_mode) == 0o600
        assert st.st_uid == os.geteuid()
    finally:
        seg.unlink()


def test_second_create_raises_and_does_not_adopt(seg_name: str) -> None:
    first = Segment.create(seg_name, PAGE_SIZE)
    try:
        first.ndarray(np.uint8, (3,))[:] = [7, 8, 9]
        with pytest.raises(SegmentExistsError, match="already exists") as info:
            Segment.create(seg_name, 4 * PAGE_SIZE)
        assert isinstance(info.value, FileExistsError)
        # Neither resized, nor zeroed, nor unlinked by the failed create.
        assert os.stat(shm_path(seg_name)).st_size == PAGE_SIZE
        again = Segment.attach(seg_name)
        assert again.ndarray(np.uint8, (3,)).tolist() == [7, 8, 9]
        again.close()
    finally:
        first.unlink()


def test_attach_missing_mentions_remove_ipc(seg_name: str) -> None:
    with pytest.raises(SegmentMissingError, match="RemoveIPC") as info:
        Segment.attach(seg_name)
    assert isinstance(info.value, FileNotFoundError)
    assert seg_name in str(info.value)


def test_attach_unfinished_segment(seg_name: str) -> None:
    # A creator that has not sized its segment yet: size 0.
    raw = posix_ipc.SharedMemory(seg_name, posix_ipc.O_CREX, mode=0o600, size=0)
    raw.close_fd()
    with pytest.raises(ShmError, match="size 0"):
        Segment.attach(seg_name)


def test_too_large_reports_sizes(seg_name: str) -> None:
    asked = shutil.disk_usage(SHM_DIR).free + GIB
    with pytest.raises(ShmSpaceError) as info:
        Segment.create(seg_name, asked)
    err = info.value
    assert isinstance(err, MemoryError) and isinstance(err, DmxError)
    assert err.size_bytes == asked
    assert 0 <= err.free_bytes < asked
    assert str(asked) in str(err) and str(err.free_bytes) in str(err)
    assert not os.path.exists(shm_path(seg_name))


@pytest.mark.parametrize("size", [0, -1])
def test_non_positive_size_rejected(seg_name: str, size: int) -> None:
    with pytest.raises(ValueError, match="positive"):
        Segment.create(seg_name, size)
    assert not os.path.exists(shm_path(seg_name))


def mapped_here(name: str) -> bool:
    """Whether this process still maps the segment (per /proc/self/maps)."""
    with open("/proc/self/maps") as maps:
        return any(line.rstrip().endswith(shm_path(name)) for line in maps)


def test_close_unmaps_without_views(seg_name: str) -> None:
    seg = Segment.create(seg_name, PAGE_SIZE)
    try:
        assert mapped_here(seg_name)
        seg.close()
        seg.close()  # twice is fine
        assert not mapped_here(seg_name)
    finally:
        seg.unlink()


def test_close_with_live_views_keeps_mapping(seg_name: str) -> None:
    seg = Segment.create(seg_name, PAGE_SIZE)
    try:
        view = seg.ndarray(np.uint8, (2,))
        seg.close()
        # Looked up in /proc instead of touching the view, which would crash pytest.
        assert mapped_here(seg_name), "the view now points at unmapped memory"
        view[:] = [5, 6]
        assert view.tolist() == [5, 6]
    finally:
        seg.unlink()


def test_repr_names_the_segment(seg_name: str) -> None:
    with Segment.create(seg_name, PAGE_SIZE) as seg:
        assert repr(seg) == f"Segment({seg_name!r}, size_bytes={PAGE_SIZE}, owner=True)"


# -- registry -----------------------------------------------------------------

def test_registry_names_carry_token_and_pid() -> None:
    with Registry("0badcafe") as reg:
        assert reg.name("obs.0") == f"/dmx-{os.getpid()}-0badcafe-obs.0"
        seg = reg.create_segment("obs.0", PAGE_SIZE)
        assert seg.name == reg.name("obs.0") and reg.names == [seg.name]


def test_registry_semaphore_exists_raises(registry: Registry) -> None:
    name = registry.name("sem")
    registry.create_semaphore(name, 3).close()
    with pytest.raises(SegmentExistsError, match="never adopts"):
        registry.create_semaphore(name)
    sem = posix_ipc.Semaphore(name)
    assert sem.value == 3  # not reset by the failed create
    sem.close()


def test_unlink_all_removes_everything() -> None:
    reg = Registry()
    seg = reg.create_segment("plain", PAGE_SIZE)
    ring = Ring.create(reg, "ring", FIELD_DT, nslots=2)
    sem = reg.create_semaphore(reg.name("sem"))
    expected = {seg.name, ring.name, f"{ring.name}.free", f"{ring.name}.filled", reg.name("sem")}
    assert set(token_entries(reg.token)) == expected
    assert set(reg.unlink_all()) == expected
    assert token_entries(reg.token) == []
    assert reg.names == [] and reg.unlink_all() == []
    sem.close()
    ring.close()
    seg.close()


def test_unlink_all_tolerates_already_removed() -> None:
    with Registry() as reg:
        seg = reg.create_segment("gone", PAGE_SIZE)
        seg.unlink()  # the creator unlinked it itself
        assert reg.unlink_all() == []


def test_registry_finalizer_unlinks_on_gc() -> None:
    reg = Registry()
    token = reg.token
    seg = reg.create_segment("gc", PAGE_SIZE)
    reg.create_semaphore(reg.name("gc.sem")).close()
    assert len(token_entries(token)) == 2
    del reg
    gc.collect()
    assert token_entries(token) == []
    seg.close()


def test_forked_child_does_not_unlink_parents_objects(registry: Registry) -> None:
    registry.create_segment("fork", PAGE_SIZE).close()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what unlink_all removed, then vanish
        try:
            os.write(write_fd, repr(registry.unlink_all()).encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        removed = pipe.read()
    os.waitpid(pid, 0)
    assert removed == "[]"
    assert token_entries(registry.token) == [registry.name("fork")]


def test_registry_unlinks_at_interpreter_exit() -> None:
    token = new_token()
    code = textwrap.dedent(f"""
        from dmxshm.shm.registry import Registry
        from dmxshm.shm.ring import Ring
        from tests.shm.slots import FIELD_DT
        reg = Registry({token!r})
        ring = Ring.create(reg, "exit", FIELD_DT, nslots=2)
        print(len(reg.names))
    """)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False,
        timeout=SUBPROCESS_TIMEOUT_S, cwd=os.path.dirname(os.path.dirname(procs.__file__)),
    )
    try:
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "3"  # it did create the segment and two semaphores
        assert token_entries(token) == []
    finally:
        for entry in list_entries():
            if entry.token == token:
                (posix_ipc.unlink_semaphore if entry.kind == "semaphore"
                 else posix_ipc.unlink_shared_memory)(entry.name)


def test_the_segment_lock_excludes_a_second_holder(registry: Registry) -> None:
    seg = registry.create_segment("lock", PAGE_SIZE)
    other = Segment.attach(seg.name)  # another handle: the lock is not per handle
    try:
        expected = f"could not lock segment {seg.name} to test the lock within 0.0 s"
        with (seg.locked(1.0, "to test the lock"),
              pytest.raises(DmxTimeoutError, match=expected),
              other.locked(0.0, "to test the lock")):
            pass
        with other.locked(0.0, "to test the lock"):  # free again once the holder let go
            pass
    finally:
        other.close()
        seg.close()


def test_locking_a_removed_segment_says_so(registry: Registry) -> None:
    seg = registry.create_segment("lockgone", PAGE_SIZE)
    seg.unlink()
    with (pytest.raises(SegmentMissingError, match="does not exist"),
          seg.locked(1.0, "to test the lock")):
        pass

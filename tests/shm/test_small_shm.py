"""A /dev/shm too small for the request: a clear error, never a SIGBUS.

Docker gives containers a 64 MB /dev/shm where ftruncate succeeds and the
first touch of a page beyond the limit kills the process with SIGBUS
(moby#2606). These tests run a child in its own mount namespace with a 1 MiB
tmpfs over /dev/shm (needs root and unshare(1); skipped otherwise), so the
real /dev/shm is never filled.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

CHILD_TIMEOUT_S = 60

SCRIPT = textwrap.dedent("""
    import os
    from dmxshm.errors import ShmSpaceError
    from dmxshm.shm import Registry, segment

    reg = Registry()
    kept = reg.create_segment("fits", 600 * 1024)
    # 1. The free-space check refuses a request larger than what is free.
    try:
        reg.create_segment("too-big", 4 * 2**20)
    except ShmSpaceError as exc:
        assert exc.size_bytes == 4 * 2**20 and exc.free_bytes < 2**20, exc
        assert str(exc.size_bytes) in str(exc) and str(exc.free_bytes) in str(exc)
        print("check:", exc)
    # 2. Space vanishes between the check and the sizing (another process took
    #    it): posix_fallocate reports ENOSPC instead of a later SIGBUS.
    segment.shm_free_bytes = lambda shm_dir=None: 2**40
    try:
        reg.create_segment("raced", 600 * 1024)
    except ShmSpaceError as exc:
        print("fallocate:", exc)
    left = sorted(os.listdir("/dev/shm"))
    assert left == [kept.name[1:]], left  # the failed ones were unlinked
    kept.close()
    reg.unlink_all()
    assert os.listdir("/dev/shm") == []
    print("clean")
""")


def _can_unshare() -> bool:
    return (os.geteuid() == 0 and shutil.which("unshare") is not None
            and subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0)


@pytest.mark.skipif(not _can_unshare(), reason="needs root and unshare -m (mount namespace)")
@pytest.mark.timeout(CHILD_TIMEOUT_S + 10)
def test_too_small_dev_shm_is_a_clear_error() -> None:
    shell = f"mount -t tmpfs -o size=1m tmpfs /dev/shm && exec {sys.executable} -c \"$0\""
    out = subprocess.run(["unshare", "-m", "sh", "-c", shell, SCRIPT], capture_output=True,
                         text=True, timeout=CHILD_TIMEOUT_S, cwd=os.getcwd())
    assert out.returncode == 0, out.stdout + out.stderr  # a SIGBUS would be -7
    assert "check: cannot create shared-memory segment" in out.stdout
    assert "fallocate: cannot create shared-memory segment" in out.stdout
    assert "clean" in out.stdout


@pytest.mark.skipif(not _can_unshare(), reason="needs root and unshare -m (mount namespace)")
@pytest.mark.timeout(CHILD_TIMEOUT_S + 10)
def test_a_run_on_a_full_dev_shm_is_refused_before_anything_starts() -> None:
    # 64 KiB: less than a 2-robot run's rings. Refused (exit 2), like a bad option.
    shell = (f"mount -t tmpfs -o size=64k tmpfs /dev/shm && exec {sys.executable} -m dmxshm.cli "
             "run --steps 5 --camera 32x24")
    out = subprocess.run(["unshare", "-m", "sh", "-c", shell], capture_output=True,
                         text=True, timeout=CHILD_TIMEOUT_S, cwd=os.getcwd())
    assert out.returncode == 2, out.stdout + out.stderr
    assert "cannot create shared-memory segment" in out.stderr
    assert "Traceback" not in out.stderr

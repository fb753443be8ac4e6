"""``dmxshm clean``: what dead runs left is removed, what live ones use is kept."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from dmxshm.cli import cli
from dmxshm.shm.clean import sweep
from dmxshm.shm.names import list_entries
from dmxshm.shm.registry import Registry
from tests.cli.common import CLI_TIMEOUT_S
from tests.procs import JOIN_TIMEOUT_S

pytestmark = pytest.mark.timeout(CLI_TIMEOUT_S)


def _orphan_segment() -> str:
    """Create a segment named after a dead pid, as a SIGKILLed run leaves it."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(JOIN_TIMEOUT_S)
    name = f"/dmx-{child.pid}-0badcafe-orphan"
    fd = os.open(f"/dev/shm{name}", os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    os.ftruncate(fd, 4096)
    os.close(fd)
    return name


@pytest.mark.alone  # its orphan must stay until its clean: no other network's sweep
def test_clean_removes_orphans_and_keeps_live_objects(registry: Registry) -> None:
    orphan = _orphan_segment()
    live = registry.create_segment("live", 4096)
    runner = CliRunner()
    dry = runner.invoke(cli, ["clean", "--dry-run"])
    assert dry.exit_code == 0
    assert orphan in dry.output and "would remove" in dry.output
    assert orphan in {e.name for e in list_entries()}
    done = runner.invoke(cli, ["clean"])
    assert done.exit_code == 0
    names = {e.name for e in list_entries()}
    assert orphan not in names
    assert live.name in names
    live.close()


def test_clean_takes_its_destructive_flags_only_when_typed(registry: Registry,
                                                           monkeypatch) -> None:  # noqa: ANN001
    # An exported DMXSHM_CLEAN_REMOVE_ALL must not reach the objects of live runs (a dry
    # run here: with --all honoured, the live segment would be listed for removal).
    monkeypatch.setenv("DMXSHM_CLEAN_REMOVE_ALL", "1")
    live = registry.create_segment("live", 4096)
    runner = CliRunner()
    kept = runner.invoke(cli, ["clean", "--dry-run"], auto_envvar_prefix="DMXSHM")
    assert kept.exit_code == 0 and live.name not in kept.output
    typed = runner.invoke(cli, ["clean", "--dry-run", "--all"])
    assert typed.exit_code == 0 and live.name in typed.output
    assert live.name in {e.name for e in list_entries()}
    live.close()


def test_sweep_all_removes_live_objects_too(tmp_path) -> None:  # noqa: ANN001
    # In a private directory: `dmxshm clean --all` on the real /dev/shm would
    # also remove the objects of anything else running on this machine.
    live = tmp_path / f"dmx-{os.getpid()}-0badcafe-live"
    sem = tmp_path / f"sem.dmx-{os.getpid()}-0badcafe-live.free"
    other = tmp_path / "not-ours"
    for f in (live, sem, other):
        f.write_bytes(b"x")
    assert sweep(shm_dir=str(tmp_path)) == []  # creator alive: kept by default
    removed = sweep(remove_live=True, shm_dir=str(tmp_path))
    assert {f.entry.kind for f in removed} == {"segment", "semaphore"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-ours"]


def test_sweep_treats_an_object_older_than_its_pid_as_orphaned(tmp_path) -> None:  # noqa: ANN001
    # Our pid is alive, but this object was last changed long before we
    # started: its real creator is gone and the pid was reused.
    old = tmp_path / f"dmx-{os.getpid()}-0badcafe-old"
    old.write_bytes(b"x")
    os.utime(old, (0, 0))
    assert [f.entry.name for f in sweep(shm_dir=str(tmp_path))] == [f"/{old.name}"]
    assert not old.exists()

"""``dmxshm ps`` lists the running networks; ``--name`` names one, once."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from dmxshm.cli import EXIT_USAGE, cli
from dmxshm.network import ConfigError, Network, NetworkConfig
from dmxshm.network.runs import NameTakenError, live_runs
from dmxshm.shm.names import list_entries

pytestmark = pytest.mark.timeout(60)


def test_a_started_network_is_listed_by_name_and_its_name_is_taken() -> None:
    cfg = NetworkConfig(mode="realtime", robots=2, agents=2, duration_s=30, camera=(0, 0),
                        name="ps-test-net", wait_timeout_s=5.0)
    with Network(cfg):  # started on entry
        runs = [r for r in live_runs() if r.pid == os.getpid()]
        assert [(r.name, r.mode, r.robots, r.agents) for r in runs] == [
            ("ps-test-net", "realtime", 2, 2)]
        r = CliRunner().invoke(cli, ["ps"])
        assert r.exit_code == 0 and "ps-test-net" in r.output and str(os.getpid()) in r.output
        rows = json.loads(CliRunner().invoke(cli, ["ps", "--json"]).output)
        assert any(row["name"] == "ps-test-net" and row["pid"] == os.getpid() for row in rows)
    # Gone with its run.
    assert not [r for r in live_runs() if r.pid == os.getpid()]
    assert not [e for e in list_entries() if e.pid == os.getpid()]


def test_ps_json_shows_the_views_url_with_its_token_to_its_owner_only() -> None:
    # Issue 42: the view's URL carries the run's token; ps reads it from the run's
    # view.meta segment, which only its owner can open (0600).
    pytest.importorskip("aiohttp", reason="the view extra (pip install 'dmxshm[view]')")
    import socket
    import stat

    from dmxshm import settings
    from dmxshm.view import launch
    from dmxshm.view import rings as vr

    with socket.socket() as s:
        s.bind((settings.LOCAL_HOST, 0))
        port = s.getsockname()[1]
    cfg = NetworkConfig(mode="realtime", robots=1, duration_s=30, camera=(0, 0),
                        wait_timeout_s=5.0)
    with launch.view_process(os.getpid(), settings.LOCAL_HOST, port, False,
                             follow=False) as url, Network(cfg, announce={"view": url}):
        base, sep, token = url.partition("?token=")
        assert base == f"http://{settings.LOCAL_HOST}:{port}/" and sep and len(token) >= 32
        rows = json.loads(CliRunner().invoke(cli, ["ps", "--json"]).output)
        assert [row["view"] for row in rows if row["pid"] == os.getpid()] == [url]
        metas = [e for e in list_entries() if e.pid == os.getpid() and e.what == vr.META]
        assert len(metas) == 1
        st = os.stat(metas[0].path)
        assert st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o600


def test_a_name_in_use_is_refused_before_anything_starts(tmp_path) -> None:
    cfg = NetworkConfig(mode="realtime", robots=1, duration_s=30, camera=(0, 0),
                        name="ps-taken", wait_timeout_s=5.0)
    with Network(cfg):  # started on entry
        runs = [r for r in live_runs() if r.name == "ps-taken"]
        assert len(runs) == 1
        # Another process asks for the same name: refused with the holder's pid, exit 2.
        proc = subprocess.Popen([sys.executable, "-m", "dmxshm.cli", "run", "--name",
                                 "ps-taken", "--steps", "5", "--camera", "0x0"],
                                stderr=subprocess.PIPE, text=True, cwd=str(tmp_path))
        _, err = proc.communicate(timeout=50)
        assert proc.returncode == EXIT_USAGE, err
        assert f"pid {os.getpid()}" in err and "ps-taken" in err
        assert not [e for e in list_entries() if e.pid == proc.pid]  # it made nothing
        # And from Python, in this very process.
        with pytest.raises(NameTakenError) as caught:
            NetworkConfig(robots=1, steps=5, camera=(0, 0), name="ps-taken").preflight()
        assert caught.value.pid == os.getpid()


@pytest.mark.parametrize("name", ["", "-lead", "a b", "x" * 65, "semi;colon", "abc\n"])
def test_a_bad_name_is_a_config_error(name: str) -> None:
    with pytest.raises(ConfigError, match="name must be"):
        NetworkConfig(name=name)
    r = CliRunner().invoke(cli, ["run", "--name", name, "--steps", "3"])
    assert r.exit_code == EXIT_USAGE and "name must be" in r.output


def test_two_runs_started_at_once_under_one_name_do_not_both_run(tmp_path) -> None:
    """The name is checked and claimed under one lock: one run starts, the other is
    refused (exit 2) naming it, however close together they start."""
    cmd = [sys.executable, "-m", "dmxshm.cli", "run", "--name", "ps-race", "--robots", "1",
           "--steps", "400", "--camera", "0x0"]
    runs = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True, cwd=str(tmp_path)) for _ in range(3)]
    ends = []
    for p in runs:
        _, err = p.communicate(timeout=50)
        ends.append((p.returncode, err))
    codes = sorted(code for code, _ in ends)
    assert codes.count(0) >= 1 and set(codes) <= {0, EXIT_USAGE}, ends
    # Those refused name the one that held the name.
    assert all("ps-race" in err and "is running" in err for code, err in ends if code)
    for p in runs:
        assert not [e for e in list_entries() if e.pid == p.pid]

"""Outside agents: programs the network did not start take its agent slots."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import dmxshm
from dmxshm.cli import EXIT_USAGE, cli
from dmxshm.network import Network, NetworkConfig, NetworkError
from dmxshm.network.client import NoNetworkError, ProtocolError, SlotTakenError
from dmxshm.network.runs import live_runs
from dmxshm.shm.clean import sweep
from dmxshm.shm.names import list_entries
from tests import procs
from tests.networks import run

pytestmark = pytest.mark.timeout(120)
CLIENTS = str(Path(__file__).parents[1] / "slot_clients.py")


def client(kind: str, name: str, arg: int = 0) -> subprocess.Popen[str]:
    """An outside agent program (tests/slot_clients.py)."""
    proc = subprocess.Popen([sys.executable, CLIENTS, kind, name, str(arg)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    procs.started_pids.add(proc.pid)
    return proc


def finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode in (0, -signal.SIGKILL), err
    return out


def gym(name: str, **kw: object) -> NetworkConfig:
    base: dict[str, object] = dict(mode="gym", robots=3, steps=40, camera=(0, 0), name=name,
                                   wait_timeout_s=20.0, connect_timeout_s=30.0)
    return NetworkConfig(**{**base, **kw})  # type: ignore[arg-type]


def test_an_external_agent_gives_the_digest_of_the_same_policy_built_in() -> None:
    built_in = run(gym(None, agents=2))  # type: ignore[arg-type]
    # Mixed: agent-0 built in, slot-0 outside, the same split of robots.
    c = client("lane", "slots-mixed")
    mixed = run(gym("slots-mixed", agents=1, external_agents=1))
    assert f"sent {40}" in finish(c)
    assert mixed.trajectory_digest == built_in.trajectory_digest
    assert mixed.digests == built_in.digests
    (slot,) = mixed.slots
    assert slot["robots"] == [2] and slot["accepted"] == 40 and slot["rejected"] == 0
    assert [h["pid"] for h in slot["holders"]] == [c.pid]


def test_two_outside_agents_drive_a_gym_run_with_the_built_in_digest() -> None:
    built_in = run(gym(None, agents=2, steps=20))  # type: ignore[arg-type]
    a, b = client("lane", "slots-two"), client("lane", "slots-two")
    outside = run(gym("slots-two", agents=0, external_agents=2, steps=20))
    finish(a), finish(b)
    assert outside.trajectory_digest == built_in.trajectory_digest
    assert sorted(h["pid"] for s in outside.slots for h in s["holders"]) == sorted(
        [a.pid, b.pid])


def test_a_realtime_outside_agent_drives_and_an_unclaimed_slot_stands_still() -> None:
    cfg = NetworkConfig(mode="realtime", robots=3, agents=1, external_agents=2,
                        duration_s=3.0, camera=(0, 0), name="slots-rt")
    c = client("lane", "slots-rt")
    summary = run(cfg)
    finish(c)
    held, free = summary.slots
    assert held["accepted"] > 50 and held["holders"][0]["pid"] == c.pid
    assert not free["holders"]
    distance = summary.lane["distance_m"]
    assert distance[0] > 0.1 and distance[1] > 0.1  # agent-0, slot-0
    assert distance[2] < 1e-3  # slot-1: nobody came, its robot stood still
    latency = summary.command_latency or {}
    assert {"agent-0", "slot-0"} <= set(latency)
    assert 0 < latency["slot-0"]["p50_s"] <= latency["slot-0"]["p99_s"] < 1.0


def test_a_second_claim_is_refused_naming_the_holder_and_ps_lists_it() -> None:
    with Network(gym("slots-claim", agents=0, external_agents=1, robots=1)):
        with dmxshm.connect("slots-claim") as first:
            assert first.robots == (0,) and first.mode == "gym"
            with pytest.raises(SlotTakenError, match=f"pid {os.getpid()}") as caught:
                dmxshm.connect("slots-claim")
            assert caught.value.pid == os.getpid()
            (info,) = [r for r in live_runs() if r.name == "slots-claim"]
            assert [(s.index, s.holder) for s in info.slots] == [(0, os.getpid())]
            r = CliRunner().invoke(cli, ["ps"])
            assert f"held by pid {os.getpid()}" in r.output and "0/1 free" in r.output
            # Out of turn in gym mode.
            with pytest.raises(ProtocolError, match="observe"):
                first.act(np.zeros((1, 2)))
            obs = first.observe(timeout_s=20)
            assert obs.shape == (1,) and int(obs["step"][0]) == 0
            with pytest.raises(ProtocolError, match="act"):
                first.observe()
            with pytest.raises(ValueError, match=r"\(1, 2\)"):
                first.act(np.zeros(5))
            first.act(np.zeros((1, 2)))
            with pytest.raises(ProtocolError, match="answered"):
                first.act(np.zeros((1, 2)))
        # Closed: the slot is free again, and another client takes it.
        with dmxshm.connect("slots-claim") as second:
            assert int(second.observe(timeout_s=20)["step"][0]) == 1
    with pytest.raises(NoNetworkError, match="slots-claim"):
        dmxshm.connect("slots-claim")


def test_a_sigkilled_client_frees_its_slot_is_named_and_another_takes_over() -> None:
    with Network(gym("slots-kill", agents=0, external_agents=1, robots=2, steps=30)) as net:
        dying = client("die", "slots-kill", 5)
        assert dying.stdout is not None and dying.stdout.readline().startswith("claimed")
        later = client("lane", "slots-kill")  # waits for the slot (connect's timeout_s)
        summary = net.run()
    finish(dying), finish(later)
    assert dying.returncode == -signal.SIGKILL
    first, second = summary.slots[0]["holders"]
    assert first["pid"] == dying.pid and first["left_step"] == 5
    assert second["pid"] == later.pid and second["left_at"] is None
    assert summary.steps == 30


def test_a_network_killed_under_a_client_raises_within_two_seconds(tmp_path: Path) -> None:
    net = subprocess.Popen([sys.executable, "-m", "dmxshm.cli", "run", "--robots", "1",
                            "--external-agents", "1", "--camera", "0x0", "--steps", "100000",
                            "--name", "slots-dies"], stderr=subprocess.DEVNULL,
                           start_new_session=True, cwd=str(tmp_path))
    procs.started_pids.add(net.pid)
    try:
        with dmxshm.connect("slots-dies", timeout_s=30) as agent:
            for _ in range(3):
                agent.observe(timeout_s=20)
                agent.act(np.zeros((1, 2)))
            os.killpg(net.pid, signal.SIGKILL)  # every process of the run, no clean-up
            t0 = time.monotonic()
            with pytest.raises(dmxshm.NetworkEnded, match="died"):
                # The network may have published the next observation before the kill
                # landed: that one is still read, and the call after it finds it dead.
                for _ in range(2):
                    agent.observe()
                    agent.act(np.zeros((1, 2)))
            assert time.monotonic() - t0 < 2.0
            with pytest.raises(dmxshm.NetworkEnded):
                agent.act(np.zeros((1, 2)))
    finally:
        if net.poll() is None:
            os.killpg(net.pid, signal.SIGKILL)
        net.wait(10)
        sweep()  # what the killed run left (its creator is dead)
    assert not [e for e in list_entries() if e.pid == net.pid]


@pytest.mark.parametrize("mode", ["gym", "realtime"])
def test_garbage_from_a_live_client_is_rejected_and_counted(mode: str) -> None:
    c = client("garbage", f"slots-junk-{mode}", 400)
    cfg = (gym(f"slots-junk-{mode}", agents=0, external_agents=1, robots=2, steps=20)
           if mode == "gym" else
           NetworkConfig(mode="realtime", robots=2, agents=0, external_agents=1,
                         duration_s=6.0, camera=(0, 0), name=f"slots-junk-{mode}"))
    # realtime runs for its duration whoever comes: the client's start-up (a fresh
    # interpreter, on a loaded machine) must not eat into it (once, in CI, it seemingly
    # took the whole 4 s: nothing was examined)
    assert c.stderr is not None and c.stderr.readline().strip() == "ready"
    summary = run(cfg)
    finish(c)
    (slot,) = summary.slots
    # every malformed command examined: 300 by kind (the message: the whole slot row)
    assert slot["rejected"] >= 300, f"{slot}"
    assert {"step", "reset"} <= set(slot["rejections"]), slot["rejections"]
    assert all(slot["first_rejections"][k].startswith(f"from pid {c.pid}")
               for k in slot["rejections"])
    if mode == "gym":
        assert summary.steps == 20 and slot["accepted"] == 20


REJECTED_EACH = 3
"""Commands of each malformed kind the ``reasons`` client sends."""
WHAT_EACH_SAYS = {"step": "answers step", "sequence": "sequence word went back",
                  "reset": "asks for a reset (2)", "time": "not a finite number",
                  "flags": "flags are 4"}


def test_each_rejection_reason_is_counted_exactly_and_named() -> None:
    """docs/abi.md's table of what the network rejects, one reason at a time: each
    command is malformed in that one way only and answers the step awaited, so that
    without its check the network would take it (and the step would move on)."""
    from tests.slot_clients import REASONS

    assert set(WHAT_EACH_SAYS) == set(REASONS)
    c = client("reasons", "slots-reasons", REJECTED_EACH)
    summary = run(gym("slots-reasons", agents=0, external_agents=1, robots=1, steps=6))
    finish(c)
    (slot,) = summary.slots
    assert slot["rejections"] == {r: REJECTED_EACH for r in REASONS}, f"{slot}"
    assert slot["rejected"] == len(REASONS) * REJECTED_EACH
    assert slot["accepted"] == summary.steps == 6
    for reason, says in WHAT_EACH_SAYS.items():
        first = slot["first_rejections"][reason]
        assert first.startswith(f"from pid {c.pid}: ") and says in first, (reason, first)


def test_an_unclaimed_gym_slot_fails_the_run_naming_it(tmp_path: Path) -> None:
    with pytest.raises(NetworkError, match=r"slot-0 \(robots 0\): nobody claimed it within 1 s"):
        run(gym("slots-nobody", agents=0, external_agents=1, robots=1, connect_timeout_s=1.0))
    r = subprocess.run([sys.executable, "-m", "dmxshm.cli", "run", "--external-agents", "1",
                        "--robots", "1", "--camera", "0x0", "--connect-timeout", "1"],
                       capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    assert r.returncode == 1 and "nobody claimed it" in r.stderr
    assert "dmxshm.connect()" in r.stderr  # it said how to connect


@pytest.mark.parametrize("args, message", [
    (["--external-agents", "0"], "1 or more"),
    (["--external-agents", "-2"], "1 or more"),
    (["--robots", "2", "--agents", "2", "--external-agents", "1"], "3 agents for 2 robots"),
    (["--robots", "2", "--external-agents", "3"], "3 agents for 2 robots"),
    (["--external-agents", "1", "--connect-timeout", "0"], "--connect-timeout"),
    (["--mode", "realtime", "--external-agents", "1", "--connect-timeout", "5"], "gym mode"),
])
def test_bad_slot_options_are_refused_before_start(args: list[str], message: str) -> None:
    before = {e.name for e in list_entries()}
    r = CliRunner().invoke(cli, ["run", *args])
    assert r.exit_code == EXIT_USAGE, r.output
    assert message in r.output
    assert {e.name for e in list_entries()} == before


def test_connect_names_what_runs_when_nothing_matches() -> None:
    with pytest.raises(NoNetworkError, match="no running network of yours is named"):
        dmxshm.connect("slots-none-such")
    with Network(gym("slots-robots", agents=0, external_agents=1, robots=2)), \
            pytest.raises(NoNetworkError, match=r"no slot of robots \[5\]"):
        dmxshm.connect("slots-robots", robots=[5])


def test_the_c_example_drives_a_robot_as_the_built_in_lane_follower(tmp_path: Path) -> None:
    """examples/c/dmx_agent.c, built with the system's compiler, takes the slot through
    the ABI alone; its lane follower is the built-in one's arithmetic, so the run's
    full digest is the built-in run's."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler on this machine (cc, gcc or clang)")
    exe = tmp_path / "dmx_agent"
    source = Path(__file__).parents[2] / "examples" / "c" / "dmx_agent.c"
    # No fused multiply-adds: the same arithmetic as numpy's, to the last bit.
    subprocess.run([cc, "-O2", "-ffp-contract=off", "-o", str(exe), str(source), "-lpthread",
                    "-lm"], check=True, capture_output=True, timeout=60)
    built_in = run(gym(None, agents=1, robots=2, steps=30))  # type: ignore[arg-type]
    with Network(gym("slots-c", agents=0, external_agents=1, robots=2, steps=30)) as net:
        (info,) = [r for r in live_runs() if r.name == "slots-c"]
        agent = subprocess.Popen([str(exe), info.slots[0].segment], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        procs.started_pids.add(agent.pid)
        summary = net.run()
    out, err = agent.communicate(timeout=30)
    assert agent.returncode == 0, err
    assert "sent 30" in out
    (slot,) = summary.slots
    assert slot["holders"][0]["name"] == "c-example" and slot["accepted"] == 30
    assert summary.lane["distance_m"][0] > 0.1
    assert summary.trajectory_digest == built_in.trajectory_digest

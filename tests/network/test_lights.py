"""An outside agent's LEDs reach the live view's feed and the log (realtime)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dmxshm
from dmxshm.logs import messages
from dmxshm.view.server import RunReader, find_run
from tests import procs

pytestmark = pytest.mark.timeout(120)
GREEN_FRONT = [[0, 1, 0, 1], [0, 1, 0, 1], [1, 0, 1, 0.5], [1, 0, 1, 0.5]]


def test_lights_set_by_a_client_are_in_the_view_and_the_log(tmp_path: Path) -> None:
    log = tmp_path / "run.mcap"
    net = subprocess.Popen([sys.executable, "-m", "dmxshm.cli", "run", "--mode", "realtime",
                            "--robots", "2", "--agents", "1", "--external-agents", "1",
                            "--camera", "0x0", "--duration", "60", "--name", "lights-run",
                            "--log", str(log), "--json", str(tmp_path / "run.json")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    procs.started_pids.add(net.pid)
    try:
        with dmxshm.connect("lights-run", timeout_s=30) as agent:
            assert agent.robots == (1,)
            agent.observe(timeout_s=20)
            agent.act(np.zeros((1, 2)), lights=np.zeros((1, 4, 4)))  # with a command
            agent.set_lights([GREEN_FRONT])  # alone: the wheels' command holds
            reader = None
            for _ in range(100):  # the engine shows them with its next pose (30 a second)
                agent.observe(timeout_s=20)
                reader = reader or RunReader(str(find_run(net.pid)))
                lights = reader.snapshot()["lights"]
                if lights[1] is not None:
                    break
            assert lights[0] is None  # robot 0's built-in agent sets none
            assert lights[1] == GREEN_FRONT
            with pytest.raises(ValueError, match=r"\(1, 4, 4\)"):
                agent.set_lights(np.zeros((4, 4, 1)))
    finally:
        # Seen, the run is stopped (Ctrl-C): not a window of wall-clock time that a
        # loaded machine could close before the client got there.
        net.send_signal(signal.SIGINT)
        _, err = net.communicate(timeout=60)
    assert net.returncode == 130, err
    summary = json.loads((tmp_path / "run.json").read_text())
    assert summary["interrupted"] and summary["rejected_commands"] == [0, 0]
    # Realtime: the newest wins (a command the slot has not looked at yet is replaced;
    # a record the engine skips is folded into the next), so the dark pattern may never
    # have been shown; the green one always is.
    got = [json.loads(m.data) for topic, _, m in messages(str(log), ["/robot01/lights"])]
    assert len(got) <= summary["slots"][0]["light_patterns"] in (1, 2) and got
    assert got[-1]["front_left"] == [0, 1, 0, 1] and got[-1]["back_right"] == [1, 0, 1, 0.5]

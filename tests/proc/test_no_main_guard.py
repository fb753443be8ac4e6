"""Children never run the user's ``__main__`` again: scripts without a guard work.

``multiprocessing``'s spawn re-imports the main module in every child, so a
script that starts a batch or a network without ``if __name__ ==
"__main__":`` failed, and so did ``python -c`` and a script fed on standard
input. The process layer starts children with ``python -m dmxshm.proc``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from dmxshm.shm.names import list_entries

TIMEOUT_S = 120
RUN_TIMEOUT_S = 90.0

# Each script says its pid first: the shared-memory names it made carry it (other
# runs on the machine may create names meanwhile).
SCRIPTS = {
    "make_vec": """
        import os; print("PID", os.getpid(), flush=True)
        import numpy as np
        import dmxshm
        envs = dmxshm.make_vec(2, num_workers=2, seed=0)
        obs, _ = envs.reset()
        for _ in range(5):
            obs, *_ = envs.step(np.zeros((2, 2), np.float32))
        envs.close()
        print("DONE", obs.shape)
    """,
    "Network": """
        import os; print("PID", os.getpid(), flush=True)
        from dmxshm.network import Network, NetworkConfig
        with Network(NetworkConfig(robots=2, steps=20, camera=(0, 0))) as net:
            summary = net.run()
        print("DONE", summary.steps)
    """,
}
EXPECTED = {"make_vec": "DONE (2, 11)", "Network": "DONE 20"}


def run(how: str, code: str, tmp_path: object) -> subprocess.CompletedProcess[str]:
    if how == "script":
        path = tmp_path / "unguarded.py"  # type: ignore[operator]
        path.write_text(code)
        argv, stdin = [sys.executable, str(path)], None
    elif how == "-c":
        argv, stdin = [sys.executable, "-c", code], None
    else:
        argv, stdin = [sys.executable, "-"], code
    return subprocess.run(argv, input=stdin, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, cwd=tmp_path)


@pytest.mark.timeout(TIMEOUT_S)
@pytest.mark.parametrize("how", ["script", "-c", "stdin"])
@pytest.mark.parametrize("what", sorted(SCRIPTS))
def test_a_script_without_a_main_guard_runs(what: str, how: str, tmp_path: object) -> None:
    done = run(how, textwrap.dedent(SCRIPTS[what]), tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == EXPECTED[what]
    assert "bootstrapping" not in done.stderr
    pid = int(lines[0].removeprefix("PID "))
    assert not [e for e in list_entries() if e.pid == pid]

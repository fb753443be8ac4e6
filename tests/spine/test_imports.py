"""The pinned spine process loads what it runs, not the network or the physics.

Its child imports the process layer's entry, the loop (its target) and the
configuration (its argument, unpickled); the CAN bus the bus module. None of
them may pull in the network stack, the policies or pybullet: they cost the
spine's start-up and memory, and a cycle between the spine and the network.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

IMPORT_TIMEOUT_S = 60
SPINE_PROCESS_MODULES = ("dmxshm.proc.child", "dmxshm.spine.loop", "dmxshm.spine.config",
                         "dmxshm.spine.can")
NOT_IN_THE_SPINE = ("dmxshm.network", "dmxshm.world", "dmxshm.policies", "pybullet")


@pytest.mark.timeout(IMPORT_TIMEOUT_S)
def test_the_spine_process_loads_neither_the_network_nor_the_physics() -> None:
    code = (f"import sys\nfor m in {SPINE_PROCESS_MODULES!r}: __import__(m)\n"
            "print(' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=IMPORT_TIMEOUT_S, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    loaded = set(out.stdout.split())
    assert set(SPINE_PROCESS_MODULES) <= loaded
    extra = sorted(m for m in loaded if m.startswith(NOT_IN_THE_SPINE))
    assert not extra, f"the spine process loads {extra}"

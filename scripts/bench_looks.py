"""Frames/s per CPU second of the batch renderer, in the flat look (today's) and the
Duckietown look, on the grid map with 16 robots: 16 cameras at 64x64 and 160x120, 4
Duckiebot lens cameras at 640x480, each timed for 1.5 s of CPU after a warm-up.

Usage (against another commit, alternating; each tree with its own numba cache):

    git worktree add /tmp/old <commit>
    NUMBA_CACHE_DIR=/tmp/nb-old python scripts/bench_looks.py /tmp/old none
    NUMBA_CACHE_DIR=/tmp/nb-new python scripts/bench_looks.py . flat
    NUMBA_CACHE_DIR=/tmp/nb-new python scripts/bench_looks.py . duckietown

(``none``: the tree's renderer without a ``look`` argument, for a commit before it.)
Prints one JSON object: frames/s per size.
"""

import json
import sys
import time
from typing import Any

import numpy as np


def main() -> None:
    root, look = sys.argv[1], sys.argv[2]
    sys.path.insert(0, root)  # (the tree to measure, before any of its imports)
    from dmxshm.matrix.batch_render import BatchRenderer
    from dmxshm.matrix.camera import Camera
    from dmxshm.world.world import World

    kw: dict[str, Any] = {} if look == "none" else {"look": look}
    res = {}
    with World("grid", 16, seed=0, renderer="batch") as w:
        states = w.state()
        r = BatchRenderer.of_world(w, **kw)
        for name, cam, n in (("64", Camera(64, 64), 16), ("160", Camera(160, 120), 16),
                             ("640lens", Camera.duckiebot(640, 480, renderer="batch"), 4)):
            out = np.zeros((n, *cam.shape), np.uint8)
            owners = list(range(n))
            r.render([cam] * n, states[:n], 0.0, out, seen=states, owners=owners)  # warm
            t, k = time.process_time(), 0
            while time.process_time() - t < 1.5:
                r.render([cam] * n, states[:n], 0.0, out, seen=states, owners=owners)
                k += 1
            res[name] = k * n / (time.process_time() - t)
    print(json.dumps(res))


if __name__ == "__main__":
    main()

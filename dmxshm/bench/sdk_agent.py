"""The agent of ``dmxshm bench duckiematrix``: duckietown-sdk, unchanged, as a user
writes it (``python -m dmxshm.bench.sdk_agent NAME PORT``).

It reads the camera with ``capture(block=True)`` and answers each frame with
``motors.publish((0.2, 0.2))``, until no frame came for 2 s (the run ended). To time
each command from ``publish()`` to the engine step that applied it, it stamps the
header of the message the SDK builds: the SDK's ``DifferentialPWM`` takes its header
from one shared default instance, whose Unix ``timestamp`` it sets just before each
``publish()`` (no SDK code is changed); the bridge turns the stamp into the
monotonic time where the run's command latency starts. Prints one JSON line: frames
received (and how many were new images), commands published, first and last frame
times, and its own CPU time.
"""

from __future__ import annotations

import json
import sys
import time


def main(name: str, port: int) -> None:
    from duckietown.sdk.robots.duckiebot import DB21J
    from duckietown_messages.standard.header import _header_pool

    robot = DB21J(name, simulated=True, port=port)
    camera, motors = robot.camera, robot.motors
    robot.start()
    stamp = _header_pool.get_default_header()
    frames = published = 0
    first = last = None
    shape = None
    t0 = time.monotonic()
    while True:
        frame = camera.capture(block=True, timeout=2.0)
        now = time.monotonic()
        if frame is None:
            if frames or now - t0 > 60.0:
                break  # the run ended (or never sent anything)
            continue
        frames += 1
        shape = list(frame.shape)
        first = now if first is None else first
        last = now
        stamp.timestamp = time.time()
        motors.publish((0.2, 0.2))
        published += 1
    cpu = time.process_time()
    print(json.dumps({"frames": frames, "published": published, "shape": shape,
                      "first_s": first, "last_s": last, "cpu_s": cpu}), flush=True)
    robot.stop()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))

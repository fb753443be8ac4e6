"""duckietown-sdk agents for the Duckiematrix tests, each a program of its own (the
SDK keeps one client per host and port for its process's life):

    python tests/sdk_agents.py KIND NAME PORT

``drive``: reads every sensor and the map layers through ``DB21J(NAME,
simulated=True, port=PORT)``, drives at PWM 0.3 for 3 s, stops for 0.5 s, asks for a
reset, sets a light pattern, and prints what it saw as JSON. ``raw``: publishes
PWM messages the SDK itself would refuse (1.5, NaN) through dtps, the SDK's transport,
then good ones; prints ``sent N``.
"""

from __future__ import annotations

import json
import math
import sys
import time


def drive(name: str, port: int) -> None:
    from duckietown.sdk.robots.duckiebot import DB21J
    from duckietown.sdk.utils.lane_position import MapInterpreter
    from duckietown_messages.actuators import CarLights
    from duckietown_messages.colors import RGBA

    robot = DB21J(name, simulated=True, port=port)
    # Every component is touched before start(): start() starts only those.
    cam, tof, motors = robot.camera, robot.range_finder, robot.motors
    left, right, pose = robot.left_wheel_encoder, robot.right_wheel_encoder, robot.pose
    layers = robot.map_frames, robot.map_tiles, robot.map_tile_info
    lights, reset = robot.lights, robot.reset_flag
    robot.start()
    out: dict = {"frames": 0, "shapes": [], "tof": [], "ticks": [], "poses": []}

    def sample() -> None:
        frame = cam.capture(block=True, timeout=2.0)
        if frame is not None:
            out["frames"] += 1
            if len(out["shapes"]) < 3:
                out["shapes"].append(list(frame.shape))
        out["tof"].append(tof.latest)
        out["ticks"].append([left.latest, right.latest])
        p = pose.latest
        if p is not None:
            out["poses"].append([p["x"], p["y"], p["yaw"], p["sim_time_s"]])

    t0 = time.monotonic()
    while time.monotonic() - t0 < 1.0:  # standing still first: the start pose
        sample()
        motors.set_pwm(0.0, 0.0)
    out["start"] = out["poses"][-1] if out["poses"] else None
    out["drive_from"] = len(out["poses"])
    t0 = time.monotonic()
    while time.monotonic() - t0 < 3.0:
        sample()
        motors.set_pwm(0.3, 0.3)
    out["drive_to"] = len(out["poses"])
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.5:
        sample()
        motors.set_pwm(0.0, 0.0)
    out["before_reset"] = out["poses"][-1]
    reset.set_reset(True)
    lights.publish(CarLights(front_left=RGBA(r=0.0, g=1.0, b=0.0, a=1.0),
                             front_right=RGBA(r=0.0, g=1.0, b=0.0, a=1.0),
                             back_left=RGBA(r=1.0, g=0.0, b=1.0, a=1.0),
                             back_right=RGBA(r=1.0, g=0.0, b=1.0, a=1.0)))
    t0 = time.monotonic()
    while time.monotonic() - t0 < 1.0:
        sample()
        motors.set_pwm(0.0, 0.0)
    out["after_reset"] = out["poses"][-1]
    frames, tiles, info = (layer.latest for layer in layers)
    mi = MapInterpreter({"frames": frames, "tiles": tiles, "tile_info": info})
    out["drivable_tiles"] = len(mi.drivable_tiles)
    out["tile_size"] = info["data"]["map_0"]["tile_size"]["x"]
    print(json.dumps(out), flush=True)
    robot.stop()


def raw(name: str, port: int) -> None:
    import asyncio

    import cbor2
    import dtps
    from dtps_http import MIME_CBOR, RawData

    async def go() -> int:
        ctx = await dtps.context(urls=[f"http://127.0.0.1:{port}/"])
        topic = ctx.navigate("robot", name, "actuator", "wheels", "base", "pwm_filtered")
        sent = 0
        async with topic.publisher_context() as pub:
            for left, right in [(1.5, 0.0), (math.nan, 0.0), (0.2, 0.2), (0.2, 0.2)]:
                await pub.publish(RawData(content=cbor2.dumps({"left": left, "right": right}),
                                          content_type=MIME_CBOR))
                sent += 1
                await asyncio.sleep(0.2)
            await pub.publish(RawData(content=cbor2.dumps([1, 2]), content_type=MIME_CBOR))
            sent += 1
            await asyncio.sleep(0.5)
        await ctx.aclose()
        return sent

    print("sent", asyncio.run(go()), flush=True)


if __name__ == "__main__":
    {"drive": drive, "raw": raw}[sys.argv[1]](sys.argv[2], int(sys.argv[3]))

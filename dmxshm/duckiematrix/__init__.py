"""The Duckiematrix protocol: code written against Duckietown's SDK drives dmxshm robots.

``dmxshm run --duckiematrix`` starts a bridge (:mod:`dmxshm.duckiematrix.bridge`, a
program of its own, ``dmx-duckiematrix``) that serves DTPS (HTTP and CBOR, the
``dtps-http`` package) with the topic tree duckietown-sdk 0.2.0's
``DB21J(name, simulated=True)`` uses, at ``127.0.0.1:7501``. To the network the bridge
is an outside agent (docs/abi.md): it claims one agent slot per robot, as any other
client would. docs/duckiematrix.md is the user's page.

This package's modules import no DTPS code at import time: only the bridge program
needs the ``duckiematrix`` extra (:func:`require`).
"""

from __future__ import annotations

import re
from typing import Any

from dmxshm.errors import RefusedError

DEFAULT_PORT = 7501
"""duckietown-sdk's ``DEFAULT_DUCKIEMATRIX_PORT``."""
NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,62}")
"""A robot name: one path component of a DTPS topic (``robot/<name>/...``)."""

ROBOT_OUT = {
    "camera": "sensor/camera/front_center/jpeg",
    "tof": "sensor/time_of_flight/front_center/range",
    "encoder_left": "sensor/wheel_encoder/left/ticks",
    "encoder_right": "sensor/wheel_encoder/right/ticks",
    "delta_t": "sensor/delta_t",
    "pose": "state/pose",
}
"""What the bridge publishes under ``robot/<name>/``."""
ROBOT_IN = {
    "pwm": "actuator/wheels/base/pwm_filtered",
    "lights": "actuator/lights/base/pattern",
    "reset": "state/reset",
}
"""What the bridge reads under ``robot/<name>/`` (the agent publishes)."""
MAP_OUT = {"frames": "map/frames", "tiles": "map/tiles", "tile_maps": "map/tile_maps"}
"""The map layers, at the root."""


def topics(names: list[str]) -> list[str]:
    """Every topic the bridge serves for robots ``names`` (12 for one robot).

    Example:
        >>> len(topics(["duckiebot01"])), topics(["a"])[0]
        (12, 'map/frames')
    """
    robot = [f"robot/{n}/{t}" for n in names for t in (*ROBOT_OUT.values(), *ROBOT_IN.values())]
    return [*MAP_OUT.values(), *robot]


def default_names(robots: int) -> list[str]:
    """``duckiebot01``, ``duckiebot02``...: Duckietown's way of naming robots.

    Example:
        >>> default_names(2)
        ['duckiebot01', 'duckiebot02']
    """
    return [f"duckiebot{i + 1:02d}" for i in range(robots)]


def check_names(names: list[str], robots: int) -> None:
    """Raise :class:`RefusedError` unless ``names`` are ``robots`` distinct valid names."""
    if len(names) != robots:
        raise RefusedError(f"--robot-names gives {len(names)} name(s) for {robots} robot(s) "
                           "(--robots): give one name per robot")
    seen: set[str] = set()
    for n in names:
        if not NAME_RE.fullmatch(n):
            raise RefusedError(f"robot name {n!r} is not a topic name: a letter, then up to 62 "
                               "letters, digits, '_' or '-'")
        if n in seen:
            raise RefusedError(f"robot name {n!r} is given twice in --robot-names: every robot "
                               "needs a name of its own")
        seen.add(n)


def require() -> Any:
    """The ``dtps_http`` module, or :class:`RefusedError` saying how to install it."""
    try:
        import dtps_http
    except ImportError:
        raise RefusedError("--duckiematrix needs the duckiematrix extra: "
                           "pip install 'dmxshm[duckiematrix]'") from None
    return dtps_http

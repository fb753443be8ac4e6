"""gym-duckietown's ``gym_duckietown.simulator``, on dmxshm: its ``Simulator`` under
the API gym-duckietown's scripts were written for (``reset()`` returns the observation,
``step()`` four values: :mod:`dmxshm.duckietown.legacy`), its surface
(:mod:`dmxshm.duckietown.surface`: ``cur_pos``, ``get_lane_pos2``, ``closest_curve_point``,
``_get_tile``...) and the names scripts import from it. A script's import changes, and
nothing else::

    # from gym_duckietown.simulator import Simulator, AGENT_SAFETY_RAD, NotInLane
    from dmxshm.duckietown.simulator import Simulator, AGENT_SAFETY_RAD, NotInLane

Example:
    >>> env = Simulator(map_name="loop", camera_width=32, camera_height=24,
    ...                 domain_rand=False)
    >>> obs = env.reset()
    >>> lp = env.get_lane_pos2(env.cur_pos, env.cur_angle)
    >>> tile = env._get_tile(*env.get_grid_coords(env.cur_pos))
    >>> abs(lp.dist) < 0.05, float(env.cur_pos[1]), tile["drivable"], env._get_tile(0, 0)
    (True, 0.0, True, {'coords': (0, 0), 'kind': 'grass', 'angle': 1, 'drivable': False})
    >>> env.close()
"""

from __future__ import annotations

from dmxshm.duckietown import (
    DEFAULT_ACCEPT_START_ANGLE_DEG,
    DEFAULT_CAMERA_HEIGHT,
    DEFAULT_CAMERA_WIDTH,
    DEFAULT_FRAMERATE,
    DEFAULT_MAX_STEPS,
    DEFAULT_ROBOT_SPEED,
    REWARD_INVALID_POSE,
    DropInError,
)
from dmxshm.duckietown import WHEEL_DIST_M as WHEEL_DIST
from dmxshm.duckietown.legacy import Simulator
from dmxshm.duckietown.surface import (
    AGENT_SAFETY_RAD,
    ROBOT_LENGTH,
    ROBOT_WIDTH,
    SAFETY_RAD_MULT,
    LanePosition,
    NotInLane,
    get_dir_vec,
    get_right_vec,
)

DEFAULT_FRAME_SKIP = 1
CAMERA_FLOOR_DIST, CAMERA_FORWARD_DIST = 0.108, 0.066
CAMERA_ANGLE, CAMERA_FOV_Y = 19.15, 75
"""gym-duckietown's constants (its ``simulator.py``), written out."""

__all__ = ["AGENT_SAFETY_RAD", "CAMERA_ANGLE", "CAMERA_FLOOR_DIST", "CAMERA_FORWARD_DIST",
           "CAMERA_FOV_Y", "DEFAULT_ACCEPT_START_ANGLE_DEG", "DEFAULT_CAMERA_HEIGHT",
           "DEFAULT_CAMERA_WIDTH", "DEFAULT_FRAMERATE", "DEFAULT_FRAME_SKIP",
           "DEFAULT_MAX_STEPS", "DEFAULT_ROBOT_SPEED", "DropInError", "LanePosition",
           "NotInLane", "REWARD_INVALID_POSE", "ROBOT_LENGTH", "ROBOT_WIDTH",
           "SAFETY_RAD_MULT", "Simulator", "WHEEL_DIST", "get_dir_vec", "get_right_vec"]

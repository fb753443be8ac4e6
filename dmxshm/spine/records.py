"""Per-cycle timing records of the spine, and the CAN slots.

All times are ``time.perf_counter()`` seconds (CLOCK_MONOTONIC on Linux, the
same clock in every process). One record per action sent:

===============  =====================================================
field            meaning
===============  =====================================================
``cycle``        spine cycle k in which the action was sent
``t_tick``       when the clock woke for cycle k
``t_send``       when the CAN cycle carrying the action started
``t_act``        when the action was computed (end of its plan)
``t_obs``        when the last servo reply behind its observation was made
``act_cycle``    cycle whose plan computed the action
``obs_cycle``    cycle whose CAN cycle produced that observation's replies
``plan_start``   start of the plan of cycle k (``plan_end`` its end)
``can_cycle``    cycle that started the CAN cycle collected in cycle k
                 (-1: none collected; k - 1 where the bus answers each)
``can_start``    start, reply and end of the CAN cycle collected in cycle
``can_reply``    k (the one started in cycle ``can_cycle``), on the bus's own
``can_end``      clock (it starts a cycle when it receives the frame)
``collect_start`` when the spine began to collect those replies (step 3)
``can_seen``     when they reached the spine
``period_s``     time between the wake-ups of cycles k - 1 and k
``slack_s``      time left before tick k when cycle k - 1 ended
``skipped``      ticks skipped since the start
``stopping``     1 while the spine sends stop commands
``wheels_rad_s``  the servo commands sent in cycle k (the first robot's, in a
                 network, whose frames carry every robot's)
``state``        the spine's state in cycle k (:class:`~dmxshm.spine.state_machine.State`)
===============  =====================================================
"""

from __future__ import annotations

import numpy as np

RECORD_DTYPE = np.dtype([
    ("cycle", "<i8"), ("t_tick", "<f8"), ("t_send", "<f8"), ("t_act", "<f8"),
    ("t_obs", "<f8"), ("act_cycle", "<i8"), ("obs_cycle", "<i8"),
    ("plan_start", "<f8"), ("plan_end", "<f8"), ("can_cycle", "<i8"),
    ("can_start", "<f8"), ("can_reply", "<f8"), ("can_end", "<f8"),
    ("collect_start", "<f8"), ("can_seen", "<f8"),
    ("period_s", "<f8"), ("slack_s", "<f8"), ("skipped", "<i8"), ("stopping", "<i8"),
    ("wheels_rad_s", "<f8", (2,)), ("state", "<i8"),
])

AGENT_OBS_DTYPE = np.dtype([
    ("cycle", "<i8"), ("obs_cycle", "<i8"), ("t_obs", "<f8"), ("state", "<i8"),
    ("t_published", "<f8"),
])
"""What the spine tells its agent each cycle: the observation's origin and the state."""

AGENT_ACTION_DTYPE = np.dtype([
    ("obs_cycle", "<i8"), ("t_obs", "<f8"), ("t_act", "<f8"), ("wheels_rad_s", "<f8", (2,)),
])
"""An agent's answer: which observation it answers, when it computed, the command."""

CAN_CMD_DTYPE = np.dtype([("cycle", "<i8"), ("t_send", "<f8"), ("wheels_rad_s", "<f8", (2,))])
"""A CAN cycle to run: the cycle that sent it, when, and the servo commands."""

CAN_REPLY_DTYPE = np.dtype([
    ("cycle", "<i8"), ("t_start", "<f8"), ("t_reply", "<f8"), ("t_end", "<f8"),
    ("wheel_angle_rad", "<f8", (2,)), ("wheel_rate_rad_s", "<f8", (2,)),
])
"""The servo replies of one CAN cycle: ``t_reply`` is when the last one was made."""

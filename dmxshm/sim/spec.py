"""What a simulation is: one description of the world and its robots, with one set of
defaults per front-end, checked once.

Every front-end of dmxshm simulates the same robot, and each had restated its
settings in its own signature, with its own defaults. :class:`SimSpec` names them
once, and :data:`PRESETS` holds each front-end's defaults, which its signature
reads (so ``help()`` shows them, and nothing restates them):

==============  ======  =====  ===========  ========  ======  ======  ========  =======  =======
preset          map     robots action       motors    noise   route   camera    renderer physics
==============  ======  =====  ===========  ========  ======  ======  ========  =======  =======
``network``     loop    2      wheel-speed  dynamics  on      none    pinhole   batch    bullet
``v0``          loop    1      v0           ideal     off     none    pinhole   tiny     bullet
``v1``          grid    1      pwm          dynamics  on      seed    duckiebot auto     bullet
``multi``       grid    4      pwm          dynamics  on      seed    duckiebot auto     bullet
``dropin``      loop    1      pwm          dynamics  off     none    pinhole   auto     db18
==============  ======  =====  ===========  ========  ======  ======  ========  =======  =======

(``network``: ``dmxshm run`` and :class:`~dmxshm.network.NetworkConfig`; ``v0`` and
``v1``: ``DuckieLane-v0``, ``-v1`` and ``make_vec``; ``multi``: ``parallel_env`` and
the multi-robot batch; ``dropin``: :mod:`dmxshm.duckietown`, whose camera is 640x480 and
whose own arguments choose its camera model and randomisation, and which moves its robot
by gym-duckietown's own DB18 model and parameters.) The differences are deliberate: v0
does not change, and the network's digests and v1's were pinned with their own
defaults. ``tests/sim/test_spec.py`` checks that each front-end's
signature is its preset's and that this table is :data:`PRESETS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

from dmxshm.errors import DmxError
from dmxshm.matrix.camera import CAMERA_MODELS, LOOKS
from dmxshm.world.motor import ACTIONS
from dmxshm.world.renderers import RENDERERS
from dmxshm.world.world import DEFAULT_DT_S, DEFAULT_SUBSTEPS

V0_ACTION = "v0"
"""``DuckieLane-v0``'s action: wheel speeds as fractions of 25 rad/s, no motor model."""
SIM_ACTIONS = (*ACTIONS, V0_ACTION)
PHYSICS = ("bullet", "db18")
"""The physics backends: Bullet's rigid bodies, or Duckietown's DB18 motion model with
contacts in the plane (:mod:`dmxshm.sim.planar`)."""


class SimSpecError(DmxError, ValueError):
    """A :class:`SimSpec` that cannot be simulated; the message names the field."""


@dataclass(frozen=True)
class SimSpec:
    """A world and its robots, as every front-end describes them.

    Attributes:
        map: the map's name or path.
        robots: robots in one world.
        dt_s: simulated time per step, s; ``substeps``: physics steps per step.
        seed: the world's seed (an env's is drawn at ``reset``).
        action: the units of a command: ``wheel-speed`` (rad/s), ``pwm`` (duties in
            [-1, 1] through the motor model) or ``v0`` (fractions of 25 rad/s).
        motor_dynamics: the motors' lag and dead band (False: ideal motors).
        noise: the Duckiebot's sensor noise.
        camera: the camera's ``(width, height)``; ``camera_model``: ``pinhole`` or
            ``duckiebot`` (the lens); ``renderer``: ``tiny``, ``egl``, ``batch`` or
            ``auto``.
        randomize: domain randomisation's configuration (None: none).
        route: the turns at intersections (``"seed"``, a list like
            ``"left,straight"``, or None: straight on).
        physics: the physics backend (:data:`PHYSICS`).
        look: how cameras draw the world (:data:`~dmxshm.matrix.camera.LOOKS`):
            ``flat`` (every renderer's) or ``duckietown`` (the batch renderer's).
    """

    map: str = "loop"
    robots: int = 1
    dt_s: float = DEFAULT_DT_S
    substeps: int = DEFAULT_SUBSTEPS
    seed: int = 0
    action: str = "pwm"
    motor_dynamics: bool = True
    noise: bool = True
    camera: tuple[int, int] = (160, 120)
    camera_model: str = "pinhole"
    renderer: str = "auto"
    randomize: Any = None
    route: str | None = None
    physics: str = "bullet"
    look: str = "flat"

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Raise :class:`SimSpecError` naming the first field that cannot be."""
        def need(ok: bool, what: str) -> None:
            if not ok:
                raise SimSpecError(what)

        need(isinstance(self.robots, int) and self.robots >= 1,
             f"robots must be an integer >= 1, not {self.robots!r}")
        need(math.isfinite(self.dt_s) and self.dt_s > 0,
             f"dt_s must be a positive number, not {self.dt_s!r}")
        need(isinstance(self.substeps, int) and self.substeps >= 1,
             f"substeps must be an integer >= 1, not {self.substeps!r}")
        need(self.action in SIM_ACTIONS,
             f"action must be one of {', '.join(SIM_ACTIONS)}, not {self.action!r}")
        need(self.camera_model in CAMERA_MODELS,
             f"camera_model must be one of {', '.join(CAMERA_MODELS)}, not "
             f"{self.camera_model!r}")
        need(self.renderer in RENDERERS,
             f"renderer must be one of {', '.join(RENDERERS)}, not {self.renderer!r}")
        need(self.physics in PHYSICS,
             f"physics must be one of {', '.join(PHYSICS)}, not {self.physics!r}")
        need(self.look in LOOKS, f"look must be one of {', '.join(LOOKS)}, not {self.look!r}")
        need(self.look == "flat" or self.renderer in ("batch", "auto"),
             f"look {self.look!r} is drawn by the batch renderer only, not by "
             f"{self.renderer!r}: renderer must be 'batch' or 'auto'")
        w, h = self.camera
        need(w >= 0 and h >= 0 and (w > 0) == (h > 0),
             f"camera must be (width, height), both positive or both 0, not {self.camera!r}")

    def but(self, **changes: Any) -> SimSpec:
        """This spec with ``changes`` (checked)."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


NETWORK = SimSpec(robots=2, action="wheel-speed", renderer="batch")
"""``dmxshm run``'s robots (:class:`~dmxshm.network.NetworkConfig`)."""
V0 = SimSpec(action=V0_ACTION, motor_dynamics=False, noise=False, renderer="tiny")
"""``DuckieLane-v0`` (which does not change)."""
V1 = SimSpec(map="grid", route="seed", camera_model="duckiebot")
"""``DuckieLane-v1``."""
MULTI = V1.but(robots=4)
"""``parallel_env`` and the multi-robot batch: v1's robots, four of them."""
DROPIN = SimSpec(noise=False, camera=(640, 480), physics="db18")
"""The gym-duckietown drop-in (gym-duckietown's camera; its arguments choose the camera
model, ``distortion``, and the randomisation, ``domain_rand``...)."""

PRESETS: dict[str, SimSpec] = {"network": NETWORK, "v0": V0, "v1": V1, "multi": MULTI,
                               "dropin": DROPIN}
"""Each front-end's defaults (the module docstring's table)."""

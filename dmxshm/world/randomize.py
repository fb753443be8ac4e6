"""Domain randomisation: per env and per reset, seeded, from a documented config.

A config names the parameters to draw, each with its range ``[low, high]``, in
three groups (:data:`DEFAULTS` holds every parameter and its default range):

* ``physics``: ``friction`` (a scale of the wheels' and the chassis' friction on the
  ground), ``mass`` (a scale of the robot's mass), ``wheel_radius`` (a scale of the
  wheels' speed over the ground: Bullet's wheels keep their shape, their commanded
  speed is scaled instead), ``motor_gain``, ``motor_trim`` and ``motor_lag_s`` (the
  motor model's, :mod:`dmxshm.world.motor`);
* ``sensing``: ``noise_scale`` (a scale of every IMU and time-of-flight noise figure
  and of the camera's exposure flicker), ``camera_height_m`` (an offset of the
  camera's height), ``camera_tilt_deg`` (an offset of its tilt), ``camera_focal_scale``
  (a scale of the focal length);
* ``appearance``: ``light_azimuth_deg`` (the light's direction about the vertical),
  ``brightness`` (levels added), ``contrast`` (a scale about mid-grey), ``red_gain``,
  ``green_gain``, ``blue_gain`` (per-channel scales: the colour of the light, and so of
  the road, the markings and every object alike), ``road_shade``, ``marking_shade``,
  ``grass_shade`` (scales of the road's, the markings' and the grass's own colours,
  :func:`dmxshm.world.scene.tint`). Both renderers take them: the light in the render
  call, the shades on the scene's meshes before it, the rest as a lookup table applied
  to the image.

``randomize=True`` draws every parameter of :data:`DEFAULTS`; a dict or a YAML/JSON
file draws exactly the parameters it names (others keep their nominal value), with
the ranges it gives. Each reset draws from the env's own generator (seeded by
``reset(seed=)``), in the config's sorted order, after the route's and the noise's
seeds: the same seed gives the same parameters, and ``info["randomization"]`` at
reset has them.

A network (``dmxshm run --randomize FILE``) draws once per robot, at its start, each
parameter from a generator keyed by (seed, robot, parameter) (:func:`robot_draws`):
every process of the run computes the same values, a robot's draw does not depend
on how many robots there are or which other parameters the config names, and a
replay draws them again.
"""

from __future__ import annotations

import hashlib
import math
import os
import zlib
from typing import Any

import numpy as np

from dmxshm.errors import DmxError

DEFAULTS: dict[str, dict[str, tuple[float, float]]] = {
    "physics": {"friction": (0.7, 1.3), "mass": (0.85, 1.15), "wheel_radius": (0.97, 1.03),
                "motor_gain": (0.9, 1.1), "motor_trim": (-0.05, 0.05),
                "motor_lag_s": (0.05, 0.15)},
    "sensing": {"noise_scale": (0.5, 1.5), "camera_height_m": (-0.005, 0.005),
                "camera_tilt_deg": (-3.0, 3.0), "camera_focal_scale": (0.95, 1.05)},
    "appearance": {"light_azimuth_deg": (-60.0, 60.0), "brightness": (-25.0, 25.0),
                   "contrast": (0.8, 1.2), "red_gain": (0.9, 1.1),
                   "green_gain": (0.9, 1.1), "blue_gain": (0.9, 1.1),
                   "road_shade": (0.7, 1.4), "marking_shade": (0.8, 1.05),
                   "grass_shade": (0.8, 1.2)},
}
"""Every parameter and its default range (docs/randomization.md says why each)."""

MODEL: dict[str, dict[str, tuple[float, float]]] = {
    "model": {"model_u1_scale": (0.9, 1.1), "model_w1_scale": (0.9, 1.1),
              "model_delay_s": (0.0, 0.1)},
}
"""The DB18 model's own parameters (``physics="db18"``, docs/physics.md): scales of its
speed and yaw-rate damping ``u1`` and ``w1``, and its command delay added, s. Named in a
config, or drawn with :data:`DEFAULTS` by ``randomize=True`` under DB18 (after every
other parameter, so the others keep the values they draw without them); under Bullet
they move nothing. Not in :data:`NOMINAL`: a draw has them only where it drew them."""

LOOK: dict[str, dict[str, tuple[float, float]]] = {
    "look": {"grain_scale": (0.5, 1.5), "texture": (0.0, 1.0), "sky_shade": (0.85, 1.1)},
}
"""The Duckietown look's own parameters (``look="duckietown"``, docs/renderers.md): a
scale of the ground's grain, which grain pattern (``texture``: a key of its hash; 0 is
the look's own) and a scale of the sky's colour. Named in a config, or drawn with
:data:`DEFAULTS` by ``randomize=True`` in the Duckietown look; in the flat look they
change nothing. Drawn from a stream of their own (:func:`draw`), so every other draw
keeps the value it has without them. Not in :data:`NOMINAL`, as :data:`MODEL`."""
LOOK_NOMINAL = {"grain_scale": 1.0, "texture": 0.0, "sky_shade": 1.0}
"""The look's parameters' values when they are not drawn."""

GROUPS = {**DEFAULTS, **MODEL, **LOOK}
"""Every group a config may name."""

NOMINAL: dict[str, float] = {
    "friction": 1.0, "mass": 1.0, "wheel_radius": 1.0, "motor_gain": 1.0, "motor_trim": 0.0,
    "motor_lag_s": 0.1, "noise_scale": 1.0, "camera_height_m": 0.0, "camera_tilt_deg": 0.0,
    "camera_focal_scale": 1.0, "light_azimuth_deg": 0.0, "brightness": 0.0, "contrast": 1.0,
    "red_gain": 1.0, "green_gain": 1.0, "blue_gain": 1.0, "road_shade": 1.0,
    "marking_shade": 1.0, "grass_shade": 1.0}
"""Each parameter's value when it is not drawn."""


class RandomizeError(DmxError, ValueError):
    """A randomisation config names an unknown parameter or an impossible range."""


Config = dict[str, dict[str, tuple[float, float]]]


def parse(value: bool | dict[str, Any] | str | os.PathLike[str] | None) -> Config | None:
    """The config of ``randomize=``: None or False (none), True (:data:`DEFAULTS`), a
    dict, or the path of a YAML or JSON file holding one.

    Raises:
        RandomizeError: an unknown group or parameter, a range that is not two
            finite numbers with low <= high, a file that cannot be read.
    """
    if value is None or value is False:
        return None
    if value is True:
        return {g: dict(p) for g, p in DEFAULTS.items()}
    where = "randomize"
    if isinstance(value, (str, os.PathLike)):
        where = os.fspath(value)
        try:
            with open(where, encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise RandomizeError(f"{where}: cannot read the randomisation config: "
                                 f"{exc.strerror or exc}") from None
        value = _load(text, where)
    if not isinstance(value, dict):
        raise RandomizeError(f"{where}: a randomisation config is a mapping of groups "
                             f"({', '.join(GROUPS)}), not {type(value).__name__}")
    out: Config = {}
    for group, params in value.items():
        if group not in GROUPS:
            raise RandomizeError(f"{where}: unknown group {group!r}; the groups are "
                                 f"{', '.join(GROUPS)}")
        if not isinstance(params, dict):
            raise RandomizeError(f"{where}: {group} is a mapping of parameters to ranges")
        for name, rng in params.items():
            if name not in GROUPS[group]:
                raise RandomizeError(f"{where}: unknown {group} parameter {name!r}; they are "
                                     f"{', '.join(GROUPS[group])}")
            out.setdefault(group, {})[name] = _range(rng, f"{where}: {group}.{name}")
    return out


def _load(text: str, where: str) -> Any:
    import yaml  # JSON is YAML too

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RandomizeError(f"{where}: not YAML or JSON: {exc}") from None


def _range(value: Any, where: str) -> tuple[float, float]:
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise RandomizeError(f"{where}: a range is [low, high], not {value!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and low <= high):
        raise RandomizeError(f"{where}: needs finite low <= high, not [{low}, {high}]")
    return low, high


def draw(config: Config, rng: np.random.Generator) -> dict[str, float]:
    """One draw of every parameter (uniform in its range; the nominal value where the
    config does not name it), in the config's sorted order.

    Example:
        >>> p = draw(parse(True), np.random.default_rng(0))
        >>> 0.7 <= p["friction"] <= 1.3, p == draw(parse(True), np.random.default_rng(0))
        (True, True)
    """
    out = dict(NOMINAL)
    # The look's parameters from a stream keyed by the generator as it is now, which
    # it does not advance: every other draw, and what the env draws after, is the same
    # with or without them.
    look = config.get("look")
    if look:
        key = hashlib.sha256(repr(rng.bit_generator.state).encode()).digest()
        own = np.random.default_rng([int.from_bytes(key[:8], "little"), _LOOK_DRAW])
        for name in sorted(look):
            low, high = look[name]
            out[name] = float(own.uniform(low, high))
    # DEFAULTS' groups first, then the model's: a config's other draws are the same
    # with or without it.
    for group in sorted((g for g in config if g != "look"), key=lambda g: (g in MODEL, g)):
        for name in sorted(config[group]):
            low, high = config[group][name]
            out[name] = float(rng.uniform(low, high))
    return out


def with_look(config: Config | None) -> Config | None:
    """``config`` with the Duckietown look's parameters (:data:`LOOK`) added where it
    names none of them: ``randomize=True`` in the Duckietown look."""
    if config is None or "look" in config:
        return config
    return {**config, **{g: dict(p) for g, p in LOOK.items()}}


def with_model(config: Config | None) -> Config | None:
    """``config`` with the DB18 model's parameters (:data:`MODEL`) added where it names
    none of them: ``randomize=True`` under DB18."""
    if config is None or "model" in config:
        return config
    return {**config, **{g: dict(p) for g, p in MODEL.items()}}


MOTOR_PARAMETERS = ("motor_gain", "motor_trim", "motor_lag_s")
"""The parameters of the motor model: they apply where commands are PWM duties."""

_ROBOT_DRAW = 0x52414E44  # "RAND": the key of a network robot's draws
_LOOK_DRAW = 0x4C4F4F4B  # "LOOK": the key of the look's draws in an env


def robot_draws(config: Config, seed: int, robots: int) -> list[dict[str, float]]:
    """Each of ``robots`` robots' parameters in a network: every parameter the config
    names drawn uniform in its range from a generator keyed by (``seed``, robot, the
    parameter's name), the nominal value for the others.

    Example:
        >>> cfg = parse({"physics": {"friction": [0.5, 1.5]}})
        >>> a = robot_draws(cfg, 7, 3)
        >>> a == robot_draws(cfg, 7, 3), a[0]["friction"] != a[1]["friction"], a[0]["mass"]
        (True, True, 1.0)
        >>> a[1]["friction"] == robot_draws(cfg, 7, 2)[1]["friction"]  # whatever the count
        True
    """
    out = []
    for robot in range(robots):
        params = dict(NOMINAL)
        for group in config.values():
            for name, (low, high) in group.items():
                key = [int(seed) & 0xFFFFFFFFFFFFFFFF, robot, zlib.crc32(name.encode()),
                       _ROBOT_DRAW]
                params[name] = float(np.random.default_rng(key).uniform(low, high))
        out.append(params)
    return out


def named(config: Config) -> list[str]:
    """The parameters ``config`` draws, sorted."""
    return sorted(name for group in config.values() for name in group)


def without(config: Config, names: tuple[str, ...]) -> Config:
    """``config`` less the parameters ``names`` (and any group left empty)."""
    out = {g: {n: r for n, r in p.items() if n not in names} for g, p in config.items()}
    return {g: p for g, p in out.items() if p}


SHADES = ("road_shade", "marking_shade", "grass_shade")
"""The appearance parameters that colour the scene itself (:func:`shades`)."""


def shades(params: dict[str, float] | None) -> dict[str, float] | None:
    """The scene's shades of a draw (:func:`dmxshm.world.scene.tint`) and the look's
    parameters it drew (:data:`LOOK`), or None where they are all nominal."""
    if params is None:
        return None
    out = {k: params[k] for k in SHADES}
    out.update({k: params[k] for k in LOOK_NOMINAL if k in params})
    if all(v == LOOK_NOMINAL.get(k, 1.0) for k, v in out.items()):
        return None
    return out


def appearance_lut(params: dict[str, float]) -> np.ndarray | None:
    """The ``(256, 3)`` uint8 table of brightness, contrast and channel gains, or None
    when they are all nominal: ``clip(((v - 128) * contrast + 128 + brightness) * gain)``.
    """
    if all(params[k] == NOMINAL[k] for k in ("brightness", "contrast", "red_gain",
                                             "green_gain", "blue_gain")):
        return None
    v = np.arange(256, dtype=np.float64)[:, None]
    gains = np.array([params["red_gain"], params["green_gain"], params["blue_gain"]])
    out = ((v - 128.0) * params["contrast"] + 128.0 + params["brightness"]) * gains
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def apply_lut(image: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """``image`` (uint8 HxWx3) through ``lut``, in place."""
    for c in range(3):
        image[..., c] = lut[:, c][image[..., c]]
    return image

"""gym-duckietown's ``gym_duckietown.wrappers``, on dmxshm: the same wrappers with the
same behaviour, over the drop-in's gym-duckietown API (:mod:`dmxshm.duckietown.simulator`:
``reset()`` returns the observation, ``step()`` four values).

* :class:`DiscreteWrapper`: three actions, 0 left ``(0.6, +1)``, 1 right ``(0.6, -1)``,
  2 forward ``(0.7, 0)``, as ``(velocity, steering)`` for a ``DuckietownEnv``;
* :class:`SteeringToWheelVelWrapper`: ``(velocity, steering)`` to the wheels' duties by
  gym-duckietown's formula (its ``gain``, ``trim``, ``radius``, ``k``, ``limit``; the
  env's ``wheel_dist``);
* :class:`PyTorchObsWrapper`: the image transposed ``(W, H, C)`` to ``(C, H, W)`` as
  gym-duckietown's ``transpose(2, 1, 0)`` does;
* :class:`ResizeWrapper`: the image resized (bilinear, where gym-duckietown uses
  OpenCV's bicubic: no OpenCV needed), over gym-duckietown's axes;
* :class:`UndistortWrapper`: a ``distortion=True`` image rectified with the camera's
  calibration (dmxshm's lens, :func:`dmxshm.matrix.lens.undistorter`).

The base classes (:class:`Wrapper`, :class:`ActionWrapper`, :class:`ObservationWrapper`)
are the installed gym's (so that its wrappers and these stack, with its reset and step:
:mod:`dmxshm.duckietown.legacy`); without gym, gym's of before 0.26, written here:
attributes the wrapper does not have are the env's (``env.cur_pos`` through any
wrapper).

Example:
    >>> from dmxshm.duckietown.envs import DuckietownEnv
    >>> env = PyTorchObsWrapper(DiscreteWrapper(DuckietownEnv(
    ...     map_name="loop", camera_width=32, camera_height=24, domain_rand=False)))
    >>> env.reset().shape, env.observation_space.shape, int(env.action_space.n)
    ((3, 32, 24), (3, 32, 24), 3)
    >>> obs, reward, done, info = env.step(2)
    >>> round(float(env.cur_pos[1]), 1), done
    (0.0, False)
    >>> env.close()
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from dmxshm.duckietown.legacy import GYM, gym_space


class _Wrapper:
    """gym's ``Wrapper`` of before 0.26: ``reset``, ``step``, ``render``, ``close`` and
    ``seed`` passed on; spaces the env's unless set; other attributes the env's."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self._action_space: Any = None
        self._observation_space: Any = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    @property
    def action_space(self) -> Any:
        return self._action_space if self._action_space is not None else self.env.action_space

    @action_space.setter
    def action_space(self, space: Any) -> None:
        self._action_space = space

    @property
    def observation_space(self) -> Any:
        return (self._observation_space if self._observation_space is not None
                else self.env.observation_space)

    @observation_space.setter
    def observation_space(self, space: Any) -> None:
        self._observation_space = space

    @property
    def unwrapped(self) -> Any:
        return self.env.unwrapped

    def reset(self, **kwargs: Any) -> Any:
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, float, bool, dict[str, Any]]:
        return self.env.step(action)

    def render(self, mode: str = "human", **kwargs: Any) -> Any:
        return self.env.render(mode, **kwargs)

    def seed(self, seed: int | None = None) -> Any:
        return self.env.seed(seed)

    def close(self) -> None:
        self.env.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__}{self.env!r}>"


class _ActionWrapper(_Wrapper):
    """Turns each action by :meth:`action` before the env steps."""

    def step(self, action: Any) -> tuple[Any, float, bool, dict[str, Any]]:
        return self.env.step(self.action(action))

    def action(self, action: Any) -> Any:
        raise NotImplementedError

    def reverse_action(self, action: Any) -> Any:
        raise NotImplementedError


class _ObservationWrapper(_Wrapper):
    """Turns each observation by :meth:`observation`."""

    def reset(self, **kwargs: Any) -> Any:
        return self.observation(self.env.reset(**kwargs))

    def step(self, action: Any) -> tuple[Any, float, bool, dict[str, Any]]:
        obs, reward, done, info = self.env.step(action)
        return self.observation(obs), reward, done, info

    def observation(self, observation: Any) -> Any:
        raise NotImplementedError


Wrapper: Any = GYM.Wrapper if GYM is not None else _Wrapper
ActionWrapper: Any = GYM.ActionWrapper if GYM is not None else _ActionWrapper
ObservationWrapper: Any = GYM.ObservationWrapper if GYM is not None else _ObservationWrapper


class DiscreteWrapper(ActionWrapper):
    """Three discrete actions: 0 turn left, 1 turn right, 2 forward."""

    ACTIONS = {0: (0.6, 1.0), 1: (0.6, -1.0), 2: (0.7, 0.0)}

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.action_space = gym_space(spaces.Discrete(3))

    def action(self, action: Any) -> np.ndarray:
        try:
            return np.array(self.ACTIONS[int(action)])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"unknown action {action!r}: 0 (left), 1 (right), 2 (forward)"
                             ) from None


class SteeringToWheelVelWrapper(ActionWrapper):
    """``(velocity, steering)`` to the wheels' duties (gym-duckietown's formula)."""

    def __init__(self, env: Any, gain: float = 1.0, trim: float = 0.0,
                 radius: float = 0.0318, k: float = 27.0, limit: float = 1.0) -> None:
        super().__init__(env)
        self.gain, self.trim, self.radius, self.k, self.limit = gain, trim, radius, k, limit

    def action(self, action: Any) -> np.ndarray:
        vel, angle = (float(a) for a in np.asarray(action).reshape(2))
        baseline = self.unwrapped.wheel_dist
        k_r_inv, k_l_inv = (self.gain + self.trim) / self.k, (self.gain - self.trim) / self.k
        omega_r = (vel + 0.5 * angle * baseline) / self.radius
        omega_l = (vel - 0.5 * angle * baseline) / self.radius
        u_r = max(min(omega_r * k_r_inv, self.limit), -self.limit)
        u_l = max(min(omega_l * k_l_inv, self.limit), -self.limit)
        return np.array([u_l, u_r])


class PyTorchObsWrapper(ObservationWrapper):
    """The image transposed to ``(C, W, H)``, as gym-duckietown's ``transpose(2, 1,
    0)``."""

    def __init__(self, env: Any = None) -> None:
        super().__init__(env)
        space = self.env.observation_space
        h, w, c = space.shape
        self.observation_space = gym_space(spaces.Box(space.low[0, 0, 0],
                                                      space.high[0, 0, 0], (c, w, h),
                                                      dtype=space.dtype))

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation.transpose(2, 1, 0)


class ResizeWrapper(ObservationWrapper):
    """The image resized as gym-duckietown resizes it: axes 0 and 2 swapped, resized
    to ``resize_h`` rows and ``resize_w`` columns, swapped back (for a ``(C, W, H)``
    image from :class:`PyTorchObsWrapper`, ``(C, resize_w, resize_h)``). Its
    ``observation_space`` is that shape (gym-duckietown's says ``(C, resize_h,
    resize_w)``, which its images have only where the two are equal, as at its
    default 80 x 80)."""

    def __init__(self, env: Any = None, resize_w: int = 80, resize_h: int = 80) -> None:
        super().__init__(env)
        self.resize_w, self.resize_h = int(resize_w), int(resize_h)
        space = self.env.observation_space
        self.observation_space = gym_space(spaces.Box(
            space.low.flat[0], space.high.flat[0],
            (space.shape[0], self.resize_w, self.resize_h), dtype=space.dtype))

    def observation(self, observation: np.ndarray) -> np.ndarray:
        swapped = np.asarray(observation).swapaxes(0, 2)  # as gym-duckietown: (H, W, C)...
        return resize_bilinear(swapped, self.resize_w, self.resize_h).swapaxes(0, 2)


def resize_bilinear(image: np.ndarray, width: int, height: int) -> np.ndarray:
    """``image`` (rows, columns, channels) resized to ``height`` x ``width``, bilinear
    (pixel centres aligned), in its dtype.

    Example:
        >>> resize_bilinear(np.arange(4, dtype=np.uint8).reshape(2, 2, 1) * 60, 4, 4)[..., 0]
        array([[  0,  15,  45,  60],
               [ 30,  45,  75,  90],
               [ 90, 105, 135, 150],
               [120, 135, 165, 180]], dtype=uint8)
    """
    h, w = image.shape[:2]
    ys = np.clip((np.arange(height) + 0.5) * h / height - 0.5, 0, h - 1)
    xs = np.clip((np.arange(width) + 0.5) * w / width - 0.5, 0, w - 1)
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    fy, fx = (ys - y0)[:, None, None], (xs - x0)[None, :, None]
    img = image.astype(np.float64).reshape(h, w, -1)
    top = img[y0][:, x0] * (1 - fx) + img[y0][:, x1] * fx
    bottom = img[y1][:, x0] * (1 - fx) + img[y1][:, x1] * fx
    out = top * (1 - fy) + bottom * fy
    if np.issubdtype(image.dtype, np.integer):
        out = np.rint(out)
    return out.astype(image.dtype).reshape((height, width, *image.shape[2:]))


class UndistortWrapper(ObservationWrapper):
    """A lens image (``distortion=True``) rectified with the camera's calibration."""

    def __init__(self, env: Any = None) -> None:
        super().__init__(env)
        camera = getattr(self.unwrapped, "camera", None)
        if camera is None or camera.lens is None:
            from dmxshm.duckietown import DropInError

            raise DropInError("UndistortWrapper needs an env made with distortion=True")
        from dmxshm.matrix.lens import undistorter

        self._remap = undistorter(camera.calibration)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return self._remap(observation)


__all__ = ["ActionWrapper", "DiscreteWrapper", "ObservationWrapper", "PyTorchObsWrapper",
           "ResizeWrapper", "SteeringToWheelVelWrapper", "UndistortWrapper", "Wrapper"]

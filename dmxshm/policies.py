"""Policies that drive robots: the built-ins, and loading the user's.

Shared by the network's agents (:mod:`dmxshm.network.agent`) and the spine's
agent (:mod:`dmxshm.spine.agent`), so it sits beside both, below them: it
imports only the robot's dimensions (:mod:`dmxshm.world.robot`).

A policy is given as a built-in name (``idle``, ``random``, ``lane-follow``),
as ``module:callable`` (the module found on ``sys.path``, which holds the
current folder for ``dmxshm run``), as ``path/to/file.py:callable``, or,
from Python, as the callable itself (a module-level function or class; a
lambda, a closure or anything defined in ``__main__`` cannot reach an agent
process, which never runs ``__main__``). The callable is either

* a function ``act(obs) -> wheels``, or
* a class; it is instantiated as ``Policy(robot_ids, seed)`` and its
  instances are called like the function. An optional ``reset(seed)`` method
  is called before the first step.

``obs`` is a numpy structured array with one record per robot of this agent,
in robot-id order (fields: :mod:`dmxshm.matrix.obs`); ``wheels`` is
array-like of shape ``(len(obs), 2)``: left and right wheel angular velocity
in rad/s. For gym mode to be reproducible whatever the number of agent
processes, a policy must decide each robot from that robot's observation and
its own random stream (the built-ins seed one generator per robot id).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from dmxshm.errors import DmxError
from dmxshm.world.robot import BASELINE_M, WHEEL_RADIUS_M

Policy = Callable[[np.ndarray], Any]


class AgentError(DmxError):
    """An agent could not be loaded, or answered with something unusable."""


class Idle:
    """Sends zero wheel speeds: the robots stand still."""

    def __init__(self, robot_ids: tuple[int, ...], seed: int = 0) -> None:
        self.n = len(robot_ids)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return np.zeros((self.n, 2))


POLICY_MAX_RAD_S = 25.0
"""The built-in policies' largest wheel speed: the engine's bound before the motor
model (:mod:`dmxshm.world.motor`, 27 rad/s) replaced it, kept so that their runs
(and the digests that pin them) are the same in every version."""


class RandomWheels:
    """Uniform random wheel speeds in [-12.5, 25] rad/s (``POLICY_MAX_RAD_S``),
    one generator per robot."""

    def __init__(self, robot_ids: tuple[int, ...], seed: int = 0) -> None:
        self.robot_ids = robot_ids
        self.reset(seed)

    LOW, HIGH = -POLICY_MAX_RAD_S / 2, POLICY_MAX_RAD_S

    def reset(self, seed: int) -> None:
        self.rngs = [np.random.default_rng([seed, rid]) for rid in self.robot_ids]
        self._u = np.empty((len(self.robot_ids), 2))

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        # What Generator.uniform(LOW, HIGH, 2) computes, bit for bit (low + range * u),
        # without its per-call overhead.
        for rng, row in zip(self.rngs, self._u, strict=True):
            rng.random(out=row)
        return self.LOW + (self.HIGH - self.LOW) * self._u


class LaneFollow:
    """Keeps each robot in the right lane: PD on lateral offset and heading.

    Reads the ``lane`` pseudo-sensor (offset from the right-lane centre,
    heading error, on-road flag) and the time-of-flight range, which slows
    the robot behind another one (and stops it :attr:`stop_range_m` short of an
    obstacle). With routes (an observation with ``route``), it follows its turn's
    lane through intersections and stops while ``may_go`` is 0: at a stop line until
    its turn, and behind a robot or an object close ahead that the time of flight's
    single ray misses (:class:`dmxshm.world.routes.Routes`): it waits there, as a
    Duckiebot's lane follower does, rather than push or steer round it.

    Attributes:
        speed_m_s: cruise speed.
        k_offset: rad/s of turn per metre of offset.
        k_heading: rad/s of turn per radian of heading error.
    """

    speed_m_s = 0.22
    k_offset = 10.0
    k_heading = 4.0
    stop_range_m = 0.15
    slow_range_m = 0.45

    def __init__(self, robot_ids: tuple[int, ...], seed: int = 0) -> None:
        self.n = len(robot_ids)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        offset = np.nan_to_num(obs["lane"][:, 0].astype(np.float64))
        heading = np.nan_to_num(obs["lane"][:, 1].astype(np.float64))
        tof = obs["tof_m"].astype(np.float64)
        gap = np.clip((tof - self.stop_range_m) / (self.slow_range_m - self.stop_range_m), 0, 1)
        v = self.speed_m_s * gap
        if "route" in (obs.dtype.names or ()):
            v = v * obs["route"][:, 1].astype(np.float64)  # may_go: 0 while it yields
        omega = -self.k_offset * offset - self.k_heading * heading
        left = (v - omega * BASELINE_M / 2) / WHEEL_RADIUS_M
        right = (v + omega * BASELINE_M / 2) / WHEEL_RADIUS_M
        return np.clip(np.stack([left, right], axis=1), -POLICY_MAX_RAD_S, POLICY_MAX_RAD_S)


BUILTINS: dict[str, type] = {"idle": Idle, "random": RandomWheels, "lane-follow": LaneFollow}


_FILE_MODULE = "dmxshm_agent_"  # the name prefix of modules loaded from file.py:callable


def agent_spec(agent: str | Callable[..., Any]) -> str:
    """``agent`` as the string an agent process resolves: a built-in name,
    ``module:callable``, or ``/absolute/path/file.py:callable``.

    Raises:
        AgentError: a callable that an agent process cannot import (a lambda, a
            closure, something defined in ``__main__``), or not a string at all.
    """
    if callable(agent) and not isinstance(agent, str):
        module = getattr(agent, "__module__", None)
        qual = getattr(agent, "__qualname__", "")
        if module == "__main__":
            raise AgentError(
                f"agent {qual or agent!r} is defined in __main__, which agent processes never "
                "run: put it in a module (e.g. mypolicy.py beside your script) and pass "
                "mypolicy.act, or the string 'mypolicy:act'")
        if not module or "<" in qual or not qual:
            raise AgentError(
                f"agent {agent!r} cannot reach an agent process: a lambda or a function "
                "defined inside another cannot be imported there; define it at the top "
                "level of a module")
        path = getattr(sys.modules.get(module), "__file__", None)
        if module.startswith(_FILE_MODULE) and path:
            module = path  # loaded from a file: the agent process loads that file too
        spec = f"{module}:{qual}"
        if resolve(spec) is not agent:  # a bound method, or a name rebound since
            raise AgentError(f"agent {agent!r} is not what {spec} names: give a module-level "
                             "function or class (for a method, wrap it in a function)")
        return spec
    if not isinstance(agent, str):
        raise AgentError(f"agent must be a built-in name, 'module:callable', "
                         f"'file.py:callable' or a callable, not {type(agent).__name__}")
    path, sep, attr = agent.rpartition(":")
    if sep and path.endswith(".py"):
        return f"{os.path.abspath(path)}:{attr}"
    return agent


def resolve(spec: str) -> Any:
    """The class or function named by ``spec`` (see :func:`agent_spec`), not yet
    instantiated.

    Raises:
        AgentError: unknown name, a module or file that does not import, a
            missing attribute, or something that is not callable.
    """
    if spec in BUILTINS:
        obj: Any = BUILTINS[spec]
    else:
        module_name, sep, attr = spec.rpartition(":")
        if not sep or not module_name or not attr:
            raise AgentError(f"agent {spec!r}: use a built-in ({', '.join(BUILTINS)}), "
                             "module:callable or path/to/file.py:callable")
        if module_name == "__main__":
            raise AgentError(f"agent {spec!r}: agents run in processes of their own, which "
                             "never run your __main__; put the policy in a module and name "
                             "it module:callable")
        module = _import_file(spec, module_name) if module_name.endswith(".py") else \
            _import_module(spec, module_name)
        obj = module
        for part in attr.split("."):
            try:
                obj = getattr(obj, part)
            except AttributeError as exc:
                raise AgentError(f"agent {spec!r}: {module_name} has no {attr!r}") from exc
    if not callable(obj):
        raise AgentError(f"agent {spec!r} is a {type(obj).__name__}, not a callable")
    return obj


def _import_module(spec: str, name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except Exception as exc:
        hint = ""
        if isinstance(exc, ModuleNotFoundError) and exc.name == name.partition(".")[0]:
            hint = (f" (looked on sys.path, which holds --app-dir, the current folder by "
                    f"default, for dmxshm run; give the file as "
                    f"path/to/{name.replace('.', '/')}.py:callable, or --app-dir its folder)")
        raise AgentError(f"agent {spec!r}: cannot import {name}: "
                         f"{type(exc).__name__}: {exc}{hint}") from exc


def _import_file(spec: str, path: str) -> ModuleType:
    """The module of the file ``path``, loaded once per process (by its absolute path)."""
    path = os.path.abspath(path)
    path = os.path.realpath(path)
    name = _FILE_MODULE + hashlib.sha1(path.encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    if not os.path.isfile(path):
        raise AgentError(f"agent {spec!r}: no file {path}")
    loader = importlib.util.spec_from_file_location(name, path)
    if loader is None or loader.loader is None:
        raise AgentError(f"agent {spec!r}: {path} is not a Python file")
    module = importlib.util.module_from_spec(loader)
    sys.modules[name] = module  # classes defined there pickle by this name
    try:
        loader.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise AgentError(f"agent {spec!r}: {path} raised {type(exc).__name__}: {exc}") from exc
    return module


def load_policy(spec: str, robot_ids: tuple[int, ...], seed: int = 0) -> Policy:
    """Build the policy named by ``spec`` for ``robot_ids`` (see :func:`resolve`)."""
    obj = resolve(spec)
    if inspect.isclass(obj):
        factory: Any = obj
        policy: Any = factory(robot_ids, seed)
        reset = getattr(policy, "reset", None)
        if callable(reset):
            reset(seed)
        return policy
    return obj


def as_wheels(answer: Any, n: int, role: str) -> np.ndarray:
    """The policy's answer as a float64 ``(n, 2)`` array, or a clear error."""
    try:
        wheels = np.asarray(answer, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise AgentError(f"{role}: the policy returned {type(answer).__name__}, which is not "
                         f"a ({n}, 2) array of wheel speeds: {exc}") from exc
    if wheels.shape != (n, 2):
        raise AgentError(f"{role}: the policy returned shape {wheels.shape}; expected ({n}, 2) "
                         "(left, right wheel speed in rad/s for each robot)")
    return wheels

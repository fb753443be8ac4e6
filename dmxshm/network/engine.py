"""The engine: owns physics, applies commands, publishes world state.

*Gym mode*: for step k the engine writes state k to every renderer, then
waits until the commands k of every robot have arrived (each agent's command
ring is a blocking ring: reading all of them is the barrier), steps physics
by ``dt_s``, and goes on with k+1. Nothing depends on timing, so the same
seed and config give a bit-identical run whatever the number of processes.

*Gym mode with a spine* (``--spine``): the same barrier, through Vulp's
pipeline in lockstep (:class:`~dmxshm.spine.simulation.SimulationSpine`):
one physics step of ``1 / spine_hz`` per step, the observation published at
step k is the state after the physics step of k - 2 (what a spine's agent
sees), and three stop cycles run before step 0.

*Realtime mode with a spine* (``--spine``): the spine's CAN cycles drive
the physics: each frame is one physics step of ``1 / spine_hz``, and the
engine replies with the wheel states of that step (:func:`_spine_loop`).

*Realtime mode*: physics advances against the wall clock, one step every
``dt_s``. Each step the engine takes the newest command of each agent if
one arrived, publishes the state, and never waits for anybody. A command
older than ``command_timeout_s`` stops its robot.

Commands are checked before they reach physics: a non-finite wheel speed,
or one beyond the motor's limit, is rejected, counted, and that robot is
stopped for the step.
"""

from __future__ import annotations

import hashlib
import sys
import time
from typing import Any

import numpy as np

from dmxshm.errors import RingClosedError
from dmxshm.logs import LogPart
from dmxshm.network.plan import Plan
from dmxshm.network.results import EngineResult
from dmxshm.proc.outcome import Terminated
from dmxshm.shm.ring import Ring
from dmxshm.spine.simulation import RESET_CYCLES, SimulationSpine
from dmxshm.view.rings import STATE_HZ, Throttle
from dmxshm.world.robot import MAX_WHEEL_SPEED_RAD_S
from dmxshm.world.state import poses_2d
from dmxshm.world.world import World


def check_commands(wheels: np.ndarray, rejected: np.ndarray) -> np.ndarray:
    """Zero the rows of ``wheels`` that are not finite or beyond the limit.

    Args:
        wheels: ``(R, 2)`` wheel speeds, rad/s.
        rejected: ``(R,)`` counters, incremented for each rejected row.

    Returns:
        the commands physics may use.

    Example:
        >>> rej = np.zeros(2, np.int64)
        >>> check_commands(np.array([[1.0, 2.0], [np.nan, 0.0]]), rej), rej
        (array([[1., 2.],
               [0., 0.]]), array([0, 1]))
    """
    if np.isfinite(wheels).all() and np.abs(wheels).max() <= MAX_WHEEL_SPEED_RAD_S:
        return wheels  # the usual case, in a quarter of the time
    bad = ~np.isfinite(wheels).all(axis=1) | (np.abs(wheels) > MAX_WHEEL_SPEED_RAD_S).any(axis=1)
    if bad.any():
        rejected += bad
        wheels = np.where(bad[:, None], 0.0, wheels)
    return wheels


class Rejections:
    """Each robot's rejected commands: counted, and the first one reported at once.

    The first rejected command of a robot is written to stderr as it happens
    (which robot, the values, the agent that sent them, the limit), so a
    policy that answers NaN or too fast is seen at its first step, not in a
    count at the end; what each robot received and had rejected goes to the
    summary, where a robot whose every command was rejected fails the run.
    """

    def __init__(self, plan: Plan) -> None:
        robots = plan.config.robots
        self.counts = np.zeros(robots, np.int64)
        self._received = np.zeros(robots, np.int64)
        self._everyone_checks = 0  # checks of every robot at once (gym mode: one a step)
        self._bad = np.zeros(robots, np.int64)
        self.first: dict[int, str] = {}
        self.owner = {int(r): f"agent-{a}" for a, rows in enumerate(plan.agent_robots)
                      for r in rows}

    @property
    def received(self) -> np.ndarray:
        """The commands each robot received."""
        return self._received + self._everyone_checks

    def check(self, wheels: np.ndarray, rows: np.ndarray, step: int) -> np.ndarray:
        """The commands of ``rows`` that physics may use (see :func:`check_commands`)."""
        if len(rows) == len(self.counts):  # every robot: one counter, no index (gym's path)
            self._everyone_checks += 1
        else:
            self._received[rows] += 1
        bad = self._bad[:len(rows)]
        safe = check_commands(wheels, bad)
        if safe is not wheels:  # something was rejected (the usual case returns wheels)
            self.counts[rows] += bad
            for j in np.flatnonzero(bad):
                robot = int(rows[j])
                if robot not in self.first:
                    self._report(robot, wheels[j], step)
            bad[:] = 0
        return safe

    def _report(self, robot: int, pair: np.ndarray, step: int) -> None:
        left, right = (float(v) for v in pair)
        why = "not finite" if not np.isfinite(pair).all() else \
            f"beyond the motors' {MAX_WHEEL_SPEED_RAD_S:g} rad/s"
        self.first[robot] = (f"({left:g}, {right:g}) rad/s from {self.owner.get(robot, '?')} "
                             f"at step {step}: {why}")
        print(f"\ndmxshm: warning: robot {robot}'s command {self.first[robot]}; wheel speeds "
              f"must be finite and within +-{MAX_WHEEL_SPEED_RAD_S:g} rad/s. The robot "
              "stands still while its commands are rejected.", file=sys.stderr, flush=True)


class LaneLog:
    """How well each robot kept its lane: worst offset, steps off the road,
    and how far it drove (path length)."""

    def __init__(self, world: World) -> None:
        self.world = world
        n = world.num_robots
        self.max_abs_offset_m = np.zeros(n)
        self.off_road_steps = np.zeros(n, np.int64)
        self.distance_m = np.zeros(n)
        self._last: np.ndarray | None = None
        self.seconds = 0.0

    def update(self, poses: np.ndarray) -> None:
        t0 = time.perf_counter()
        if self._last is not None:
            self.distance_m += np.hypot(*(poses[:, :2] - self._last[:, :2]).T)
        self._last = poses
        for i, (x, y, yaw) in enumerate(poses):
            lane = self.world.road_map.lane_pose(float(x), float(y), float(yaw))
            if not lane.on_road:
                self.off_road_steps[i] += 1
            elif np.isfinite(lane.offset_m):
                self.max_abs_offset_m[i] = max(self.max_abs_offset_m[i], abs(lane.offset_m))
        self.seconds += time.perf_counter() - t0

    def report(self) -> dict[str, Any]:
        return {"max_abs_offset_m": self.max_abs_offset_m.tolist(),
                "off_road_steps": self.off_road_steps.tolist(),
                "distance_m": self.distance_m.tolist()}


def run_engine(plan: Plan, index: int = 0) -> EngineResult:
    """Main loop of the engine process; returns its part of the summary."""
    cfg = plan.config
    if cfg.spine:  # one physics step per spine cycle (lockstep, or the spine's CAN cycle)
        world = World(cfg.map, cfg.robots, seed=cfg.seed, dt_s=1.0 / cfg.spine_hz, substeps=1)
    else:
        world = World(cfg.map, cfg.robots, seed=cfg.seed, dt_s=cfg.dt_s, substeps=cfg.substeps)
    state_rings = [Ring.attach(n, side="writer", role="engine", spin_us=plan.spin_us)
                   for n in (*plan.indexed("state.renderer"), *plan.indexed("state.camera"))]
    # With a spine process (realtime), the engine's only command source is the
    # spine's CAN cycle, carrying every robot; the engine replies with the
    # wheel states. In gym mode the spine is the engine's lockstep pipeline.
    spine_process = cfg.spine_process
    sources = [plan.ring("spine.frames")] if spine_process else plan.indexed("cmd.agent")
    cmd_rings = [Ring.attach(n, side="reader", role="engine", spin_us=plan.spin_us)
                 for n in sources]
    agent_rows = ([np.arange(cfg.robots)] if spine_process
                  else [np.array(rows) for rows in plan.agent_robots])
    spine_reply = (Ring.attach(plan.ring("spine.replies"), side="writer", role="engine")
                   if spine_process else None)
    rejections = Rejections(plan)
    part = LogPart(cfg.log, "engine") if cfg.log else None
    view = ViewState(plan)
    try:
        hook = plan.wait_for_start("engine", 0)

        def finish(result: EngineResult) -> EngineResult:
            """What every end reports, a stop's partial result too: the final poses and
            the rings' drops."""
            result.start_hook = hook
            result.final_poses = poses_2d(world.state()).tolist()
            result.cmd_drops = sum(r.stats().drops for r in cmd_rings)
            # The renderers' rings (a camera process takes only the newest state at its
            # ticks: what it skips is by design, not a drop).
            result.state_drops = sum(r.stats().drops for r in state_rings[:cfg.renderers])
            return result

        result: EngineResult | None = None
        try:
            if cfg.mode == "gym":
                result = _gym_loop(cfg, world, state_rings, cmd_rings, agent_rows, rejections,
                                   part, view)
            elif spine_reply is not None:
                result = _spine_loop(cfg, world, state_rings, cmd_rings[0], rejections,
                                     spine_reply, part, view)
            else:
                result = _realtime_loop(cfg, world, state_rings, cmd_rings, agent_rows,
                                        rejections, part, view)
            view.show(result.steps, world.sim_time_s, world.state(), result.late_steps or 0,
                      force=True)
            for ring in state_rings:
                ring.close_writer()
            if spine_reply is not None:
                spine_reply.close_writer()
            return finish(result)
        except Terminated as exc:  # stopped: its partial result counts what a finished one
            # does; stopped as it was ending (its loop done), the whole result
            partial = result if result is not None else exc.partial
            if isinstance(partial, EngineResult):
                exc.partial = finish(partial)
            raise
    finally:
        if part is not None:
            part.close()
        view.close()
        for ring in (*state_rings, *cmd_rings, *([spine_reply] if spine_reply else [])):
            ring.close()
        world.close()


class ViewState:
    """The engine's side of the live view: every robot's pose, a few times a second,
    in an overwrite ring nobody waits on (:mod:`dmxshm.view.rings`)."""

    def __init__(self, plan: Plan) -> None:
        self.ring = (Ring.attach(plan.ring("view.state"), side="writer", role="engine")
                     if plan.has("view.state") else None)
        self.throttle = Throttle(STATE_HZ)
        self.slot = np.zeros((), self.ring.dtype) if self.ring is not None else None

    def show(self, step: int, sim_time_s: float, states: np.ndarray, late_steps: int = 0,
             force: bool = False) -> None:
        if self.ring is None or not (force or self.throttle.due()):
            return
        slot = self.slot
        assert slot is not None
        slot["step"], slot["sim_time_s"], slot["late_steps"] = step, sim_time_s, late_steps
        slot["wall_time_s"] = time.time()
        slot["poses"] = poses_2d(states)
        self.ring.write(slot)

    def close(self) -> None:
        if self.ring is not None:
            self.ring.close_writer()
            self.ring.close()


def _log_step(part: LogPart | None, step: int, sim_time_s: float, states: np.ndarray,
              applied: np.ndarray, expired: np.ndarray | None = None) -> None:
    """Log state ``step`` (every robot's pose) and the command applied in that step."""
    if part is None:
        return
    wall_ns = time.time_ns()
    for robot in range(len(states)):
        part.pose(robot, states[robot], step, sim_time_s, wall_ns)
    part.wheels(step, sim_time_s, wall_ns, applied, expired)


def _result(world: World, steps: int, wall_s: float, physics_s: float, lanes: LaneLog,
            digest: Any, rejections: Rejections, expired: list[int] | None,
            **extra: Any) -> EngineResult:
    """The engine's part of the summary, from any of its loops."""
    return EngineResult(
        steps=steps, sim_time_s=world.sim_time_s, wall_time_s=wall_s, physics_s=physics_s,
        metrics_s=lanes.seconds, trajectory_digest=digest.hexdigest(),
        rejected_commands=rejections.counts.tolist(), expired_commands=expired,
        received_commands=rejections.received.tolist(), first_rejections=rejections.first,
        lane=lanes.report(), **extra)


def _publish(rings: list[Ring], step: int, sim_time_s: float, states: np.ndarray,
             timeout_s: float) -> None:
    for ring in rings:
        with ring.writing(timeout_s) as slot:
            slot["step"] = step
            slot["sim_time_s"] = sim_time_s
            slot["wall_time_s"] = time.monotonic()
            slot["robots"] = states


def _gym_loop(cfg: Any, world: World, state_rings: list[Ring], cmd_rings: list[Ring],
              agent_rows: list[np.ndarray], rejections: Rejections,
              part: LogPart | None = None, view: ViewState | None = None) -> EngineResult:
    clock = time.perf_counter
    digest = hashlib.sha256()
    wheels = np.zeros((cfg.robots, 2))
    everyone = np.arange(cfg.robots)
    physics_s = 0.0
    t_start = clock()
    lanes = LaneLog(world)
    # --spine: Vulp's pipeline in lockstep (SimulationSpine): the observation
    # published at step k is the state after the CAN cycle (physics step) of
    # step k - 2, and 3 stop cycles come first so that step 0 shows the start.
    spine = SimulationSpine(world) if cfg.spine else None
    if spine is not None:
        spine.stop_cycles(RESET_CYCLES)
    states = world.state() if spine is None else spine.observe()
    done = 0

    def result(wall_s: float) -> EngineResult:
        # Gym mode waits for every command and has no schedule: no command expires and
        # no step is late by construction, so neither is counted.
        return _result(world, done, wall_s, physics_s, lanes, digest, rejections, None,
                       late_steps=None, max_lag_s=None)

    try:
        for k in range(cfg.steps):
            seen_at = world.sim_time_s if spine is None else spine.observed_time_s
            _publish(state_rings, k, seen_at, states, cfg.wait_timeout_s)
            if view is not None:
                view.show(k, seen_at, states)
            # Bookkeeping after the handoff: it overlaps the renderers' work.
            poses = poses_2d(states)
            digest.update(poses.tobytes())
            lanes.update(poses)
            for ring, rows in zip(cmd_rings, agent_rows, strict=True):
                wheels[rows] = ring.read(cfg.wait_timeout_s)["wheels_rad_s"]
            safe = rejections.check(wheels, everyone, k)  # framework work, not physics
            _log_step(part, k, seen_at, states, safe)
            t0 = clock()
            if spine is None:
                world.apply_wheel_speeds(safe)
                world.step()
                states = world.state()
            else:
                spine.act(safe)
                states = spine.observe()
            physics_s += clock() - t0
            done = k + 1
    except Terminated as exc:  # stopped: what was done so far still reaches the summary
        exc.partial = result(clock() - t_start)
        raise
    wall_s = clock() - t_start
    digest.update(poses_2d(states).tobytes())
    return result(wall_s)


def _reply_to_spine(ring: Ring, step: int, states: np.ndarray, frame: int,
                    t_start: float) -> None:
    with ring.writing() as slot:
        slot["step"] = step
        slot["frame"] = frame
        slot["t_start"] = t_start
        slot["t_reply"] = time.perf_counter()
        slot["wheel_angle_rad"] = states["wheel_angle_rad"]
        slot["wheel_rate_rad_s"] = states["wheel_rate_rad_s"]


def state_due(sim_time_s: float, published: int, dt_s: float) -> bool:
    """Whether a spine-driven engine, having published ``published`` states,
    publishes (and hashes) the state now: one every ``dt_s`` of simulated time."""
    return sim_time_s >= published * dt_s - 1e-9


def _spine_loop(cfg: Any, world: World, state_rings: list[Ring], spine_cmd: Ring,
                rejections: Rejections, spine_reply: Ring,
                part: LogPart | None = None, view: ViewState | None = None) -> EngineResult:
    """Realtime with a spine: each CAN frame of the spine is one physics step.

    The engine takes the spine's frames in order (the oldest not read; a frame
    overwritten before it was read is counted in the command drops), applies
    its wheel commands, steps once (``1 / spine_hz``), and replies with the
    wheel states of that step. The renderers get the state every ``dt_s`` of
    simulated time and keep their sensor rates from it. The run ends when the
    spine closes its frames.
    """
    clock = time.monotonic
    digest = hashlib.sha256()
    everyone = np.arange(cfg.robots)
    lanes = LaneLog(world)
    physics_s = 0.0
    t_start = clock()
    done = published = 0

    def result(wall_s: float) -> EngineResult:
        # The spine expires the agents' commands (its own report counts them) and
        # keeps the schedule: the engine measures neither.
        return _result(world, done, wall_s, physics_s, lanes, digest, rejections, None,
                       late_steps=None, max_lag_s=None)

    def publish(states: np.ndarray) -> None:
        nonlocal published
        poses = poses_2d(states)
        digest.update(poses.tobytes())
        lanes.update(poses)
        _publish(state_rings, published, world.sim_time_s, states, cfg.wait_timeout_s)
        if view is not None:
            view.show(published, world.sim_time_s, states)
        if part is not None:
            wall_ns = time.time_ns()
            for robot in range(len(states)):
                part.pose(robot, states[robot], published, world.sim_time_s, wall_ns)
        published += 1

    try:
        publish(world.state())
        while True:
            try:
                frame = spine_cmd.read(cfg.wait_timeout_s, newest=False)
            except RingClosedError:
                break  # the spine ended: so does the physics
            t_taken = time.perf_counter()
            safe = rejections.check(frame["wheels_rad_s"], everyone, done)
            if part is not None:  # every physics step: its command (poses as published)
                part.wheels(done, world.sim_time_s, time.time_ns(), safe)
            t0 = time.perf_counter()
            world.apply_wheel_speeds(safe)
            world.step()
            physics_s += time.perf_counter() - t0
            states = world.state()
            _reply_to_spine(spine_reply, done, states, int(frame["step"]), t_taken)
            done += 1
            if state_due(world.sim_time_s, published, cfg.dt_s):
                publish(states)
    except Terminated as exc:  # stopped: what was done so far still reaches the summary
        exc.partial = result(clock() - t_start)
        raise
    return result(clock() - t_start)


def _realtime_loop(cfg: Any, world: World, state_rings: list[Ring], cmd_rings: list[Ring],
                   agent_rows: list[np.ndarray], rejections: Rejections,
                   part: LogPart | None = None, view: ViewState | None = None) -> EngineResult:
    clock = time.monotonic
    digest = hashlib.sha256()
    wheels = np.zeros((cfg.robots, 2))
    cmd_time = np.full(cfg.robots, -np.inf)
    expired = np.zeros(cfg.robots, np.int64)
    was_live = np.zeros(cfg.robots, bool)
    physics_s = 0.0
    late_steps = 0
    max_lag_s = 0.0
    steps = cfg.planned_steps
    lanes = LaneLog(world)
    t_start = clock()
    done = 0

    def result(wall_s: float) -> EngineResult:
        return _result(world, done, wall_s, physics_s, lanes, digest, rejections,
                       expired.tolist(), late_steps=late_steps, max_lag_s=max_lag_s)

    try:
        for k in range(steps):
            states = world.state()
            poses = poses_2d(states)
            digest.update(poses.tobytes())
            lanes.update(poses)
            _publish(state_rings, k, world.sim_time_s, states, cfg.wait_timeout_s)
            if view is not None:
                view.show(k, world.sim_time_s, states, late_steps)
            for ring, rows in zip(cmd_rings, agent_rows, strict=True):
                cmd = ring.try_read(newest=True)
                if cmd is not None:  # checked once, when it arrives
                    wheels[rows] = rejections.check(cmd["wheels_rad_s"], rows, k)
                    cmd_time[rows] = cmd["wall_time_s"]
            now = clock()
            live = now - cmd_time <= cfg.command_timeout_s
            expired += was_live & ~live  # a command that just ran out
            was_live = live
            applied = np.where(live[:, None], wheels, 0.0)
            # The command each robot had in step k: what replay applies there.
            _log_step(part, k, world.sim_time_s, states, applied, ~live)
            t0 = time.perf_counter()
            world.apply_wheel_speeds(applied)
            world.step()
            physics_s += time.perf_counter() - t0
            # Sleep until the wall clock reaches the simulated time of step k+1.
            # A late step is counted and the next one starts at once, so the
            # simulation catches up with the wall clock instead of drifting.
            ahead_s = t_start + (k + 1) * cfg.dt_s - clock()
            if ahead_s > 0:
                time.sleep(ahead_s)
            else:
                late_steps += 1
                max_lag_s = max(max_lag_s, -ahead_s)
            done = k + 1
        # The state after the last step, as gym mode's digest ends (so that a
        # replay of this run in gym mode can end with the same digest).
        digest.update(poses_2d(world.state()).tobytes())
    except Terminated as exc:  # stopped: what was done so far still reaches the summary
        exc.partial = result(clock() - t_start)
        raise
    return result(clock() - t_start)

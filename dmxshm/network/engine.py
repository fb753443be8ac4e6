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

*Realtime mode*: physics advances against the wall clock, one Bullet step
every ``state_dt_s`` (1/240 s by default: at least twice as fast as the
fastest sensor, so that each sensor sample reads a state of its own
instant). Each step the engine takes the newest command of each agent if one
arrived, publishes the state, and never waits for anybody. A command
older than ``command_timeout_s`` stops its robot.

Commands are checked before they reach physics: a non-finite wheel speed,
or one beyond the motor's limit, is rejected, counted, and that robot is
stopped for the step.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from dmxshm.errors import RingClosedError
from dmxshm.network.episodes import Episodes
from dmxshm.network.plan import Plan
from dmxshm.network.results import EngineResult
from dmxshm.network.role import Role, run_role
from dmxshm.network.taps import poses_of
from dmxshm.network.taps.digest import PoseDigest, StateDigest
from dmxshm.network.taps.log import StateLog
from dmxshm.network.taps.view import StatePoses
from dmxshm.shm.ring import Ring
from dmxshm.shm.slot import LIGHTS
from dmxshm.sim.robots import Robots
from dmxshm.sim.scoring import Scoring
from dmxshm.spine.simulation import RESET_CYCLES, SimulationSpine
from dmxshm.world.robot import MAX_WHEEL_SPEED_RAD_S
from dmxshm.world.routes import Routes
from dmxshm.world.state import poses_2d


def check_commands(wheels: np.ndarray, rejected: np.ndarray,
                   limit: float = MAX_WHEEL_SPEED_RAD_S) -> np.ndarray:
    """Zero the rows of ``wheels`` that are not finite or beyond ``limit``.

    Args:
        wheels: ``(R, 2)`` commands in the run's units (wheel speeds, rad/s, by default).
        rejected: ``(R,)`` counters, incremented for each rejected row.
        limit: the largest magnitude allowed (rad/s, or 1.0 for PWM duty).

    Returns:
        the commands physics may use.

    Example:
        >>> rej = np.zeros(2, np.int64)
        >>> check_commands(np.array([[1.0, 2.0], [np.nan, 0.0]]), rej), rej
        (array([[1., 2.],
               [0., 0.]]), array([0, 1]))
    """
    if np.isfinite(wheels).all() and np.abs(wheels).max() <= limit:
        return wheels  # the usual case, in a quarter of the time
    bad = ~np.isfinite(wheels).all(axis=1) | (np.abs(wheels) > limit).any(axis=1)
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

    In a PWM run (``--action pwm``) the checks are on the duty cycle (at most the
    motor model's limit) and :meth:`check` returns the duties it lets through;
    the engine's :class:`~dmxshm.world.motor.Motors` turn them into the wheel
    speeds of each physics step (lag and dead band included): what physics, the
    taps and the log see are always wheel speeds, so a replay applies them as
    they are.
    """

    def __init__(self, plan: Plan) -> None:
        cfg = plan.config
        robots = cfg.robots
        self.pwm = cfg.action == "pwm"
        self.limit = cfg.command_limit
        self.units = "PWM duty" if self.pwm else "rad/s"
        self.motor = cfg.motor
        self.counts = np.zeros(robots, np.int64)
        self._received = np.zeros(robots, np.int64)
        self._everyone_checks = 0  # checks of every robot at once (gym mode: one a step)
        self._bad = np.zeros(robots, np.int64)
        self.first: dict[int, str] = {}
        self.owner = plan.owners()

    @property
    def received(self) -> np.ndarray:
        """The commands each robot received."""
        return self._received + self._everyone_checks

    def check(self, wheels: np.ndarray, rows: np.ndarray, step: int) -> np.ndarray:
        """The commands of ``rows`` physics may use, in the run's units (see
        :func:`check_commands`; a PWM run's duties go through :class:`Motors` next)."""
        if len(rows) == len(self.counts):  # every robot: one counter, no index (gym's path)
            self._everyone_checks += 1
        else:
            self._received[rows] += 1
        bad = self._bad[:len(rows)]
        safe = check_commands(wheels, bad, self.limit)
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
        units, limit = self.units, self.limit
        what = "PWM duties" if self.pwm else "wheel speeds"
        why = "not finite" if not np.isfinite(pair).all() else \
            f"beyond the motors' {limit:g} {units}"
        self.first[robot] = (f"({left:g}, {right:g}) {units} from {self.owner.get(robot, '?')} "
                             f"at step {step}: {why}")
        print(f"\ndmxshm: warning: robot {robot}'s command {self.first[robot]}; {what} "
              f"must be finite and within +-{limit:g} {units}. The robot "
              "stands still while its commands are rejected.", file=sys.stderr, flush=True)


class Engine(Role[EngineResult]):
    """The engine process (see the module docstring): its loop steps physics and
    publishes; the digest, lane metrics, log and live view are its taps."""

    kind = "engine"

    def attach(self) -> None:
        cfg, plan = self.cfg, self.plan
        # A step per published state (realtime: each Bullet step, at least twice as
        # fast as the fastest sensor), or per spine cycle (lockstep, or its CAN cycle).
        self.world = world = self.own(cfg.engine_world())
        self.state_rings = [self.ring(n, "writer") for n in
                            (*plan.indexed("state.renderer"), *plan.indexed("state.camera"))]
        # With a spine process (realtime), the engine's only command source is the
        # spine's CAN cycle, carrying every robot; the engine replies with the
        # wheel states. In gym mode the spine is the engine's lockstep pipeline.
        spine_process = cfg.spine_process
        sources = [plan.ring("spine.frames")] if spine_process else plan.indexed("cmd.agent")
        self.cmd_rings = [self.ring(n, "reader") for n in sources]
        self.agent_rows = ([np.arange(cfg.robots)] if spine_process
                           else [np.array(rows) for rows in plan.agent_robots])
        self.spine_reply = (self.port("spine.replies", "writer", spin_us=None)
                            if spine_process else None)
        self.rejections = Rejections(plan)
        # Commands -> (a PWM run's motors) -> physics, and resets: sim's Robots.
        self.robots = Robots(world, cfg.motor_models if cfg.action == "pwm" else None)
        self.pose_digest = PoseDigest(with_end=not spine_process)
        turns = cfg.route_turns
        routes = (Routes.of(world.road_map, cfg.robots, cfg.seed, turns)
                  if turns is not None else None)
        self.digest = StateDigest(with_end=not spine_process)
        # Lanes, distance, contacts: what the episodes and the summary read.
        self.scoring = Scoring(world, routes, cfg.state_dt_s)
        # --episodes: the slots' robots scored each step, their scores to their slots.
        self.episodes: Episodes | None = None
        self.score_rings: list[tuple[Ring, np.ndarray]] = []
        if cfg.episodes:
            slots = range(cfg.agents, cfg.total_agents)
            self.episodes = Episodes(cfg.robots, [r for a in slots
                                                  for r in plan.agent_robots[a]],
                                     cfg.state_dt_s, cfg.episode_steps)
            self.score_rings = [(self.port(f"score.slot.{j}", "writer"),
                                 np.array(plan.agent_robots[a]))
                                for j, a in enumerate(slots)]
        self.tap([self.pose_digest, self.digest,
                  StateLog(cfg.log) if cfg.log else None,
                  StatePoses(plan.ring("view.state"), lambda: self.late_steps)
                  if plan.has("view.state") else None])
        # What the loops count, read by partial() after a stop too.
        self.done = 0
        self.physics_s = 0.0
        self.wall_s = 0.0
        self.late_steps: int | None = None
        self.max_lag_s: float | None = None
        self.expired: np.ndarray | None = None
        # Realtime: each taken command's age (taken - made), per command source.
        self.latency: list[list[float]] | None = None
        # Each robot's LEDs (RGBA of front left, front right, back left, back right), as
        # its outside agent last set them; never set: all 0.
        self.lights = np.zeros((cfg.robots, len(LIGHTS), 4), np.float32)

    def _set_lights(self, step: int, sim_time_s: float, rows: np.ndarray,
                    lights: np.ndarray) -> None:
        self.lights[rows] = lights
        self.taps.lights(step, sim_time_s, self.lights, rows)

    def loop(self) -> EngineResult:
        if self.cfg.mode == "gym":
            self._gym()
        elif self.spine_reply is not None:
            self._spine()
        else:
            self._realtime()
        return self._result()

    def partial(self, result: EngineResult | None) -> EngineResult:
        return self._ended(result if result is not None else self._result())

    def finish(self, result: EngineResult) -> EngineResult:
        for ring in self.state_rings:
            ring.close_writer()
        for ring, _ in self.score_rings:
            ring.close_writer()
        if self.spine_reply is not None:
            self.spine_reply.close_writer()
        return self._ended(result)

    def _result(self) -> EngineResult:
        """The engine's part of the summary, from any of its loops. Gym mode waits for
        every command and has no schedule: no command expires and no step is late by
        construction; with a spine, the spine expires the agents' commands (its own
        report counts them) and keeps the schedule: None, not counted."""
        world, rej = self.world, self.rejections
        steps = self.done
        if self.cfg.mode == "gym" and not self.cfg.spine:
            # The steps physics made: a stop (Ctrl-C) between a step and its count
            # must not report one step fewer than the simulated time says.
            steps = world.step_count
        return EngineResult(
            steps=steps, sim_time_s=world.sim_time_s, wall_time_s=self.wall_s,
            physics_s=self.physics_s, metrics_s=self.scoring.seconds,
            pose_digest=self.pose_digest.hexdigest(), digests=self.digest.hexdigests(),
            rejected_commands=rej.counts.tolist(),
            expired_commands=None if self.expired is None else self.expired.tolist(),
            received_commands=rej.received.tolist(), first_rejections=rej.first,
            command_latency=self._latency(),
            lane=self.scoring.report(), late_steps=self.late_steps, max_lag_s=self.max_lag_s,
            episodes=None if self.episodes is None else {
                "ended": self.episodes.ended, "resets": self.episodes.resets},
            taps=self.taps.results())

    def _latency(self) -> dict[str, dict[str, float]] | None:
        """Realtime: per agent (``agent-0``, ``slot-0``), the age of the commands the
        engine took, from their making (``sent_time_s``) to the step that applied them:
        count, median, 99th percentile and maximum, in seconds."""
        if self.latency is None:
            return None
        out = {}
        for a, ages in enumerate(self.latency):
            if ages:
                x = np.asarray(ages)
                out[self.plan.agent_name(a)] = {
                    "n": int(x.size), "p50_s": float(np.percentile(x, 50)),
                    "p99_s": float(np.percentile(x, 99)), "max_s": float(x.max())}
        return out

    def _ended(self, result: EngineResult) -> EngineResult:
        """What every end reports, a stop's partial result too: the final poses and the
        rings' drops (gym mode's renderers' rings only: in realtime, renderers and camera
        processes take the newest state at their ticks, from states published at least
        twice as fast as they sample, and what they skip is by design, not a drop)."""
        result.final_poses = poses_2d(self.world.state()).tolist()
        result.start_poses = [list(p) for p in self.world.start_poses]
        result.cmd_drops = sum(r.stats().drops for r in self.cmd_rings)
        gym = self.cfg.mode == "gym"
        result.state_drops = sum(r.stats().drops for r in self.state_rings[:self.cfg.renderers]
                                 if gym)
        return result

    def _gym(self) -> None:
        cfg, world, taps = self.cfg, self.world, self.taps
        clock = time.perf_counter
        wheels = np.zeros((cfg.robots, 2))
        everyone = np.arange(cfg.robots)
        sources = list(zip(self.cmd_rings, self.agent_rows, strict=True))
        lights_seen, resets_seen = [0] * len(sources), [0] * len(sources)
        episodes = self.episodes
        timeout_s = cfg.barrier_timeout_s  # with external slots: a client may come late
        t_start = clock()
        # --spine: Vulp's pipeline in lockstep (SimulationSpine): the observation
        # published at step k is the state after the CAN cycle (physics step) of
        # step k - 2, and 3 stop cycles come first so that step 0 shows the start.
        spine = SimulationSpine(world) if cfg.spine else None
        if spine is not None:
            spine.stop_cycles(RESET_CYCLES)
        states = world.state() if spine is None else spine.observe()
        try:
            for k in range(cfg.steps):
                seen_at = world.sim_time_s if spine is None else spine.observed_time_s
                _publish(self.state_rings, k, seen_at, states, timeout_s)
                # after the handoff: overlaps the renderers
                self.scoring.see(k, poses_of(states))
                taps.state(k, seen_at, states)
                if episodes is not None:  # scoring has just seen state k
                    episodes.score(states, self.scoring.lanes, self.scoring.began)
                    for ring, rows in self.score_rings:
                        with ring.writing(timeout_s) as record:
                            episodes.write(record, k, rows)
                for i, (ring, rows) in enumerate(sources):
                    got = ring.read(timeout_s)
                    wheels[rows] = got["wheels"]
                    if got["lights_seq"] != lights_seen[i]:  # an outside agent's lights
                        lights_seen[i] = int(got["lights_seq"])
                        self._set_lights(k, seen_at, rows, got["lights"])
                    if episodes is not None and got["resets"] != resets_seen[i]:
                        resets_seen[i] = int(got["resets"])
                        self._reset_robots(rows)
                safe = self.rejections.check(wheels, everyone, k)  # framework, not physics
                if episodes is not None:  # an ended episode's robot stands still
                    stopped = episodes.stopped
                    safe[stopped] = 0.0
                    self.robots.stop(np.flatnonzero(stopped))
                safe = self.robots.wheel_speeds(safe)  # (a spine: refused with PWM)
                taps.commands(k, seen_at, safe, None)
                t0 = clock()
                if spine is None:
                    self.robots.step(safe)
                    states = world.state()
                else:
                    spine.act(safe)
                    states = spine.observe()
                self.physics_s += clock() - t0
                self.done = k + 1
            taps.end(self.done, world.sim_time_s, states)
        finally:
            self.wall_s = clock() - t_start

    def _reset_robots(self, rows: np.ndarray) -> None:
        """An outside agent asked for a reset (gym with ``--episodes``, or realtime):
        its robots back at their start poses, at rest, their motors stopped, the jump
        no distance driven, their episodes (if any) new. Every loop resets here."""
        self.robots.reset(rows)
        self.scoring.moved(rows.tolist(), poses_2d(self.world.state(copy=False)))
        if self.episodes is not None:
            self.episodes.reset(rows)

    def _spine(self) -> None:
        """Realtime with a spine: each CAN frame of the spine is one physics step.

        The engine takes the spine's frames in order (the oldest not read; a frame
        overwritten before it was read is counted in the command drops), applies
        its wheel commands, steps once (``1 / spine_hz``), and replies with the
        wheel states of that step. The renderers get the state every
        ``state_every`` cycles (at least twice as fast as the fastest sensor) and keep
        their sensor rates from it. The run ends when the
        spine closes its frames.
        """
        cfg, world, taps = self.cfg, self.world, self.taps
        spine_cmd, reply = self.cmd_rings[0], self.spine_reply
        assert reply is not None
        clock = time.monotonic
        everyone = np.arange(cfg.robots)
        t_start = clock()
        published = 0
        every = cfg.state_every  # a property: once, not every CAN cycle

        def publish(states: np.ndarray) -> None:
            nonlocal published
            _publish(self.state_rings, published, world.sim_time_s, states, cfg.wait_timeout_s)
            self.scoring.see(published, poses_of(states))
            taps.state(published, world.sim_time_s, states)
            published += 1

        try:
            states = world.state()
            publish(states)
            while True:
                try:
                    frame = spine_cmd.read(cfg.wait_timeout_s, newest=False)
                except RingClosedError:
                    break  # the spine ended: so does the physics
                t_taken = time.perf_counter()
                safe = self.rejections.check(frame["wheels"], everyone, self.done)
                taps.commands(self.done, world.sim_time_s, safe, None)  # every physics step
                t0 = time.perf_counter()
                self.robots.step(safe)
                self.physics_s += time.perf_counter() - t0
                states = world.state()
                _reply_to_spine(reply, self.done, states, int(frame["step"]), t_taken)
                self.done += 1
                if state_due(self.done, every):
                    publish(states)
            taps.end(self.done, world.sim_time_s, states)
        finally:
            self.wall_s = clock() - t_start

    def _realtime(self) -> None:
        cfg, world, taps = self.cfg, self.world, self.taps
        clock = time.monotonic
        wheels = np.zeros((cfg.robots, 2))
        cmd_time = np.full(cfg.robots, -np.inf)
        self.expired = expired = np.zeros(cfg.robots, np.int64)
        was_live = np.zeros(cfg.robots, bool)
        self.late_steps, self.max_lag_s = 0, 0.0
        sources = list(zip(self.cmd_rings, self.agent_rows, strict=True))
        ages: list[list[float]] = [[] for _ in sources]
        resets_seen, lights_seen = [0] * len(sources), [0] * len(sources)
        wheels_seen = [0.0] * len(sources)  # the wall time of each source's last wheels
        self.latency = ages
        state_dt_s = cfg.state_dt_s  # a property: once, not every step
        t_start = clock()
        try:
            for k in range(cfg.planned_steps):
                states = world.state()
                _publish(self.state_rings, k, world.sim_time_s, states, cfg.wait_timeout_s)
                self.scoring.see(k, poses_of(states))
                taps.state(k, world.sim_time_s, states)
                for i, (ring, rows) in enumerate(sources):
                    cmd = ring.try_read(newest=True)
                    if cmd is not None:  # checked once, when it arrives
                        # An outside agent's slot counts what it passed on: a reset or a
                        # light pattern in a record this loop skipped is not lost.
                        if cmd["resets"] != resets_seen[i]:
                            resets_seen[i] = int(cmd["resets"])
                            self._reset_robots(rows)
                        if cmd["lights_seq"] != lights_seen[i]:
                            lights_seen[i] = int(cmd["lights_seq"])
                            self._set_lights(k, world.sim_time_s, rows, cmd["lights"])
                        made = float(cmd["wall_time_s"])
                        if made <= wheels_seen[i]:
                            continue  # no new wheels (lights only): the last command holds
                        wheels_seen[i] = made
                        ages[i].append(clock() - float(cmd["sent_time_s"]))
                        wheels[rows] = self.rejections.check(cmd["wheels"], rows, k)
                        cmd_time[rows] = cmd["wall_time_s"]
                now = clock()
                live = now - cmd_time <= cfg.command_timeout_s
                expired += was_live & ~live  # a command that just ran out
                was_live = live
                applied = np.where(live[:, None], wheels, 0.0)
                applied = self.robots.wheel_speeds(applied)  # duties: through the motors
                # The command each robot had in step k: what replay applies there.
                taps.commands(k, world.sim_time_s, applied, ~live)
                t0 = time.perf_counter()
                self.robots.step(applied)
                self.physics_s += time.perf_counter() - t0
                # Sleep until the wall clock reaches the simulated time of step k+1.
                # A late step is counted and the next one starts at once, so the
                # simulation catches up with the wall clock instead of drifting.
                ahead_s = t_start + (k + 1) * state_dt_s - clock()
                if ahead_s > 0:
                    time.sleep(ahead_s)
                else:
                    self.late_steps += 1
                    self.max_lag_s = max(self.max_lag_s, -ahead_s)
                self.done = k + 1
            # The state after the last step, as gym mode's digest ends (so that a
            # replay of this run in gym mode can end with the same digest).
            taps.end(self.done, world.sim_time_s, world.state())
        finally:
            self.wall_s = clock() - t_start


def run_engine(plan: Plan, index: int = 0) -> EngineResult:
    """Main function of the engine process; returns its part of the summary."""
    return run_role(Engine(plan, index))


def _publish(rings: list[Ring], step: int, sim_time_s: float, states: np.ndarray,
             timeout_s: float) -> None:
    for ring in rings:
        with ring.writing(timeout_s) as slot:
            slot["step"] = step
            slot["sim_time_s"] = sim_time_s
            slot["wall_time_s"] = time.monotonic()
            slot["robots"] = states


def _reply_to_spine(ring: Ring, step: int, states: np.ndarray, frame: int,
                    t_start: float) -> None:
    with ring.writing() as slot:
        slot["step"] = step
        slot["frame"] = frame
        slot["t_start"] = t_start
        slot["t_reply"] = time.perf_counter()
        slot["wheel_angle_rad"] = states["wheel_angle_rad"]
        slot["wheel_rate_rad_s"] = states["wheel_rate_rad_s"]


def state_due(cycles: int, every: int) -> bool:
    """Whether a spine-driven engine, after ``cycles`` physics steps, publishes (and
    hashes) the state now: one every ``every`` cycles
    (:attr:`~dmxshm.network.config.NetworkConfig.state_every`)."""
    return cycles % every == 0



"""The network's supervisor: create the rings, start the processes, watch, tear down.

:class:`Network` is usable from Python without the CLI::

    from dmxshm.network import Network, NetworkConfig

    with Network(NetworkConfig(robots=2, steps=300)) as net:
        summary = net.run()
    print(summary.steps_per_s, summary.trajectory_digest)

Processes are started, watched and stopped by the process layer
(:class:`~dmxshm.proc.supervisor.Supervisor`). Every exit path (normal end,
exception, Ctrl-C, SIGTERM, a child that dies) stops every child and unlinks
every ring: the registry owns them all.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from dmxshm import logs
from dmxshm.errors import DmxError
from dmxshm.matrix.noise import DUCKIEBOT as DUCKIEBOT_NOISE
from dmxshm.network.agent import run_agent
from dmxshm.network.camera import run_camera
from dmxshm.network.config import NetworkConfig, role_name
from dmxshm.network.engine import run_engine
from dmxshm.network.plan import Plan, TapSpec, make_plan
from dmxshm.network.ports import create_rings
from dmxshm.network.renderer import run_renderer
from dmxshm.network.runs import check_name, names_locked
from dmxshm.network.slot import run_slot
from dmxshm.network.spine import run_spine
from dmxshm.network.summary import Summary, randomization, summarize
from dmxshm.proc.outcome import Outcome
from dmxshm.proc.supervisor import Supervisor
from dmxshm.proc.watch import (
    ChildFailedError,
    Watch,
    WatchPolicy,
    explain,
    short_cause,
)
from dmxshm.profiling import Profiler, shm_sizes
from dmxshm.shm import signals
from dmxshm.shm.barrier import Barrier
from dmxshm.shm.clean import sweep
from dmxshm.shm.registry import Registry
from dmxshm.shm.ring import Ring
from dmxshm.spine.network_spine import (
    request_stop,
)
from dmxshm.view import rings as view_rings
from dmxshm.world.maps import load_map

# Once the engine has finished, how long the others get to finish too.
END_GRACE_S = 2.0

# A stopped network spine first sends its SHUTDOWN stops (a few cycles) and the
# engine takes them: this long before it is killed.
SPINE_STOP_GRACE_S = 5.0

MAINS: dict[str, Callable[..., object]] = {
    "engine": run_engine, "renderer": run_renderer, "agent": run_agent,
    "spine": run_spine, "camera": run_camera, "slot": run_slot}
"""The main function of each role."""


def view_meta(cfg: NetworkConfig, plan: Plan, extra: dict[str, Any] | None = None
              ) -> dict[str, Any]:
    """What the live view (and ``dmxshm ps``, :func:`dmxshm.connect`) need to know of a
    run (``view.meta``); ``extra``: what the caller adds (the view's address)."""
    extra = extra or {}
    return {"pid": os.getpid(), "started": time.time(), "mode": cfg.mode, "name": cfg.name,
            "robots": cfg.robots, "agents": cfg.agents, "map": cfg.map, "seed": cfg.seed,
            "map_size_m": list(load_map(cfg.map).size_m),
            "camera": list(cfg.camera_wh or (0, 0)), "dt_s": cfg.dt_s,
            "state_dt_s": cfg.state_dt_s,
            "steps": cfg.planned_steps, "spine": cfg.spine_process, "spine_hz": cfg.spine_hz,
            "sensor_rates_hz": dict(cfg.sensor_rates_hz),
            "renderer_robots": [list(r) for r in plan.renderer_robots],
            "external_agents": cfg.external_agents,
            # How long a wait of this run polls before it sleeps (an outside client too).
            "spin_us": plan.spin_us_resolved,
            # --episodes: rewards and ends in the slots, gym resets (connect_parallel)
            "episodes": cfg.episodes, "episode_steps": cfg.episode_steps,
            "action": cfg.action,
            "slots": [{"index": j, "robots": list(plan.agent_robots[cfg.agents + j]),
                       "segment": plan.rings.get(f"slot.{j}", "")}
                      for j in range(cfg.external_agents)],
            **extra}


class NetworkError(ChildFailedError):
    """A process of the network failed; the message names it and the cause.

    Attributes:
        role: role of the process that failed first (``renderer-0``...).
        pid: its pid.
        cause: ``"signal N (NAME)"``, ``"exit code N"`` or the exception.
        outcome: how it ended, in full (:class:`~dmxshm.proc.outcome.Outcome`).
    """

    @classmethod
    def of(cls, o: Outcome, longer_wait: str | None = "--timeout") -> NetworkError:
        """The error that reports the root cause ``o`` (the message: :func:`explain`)."""
        return cls(explain(o, longer_wait), role=o.name, pid=o.pid, cause=short_cause(o),
                   outcome=o)


class RunFailedError(DmxError):
    """The run ended, but not as asked: it failed after all. Its figures are still
    there (the CLI prints them, then the error).

    Attributes:
        summary: the run's summary.
    """

    def __init__(self, message: str, *, summary: Summary) -> None:
        super().__init__(message)
        self.summary = summary


class SpineStoppedError(RunFailedError):
    """A signal from outside the run stopped its spine: the spine sent its SHUTDOWN
    stops and the run ended early (a fault, not the end that was asked for)."""

    @classmethod
    def check(cls, summary: Summary, pid: int) -> None:
        """Raise if the spine of a run that was not interrupted was stopped by a signal."""
        report = summary.spine.report if summary.spine is not None else None
        if report is None or not report.stop_signal or summary.interrupted:
            return
        stopped_by = signal.Signals(report.stop_signal).name
        shutdown = report.states.get("SHUTDOWN", 0)
        raise cls(f"spine (pid {pid}) was stopped by {stopped_by} from outside the run after "
                  f"{report.cycles} cycles: it sent {shutdown} SHUTDOWN stops "
                  "and the run ended early.", summary=summary)


class RobotsIdleError(RunFailedError):
    """The run ended, but some robot of a built-in agent was never driven: it did
    nothing for them.

    Attributes:
        robots: the robots concerned.
        summary: the run's summary.
    """

    def __init__(self, message: str, *, robots: list[int], summary: Summary) -> None:
        super().__init__(message, summary=summary)
        self.robots = robots


class NoCommandsError(RobotsIdleError):
    """Realtime: some robot never received a command from its agent (a policy that
    hangs, or answers too slowly for the run's duration)."""

    @classmethod
    def check(cls, summary: Summary, owners: dict[int, str]) -> None:
        """Raise if some robot received no command at all."""
        # With a spine, the engine's commands are the spine's frames: what the agents
        # sent is what the spine took from them.
        counts = summary.spine.received_commands if summary.spine is not None else None
        idle = [r for r, n in enumerate(counts if counts is not None
                                        else summary.received_commands)
                if n == 0 and r in owners]  # the robots of built-in agents
        if not idle:
            return
        agents = sorted({owners.get(r, "?") for r in idle})
        hung = [a for a in agents if a in summary.unfinished]
        why = (f"{', '.join(hung)} never finished (stuck in its policy?) and was stopped"
               if hung else f"{', '.join(agents)} sent none in {summary.wall_time_s:.1f} s")
        raise cls(f"robot(s) {', '.join(map(str, idle))} never received a command: {why}. "
                  "A realtime policy must answer within the run; time one call of it, or "
                  "run longer (--duration).", robots=idle, summary=summary)


class CommandsRejectedError(RobotsIdleError):
    """Every command a robot received was rejected: the run did nothing for it."""

    @classmethod
    def check(cls, summary: Summary, owners: dict[int, str]) -> None:
        """Raise if some robot had every command it received rejected."""
        dead = [r for r, n in enumerate(summary.received_commands)
                if n and summary.rejected_commands[r] == n]
        if not dead:
            return
        lines = [f"robot {r}: all {summary.received_commands[r]} commands rejected, the "
                 f"first " + summary.first_rejections.get(r, "from " + owners.get(r, "?"))
                 for r in dead]
        raise cls("the robots never moved: " + "; ".join(lines) + ". Wheel speeds must be "
                  "finite and within the motors' limit (docs/agents.md).",
                  robots=dead, summary=summary)


class Network:
    """One run: engine, renderers and agents over shared-memory rings.

    Args:
        config: what the run is made of.
        taps: taps to add to the run's processes, beside the built-in ones
            (:class:`~dmxshm.network.plan.TapSpec`: a benchmark's floor, a test's
            counter); what each reports in the engine is ``Summary.taps[name]``.
    """

    def __init__(self, config: NetworkConfig, taps: Sequence[TapSpec] = (),
                 announce: dict[str, Any] | None = None) -> None:
        self.config = config
        self.announce = dict(announce or {})
        self.taps = tuple(taps)
        names = [spec.name for spec in self.taps]
        if len(set(names)) != len(names):
            raise ValueError(f"two taps of one name: {names}")
        self.registry: Registry | None = None
        self.plan: Plan | None = None
        self.supervisor = Supervisor()
        self.swept = 0
        self.unfinished: list[str] = []
        self._restore_sigterm = False
        self._state_ring: Ring | None = None
        self.profiler: Profiler | None = None
        self._log_claim: str | None = None

    # -- lifecycle -------------------------------------------------------------
    def __enter__(self) -> Network:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Sweep orphans, create the rings, start every process."""
        cfg = self.config
        # What can be checked here fails here, with a plain error, not in a child.
        cfg.preflight()
        if cfg.log:  # the claim: close() merges only this run's parts
            config = {k: v for k, v in dataclasses.asdict(cfg).items() if not k.startswith("_")}
            # The map's objects, as the run had them (a map file may change later).
            config["map_objects"] = [o.to_dict() for o in load_map(cfg.map).objects]
            config["camera_calibration"] = cfg.calibration
            # The noise's parameters (its draws are keyed by the seed: a replay redraws them).
            config["noise_model"] = DUCKIEBOT_NOISE.to_dict() if cfg.noise else None
            # Each robot's randomised parameters (redrawn by a replay from `randomize`).
            config["randomization"] = randomization(cfg)
            self._log_claim = logs.start(cfg.log, config)
        self._catch_sigterm()
        self.swept = len(sweep())
        self.supervisor = Supervisor()  # a network closed and started again starts afresh
        self.registry = reg = Registry()
        try:
            # A name checked and claimed (view.meta) in one step: see names_locked.
            with names_locked(cfg.name):
                check_name(cfg.name)
                self.plan = plan = self._create_rings(reg, make_plan(cfg))
            for spec in self.taps:
                spec.prepare(plan, reg)
            for role, index in cfg.processes():
                name = role_name(role, index)
                # The spine's handlers only record a stop: it goes to SHUTDOWN and sends
                # its stops (spine/state_machine.py), as a robot's spine must.
                self.supervisor.start(name, MAINS[role], plan, index, cpu=cfg.pins.get(name),
                                      on_stop=request_stop if role == "spine" else None)
            if cfg.profile:
                self.profiler = Profiler(
                    {"supervisor": os.getpid(), **self.supervisor.pids()},
                    cfg.profile_interval_s, shm=lambda: shm_sizes(reg.names))
        except BaseException:
            self.close()
            raise

    def _create_rings(self, reg: Registry, plan: Plan) -> Plan:
        """Every ring of ``plan`` (:data:`~dmxshm.network.ports.PORTS`) and the start
        barrier; returns the plan with their names."""
        plan, opened = create_rings(reg, plan)
        self._state_ring = opened.pop("state.renderer.0")  # read for progress
        meta = opened[view_rings.META]
        meta.bind("writer", "supervisor")
        view_rings.write_meta(meta, view_meta(self.config, plan, self.announce))
        start = Barrier.create(reg, "start", plan.parties)
        start.close()
        for ring in opened.values():
            ring.close()
        return dataclasses.replace(plan, start_barrier=start.name, taps=self.taps)

    def _catch_sigterm(self) -> None:
        # SIGTERM must unwind like Ctrl-C so that close() runs. Only from the
        # main thread, and only if nobody else handles SIGTERM already.
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            self._restore_sigterm = signals.install()

    def close(self) -> None:
        """Stop every child (SIGTERM, then SIGKILL) and unlink every ring."""
        try:
            self._stop_spine()
            self.supervisor.close()
            if self._state_ring is not None:
                self._state_ring.close()
                self._state_ring = None
        finally:
            try:
                if self.registry is not None:
                    self.registry.unlink_all()
                if self.config.log and self._log_claim is not None:
                    # A run that failed or was stopped: what its parts hold (a run refused
                    # at logs.start has no claim, and must not merge another run's parts).
                    logs.finish_unfinished(self.config.log, self._log_claim)
                    self._log_claim = None
            finally:
                # Last: a SIGTERM during the stop above is recorded, not fatal, and one
                # that nothing acted on goes to the default action now (uninstall).
                if self._restore_sigterm:
                    self._restore_sigterm = False
                    signals.uninstall()

    # -- running ---------------------------------------------------------------
    def progress(self) -> int:
        """Engine steps published so far."""
        return self._state_ring.stats().writes if self._state_ring else 0

    def run(self, on_progress: Callable[[int], None] | None = None,
            on_profile: Callable[[Profiler], None] | None = None) -> Summary:
        """Watch the processes until they all finish; return the summary.

        Args:
            on_progress: called with the engine's step count while it runs.
            on_profile: with ``profile`` on, called after each sample.

        Raises:
            NetworkError: a process died or raised; names it and the cause.
            CommandsRejectedError: every command of some robot was rejected.
            NoCommandsError: realtime: some robot never received a command.
            SpineStoppedError: a signal from outside stopped the spine.
            KeyboardInterrupt, SystemExit: Ctrl-C or SIGTERM; the exception's
                ``summary`` holds what was done until then (``interrupted``
                True), or None.
        """
        if self.plan is None:
            self.start()
        assert self.plan is not None
        sup = self.supervisor
        try:
            self._watch(on_progress, on_profile)
        except (KeyboardInterrupt, SystemExit) as exc:  # Ctrl-C, SIGTERM: tell what was done
            exc.summary = self._partial_summary()  # type: ignore[union-attr]
            raise
        failure = sup.failure(exclude=self.unfinished)
        if failure is not None:
            raise NetworkError.of(failure)
        results = {c.name: c.report.result for c in sup.children
                   if c.report is not None and c.report.ok}
        summary = summarize(self.plan, results)
        summary.unfinished = list(self.unfinished)
        for name in self.unfinished:  # said now, and again in the summary's own lines
            print(f"dmxshm: warning: {name} did not finish: it was still in its policy "
                  f"{END_GRACE_S:g} s after the run's end and was stopped; its robots' "
                  "commands expired.", file=sys.stderr, flush=True)
        if self.registry is not None:
            summary.shm_bytes = sum(shm_sizes(self.registry.names).values())
        if self.profiler is not None:
            self.profiler.stop()
            report = self.profiler.report()
            summary.processes = report.processes
            summary.profile = report
        if self.config.log:  # the processes' parts of the log, merged, with the summary
            summary.log = logs.finish(self.config.log, summary.to_dict())
            self._log_claim = None  # merged: nothing left for close()
        if self.config.spine_process:
            SpineStoppedError.check(summary, sup.child("spine").pid)
        owners = self.plan.owners()
        CommandsRejectedError.check(summary, owners)
        if self.config.mode == "realtime":  # gym mode's barrier waits for every command
            # An outside agent's robots may stand still: a warning (the summary's slots).
            NoCommandsError.check(summary, {r: who for r, who in owners.items()
                                            if who.startswith("agent-")})
        return summary

    def _watch(self, on_progress: Callable[[int], None] | None,
               on_profile: Callable[[Profiler], None] | None) -> None:
        """Gather outcomes until every child ended, a failure was reported, or the
        others overstayed the engine's end."""
        sup = self.supervisor
        engine = sup.child("engine")
        watch = Watch(sup, self.policy)  # the process layer's one policy, configured here
        engine_done_at: float | None = None
        silent = _Silence(self.config.wait_timeout_s)
        while watch.step():
            # (With a spine the engine waits for its frames: that wait times out, naming
            # the spine, where a hung spine is the cause.)
            if self.config.mode == "realtime" and not self.config.spine_process \
                    and engine.report is None \
                    and silent.for_too_long(self.progress()) and not engine.stopped():
                # Realtime: nobody waits for the engine, so nobody would time out on it.
                engine.mark_hung(silent.limit_s, f"hung: published no state for "
                                 f"{silent.limit_s:g} s (--timeout) while running; it was "
                                 "stopped")
                break
            if engine_done_at is None and engine.report is not None:
                engine_done_at = time.monotonic()
                if self.profiler is not None:  # the others are still there: USS, PSS now
                    self.profiler.final_sample()
            elif self.profiler is not None and self.profiler.maybe_sample() and on_profile:
                on_profile(self.profiler)
            if engine_done_at is not None and self._stragglers(engine_done_at):
                break
            signals.check()
            if on_progress is not None:
                on_progress(self.progress())

    def _partial_summary(self) -> Summary | None:
        """After Ctrl-C or SIGTERM: stop the children (they unwind and report what they
        did so far) and summarise that, marked interrupted; None if nothing came."""
        assert self.plan is not None
        # The spine first; its end ends the physics, whose end ends the renderers and
        # the agents: they get END_GRACE_S to finish by themselves (the policy).
        Watch(self.supervisor, self.policy).stop()
        results = {c.name: c.report.result for c in self.supervisor.children
                   if c.report is not None and c.report.result is not None}
        if "engine" not in results:
            return None
        try:
            summary = summarize(self.plan, results)
        except DmxError:
            return None
        summary.interrupted = True
        return summary

    @property
    def policy(self) -> WatchPolicy:
        """How this run's processes are watched and stopped: the process layer's one
        policy, with the spine first (SIGTERM makes it send its SHUTDOWN stops, which
        needs the engine still there to take them; the engine then ends with its
        frames), then END_GRACE_S for the others to end by themselves; a process
        stopped (SIGSTOP) for longer than ``--timeout`` fails the run in every mode."""
        return WatchPolicy(stop_first=("spine",), stop_first_grace_s=SPINE_STOP_GRACE_S,
                           end_grace_s=END_GRACE_S,
                           # Realtime: nobody waits for anybody, so nobody would time out
                           # on a stopped process: the watch itself names it.
                           stall_limit_s=self.config.wait_timeout_s)

    def _stop_spine(self) -> bool:
        """The spine first (the policy's ``stop_first``); whether the run has one."""
        return Watch(self.supervisor, self.policy).stop_first()

    def _stragglers(self, engine_done_at: float) -> bool:
        """After the engine's end, stop processes that do not finish; True if done.

        A realtime agent stuck in its policy is tolerated (its robots simply
        stopped, their commands expired): it is stopped after END_GRACE_S and
        listed in ``unfinished``. A renderer gets ``wait_timeout_s`` (it may be
        in the middle of a slow frame); in gym mode nothing may be left over.
        """
        waited = time.monotonic() - engine_done_at
        left = [c for c in self.supervisor.children if c.report is None and not c.ended]
        if not left:
            return False
        tolerated = self.config.mode == "realtime" and all(
            c.name.startswith("agent-") for c in left)
        limit = END_GRACE_S if tolerated else max(END_GRACE_S, self.config.wait_timeout_s)
        if waited <= limit:
            return False
        if tolerated:
            self.unfinished = [c.name for c in left]
        else:
            for c in left:  # reported as failures, with how long they were given
                c.mark_hung(waited)
        self.supervisor.stop(left)
        return True


class _Silence:
    """How long a counter (the engine's published states) has not moved."""

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self._last = -1
        self._since = time.monotonic()

    def for_too_long(self, count: int) -> bool:
        """Whether ``count`` stayed the same for longer than ``limit_s``; only once it
        moved (a process still starting has published nothing)."""
        now = time.monotonic()
        if count != self._last:
            self._last, self._since = count, now
            return False
        return count > 0 and now - self._since > self.limit_s


def run(config: NetworkConfig, *, taps: Sequence[TapSpec] = (),
        on_progress: Callable[[int], None] | None = None,
        on_profile: Callable[[Profiler], None] | None = None,
        announce: dict[str, Any] | None = None) -> Summary:
    """One whole run, what ``dmxshm run`` does: start, watch, summarise, tear down.

    Args:
        config: the run.
        taps: taps added to the run's processes (:class:`~dmxshm.network.plan.TapSpec`).
        on_progress: called with the engine's step count while it runs.
        on_profile: with ``config.profile``, called after each sample.

    Raises:
        NetworkError: a process died or raised; names it and the cause.
        ConfigError, AgentError, MapError: the run could not start.

    ``announce`` is added to what ``dmxshm ps`` lists of the run (``{"view": url}``).
    """
    with Network(config, taps=taps, announce=announce) as net:
        return net.run(on_progress, on_profile)

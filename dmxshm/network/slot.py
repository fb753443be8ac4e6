"""The slot role: serves one agent slot to a program the network did not start.

A network run with ``external_agents`` has a slot process per slot
(``slot-0``...). To the rest of the network it is an agent: it reads its
robots' observation rings and writes their command ring. To the outside it
serves the slot's segment (:mod:`dmxshm.shm.slot`, docs/abi.md): each
observation goes into the slot, each command a client writes there is checked
and passed on. What a client writes is never trusted: a command that answers
the wrong step, goes back in sequence or sets a reserved field is rejected,
counted and named, and the engine's own checks (finite, within the motors'
limit) follow for the values.

*Gym mode*: for each step the slot publishes the observation and waits for the
command answering it; the engine's barrier waits for the slot as for any
agent. Unclaimed, the slot waits ``connect_timeout_s`` for a client (and says
how to connect), then fails the run naming itself; a client that dies is named
and another may take its place within the same time. A client that holds the
slot but sends no command for ``wait_timeout_s`` fails the run too.

*Realtime mode*: observations are published as they come (a thread) and each
new command is passed on at once; an unclaimed slot's robots stand still
(their commands expire) and the run goes on.

*Garbage left behind*: a holder may write anywhere in the segment. Every
:data:`POLL_S` while it waits, and whenever a holder comes or goes, the slot
writes back what was written over of its own (the header, its line, the last
observation); a slot found free gets a clean command area and holder line, and
a new holder's sequence words are judged from its own first command on. A pid
from the holder line is named only once the kernel shows that process holding
the claim: otherwise the holder is "of unknown pid".
"""

from __future__ import annotations

import functools
import math
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmxshm.errors import DmxError, RingClosedError, RingTimeoutError
from dmxshm.network.plan import Plan
from dmxshm.network.results import SlotResult
from dmxshm.network.role import Role, run_role
from dmxshm.proc.child import supervisor_pid
from dmxshm.shm.slot import (
    FAILED,
    LIGHTS_ONLY,
    LIGHTS_SET,
    NOT_AWAITING,
    O_ACCEPTED,
    O_AWAITING,
    O_EXAMINED,
    O_HOLDER_PID,
    O_REJECTED,
    SlotSegment,
)
from dmxshm.shm.waiting import EMPTY_OR_INTERRUPTED, acquire, spin_until

POLL_S = 0.05
"""How often a waiting slot looks at its holder (and how late it may see a client
come or go)."""


@dataclass(frozen=True)
class Command:
    """A well-formed command taken from the slot, as the engine's ring carries it."""

    step: int
    sent_time_s: float
    wheels: np.ndarray
    reset: bool
    flags: int
    lights: np.ndarray | None

    def into(self, cmd: np.ndarray) -> None:
        """Update ``cmd``, the slot's record of the engine's command ring, which keeps
        everything the slot passed on: a wheel command replaces the wheels and their
        times (wall time: now); a lights-only one leaves them, so that the engine,
        which takes the newest record, still finds a wheel command it skipped; resets
        and light patterns are counted, so that none is lost in a skipped record."""
        if not self.flags & LIGHTS_ONLY:
            cmd["step"], cmd["sent_time_s"] = self.step, self.sent_time_s
            cmd["wheels"] = self.wheels
            cmd["wall_time_s"] = time.monotonic()
        cmd["resets"] += self.reset
        if self.lights is not None:
            cmd["lights"] = self.lights
            cmd["lights_seq"] += 1


class SlotError(DmxError):
    """A slot of a gym run was not driven: nobody claimed it in time, or its client
    stopped answering."""


class Slot(Role[SlotResult]):
    """Slot ``index``: agent ``agents + index`` of the plan, served to an outside client."""

    kind = "slot"

    def attach(self) -> None:
        cfg, plan, j = self.cfg, self.plan, self.index
        self.agent = a = cfg.agents + j
        self.robots = robots = plan.agent_robots[a]
        links = plan.links_of_agent(a)
        self.obs_rings = [self.ring(link.ring, "reader") for link in links]
        self.where = [np.array([robots.index(r) for r in link.robots]) for link in links]
        self.cmd_ring = self.port(f"cmd.agent.{a}", "writer")
        # --episodes: the engine's scores of this slot's robots, one record a step
        self.score_ring = (self.port(f"score.slot.{j}", "reader") if cfg.episodes else None)
        self.slot = slot = self.own(SlotSegment.attach(plan.ring(f"slot.{j}")))
        slot.serve(supervisor_pid())
        self.result = SlotResult(index=j, robots=list(robots))
        self._obs = np.zeros(len(robots), slot.record)  # _read fills, publish copies
        self.holding: dict[str, Any] | None = None  # the present holder's record
        self._holder_word = 0  # the holder line's pid when the present holder was seen
        self._doubt = 0.0  # since when the holder line names a pid nobody is shown to own
        self.last_seq = int(slot.cmd_head["seq"][0])  # the last cmd_seq examined
        self.prev_seq = 0  # ... of the present holder: its sequence words only grow
        self._restored_at = time.monotonic()  # when the slot last wrote back its own parts
        self._told_restored = False
        self.published = -1  # the step of the newest observation published
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._ended = threading.Event()
        # Gym mode: poll (yielding the core) before sleeping on the bell, as the rings do.
        self.spin_s = plan.spin_us_resolved / 1e6 if cfg.mode == "gym" else 0.0
        self.own(self, close=self._join)  # before the rings close (last attached first)
        self.tap(())

    # -- what the skeleton calls ------------------------------------------------------
    def loop(self) -> SlotResult:
        if self.cfg.mode == "gym":
            self._gym()
        else:
            self._realtime()
        return self.result

    def partial(self, result: SlotResult | None) -> SlotResult:
        self.slot.end()  # stopped: the client's next call says so
        return self._final(result if result is not None else self.result)

    def finish(self, result: SlotResult) -> SlotResult:
        self.slot.end()
        self.cmd_ring.close_writer()
        return self._final(result)

    def _final(self, result: SlotResult) -> SlotResult:
        self._join()
        self._look(self.published, final=True)  # a client that came at the very end
        result.obs_drops = sum(ring.stats().drops for ring in self.obs_rings)
        result.holders = [dict(h) for h in result.holders]
        return result

    # -- gym ----------------------------------------------------------------------------
    def _gym(self) -> None:
        cmd = np.zeros((), self.cmd_ring.dtype)
        try:
            while True:
                try:
                    obs, step, sim = self._read(self.cfg.barrier_timeout_s)
                except RingClosedError:
                    break
                # Awaiting first: a client takes an observation only while its step is
                # awaited, so a new client never answers a step its predecessor answered.
                scores = self._scores(step)
                self.slot.set_word(O_AWAITING, step)
                self._publish(obs, step, sim, scores)
                got = self._await(step)
                self.slot.set_word(O_AWAITING, NOT_AWAITING)
                got.into(cmd)
                self.cmd_ring.write(cmd, self.cfg.barrier_timeout_s)
                self.result.steps += 1
        except SlotError:
            self.slot.end(FAILED)
            raise

    def _await(self, step: int) -> Command:
        """The command answering ``step`` (see the module docstring for the limits)."""
        cfg, slot = self.cfg, self.slot
        since = time.monotonic()  # when the present wait (for a claim, or an answer) began
        told = False
        while True:
            got = self._take(lambda s: s == step, f"the network waits for step {step}")
            if got is not None:
                return got
            change = self._look(step)
            now = time.monotonic()
            if change:
                since = now  # a new client, or one that left: the clock starts again
            if self.holding is None:
                if not told:
                    told = self._announce(step)
                if now - since > cfg.connect_timeout_s:
                    left = self.result.holders[-1] if self.result.holders else None
                    who = f"pid {left['pid']}" if left and left["pid"] else "of unknown pid"
                    why = (f"its client ({who}) left at step {left['left_step']} "
                           "and no other claimed it" if left else "nobody claimed it")
                    raise SlotError(f"{self.name} (robots {self._robots()}): {why} within "
                                    f"{cfg.connect_timeout_s:g} s (--connect-timeout)")
            else:
                told = False
                if now - since > cfg.wait_timeout_s:
                    rejected = (f"; {self.result.rejected} of its commands were rejected, the "
                                f"first: {next(iter(self.result.first_rejections.values()))}"
                                if self.result.rejected else "")
                    raise SlotError(
                        f"{self.name}: its client ({self._who()}) sent no command "
                        f"for step {step} within {cfg.wait_timeout_s:g} s (--timeout)"
                        + rejected)
            self._sleep(slot)

    # -- realtime -------------------------------------------------------------------------
    def _realtime(self) -> None:
        self._thread = threading.Thread(target=self._forward, name=f"{self.name}-obs",
                                        daemon=True)
        self._thread.start()
        cmd = np.zeros((), self.cmd_ring.dtype)
        told = False
        while not self._ended.is_set():
            got = self._take(lambda s: s <= max(self.published, 0),
                             "it has not been observed yet")
            if got is not None:
                got.into(cmd)
                self.cmd_ring.write(cmd)
                self.result.steps += 1
                continue
            self._look(self.published)
            if self.holding is None and not told:
                told = self._announce(self.published)
            self._sleep(self.slot)
        if self._thread.is_alive():
            self._thread.join(1.0)

    def _forward(self) -> None:
        """The observation thread: each new observation into the slot, until the end."""
        try:
            while not self._stop.is_set():
                try:
                    obs, step, sim = self._read(0.25)
                except RingTimeoutError:
                    continue
                self._publish(obs, step, sim)
        except RingClosedError:
            pass
        finally:
            self._ended.set()

    def _join(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(2.0)

    # -- shared ---------------------------------------------------------------------------
    def _read(self, timeout_s: float) -> tuple[np.ndarray, int, float]:
        """The next observation of every link, in the slot's robot order."""
        obs = self._obs
        step, sim = 0, 0.0
        for ring, idx in zip(self.obs_rings, self.where, strict=True):
            got = ring.read(timeout_s)
            obs[idx] = got["obs"]
            step = int(got["step"])
            sim = float(got["obs"]["sim_time_s"][0])
        return obs, step, sim

    def _scores(self, step: int) -> np.ndarray | None:
        """``--episodes``: the engine's scores of this slot's robots at ``step``."""
        if self.score_ring is None:
            return None
        got = self.score_ring.read(self.cfg.barrier_timeout_s)
        if int(got["step"]) != step:
            raise SlotError(f"{self.name}: the engine's scores are of step {int(got['step'])}, "
                            f"its observation of step {step}")
        return got

    def _publish(self, obs: np.ndarray, step: int, sim: float,
                 scores: np.ndarray | None = None) -> None:
        self.slot.publish(step, sim, obs, scores)
        self.published = step

    def _take(self, step_ok: Any, why_not: str) -> Command | None:
        """A new, well-formed command from the slot; None if there is none. A malformed
        one is rejected, counted and named. A reset request (1) and a lights-only
        command are well-formed in realtime mode only (gym mode waits for a step's
        wheels, and reserves the reset word)."""
        slot = self.slot
        head = slot.cmd_head
        for _ in range(100):  # a torn copy: the client is writing; look again
            seq = int(head["seq"][0])
            if seq == self.last_seq or seq % 2:
                return None  # nothing new, or a write in progress
            step = int(head["step"][0])
            sent = float(head["sent_time_s"][0])
            reset = int(head["reset"][0])
            flags = int(head["flags"][0])
            wheels = slot.wheels.copy()
            lights = slot.lights.copy() if flags & LIGHTS_SET else None
            if int(head["seq"][0]) != seq:
                continue
            if self.holding is None or slot.word(O_HOLDER_PID) != self._holder_word:
                self._look(self.published)  # its sender is seen before it is judged
            backwards = seq < self.prev_seq
            self.last_seq = self.prev_seq = seq
            slot.set_word(O_EXAMINED, seq)
            realtime = self.cfg.mode == "realtime"
            resettable = reset == 1 and (realtime or self.cfg.episodes)
            reason = ("sequence" if backwards else "reset" if reset and not resettable
                      else "flags" if flags & ~(LIGHTS_SET | LIGHTS_ONLY)
                      or (flags & LIGHTS_ONLY and not (realtime and lights is not None))
                      else "time" if not math.isfinite(sent) else None
                      if step_ok(step) else "step")
            if reason is None:
                self.result.accepted += 1
                self.result.resets += resettable
                self.result.light_patterns += lights is not None
                slot.set_word(O_ACCEPTED, self.result.accepted)
                return Command(step, sent, wheels, resettable, flags, lights)
            self._reject(reason, {
                "sequence": f"its sequence word went back to {seq}",
                "reset": f"it asks for a reset ({reset}): 1 is a reset in a realtime "
                         "run or a gym run with --episodes, and other gym runs reserve "
                         "the field (0)",
                "time": f"its sent time is {sent!r}, not a finite number",
                "flags": f"its flags are {flags} (1 lights, 2 lights only: realtime, with "
                         "lights)",
                "step": f"it answers step {step}, but {why_not}"}[reason])
            return None
        return None

    def _reject(self, reason: str, what: str) -> None:
        res = self.result
        res.rejected += 1
        res.rejections[reason] = res.rejections.get(reason, 0) + 1
        self.slot.set_word(O_REJECTED, res.rejected)
        if reason not in res.first_rejections:
            res.first_rejections[reason] = f"from {self._who('a client of unknown pid')}: {what}"
            print(f"\ndmxshm: warning: {self.name} rejected a command "
                  f"{res.first_rejections[reason]} (docs/abi.md); rejected commands are "
                  "counted in the summary.",
                  file=sys.stderr, flush=True)

    def _look(self, step: int, final: bool = False) -> bool:
        """Note a client that came or left (``final``: only one that came; a client
        leaves at the end, when told the run ended); whether one did. Between holders
        the slot is made clean again, and the network's own parts are checked."""
        slot = self.slot
        word, changed = slot.word(O_HOLDER_PID), False
        if self.holding is not None and not final and word and word != self._holder_word:
            self._renamed(word, step)
        held = slot.held()
        if held and self.holding is None:
            if not word:
                return False  # still claiming: its record is not written yet
            self._restore(force=True)  # a new holder finds the network's parts whole
            self.prev_seq = 0  # and its sequence words are its own
            self._holder_word, self._doubt = word, 0.0
            _, at, who = slot.holder()
            self.holding = {"pid": word if slot.holds(word) else None, "name": who,
                            "claimed_at": at or time.time(), "claimed_step": max(step, 0),
                            "left_at": None, "left_step": None}
            self.result.holders.append(self.holding)
            return True
        if not held and self.holding is not None and not final:
            self.holding.update(left_at=time.time(), left_step=max(step, 0))
            if not self._ended.is_set() and self.cfg.mode == "gym":
                print(f"\ndmxshm: warning: {self.name}'s client ({self._who()}) left at step "
                      f"{step}; waiting up to {self.cfg.connect_timeout_s:g} s for another.",
                      file=sys.stderr, flush=True)
            self.holding = None
            changed = True
        if not held and not final:
            self._clean()
        self._restore(force=changed)
        return changed

    def _renamed(self, word: int, step: int) -> None:
        """The holder line names another pid than the holder seen: the pid is taken for
        the holder's if that holder still holds the claim (it wrote over its own pid),
        or if the holder's was never shown and this one holds the claim (a claim
        completed); a pid that holds the claim is a successor that took the slot
        between two looks (the holder dead, the next one quick). Neither shown and the
        slot held: a holder dying (its claim outlives its descriptors for a moment) or
        a successor of another PID namespace, told apart by whether it lasts."""
        slot, known = self.slot, self.holding["pid"] if self.holding else None
        if known and slot.holds(known):
            self._holder_word, self._doubt = word, 0.0
        elif slot.holds(word):
            if known is None and self.holding is not None:
                self.holding.update(pid=word, name=slot.holder()[2])
                self._holder_word, self._doubt = word, 0.0
            else:
                self._left(step)
        elif slot.held():
            now = time.monotonic()
            self._doubt = self._doubt or now
            if now - self._doubt >= POLL_S:
                self._left(step)
        # else: it left; the caller says so

    def _left(self, step: int) -> None:
        """The present holder is gone (another holds the slot: no warning)."""
        if self.holding is not None:
            self.holding.update(left_at=time.time(), left_step=max(step, 0))
        self.holding = None
        self._doubt = 0.0

    def _clean(self) -> None:
        """A free slot: a clean command area and holder line for the next client,
        unless a command is there that the network has yet to judge (the last one of a
        client that left: it is judged first)."""
        slot = self.slot
        seq = int(slot.cmd_head["seq"][0])
        if seq != self.last_seq and seq % 2 == 0:
            return
        if (self.last_seq or not slot.commands_clean()) and slot.reset_commands():
            self.last_seq = self.prev_seq = 0

    def _restore(self, force: bool = False) -> None:
        """Write back what a client wrote over of the network's own parts (every
        :data:`POLL_S` at most, unless ``force``), and say so once."""
        now = time.monotonic()
        if not force and now - self._restored_at < POLL_S:
            return
        self._restored_at = now
        damaged = self.slot.restore()
        if damaged and not self._told_restored:
            self._told_restored = True
            print(f"\ndmxshm: warning: {self.name}: a client wrote over the network's "
                  f"{', '.join(damaged)}; written back (docs/abi.md, what the network "
                  "rewrites).", file=sys.stderr, flush=True)

    def _who(self, unknown: str = "of unknown pid") -> str:
        """The present holder as messages name it: its pid, if shown to be its."""
        pid = self.holding["pid"] if self.holding else None
        return f"pid {pid}" if pid else unknown

    def _announce(self, step: int) -> bool:
        """Say, once per wait, how to take the slot."""
        name = self.cfg.name
        how = f"dmxshm.connect({name!r})" if name else "dmxshm.connect()"
        limit = (f"; the run fails if none comes within {self.cfg.connect_timeout_s:g} s"
                 if self.cfg.mode == "gym" else "; its robots stand still until one comes")
        print(f"\ndmxshm: {self.name} (robots {self._robots()}) waits for an outside agent "
              f"at step {max(step, 0)}: `with {how} as agent: ...` in Python, or attach to "
              f"{self.slot.name} (docs/abi.md){limit}.", file=sys.stderr, flush=True)
        return True

    def _sleep(self, slot: SlotSegment) -> None:
        if self.spin_s:
            spin_until(functools.partial(slot.cmd_moved, self.last_seq), self.spin_s)
            if slot.cmd_moved(self.last_seq):
                return
        try:
            acquire(slot.cmd_bell, POLL_S)
        except EMPTY_OR_INTERRUPTED:
            pass

    def _robots(self) -> str:
        return ", ".join(map(str, self.robots))


def run_slot(plan: Plan, index: int) -> SlotResult:
    """Main function of slot process ``index``."""
    return run_role(Slot(plan, index))

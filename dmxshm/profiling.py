"""Every process of a run, sampled through psutil: CPU, cores, switches, memory.

A :class:`Profiler` lives in the process that started the run (the network's
supervisor, the spine's launcher, a batch's parent). Every ``interval_s``
(default 0.5 s) it reads, for each process it watches: the CPU time spent in
user and system mode since the last sample (as a percentage of one core, so
a process can show up to 100 x cores), the CPU affinity and the core it last
ran on, voluntary and involuntary context switches, and the resident set
(RSS). At the first three samples, every ``full_every``-th after (default
every 10th: once each 5 s) and at the :meth:`Profiler.final_sample` it also
reads USS and PSS (their peaks are reported), which walk the process's page tables (``smaps``,
about 0.4 ms a call) and are the honest memory figures: RSS counts every
shared-memory page a process has touched, so the rings of a run would be
counted once per process that maps them. The shared memory a run created
is reported apart, once (``shm``, ``shm_bytes``).

The sampler measures its own CPU time: ``sampler_cpu_fraction`` is the
fraction of one core it used over the run (about 0.1% for a 5-process run at
the default interval on the 2-core VM; docs/profiling.md).

Example:
    >>> import os
    >>> p = Profiler({"me": os.getpid()}, interval_s=0.0)
    >>> p.sample(); p.sample()
    >>> [row.role for row in p.processes()]
    ['me']
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import psutil

DEFAULT_INTERVAL_S = 0.5
"""Time between two samples."""

FULL_EVERY = 10
"""USS and PSS are read at every this many samples (and when asked, e.g. as a
run ends)."""

MIN_RATE_S = 0.05
"""Shortest time over which a CPU% is computed: CPU time comes in 10 ms ticks."""


@dataclass
class ProcessRow:
    """One process over a run (:meth:`Profiler.processes`).

    ``cores_seen`` are the cores the process was found running on since its
    affinity last changed (a child pins itself after it starts), and
    ``stayed_in_affinity`` says whether they all lie in ``affinity``. CPU
    figures are percentages of one core; USS and PSS are None where they
    could not be read.
    """

    role: str
    pid: int
    affinity: list[int]
    affinity_changes: int
    cores_seen: list[int]
    stayed_in_affinity: bool
    cpu_percent_mean: float
    cpu_percent_peak: float
    user_percent_mean: float
    system_percent_mean: float
    rss_bytes_peak: int
    uss_bytes: int | None
    pss_bytes: int | None
    ctx_switches_voluntary: int
    ctx_switches_involuntary: int
    samples: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ProfileReport:
    """What a :class:`Profiler` saw (:meth:`Profiler.report`): the sampling, each
    process's row and CPU/RSS timeline, the run's shared memory."""

    interval_s: float
    samples: int
    mean_interval_s: float | None
    cores: int
    sampler_cpu_fraction: float
    sampler_cpu_s: float
    processes: list[ProcessRow]
    timeline: dict[str, dict[str, list[float]]]
    shm: dict[str, int]
    shm_bytes: int

    @classmethod
    def from_dict(cls, data: Mapping[str, Any],
                  processes: list[Mapping[str, Any]] | None = None) -> ProfileReport:
        """The report from its JSON (a run's ``profile``; its rows from ``processes``
        where the JSON writes them apart, as ``dmxshm run --json`` does)."""
        rows = processes if processes is not None else data.get("processes", [])
        fields = {k: data[k] for k in ("interval_s", "samples", "mean_interval_s", "cores",
                                       "sampler_cpu_fraction", "sampler_cpu_s")}
        return cls(**fields, processes=[ProcessRow(**row) for row in rows],
                   timeline=dict(data.get("timeline", {})), shm=dict(data.get("shm", {})),
                   shm_bytes=int(data.get("shm_bytes", 0)))

    def to_dict(self, with_processes: bool = True) -> dict[str, Any]:
        """JSON-ready, in the order the JSON outputs write it (without the rows where
        they are written apart: a run's ``processes``)."""
        out = asdict(self)
        out["processes"] = [row.to_dict() for row in self.processes]
        if not with_processes:
            del out["processes"]
        return out


@dataclass
class _Watched:
    role: str
    pid: int
    proc: psutil.Process | None
    light: bool = False
    first_ctx: tuple[int, int] | None = None
    last_ctx: tuple[int, int] | None = None
    rate_cpu: tuple[float, float] | None = None  # the baseline of the next CPU% rate
    rate_ctx: tuple[int, int] | None = None
    rate_t: float = 0.0
    affinity: list[int] = field(default_factory=list)
    affinity_changes: int = 0
    cores_seen: set[int] = field(default_factory=set)  # since the last affinity change
    cpu: list[float] = field(default_factory=list)
    user: list[float] = field(default_factory=list)
    system: list[float] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    rss: list[int] = field(default_factory=list)
    rss_peak: int = 0
    uss: int | None = None
    pss: int | None = None
    ended: bool = False
    live: dict[str, Any] = field(default_factory=dict)


class Profiler:
    """Samples a set of processes (see the module docstring).

    Args:
        processes: role name (``engine``, ``renderer-0``, ...) to pid.
        interval_s: time between samples (:meth:`maybe_sample`).
        full_every: read USS and PSS at every this many samples.
        shm: returns the run's shared-memory objects as ``{name: bytes}``.
        light: roles whose USS and PSS are read only by :meth:`final_sample`
            (a pinned spine: walking its page tables could stall a cycle).
    """

    def __init__(self, processes: Mapping[str, int] | None = None,
                 interval_s: float = DEFAULT_INTERVAL_S, full_every: int = FULL_EVERY,
                 shm: Callable[[], Mapping[str, int]] | None = None,
                 light: frozenset[str] = frozenset()) -> None:
        if interval_s < 0:
            raise ValueError(f"interval_s must be >= 0, not {interval_s}")
        if full_every < 1:
            raise ValueError(f"full_every must be >= 1, not {full_every}")
        self.interval_s = interval_s
        self.full_every = full_every
        self._shm = shm
        self._watched: list[_Watched] = []
        self._t0 = time.monotonic()
        self._next = self._t0
        self._samples = 0
        self._own_cpu_s = 0.0
        self._final = False
        self._stopped_at: float | None = None
        self._light = light
        self.shm_objects: dict[str, int] = {}
        for role, pid in (processes or {}).items():
            self.watch(role, pid)

    def watch(self, role: str, pid: int) -> None:
        """Add a process; a pid that is already gone is kept as ended."""
        try:
            proc: psutil.Process | None = psutil.Process(pid)
        except psutil.NoSuchProcess:
            proc = None
        self._watched.append(_Watched(role, pid, proc, light=role in self._light,
                                      ended=proc is None))

    # -- sampling --------------------------------------------------------------
    def maybe_sample(self) -> bool:
        """Sample if ``interval_s`` has passed since the last sample; True if it did."""
        if time.monotonic() < self._next:
            return False
        self.sample()
        return True

    def sample(self, full: bool | None = None) -> None:
        """Read every watched process now (``full``: also USS and PSS)."""
        c0 = time.thread_time()
        now = time.monotonic()
        self._next = now + self.interval_s
        if full is None:  # at the start (once things run), then every full_every-th
            full = self._samples in (1, 2) or self._samples % self.full_every == 0
        self._samples += 1
        for w in self._watched:
            if not w.ended:
                self._read(w, now, full)
        if self._shm is not None:
            self.shm_objects = dict(self._shm())
        self._own_cpu_s += time.thread_time() - c0

    def _read(self, w: _Watched, now: float, full: bool) -> None:
        assert w.proc is not None
        try:
            if not w.proc.is_running():  # gone, or its pid now belongs to another
                w.ended = True
                return
            with w.proc.oneshot():
                # Affinity first: a process that pins itself between the two
                # reads must not be seen on its old core under its new affinity.
                affinity = sorted(w.proc.cpu_affinity() or [])
                cpu_times = w.proc.cpu_times()
                # The instant of this process's CPU reading, not the sample's start: a
                # sample that reads many processes (their smaps on a full one) reaches
                # the later ones late, and a rate over the sample's start overstated
                # their CPU (221% was seen of a process pinned to one core).
                now = time.monotonic()
                ctx = w.proc.num_ctx_switches()
                rss = w.proc.memory_info().rss
                core = w.proc.cpu_num()
                status = w.proc.status()
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            w.ended = True
            return
        mem = None
        if full and (not w.light or self._final):
            try:
                mem = w.proc.memory_full_info()
            except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
                mem = None  # USS and PSS stay unknown; the rest is good
        user, system = cpu_times.user, cpu_times.system
        counts = (ctx.voluntary, ctx.involuntary)
        if w.first_ctx is None:
            w.first_ctx = counts
        w.last_ctx = counts  # totals: every read counts, even one too soon for a rate
        if w.affinity and affinity != w.affinity:  # e.g. the process pinned itself
            w.affinity_changes += 1
            w.cores_seen.clear()
        else:
            w.cores_seen.add(core)
        w.affinity = affinity
        w.rss_peak = max(w.rss_peak, rss)
        if mem is not None:  # peaks: a process that is ending gives its memory back
            w.uss = max(w.uss or 0, int(mem.uss))
            pss = int(getattr(mem, "pss", 0))
            w.pss = max(w.pss or 0, pss) if pss else w.pss
        if status == psutil.STATUS_ZOMBIE:
            w.ended = True
        live: dict[str, Any] = {"role": w.role, "pid": w.pid, "core": core, "rss_bytes": rss,
                                "affinity": affinity}
        if w.rate_cpu is not None:
            dt = now - w.rate_t
            if dt < max(0.5 * self.interval_s, MIN_RATE_S):
                # Too soon after the last rate for a new one (CPU time comes in
                # 10 ms ticks): memory, cores and totals only.
                w.live.update(core=core, rss_bytes=rss, affinity=affinity)
                return
            u = 100.0 * (user - w.rate_cpu[0]) / dt
            s = 100.0 * (system - w.rate_cpu[1]) / dt
            w.user.append(u)
            w.system.append(s)
            w.cpu.append(u + s)
            w.rss.append(rss)
            w.times.append(now - self._t0)
            assert w.rate_ctx is not None
            live.update(cpu_percent=u + s, vol_per_s=(counts[0] - w.rate_ctx[0]) / dt,
                        invol_per_s=(counts[1] - w.rate_ctx[1]) / dt)
        w.rate_cpu = (user, system)
        w.rate_ctx = counts
        w.rate_t = now
        w.live = live

    def final_sample(self) -> None:
        """A last full sample (USS and PSS of every process, light ones too) as a run ends."""
        self._final = True
        try:
            self.sample(full=True)
        finally:
            self._final = False

    def stop(self) -> None:
        """No more samples: the sampler's cost is reckoned up to now."""
        self._stopped_at = time.monotonic()

    # -- results ---------------------------------------------------------------
    @property
    def samples(self) -> int:
        """Samples taken so far."""
        return self._samples

    def live_rows(self) -> list[dict[str, Any]]:
        """The latest reading of each process (``cpu_percent`` after two samples)."""
        return [dict(w.live, ended=w.ended) for w in self._watched if w.live]

    def format_table(self) -> list[str]:
        """The live table: one line per process."""
        lines = [f"{'role':<12} {'pid':>7} {'core':>4} {'CPU%':>6} {'ctx/s':>7} "
                 f"{'invol/s':>7} {'RSS MiB':>8}"]
        for row in self.live_rows():
            cpu = row.get("cpu_percent")
            vol, invol = row.get("vol_per_s"), row.get("invol_per_s")
            lines.append(
                f"{row['role']:<12} {row['pid']:>7} {row['core']:>4} "
                f"{'-' if cpu is None else f'{cpu:.0f}':>6} "
                f"{'-' if vol is None else f'{vol + invol:.0f}':>7} "
                f"{'-' if invol is None else f'{invol:.0f}':>7} "
                f"{row['rss_bytes'] / 2**20:>8.1f}" + ("  (ended)" if row["ended"] else ""))
        return lines

    def processes(self) -> list[ProcessRow]:
        """Per process: role, pid, affinity, CPU% mean and peak, memory, switches
        (:class:`ProcessRow`)."""
        out = []
        for w in self._watched:
            first = w.first_ctx or (0, 0)
            last = w.last_ctx or first
            out.append(ProcessRow(
                role=w.role, pid=w.pid, affinity=w.affinity,
                affinity_changes=w.affinity_changes, cores_seen=sorted(w.cores_seen),
                stayed_in_affinity=w.cores_seen <= set(w.affinity),
                cpu_percent_mean=_mean(w.cpu), cpu_percent_peak=max(w.cpu, default=0.0),
                user_percent_mean=_mean(w.user), system_percent_mean=_mean(w.system),
                rss_bytes_peak=w.rss_peak, uss_bytes=w.uss, pss_bytes=w.pss,
                ctx_switches_voluntary=last[0] - first[0],
                ctx_switches_involuntary=last[1] - first[1], samples=len(w.cpu)))
        return out

    def timeline(self) -> dict[str, dict[str, list[float]]]:
        """Per process: ``{role: {"t_s": [...], "cpu_percent": [...], "rss_bytes": [...]}}``."""
        return {w.role: {"t_s": [round(t, 4) for t in w.times],
                         "cpu_percent": [round(c, 2) for c in w.cpu],
                         "rss_bytes": list(w.rss)} for w in self._watched}

    def _mean_interval(self) -> float | None:
        times = max((w.times for w in self._watched), key=len, default=[])
        return (times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else None

    @property
    def sampler_cpu_fraction(self) -> float:
        """CPU time of the sampling itself, as a fraction of one core, since the start."""
        end = self._stopped_at if self._stopped_at is not None else time.monotonic()
        return self._own_cpu_s / max(end - self._t0, 1e-9)

    def report(self) -> ProfileReport:
        """Everything (:meth:`ProfileReport.to_dict` for JSON)."""
        return ProfileReport(
            interval_s=self.interval_s, samples=self._samples,
            mean_interval_s=self._mean_interval(), cores=os.cpu_count() or 1,
            sampler_cpu_fraction=self.sampler_cpu_fraction, sampler_cpu_s=self._own_cpu_s,
            processes=self.processes(), timeline=self.timeline(),
            shm=dict(self.shm_objects), shm_bytes=sum(self.shm_objects.values()))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def shm_sizes(names: list[str], shm_dir: str = "/dev/shm") -> dict[str, int]:
    """``{name: bytes}`` of the shared-memory segments among ``names`` that exist.

    Semaphores (``sem.`` files) are counted too: they are 32 bytes each.
    """
    out = {}
    for name in names:
        for path in (os.path.join(shm_dir, name.lstrip("/")),
                     os.path.join(shm_dir, "sem." + name.lstrip("/"))):
            try:
                out[name] = os.stat(path).st_size
                break
            except OSError:
                continue
    return out


def steal_s() -> float | None:
    """CPU time, summed over this machine's CPUs, that its hypervisor gave to
    others since boot (``steal`` in /proc/stat); None where the OS does not say.

    The difference across a run tells a spine whose cycles overran whether the
    virtual machine itself was descheduled then.
    """
    return getattr(psutil.cpu_times(), "steal", None)

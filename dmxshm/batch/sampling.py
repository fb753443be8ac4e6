"""A batch's profile (``make_vec(..., profile=True)``): its processes sampled with
psutil in a background thread (:mod:`dmxshm.profiling`)."""

from __future__ import annotations

import threading

from dmxshm.errors import DmxError
from dmxshm.profiling import Profiler, ProfileReport, shm_sizes
from dmxshm.shm.registry import Registry


class Sampler:
    """Samples the processes ``pids`` (role -> pid) and the shared memory of
    ``registry`` every ``interval_s`` until :meth:`stop`.

    The thread holds the sampler, never the batch: a batch nobody holds may be
    collected while it samples.

    Raises:
        ValueError: ``interval_s`` not positive.
    """

    def __init__(self, pids: dict[str, int], interval_s: float, registry: Registry) -> None:
        if not interval_s > 0:
            raise ValueError(f"profile_interval_s must be positive, not {interval_s}")
        self.interval_s = interval_s
        self.profiler = Profiler(pids, interval_s, shm=lambda: shm_sizes(registry.names))
        self.lock, self.stopping = threading.Lock(), threading.Event()
        self.failure: list[str] = []
        self.thread = threading.Thread(target=self._sample, name="dmx-profile", daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        try:
            while not self.stopping.is_set():
                with self.lock:
                    self.profiler.sample()
                self.stopping.wait(self.interval_s)
        except Exception as exc:  # noqa: BLE001  reported by report()
            self.failure.append(f"{type(exc).__name__}: {exc}")
        finally:
            self.profiler.stop()

    def report(self) -> ProfileReport:
        """The profile so far.

        Raises:
            DmxError: sampling stopped at an error (named).
        """
        if self.failure:
            raise DmxError(f"profiling stopped: {self.failure[0]}")
        with self.lock:
            return self.profiler.report()

    def stop(self) -> None:
        """Stop sampling (the report stays readable)."""
        self.stopping.set()
        self.thread.join(5.0)

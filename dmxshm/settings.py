"""Every tunable default of dmxshm, defined once.

A leaf module (it imports nothing of dmxshm), so that every layer, the
shared-memory layer included, reads its defaults from here. Values a user
may change per run are arguments of the library calls and options of the
CLI; what stands here is their default and the reason for it.
"""

from __future__ import annotations

import os

SPIN_ENV = "DMXSHM_SPIN_US"
"""Environment variable that overrides every polling default below (microseconds;
0: never poll, always sleep on the semaphore)."""

RING_SPIN_US = 50.0
"""A ring wait polls this long before it sleeps on its semaphore, when every
process of the run has a core of its own: a semaphore wake-up across cores
costs 25-50 us, so a peer that answers within this time is caught sooner."""

SHARED_CORES_SPIN_US = 1000.0
"""With more processes than cores, a network's ring waits poll this long,
yielding the core at every turn (:func:`dmxshm.shm.waiting.spin_until`):
measured on 2 cores, 4 robots, no camera, 1520 steps/s against 1310 when
every wait sleeps."""

BATCH_SPIN_US = 0.0
"""How long a batch worker polls for the next command (yielding the core at every
turn) before it sleeps: not at all by default, chosen by measurement. On a busy
2-core machine (load 9, 2026-12-03; ``python scripts/bench_batch_spin.py``, 16 envs,
obs "state", 5 alternated pairs of 3 s) polling 1000 us made 0.70x the env-steps/s of
sleeping at once (median; range 0.58-1.09) at 3% more CPU per env-step: the polling
workers took the core from the caller and from each other. On a quiet machine polling
had been measured 5% faster (the command reaches a polling worker in 6-26 us instead of
30-70 us): give ``make_vec(..., spin_us=1000)`` or ``DMXSHM_SPIN_US=1000`` where every
process has a core of its own."""

WAIT_TIMEOUT_S = 10.0
"""The longest a process of a run waits for another (a ring or barrier wait)
before it checks why and gives up; ``dmxshm run --timeout``."""

BATCH_HANDOFF_US = 150.0
"""What handing a batch step to worker processes adds to it (``make_vec(...,
num_workers="auto")`` weighs it against the step's own time, :mod:`dmxshm.batch.choice`):
the command out, the last worker's post back and the wait at the barrier: 119 us
(median of three runs, 109-124 us) for 16 DB18 envs on 2 workers on the 2-core
development machine (``dmxshm bench vector --env v1 --physics db18 --obs state
--workers 2 --quick``, 2026-12-05 09:15 UTC), rounded up. ``DMXSHM_HANDOFF_US`` sets
it for a machine that measures otherwise."""
HANDOFF_ENV = "DMXSHM_HANDOFF_US"

BATCH_TIMEOUT_S = 60.0
"""The longest a batch ``step`` or ``reset`` waits for its workers: a step of
many camera worlds on a loaded machine takes seconds."""

START_TIMEOUT_S = 60.0
"""The longest a child process may take from its spawn to the start gate:
a fresh interpreter importing numpy and pybullet and building its worlds
takes seconds on a busy machine."""

STOP_GRACE_S = 2.0
"""How long a child gets to end after SIGTERM before it is killed."""

LIVENESS_POLL_S = 0.05
"""How often a blocked wait wakes up to look at its peers: a dead peer is
named within this much of its death, and an idle wait costs ~20 wake-ups/s."""


def spin_us(default_us: float) -> float:
    """``default_us``, unless the environment variable :data:`SPIN_ENV` sets another.

    Read at each call, so a value set after import counts.

    Raises:
        ValueError: the variable is not a number of microseconds >= 0.
    """
    value = os.environ.get(SPIN_ENV)
    if value is None:
        return default_us
    try:
        spin = float(value)
    except ValueError:
        raise ValueError(f"{SPIN_ENV}={value!r}: use a number of microseconds, e.g. 50 or 0"
                         ) from None
    if spin < 0:
        raise ValueError(f"{SPIN_ENV}={value!r}: must be 0 or more")
    return spin


def spin_env_set() -> bool:
    """Whether the user set :data:`SPIN_ENV` (their value then wins over our choices)."""
    return SPIN_ENV in os.environ

EPISODE_STEPS = 1000
"""A DuckieLane episode's length unless set: the env's ``max_episode_steps`` and
the registered spec's (one definition; importing it loads no simulator)."""

JSON_SCHEMA_VERSION = 2
"""Version of the ``--json`` outputs of ``dmxshm run`` and ``dmxshm spine``
(docs/json.md): keys may be added without a change; a key renamed or removed,
or a type changed, bumps it (listed in CHANGELOG)."""

LOCAL_HOST = "127.0.0.1"
"""Where the live view and the Foxglove server listen unless told: loopback only
(beyond it needs ``--allow-remote``)."""

VIEW_PORT = 8765
"""The live view's port (``dmxshm run --view``, ``dmxshm view``)."""

FOXGLOVE_PORT = 8765
"""The Foxglove live server's port (``dmxshm run --foxglove``): Foxglove's own
default, and the view's; when both are asked for on their defaults, the view
takes the next free port and prints it."""

# -- limits: the finite, documented maximum of every count and duration an option takes
# (docs/cli.md#limits). A value past one is refused before anything starts, naming the
# option: an absurd value (--timeout inf, --steps 1e20) would otherwise be accepted and
# then hang, overflow or end in a child's traceback.

MAX_STEPS = 10**9
"""The most steps of a run (``--steps``, ``--episode-steps``): some 9 hours at 30 000
steps/s."""

MAX_DURATION_S = 1e6
"""The longest run against the wall clock (``--duration``), about 11.6 days."""

MIN_TIMEOUT_S = 0.01
"""The shortest wait timeout (``--timeout``, ``--connect-timeout``, ``--command-timeout``):
below 10 ms a wait times out on an ordinary scheduling delay."""

MAX_TIMEOUT_S = 3600.0
"""The longest wait timeout: an hour. A longer one is no timeout at all (a stopped
process would hold the run for that long)."""

MAX_SEED = 2**64 - 1
"""Seeds are 0 .. 2^64-1 (numpy's generators take 64-bit words)."""

MAX_RATE_HZ = 10_000.0
"""The highest frequency (``--spine-frequency``, sensor rates): a 100 us period."""

MAX_COUNT = 10**9
"""The most of any other count an option takes (a benchmark's rounds, repeats)."""

MAX_PORT = 65535
"""TCP ports are 1 .. 65535 (0: let the system choose, where an option says so)."""

MAX_PID = 2**22
"""Process ids are 1 .. 2^22 (Linux's largest ``pid_max``)."""

MAX_CPU = 8191
"""CPU numbers are 0 .. 8191 (the kernel's largest ``NR_CPUS``); a pin to a CPU this
process may not use is refused by name."""

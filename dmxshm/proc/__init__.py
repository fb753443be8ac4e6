"""The one process layer: start a child, watch it, stop it, report how it ended.

* :mod:`~dmxshm.proc.supervisor`: :class:`Supervisor` starts children (a fresh
  interpreter each, never re-running the caller's ``__main__``), gathers their
  outcomes, names the root cause of a failure, and stops them.
* :mod:`~dmxshm.proc.watch`: the one watch policy (:class:`Watch`): after the
  first failure, a report grace for the others, then the root cause.
* :mod:`~dmxshm.proc.program`: a child that is a whole program
  (``python -m module ARGS``: the live view server), started and stopped.
* :mod:`~dmxshm.proc.child`: what every child does first (signals, death with
  its parent, pinning, its name), then its target.
* :mod:`~dmxshm.proc.outcome`: the typed :class:`Outcome` of a child.
* :mod:`~dmxshm.proc.gate`: the start gate every process of a run passes.
* :mod:`~dmxshm.proc.cpus`, :mod:`~dmxshm.proc.prctl`: CPUs and pinning plans;
  process names and death signals.
"""

"""The package's own names: ``dmxshm.make_vec`` is the real function, loaded on first use."""

from __future__ import annotations

import inspect
import pydoc
import subprocess
import sys

import pytest

import dmxshm

pytestmark = pytest.mark.timeout(60)


def test_make_vec_shows_its_real_signature_in_help() -> None:
    from dmxshm.batch import vector

    assert dmxshm.make_vec is vector.make_vec
    params = inspect.signature(dmxshm.make_vec).parameters
    assert list(params)[:3] == ["num_envs", "num_workers", "obs"]
    text = pydoc.render_doc(dmxshm.make_vec, renderer=pydoc.plaintext)
    assert "make_vec(num_envs" in text and "batch_size" in text
    assert "make_vec" in dir(dmxshm) and "make_vec" in dmxshm.__all__


def test_importing_dmxshm_does_not_load_the_batch() -> None:
    code = ("import sys, dmxshm; loaded = 'dmxshm.batch.vector' in sys.modules; "
            "from dmxshm import make_vec; print(loaded, make_vec.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=50, check=True)
    assert out.stdout.split() == ["False", "dmxshm.batch.vector"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_thing"):
        dmxshm.no_such_thing  # noqa: B018


def test_importing_dmxshm_registers_its_gymnasium_envs() -> None:
    # A user's process registers at import (a child of dmxshm's waits for gymnasium:
    # tests/proc/test_supervisor.py).
    code = ("import sys, dmxshm, gymnasium; "
            "print(*(f'dmxshm/DuckieLane-{v}' in gymnasium.registry for v in ('v0', 'v1')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=50, check=True)
    assert out.stdout.split() == ["True", "True"]


def test_a_childs_registration_runs_once_the_module_it_waits_for_is_imported(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    # The finder a child puts in front of gymnasium (dmxshm/__init__.py), on a module of
    # this test's own: what it calls sees the module imported whole, and it leaves.
    import importlib
    import os

    name = f"dmxshm_probe_{os.getpid()}"
    other = f"{name}_other"
    for module in (name, other):
        (tmp_path / f"{module}.py").write_text("VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[int] = []
    finder = dmxshm._AfterImport(name, lambda: seen.append(sys.modules[name].VALUE))
    sys.meta_path.insert(0, finder)
    try:
        importlib.import_module(other)
        assert seen == [] and finder in sys.meta_path  # not its module: it waits on
        importlib.import_module(name)
        assert seen == [42] and finder not in sys.meta_path
        importlib.reload(sys.modules[name])
        assert seen == [42]  # once
    finally:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
        for module in (name, other):
            sys.modules.pop(module, None)

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

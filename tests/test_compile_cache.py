"""`sciad.enable_compilation_cache`: a second process loads the programs the first one
compiled (JAX's cache-hit event fires, nothing new is written), with the same numbers;
bad arguments are refused. The program is a jitted gradient through `simulate` with
`throw=False`: with a Python float dt nothing of the argument checks enters it, so it
holds no host callback (JAX never stores a program with one)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

import sciad

ROOT = pathlib.Path(__file__).resolve().parents[1]

_SCRIPT = """
import json, sys, time
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, sciad
hits = []
jax.monitoring.register_event_listener(
    lambda event, **kw: hits.append(event) if event.endswith("cache_hits") else None
)
sciad.enable_compilation_cache(sys.argv[1], min_compile_time=0.0)
model = sciad.ode.Pendulum(length=1.3, gravity=9.81, damping=0.2)
y0 = jnp.array([0.5, 0.0])
loss = lambda m: sciad.simulate(m, y0, dt=0.01, n_steps=50, throw=False).y1[0]
g = jax.jit(jax.grad(loss))(model)
print(json.dumps({"hits": len(hits), "grad": float(g.length)}))
"""


def _run(cache):
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(cache)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_loads_instead_of_compiling(tmp_path):
    cache = tmp_path / "cache"
    first = _run(cache)
    entries = sorted(p.name for p in cache.iterdir())
    second = _run(cache)
    assert first["hits"] == 0 and entries, (first, entries)
    assert second["hits"] >= 1, second
    assert sorted(p.name for p in cache.iterdir()) == entries  # nothing compiled anew
    assert second["grad"] == first["grad"]


def test_bad_arguments_are_refused(tmp_path):
    file = tmp_path / "a_file"
    file.write_text("")
    with pytest.raises(ValueError, match="path must be a directory"):
        sciad.enable_compilation_cache(file)
    with pytest.raises(ValueError, match="min_compile_time"):
        sciad.enable_compilation_cache(tmp_path, min_compile_time=-1.0)

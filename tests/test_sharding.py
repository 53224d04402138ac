"""Ensembles shard across devices: a batch of runs split over two (forced host) devices
gives the same answers as one device."""

import os
from pathlib import Path
import subprocess
import sys
import textwrap

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_enable_x64", True)
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    import sciad

    assert len(jax.devices()) == 2, jax.devices()
    model = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
    thetas = jnp.linspace(0.1, 1.5, 8)

    def run(theta):
        return sciad.simulate(model, jnp.stack([theta, 0.0]), n_steps=300, dt=0.01).y1

    def loss(length, thetas):
        m = sciad.ode.Pendulum(length=length, gravity=9.81, damping=0.1)
        f = lambda th: sciad.simulate(m, jnp.stack([th, 0.0]), n_steps=300, dt=0.01).y1[0]
        return jnp.sum(jax.vmap(f)(thetas) ** 2)

    mesh = Mesh(np.array(jax.devices()), ("batch",))
    sharded = jax.device_put(thetas, NamedSharding(mesh, P("batch")))
    out = jax.jit(jax.vmap(run))(sharded)
    assert len(out.sharding.device_set) == 2, out.sharding
    ref = jnp.stack([run(t) for t in thetas])
    assert np.allclose(out, ref, rtol=1e-13), (out, ref)
    g_sharded = jax.jit(jax.grad(loss))(1.0, sharded)
    g_ref = jax.grad(loss)(1.0, thetas)
    assert np.isclose(g_sharded, g_ref, rtol=1e-12), (g_sharded, g_ref)
    print("sharded ok")
    """
)


def test_vmapped_runs_shard_across_two_devices():
    env = {
        **os.environ,
        "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
        "JAX_PLATFORMS": "cpu",
    }
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0 and "sharded ok" in proc.stdout, proc.stdout + proc.stderr

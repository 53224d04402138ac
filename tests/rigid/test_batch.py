"""Batches of worlds are `vmap`: 1,024 chains with their own initial states, masses and
controls in one call, identical to running them one by one."""

from pathlib import Path
import re

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid

from .scenes import chain

B = 1024


def base():
    actuators = [rigid.JointActuator.motor(f"link{i}", gear=2.0) for i in range(5)]
    control = rigid.InterpolatedControl(jnp.linspace(0.0, 0.2, 5), jnp.zeros((5, 5)))
    return chain(5, damping=0.1, actuators=actuators, control=control)


def world(model, scale, controls):
    return eqx.tree_at(lambda m: (m.mass, m.control.values), model, (model.mass * scale, controls))


@eqx.filter_jit
def rollout(model, scale, controls, q0, v0):
    m = world(model, scale, controls)
    return sciad.simulate(
        m, (q0, v0), dt=1e-3, n_steps=200, integrator=rigid.SemiImplicitEuler()
    ).y1


def test_vmap_over_1024_worlds():
    """Initial states, masses and controls all differ across the batch; three worlds
    checked against unbatched runs (to 1e-12)."""
    model = base()
    rng = np.random.default_rng(0)
    scale = jnp.asarray(rng.uniform(0.5, 2.0, size=(B, 1)))
    controls = jnp.asarray(rng.normal(size=(B, 5, 5)))
    q0 = jnp.asarray(rng.normal(size=(B, 5)) * 0.5)
    v0 = jnp.asarray(rng.normal(size=(B, 5)) * 0.5)
    batched = eqx.filter_jit(jax.vmap(lambda s, c, q, v: rollout(model, s, c, q, v)))(
        scale, controls, q0, v0
    )
    assert batched[0].shape == (B, 5) and bool(jnp.all(jnp.isfinite(batched[0])))
    for i in (0, 517, B - 1):
        one = rollout(model, scale[i], controls[i], q0[i], v0[i])
        np.testing.assert_allclose(batched[0][i], one[0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(batched[1][i], one[1], rtol=1e-12, atol=1e-12)


def test_batched_contact_step_keeps_one_chain_of_lapack_calls():
    """Under `vmap` on CPU, two batched LAPACK calls in flight at once can deadlock
    jaxlib's thread pool (docs/design.md, "Batched Cholesky on CPU"). The contact step
    of a model with contacts and hard limits must therefore factor M once and solve
    once (stacked right-hand sides), then factor and solve in the Newton loop and once
    after it, then (MuJoCo's Euler, the joint damping implicit) factor M + hD and solve
    once more: 3 factorisations and 4 solves (2 triangular solves each), all chained."""
    if jax.default_backend() != "cpu":
        pytest.skip("LAPACK custom calls are the CPU lowering")
    mujoco = pytest.importorskip("mujoco")
    ant = Path(__file__).resolve().parents[2] / "benchmarks" / "scenes" / "ant.xml"
    mj = rigid.from_mujoco(mujoco.MjModel.from_xml_path(str(ant)))
    assert mj.model.pairs and mj.model.limited.size
    y0 = jax.tree.map(lambda x: jnp.broadcast_to(x, (4, *x.shape)), mj.y0)
    state = mj.integrator.init(mj.model, 0.0, mj.y0)
    step = jax.vmap(lambda y: mj.integrator.step(mj.model, 0.0, mj.dt, y, state)[0])
    hlo = jax.jit(step).lower(y0).compile().as_text()
    calls = re.findall(r'custom_call_target="(lapack_\w+)"', hlo)
    assert sorted(calls) == ["lapack_dpotrf_ffi"] * 3 + ["lapack_dtrsm_ffi"] * 8, calls

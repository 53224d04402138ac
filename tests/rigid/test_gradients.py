"""Gradients through rigid-body rollouts: finite differences in float64 for masses,
inertias, link lengths, joint damping, controls and the initial state through 1,000
steps; agreement of the adjoints; forward mode; Hessian-vector products; vmap∘grad;
reverse-mode memory that grows sublinearly with the number of steps."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid

from ..helpers import fd_directional
from .scenes import chain, random_state
from .test_dynamics import mixed_model

# Its module-scoped fixtures are computed once: on one xdist worker, not on each.
pytestmark = pytest.mark.xdist_group("rigid-gradients")

N_STEPS = 1000
KNOTS = jnp.linspace(0.0, 1.0, 11)


def base_model():
    """The damped 5-link chain with a motor on every hinge, driven by interpolated
    controls (11 knots × 5 channels)."""
    actuators = [rigid.JointActuator.motor(f"link{i}", gear=5.0) for i in range(5)]
    control = rigid.InterpolatedControl(KNOTS, jnp.zeros((11, 5)))
    return chain(5, damping=0.2, actuators=actuators, control=control)


MODEL = base_model()
Y0 = random_state(MODEL, 3, scale=0.5)


def params_of(model, y0):
    return dict(
        mass=model.mass,
        inertia=model.inertia,
        pos=model.pos,
        damping=jnp.stack([j.damping for j in model.joints]),
        controls=model.control.values,
        q0=y0[0],
        v0=y0[1],
    )


def with_params(p):
    m = eqx.tree_at(
        lambda m: (m.mass, m.inertia, m.pos, m.control.values),
        MODEL,
        (p["mass"], p["inertia"], p["pos"], p["controls"]),
    )
    joints = tuple(
        eqx.tree_at(lambda j: j.damping, j, p["damping"][i]) for i, j in enumerate(m.joints)
    )
    return eqx.tree_at(lambda m: m.joints, m, joints), (p["q0"], p["v0"])


def loss(p, adjoint=sciad.CheckpointAdjoint()):
    model, y0 = with_params(p)
    q, v = sciad.simulate(
        model, y0, dt=1e-3, n_steps=N_STEPS, integrator=rigid.SemiImplicitEuler(), adjoint=adjoint
    ).y1
    return jnp.sum(jnp.sin(q)) + 0.1 * jnp.sum(v**2)


P0 = params_of(MODEL, Y0)
P0["controls"] = jnp.asarray(np.random.default_rng(0).normal(size=(11, 5)))
# Strongly typed leaves: perturbed copies (x + εd) then hit the same compiled function.
P0 = {k: jnp.array(x, dtype=jnp.float64) for k, x in P0.items()}
RNG = np.random.default_rng(1)
DIRECTION = {k: jnp.asarray(RNG.normal(size=np.shape(x))) for k, x in P0.items()}

grad_jit = jax.jit(jax.grad(loss))
# Forward mode, (value, directional derivative): its values give the central
# differences (one compiled program instead of a second, value-only one).
jvp_jit = jax.jit(lambda p, d: jax.jvp(loss, (p,), (d,)))


@pytest.fixture(scope="module")
def grad():
    return grad_jit(P0)


@pytest.mark.parametrize("name", list(P0))
def test_gradient_matches_finite_differences(grad, name):
    """∂L/∂θ · d against a central difference along a random direction d, for each
    parameter group, through 1,000 semi-implicit Euler steps with CheckpointAdjoint:
    relative agreement 1e-6 (float64, ε = 1e-6)."""
    d = {k: (DIRECTION[k] if k == name else jnp.zeros_like(x)) for k, x in P0.items()}
    want = float(fd_directional(lambda p: jvp_jit(p, d)[0], P0, d, eps=1e-6))
    got = float(sum(jnp.sum(grad[k] * d[k]) for k in P0))
    assert abs(got - want) < 1e-6 * max(1.0, abs(want)), (name, got, want)


@pytest.mark.slow
def test_adjoints_and_forward_mode_agree(grad):
    """DirectAdjoint's gradient equals CheckpointAdjoint's (to 1e-12), and forward mode
    (jvp) gives the same directional derivative."""
    direct = jax.jit(jax.grad(lambda p: loss(p, sciad.DirectAdjoint())))(P0)
    for k in P0:
        np.testing.assert_allclose(
            direct[k], grad[k], rtol=1e-12, atol=1e-12 * float(jnp.max(jnp.abs(grad[k])))
        )
    _, tangent = jvp_jit(P0, DIRECTION)
    want = sum(jnp.sum(grad[k] * DIRECTION[k]) for k in P0)
    assert abs(float(tangent - want)) < 1e-10 * abs(float(want))


@pytest.mark.slow
def test_hessian_vector_product():
    """Forward-over-reverse HVP against central differences of the gradient (relative
    1e-5), through the 1,000 checkpointed steps."""
    hvp = jax.jit(lambda p, d: jax.jvp(jax.grad(loss), (p,), (d,))[1])(P0, DIRECTION)
    fd = fd_directional(grad_jit, P0, DIRECTION, eps=1e-5)
    for k in P0:
        scale = float(jnp.max(jnp.abs(fd[k])))
        np.testing.assert_allclose(hvp[k], fd[k], rtol=0, atol=1e-5 * max(scale, 1.0))


@pytest.mark.slow
def test_reverse_mode_memory_is_sublinear():
    """XLA's memory for the gradient: 4× the steps (1,024 → 4,096) costs
    CheckpointAdjoint under 2.5× the memory (O(√n); measured 4.1 → 7.6 MB, 1.84×), but
    DirectAdjoint about 4× (O(n); measured 19 → 75 MB, 3.90×)."""

    def memory(n, adjoint):
        def f(p):
            model, y0 = with_params(p)
            q, v = sciad.simulate(
                model, y0, dt=1e-3, n_steps=n, integrator=rigid.SemiImplicitEuler(), adjoint=adjoint
            ).y1
            return jnp.sum(q**2) + jnp.sum(v**2)

        stats = jax.jit(jax.grad(f)).lower(P0).compile().memory_analysis()
        return stats.temp_size_in_bytes

    ck = memory(4096, sciad.CheckpointAdjoint()) / memory(1024, sciad.CheckpointAdjoint())
    direct = memory(4096, sciad.DirectAdjoint()) / memory(1024, sciad.DirectAdjoint())
    assert ck < 2.5, ck
    assert direct > 3.5, direct


@pytest.mark.slow
def test_vmap_of_grad_over_initial_states(grad):
    """vmap∘grad over 3 initial velocities equals the gradients taken one by one."""
    v0s = jnp.stack([P0["v0"], 0.5 * P0["v0"], -P0["v0"]])
    g_v0 = jax.jit(jax.vmap(lambda v: jax.grad(loss)({**P0, "v0": v})["mass"]))(v0s)
    np.testing.assert_allclose(g_v0[0], grad["mass"], rtol=1e-12)
    one = grad_jit({**P0, "v0": v0s[2]})["mass"]
    np.testing.assert_allclose(g_v0[2], one, rtol=1e-12)


@pytest.mark.parametrize(
    "integrator",
    [
        pytest.param(rigid.SemiImplicitEuler(), marks=pytest.mark.slow),
        pytest.param(rigid.RKMK4(), marks=pytest.mark.slow),
    ],
    ids=["euler", "rkmk4"],
)
def test_gradient_through_quaternion_joints(integrator):
    """Free and ball joints (quaternion coordinates; with RKMK4, its dexp⁻¹ stages):
    ∂L/∂(masses, inertias, initial velocity) through 200 steps against central
    differences (relative 1e-6)."""
    model = mixed_model()
    y0 = random_state(model, 9, scale=0.5)

    def f(mass, inertia, v0):
        m = eqx.tree_at(lambda m: (m.mass, m.inertia), model, (mass, inertia))
        q, v = sciad.simulate(m, (y0[0], v0), dt=2e-3, n_steps=200, integrator=integrator).y1
        return jnp.sum(q[3:7] * jnp.array([1.0, -2.0, 0.5, 3.0])) + jnp.sum(jnp.sin(v))

    args = tuple(jnp.array(a, dtype=jnp.float64) for a in (model.mass, model.inertia, y0[1]))
    # One compiled program gives the gradient and the values for the differences.
    value_and_grad = jax.jit(jax.value_and_grad(f, argnums=(0, 1, 2)))
    g = value_and_grad(*args)[1]

    def fj(*a):
        return value_and_grad(*a)[0]

    rng = np.random.default_rng(4)
    for k in range(3):
        d = jnp.asarray(rng.normal(size=np.shape(args[k])))
        shifted = lambda e, d=d, k=k: fj(*[a + e * d if i == k else a for i, a in enumerate(args)])
        fd = (shifted(1e-6) - shifted(-1e-6)) / 2e-6
        got = jnp.sum(g[k] * d)
        assert abs(float(got - fd)) < 1e-6 * max(1.0, abs(float(fd))), (k, got, fd)

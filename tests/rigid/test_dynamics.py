"""Articulated dynamics (CRBA + RNEA) against independent references: Lagrangian
mechanics by automatic differentiation of the kinetic energy, the power balance
dE/dt = v·τ, momentum balance, and the algebraic identities of M."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
from sciad._core._geometry import quat_conjugate, quat_multiply, quat_to_matrix
import sciad.rigid as rigid

from .scenes import quadruped, random_state

X = jnp.array([1.0, 0.0, 0.0])
Y = jnp.array([0.0, 1.0, 0.0])
Z = jnp.array([0.0, 0.0, 1.0])


def branched_tree(**kw):
    """Hinges (off-centre, tilted axes), sliders, a fixed body, branching, offset
    centres of mass and rotated principal axes: no quaternion coordinates."""
    iq = jnp.array([0.9, 0.1, -0.3, 0.2])
    B = rigid.Body
    bodies = [
        B(
            "a",
            joint=rigid.SliderJoint(axis=X, damping=0.3),
            mass=2.0,
            inertia=jnp.array([0.1, 0.2, 0.25]),
            com=jnp.array([0.1, 0.0, 0.05]),
            inertia_quat=iq,
        ),
        B(
            "b",
            parent="a",
            joint=rigid.HingeJoint(
                axis=jnp.array([0.2, 1.0, 0.1]), pos=jnp.array([0.0, 0.1, 0.0]), damping=0.1
            ),
            pos=jnp.array([0.0, 0.0, -0.3]),
            quat=jnp.array([0.95, 0.1, 0.2, -0.1]),
            mass=1.0,
            inertia=jnp.array([0.05, 0.04, 0.02]),
            com=jnp.array([0.0, 0.0, -0.2]),
        ),
        B(
            "c",
            parent="b",
            joint=rigid.HingeJoint(axis=X, armature=0.01),
            pos=jnp.array([0.0, 0.0, -0.4]),
            mass=0.7,
            inertia=jnp.array([0.02, 0.03, 0.04]),
            com=jnp.array([0.05, 0.0, -0.1]),
            inertia_quat=iq,
        ),
        B(
            "d",
            parent="a",
            joint=rigid.HingeJoint(axis=Z),
            pos=jnp.array([0.3, 0.0, 0.0]),
            mass=0.5,
            inertia=jnp.array([0.01, 0.01, 0.015]),
            com=jnp.array([0.1, 0.05, 0.0]),
        ),
        B(
            "e",
            parent="d",
            joint=rigid.SliderJoint(axis=jnp.array([1.0, 1.0, 0.0])),
            pos=jnp.array([0.2, 0.0, 0.0]),
            mass=0.3,
            inertia=jnp.array([0.004, 0.005, 0.006]),
        ),
        B(
            "f",
            parent="c",
            pos=jnp.array([0.0, 0.1, -0.2]),
            mass=0.2,
            inertia=jnp.array([0.001, 0.002, 0.002]),
        ),
    ]
    return rigid.MultiBody(bodies, gravity=jnp.array([0.3, -0.5, -9.81]), **kw)


def lagrangian_accelerations(model, q, v, armature):
    """q̈ from d/dt ∂L/∂q̇ − ∂L/∂q = τ (q̇ = v: no quaternions), with L = T − V built
    from the public forward kinematics only; the armature a adds ½ a q̇² to T."""
    n = len(model.names)

    def kinetic(q, qd):
        com_dot = jax.jvp(model.com_positions, (q,), (qd,))[1]
        quat, quat_dot = jax.jvp(lambda x: model.forward_kinematics(x)[1], (q,), (qd,))
        omega = 2 * quat_multiply(quat_dot, quat_conjugate(quat))[:, 1:]  # world frame
        rot = quat_to_matrix(quat_multiply(quat, model.inertia_quat))
        inertia = jnp.einsum("nij,nj,nkj->nik", rot, model.inertia, rot)
        return 0.5 * jnp.sum(model.mass * jnp.sum(com_dot**2, axis=1)) + 0.5 * jnp.einsum(
            "ni,nij,nj->", omega, inertia, omega
        )

    def lagrangian(q, qd):
        return kinetic(q, qd) - model.potential_energy(q)

    m = jax.hessian(lagrangian, argnums=1)(q, v) + jnp.diag(armature)
    mixed = jax.jacfwd(jax.grad(lagrangian, argnums=1), argnums=0)(q, v)
    dl_dq = jax.grad(lagrangian, argnums=0)(q, v)
    tau = model.applied_force(0.0, q, v)
    assert n == q.shape[0] + 1  # five joints with one dof, one fixed body
    return jnp.linalg.solve(m, tau + dl_dq - mixed @ v)


def test_accelerations_match_lagrangian_mechanics():
    model = branched_tree()
    reference = eqx.filter_jit(lagrangian_accelerations)
    armature = jnp.array([0.0, 0.0, 0.01, 0.0, 0.0])  # joint "c" (dof 2)
    ours = eqx.filter_jit(lambda m, q, v: m.accelerations(0.0, q, v))
    for seed in range(3):
        q, v = random_state(model, seed)
        want = reference(model, q, v, armature)
        got = ours(model, q, v)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@eqx.filter_jit
def identities(model, q, v):
    m = model.mass_matrix(q)
    qacc = model.accelerations(0.3, q, v)
    return m, model.kinetic_energy(q, v), model.inverse_dynamics(0.3, q, v, qacc)


def test_mass_matrix_identities():
    """M is symmetric positive definite, ½ vᵀ M v is the kinetic energy (computed from
    the bodies' velocities and the armatures), and inverse dynamics inverts forward
    dynamics."""
    for model in (branched_tree(), quadruped()):
        q, v = random_state(model, 1)
        m, ke, residual = identities(model, q, v)
        np.testing.assert_allclose(m, m.T, atol=1e-14)
        assert np.all(np.linalg.eigvalsh(m) > 0)
        np.testing.assert_allclose(ke, 0.5 * v @ m @ v, rtol=1e-12)
        np.testing.assert_allclose(residual, 0.0, atol=1e-11)


@eqx.filter_jit
def power_balance(model, y, t=0.0):
    """(dE/dt along the dynamics, vᵀ τ): equal when the dynamics is right."""
    q, v = y
    qdot, vdot = model.vector_field(t, y)
    de = jax.jvp(model.energy, ((q, v),), ((qdot, vdot),))[1]
    return de, v @ model.applied_force(t, q, v)


def mixed_model():
    """Every joint type, including quaternion coordinates (ball, free)."""
    iq = jnp.array([0.8, -0.2, 0.3, 0.1])
    B = rigid.Body
    return rigid.MultiBody(
        [
            B(
                "base",
                joint=rigid.FreeJoint(damping=0.05),
                pos=jnp.array([0.1, 0.2, 1.0]),
                mass=3.0,
                inertia=jnp.array([0.2, 0.3, 0.4]),
                com=jnp.array([0.05, 0.0, -0.02]),
                inertia_quat=iq,
            ),
            B(
                "arm",
                parent="base",
                joint=rigid.BallJoint(pos=jnp.array([0.0, 0.05, 0.0]), damping=0.02),
                pos=jnp.array([0.2, 0.0, 0.0]),
                mass=1.0,
                inertia=jnp.array([0.02, 0.03, 0.04]),
                com=jnp.array([0.1, 0.0, -0.1]),
                inertia_quat=iq,
            ),
            B(
                "hand",
                parent="arm",
                joint=rigid.HingeJoint(axis=Y, damping=0.1),
                pos=jnp.array([0.2, 0.0, -0.2]),
                mass=0.5,
                inertia=jnp.array([0.01, 0.02, 0.02]),
                com=jnp.array([0.05, 0.0, 0.0]),
            ),
            B(
                "slide",
                parent="base",
                joint=rigid.SliderJoint(axis=Z),
                pos=jnp.array([-0.2, 0.0, 0.0]),
                mass=0.4,
                inertia=jnp.array([0.01, 0.01, 0.01]),
            ),
            B(
                "pendant",
                joint=rigid.BallJoint(),
                pos=jnp.array([1.0, 0.0, 0.0]),
                mass=0.6,
                inertia=jnp.array([0.01, 0.02, 0.025]),
                com=jnp.array([0.0, 0.0, -0.3]),
            ),
        ],
        gravity=jnp.array([0.0, 0.0, -9.81]),
    )


def test_power_balance_every_joint_type():
    """d(T + V)/dt = vᵀ τ (damping dissipates, gravity is in V): checks the Coriolis,
    centrifugal and gyroscopic terms of every joint type, including the free joint's."""
    for model in (mixed_model(), branched_tree()):
        for seed in range(2):
            y = random_state(model, seed)
            de, power = power_balance(model, y)
            assert abs(de - power) < 1e-10 * (1 + abs(power)), (de, power)


@eqx.filter_jit
def momentum_rate(model, q, v):
    qdot, vdot = model.vector_field(0.0, (q, v))
    return jax.jvp(model.momentum, (q, v), (qdot, vdot))[1]


@pytest.mark.slow
def test_momentum_balance_free_floating():
    """Without gravity or damping, a free-floating tree's momentum is constant:
    d/dt of the 6-vector momentum along the dynamics vanishes."""
    model = quadruped(gravity=jnp.zeros(3))
    joints = tuple(
        rigid.HingeJoint(axis=j.axis, pos=j.pos) if isinstance(j, rigid.HingeJoint) else j
        for j in model.joints
    )
    model = eqx.tree_at(lambda m: m.joints, model, joints)
    for seed in range(3):
        q, v = random_state(model, seed)
        dh = momentum_rate(model, q, v)
        assert np.max(np.abs(dh)) < 1e-11 * np.max(np.abs(model.momentum(q, v))), dh


def test_gravity_is_potential_gradient():
    """The generalised gravity force is −∂V/∂q (hinges/sliders: q̇ = v)."""
    model = branched_tree()
    q, v = random_state(model, 4)

    @eqx.filter_jit
    def both(model, q):
        zero = jnp.zeros(model.nv, q.dtype)
        grav = model.applied_force(0.0, q, zero) - model.bias_force(q, zero)
        return grav, -jax.grad(model.potential_energy)(q)

    grav, want = both(model, q)
    np.testing.assert_allclose(grav, want, rtol=1e-12, atol=1e-12)


@pytest.mark.slow
def test_float32_follows_the_inputs():
    """A model and state in float32 run in float32 (nothing is cast to float64 inside,
    under strict dtype promotion) and track the float64 run."""
    model = mixed_model()
    y0 = random_state(model, 2, scale=0.5)
    to32 = lambda t: jax.tree.map(
        lambda x: x.astype(jnp.float32) if eqx.is_inexact_array(x) else x, t
    )

    @eqx.filter_jit
    def run(m, y):
        return sciad.simulate(m, y, dt=1e-3, n_steps=100, integrator=rigid.RKMK4()).y1

    q32, v32 = run(to32(model), to32(y0))
    q64, v64 = run(model, y0)
    assert q32.dtype == v32.dtype == jnp.float32
    np.testing.assert_allclose(q32, q64, atol=1e-4)
    np.testing.assert_allclose(v32, v64, atol=1e-3)


@pytest.mark.parametrize("integrator", [rigid.SemiImplicitEuler(), rigid.RKMK4()])
def test_integrator_state_is_named(integrator):
    """The constraint integrators' state is a `ConstraintSolveState`: `solve_failed` is
    `None` without constraints and a sticky flag with a hard joint limit."""
    free = rigid.MultiBody(
        [
            rigid.Body(
                "bob",
                joint=rigid.HingeJoint(axis=jnp.array([0.0, 1.0, 0.0])),
                mass=1.0,
                inertia=jnp.full(3, 0.1),
                com=jnp.array([0.0, 0.0, -1.0]),
            )
        ]
    )
    limited = rigid.MultiBody(
        [
            rigid.Body(
                "bob",
                joint=rigid.HingeJoint(axis=jnp.array([0.0, 1.0, 0.0]), range=(-0.2, 0.2)),
                mass=1.0,
                inertia=jnp.full(3, 0.1),
                com=jnp.array([0.0, 0.0, -1.0]),
            )
        ]
    )
    y0 = (jnp.full(1, 0.1), jnp.zeros(1))
    for model, flag in ((free, False), (limited, True)):
        traj = sciad.simulate(model, y0, dt=1e-3, n_steps=5, integrator=integrator)
        state = traj.integrator_state
        assert type(state) is rigid.ConstraintSolveState
        assert (state.solve_failed is not None) is flag
        if flag:
            assert not bool(state.solve_failed)

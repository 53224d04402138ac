"""Joints, actuators, controls and wrenches: soft limits, manifold operations, welded
bodies, servo laws, interpolated controls, applied wrenches."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
from sciad._core._geometry import quat_exp, quat_rotate, quat_to_matrix
import sciad.rigid as rigid

Y = jnp.array([0.0, 1.0, 0.0])


def test_joint_spring_oscillates_at_its_natural_frequency_and_conserves_energy():
    """A mass m on a slider with stiffness k (no gravity along it) oscillates about
    `springref` as x(t) = x_ref + A cos(√(k/m) t) (RKMK4, 4th order: 1e-9 after 2 s at
    dt = 1 ms), and the energy, springs included, is conserved to 1e-10 relative; a
    hinge spring's torque is −k (q − springref) on top of its soft limit."""
    m, k, x_ref, amp = 2.0, 50.0, 0.3, 0.1
    body = rigid.Body(
        "m",
        joint=rigid.SliderJoint(axis=(1.0, 0.0, 0.0), stiffness=k, springref=x_ref),
        mass=m,
        inertia=jnp.full(3, 0.01),
    )
    model = rigid.MultiBody([body])
    y0 = (jnp.array([x_ref + amp]), jnp.zeros(1))
    ts = jnp.linspace(0.0, 2.0, 11)
    traj = sciad.simulate(
        model,
        y0,
        dt=1e-3,
        t1=2.0,
        integrator=rigid.RKMK4(),
        saveat=sciad.SaveAt(ts=ts, fn=lambda t, y, mb: (y[0][0], mb.energy(y))),
    )
    x, energy = traj.ys
    exact = x_ref + amp * np.cos(np.sqrt(k / m) * np.asarray(ts))
    assert np.max(np.abs(np.asarray(x) - exact)) < 1e-9
    assert math.isclose(float(energy[0]), 0.5 * k * amp**2, rel_tol=1e-12)
    assert np.max(np.abs(np.asarray(energy) / float(energy[0]) - 1)) < 1e-10
    hinge = rigid.HingeJoint(
        axis=Y,
        stiffness=3.0,
        springref=0.4,
        range=(-0.5, 0.5),
        limit="soft",
        limit_stiffness=100.0,
        limit_damping=0.0,
    )
    torque = float(hinge.passive_force(jnp.array([0.7]), jnp.array([0.0]))[0])
    assert math.isclose(torque, -3.0 * 0.3 - 100.0 * 0.2)


def test_hinge_and_slider_soft_limits():
    """Inside the range no force; outside, −k (q − bound) − d q̇."""
    for joint in (
        rigid.HingeJoint(
            axis=Y,
            range=jnp.array([-0.5, 0.5]),
            limit="soft",
            limit_stiffness=100.0,
            limit_damping=2.0,
        ),
        rigid.SliderJoint(
            axis=Y,
            range=jnp.array([-0.5, 0.5]),
            limit="soft",
            limit_stiffness=100.0,
            limit_damping=2.0,
        ),
    ):
        f = lambda q, v, j=joint: float(j.passive_force(jnp.array([q]), jnp.array([v]))[0])
        assert f(0.2, 3.0) == 0.0
        assert math.isclose(f(0.6, 1.0), -100.0 * 0.1 - 2.0 * 1.0)
        assert math.isclose(f(-0.7, -1.0), 100.0 * 0.2 + 2.0 * 1.0)


def test_limit_stops_a_pendulum():
    """A pendulum swinging into a stiff soft limit at 0.5 rad bounces back; the
    overshoot is about the static estimate v √(I/k)."""
    joint = rigid.HingeJoint(
        axis=Y, range=jnp.array([-0.5, 0.5]), limit="soft", limit_stiffness=1e4, limit_damping=0.0
    )
    model = rigid.MultiBody(
        [
            rigid.Body(
                "bob",
                joint=joint,
                mass=1.0,
                inertia=jnp.full(3, 1e-3),
                com=jnp.array([0.0, 0.0, -1.0]),
            )
        ],
        gravity=jnp.zeros(3),
    )
    traj = sciad.simulate(
        model,
        (jnp.zeros(1), jnp.ones(1)),
        dt=1e-4,
        n_steps=10_000,
        integrator=rigid.RKMK4(),
        saveat=sciad.SaveAt(steps=10),
    )
    q = np.asarray(traj.ys[0][:, 0])
    overshoot = q.max() - 0.5
    inertia = 1.0 + 1e-3
    assert 0 < overshoot < 1.5 * math.sqrt(inertia / 1e4) * 1.0
    assert q[-1] < 0.5 and np.asarray(traj.ys[1])[-1, 0] < 0  # it bounced
    # energy is conserved through the (undamped) limit spring
    assert math.isclose(float(traj.ys[1][-1, 0]), -1.0, rel_tol=1e-3)


def test_ball_cone_limit():
    joint = rigid.BallJoint(max_angle=0.3, limit="soft", limit_stiffness=50.0, limit_damping=1.0)
    axis = jnp.array([0.0, 0.6, 0.8])
    inside = joint.passive_force(quat_exp(0.2 * axis), jnp.ones(3))
    np.testing.assert_array_equal(inside, 0.0)
    w = jnp.array([0.1, 0.2, -0.3])
    out = joint.passive_force(quat_exp(0.5 * axis), w)
    np.testing.assert_allclose(out, -(50.0 * 0.2 + 1.0 * float(w @ axis)) * axis, atol=1e-12)
    # finite gradients at the identity (double-where at θ = 0)
    g = jax.jacfwd(lambda q: joint.passive_force(q, w))(jnp.array([1.0, 0.0, 0.0, 0.0]))
    assert bool(jnp.all(jnp.isfinite(g)))


def test_quaternion_joint_manifold_operations():
    """integrate(q, h v) = q + h q̇ + O(h²); difference inverts integrate;
    tangent_correction is the identity at dq = 0."""
    rng = np.random.default_rng(0)
    for joint in (rigid.BallJoint(), rigid.FreeJoint()):
        q = joint.integrate(joint.neutral(), jnp.asarray(rng.normal(size=joint.nv)))
        v = jnp.asarray(rng.normal(size=joint.nv))
        for h in (1e-3, 1e-4):
            err = joint.integrate(q, h * v) - (q + h * joint.position_derivative(q, v))
            assert float(jnp.max(jnp.abs(err))) < 5 * h**2 * float(jnp.sum(v**2))
        dq = jnp.asarray(rng.normal(size=joint.nv)) * 0.5
        np.testing.assert_allclose(joint.difference(joint.integrate(q, dq), q), dq, atol=1e-12)
        np.testing.assert_allclose(joint.tangent_correction(jnp.zeros(joint.nv), v), v)
        np.testing.assert_allclose(jnp.linalg.norm(joint.normalize(2 * q)[-4:]), 1.0)


def test_welded_body_equals_one_combined_body():
    """A FixedJoint child welded to a free body adds its inertia exactly: the mass
    matrix equals that of one body with the combined mass properties."""
    m1, i1, c1 = 2.0, np.array([0.1, 0.2, 0.3]), np.array([0.0, 0.0, 0.0])
    m2, i2, c2 = 0.5, np.array([0.01, 0.02, 0.02]), np.array([0.3, 0.1, -0.2])
    welded = rigid.MultiBody(
        [
            rigid.Body("a", joint=rigid.FreeJoint(), mass=m1, inertia=jnp.asarray(i1)),
            rigid.Body("b", parent="a", pos=jnp.asarray(c2), mass=m2, inertia=jnp.asarray(i2)),
        ]
    )
    m = m1 + m2
    com = (m1 * c1 + m2 * c2) / m
    tensor = np.zeros((3, 3))
    for mi, ii, ci in ((m1, i1, c1), (m2, i2, c2)):
        d = ci - com
        tensor += np.diag(ii) + mi * (d @ d * np.eye(3) - np.outer(d, d))
    one = rigid.MultiBody(
        [
            rigid.Body(
                "ab",
                joint=rigid.FreeJoint(),
                mass=m,
                inertia=jnp.asarray(tensor),
                com=jnp.asarray(com),
            )
        ]
    )
    q = eqx.filter_jit(lambda m, q, d: m.integrate_positions(q, d))(
        welded, welded.default_state()[0], jnp.array([0.1, 0.2, 0.3, 0.4, -0.5, 0.6])
    )
    mass_matrix = eqx.filter_jit(lambda m, q: m.mass_matrix(q))
    np.testing.assert_allclose(mass_matrix(welded, q), mass_matrix(one, q), atol=1e-14)
    assert welded.nq == 7 and welded.nv == 6


def test_actuators():
    """Motor: gear·u, clipped to ctrl_range; position servo kp (u − q) − kv q̇;
    velocity servo kv (u − q̇); all with the control's output as u."""
    bodies = [
        rigid.Body(
            f"j{i}",
            joint=rigid.HingeJoint(axis=Y),
            mass=1.0,
            inertia=jnp.ones(3),
            pos=jnp.array([float(i), 0.0, 0.0]),
        )
        for i in range(3)
    ]
    acts = [
        rigid.JointActuator.motor("j0", gear=3.0, ctrl_range=jnp.array([-1.0, 1.0])),
        rigid.JointActuator.position("j1", kp=10.0, kv=2.0),
        rigid.JointActuator.velocity("j2", kv=4.0),
    ]
    model = rigid.MultiBody(
        bodies, actuators=acts, control=rigid.ConstantControl(jnp.array([5.0, 0.5, 1.0]))
    )
    q, v = jnp.array([0.1, 0.2, 0.3]), jnp.array([0.4, 0.5, 0.6])
    np.testing.assert_allclose(
        eqx.filter_jit(lambda m, q, v: m.applied_force(0.0, q, v))(model, q, v),
        [3.0 * 1.0, 10.0 * (0.5 - 0.2) - 2.0 * 0.5, 4.0 * (1.0 - 0.6)],
    )


def test_interpolated_control():
    ts = jnp.array([0.0, 1.0, 3.0])
    u = rigid.InterpolatedControl(ts, jnp.array([[0.0, 1.0], [2.0, 1.0], [0.0, 5.0]]))
    z = jnp.zeros(1)
    np.testing.assert_allclose(u(0.5, z, z), [1.0, 1.0])
    np.testing.assert_allclose(u(2.0, z, z), [1.0, 3.0])
    np.testing.assert_allclose(u(-1.0, z, z), [0.0, 1.0])
    np.testing.assert_allclose(u(4.0, z, z), [0.0, 5.0])
    g = jax.grad(lambda vals: eqx.tree_at(lambda c: c.values, u, vals)(2.0, z, z)[1])(u.values)
    np.testing.assert_allclose(g, [[0, 0], [0, 0.5], [0, 0.5]])


def test_applied_wrench_on_a_free_body():
    """A force at the centre of mass (off the body origin) accelerates it as F/m with
    no rotation; a torque gives the angular acceleration I⁻¹τ (body frame)."""
    inertia = jnp.array([0.1, 0.2, 0.3])
    iq = jnp.array([0.9, 0.1, -0.2, 0.3]) / jnp.linalg.norm(jnp.array([0.9, 0.1, -0.2, 0.3]))
    force, torque = jnp.array([1.0, -2.0, 0.5]), jnp.array([0.3, 0.1, -0.2])
    model = rigid.MultiBody(
        [
            rigid.Body(
                "b",
                joint=rigid.FreeJoint(),
                mass=2.0,
                inertia=inertia,
                com=jnp.array([0.1, 0.2, 0.3]),
                inertia_quat=iq,
            )
        ],
        gravity=jnp.zeros(3),
        wrench=jnp.concatenate([force, torque])[None, :],
    )

    @eqx.filter_jit
    def accelerations(model):
        zero = jnp.zeros(6)
        q = model.integrate_positions(
            model.default_state()[0], jnp.array([0, 0, 0, 0.3, -0.2, 0.5])
        )
        a = model.accelerations(0.0, q, zero)
        com = lambda x: model.com_positions(x)[0]
        com_vel = lambda q, v: jax.jvp(com, (q,), (model.position_derivative(q, v),))[1]
        com_acc = jax.jvp(com_vel, (q, zero), (model.position_derivative(q, zero), a))[1]
        return q, a, com_acc

    q, a, com_acc = accelerations(model)
    quat = q[3:]
    # body-frame angular acceleration: I_body⁻¹ Rᵀ τ, with I_body = Q diag Qᵀ
    r_i = quat_to_matrix(iq)
    i_body = r_i @ jnp.diag(inertia) @ r_i.T
    alpha = jnp.linalg.solve(
        i_body, quat_rotate(jnp.array([quat[0], -quat[1], -quat[2], -quat[3]]), torque)
    )
    np.testing.assert_allclose(a[3:], alpha, atol=1e-12)
    np.testing.assert_allclose(com_acc, force / 2.0, atol=1e-12)  # the COM: F/m


class ZHinge(rigid.AbstractJoint):
    """The docstring example of AbstractJoint: a hinge about the body's z axis."""

    nq = 1
    nv = 1

    def neutral(self):
        return jnp.zeros(1)

    def transform(self, q):
        c, s = jnp.cos(q / 2), jnp.sin(q / 2)
        return jnp.concatenate([c, jnp.zeros(2), s]), jnp.zeros(3)

    def motion_subspace(self, q):
        return jnp.array([[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]])


def test_user_defined_joint_type():
    """The interface is open: a joint written in a few lines behaves as the built-in
    hinge it imitates (two of them, so they are stacked and vmapped)."""

    def model(joint):
        bodies = [
            rigid.Body(
                "a",
                joint=joint,
                mass=1.0,
                inertia=jnp.array([0.1, 0.2, 0.25]),
                com=jnp.array([0.3, 0.0, 0.0]),
            ),
            rigid.Body(
                "b",
                parent="a",
                joint=joint,
                pos=jnp.array([0.6, 0.0, 0.0]),
                mass=0.5,
                inertia=jnp.array([0.01, 0.02, 0.02]),
                com=jnp.array([0.2, 0.1, 0.0]),
            ),
        ]
        return rigid.MultiBody(bodies, gravity=jnp.array([0.0, -9.81, 0.0]))

    ours = model(ZHinge())
    builtin = model(rigid.HingeJoint(axis=jnp.array([0.0, 0.0, 1.0])))
    run = lambda m: (
        sciad.simulate(
            m,
            (jnp.array([0.3, -0.2]), jnp.array([1.0, 0.5])),
            dt=1e-3,
            n_steps=200,
            integrator=rigid.RKMK4(),
        ).y1
    )
    a, b = run(ours), run(builtin)
    np.testing.assert_allclose(a[0], b[0], atol=1e-13)
    np.testing.assert_allclose(a[1], b[1], atol=1e-13)


@pytest.mark.slow
def test_core_rk4_runs_a_multibody():
    """`sciad.RK4()` (quaternions as vectors) also runs a MultiBody; on hinges it is the
    same method as RKMK4, so the two agree to round-off."""
    from .scenes import chain

    model = chain(3)
    y0 = (jnp.array([0.3, -0.2, 0.1]), jnp.array([0.5, 0.0, -0.5]))
    a = sciad.simulate(model, y0, dt=1e-3, n_steps=200, integrator=sciad.RK4()).y1
    b = sciad.simulate(model, y0, dt=1e-3, n_steps=200, integrator=rigid.RKMK4()).y1
    np.testing.assert_allclose(a[0], b[0], atol=1e-13)
    np.testing.assert_allclose(a[1], b[1], atol=1e-12)

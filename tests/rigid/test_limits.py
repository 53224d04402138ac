"""Hard joint limits: unilateral constraints solved with the contacts (hinge, slider,
ball cone), checked against their analytic resting points, central differences and
MuJoCo C."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid

from .scenes import flat

Y = jnp.array([0.0, 1.0, 0.0])
H = 1e-3
DEFAULT = rigid.Impedance()  # MuJoCo's solref (0.02, 1), solimp (0.9, 0.95, 0.001, 0.5, 2)


def _run(model, y0, n_steps):
    traj = sciad.simulate(model, y0, dt=H, n_steps=n_steps, saveat=sciad.SaveAt(steps=1))
    assert traj.result == sciad.RESULTS.successful
    return traj


def _sigmoid_impedance(imp, r):
    """MuJoCo's impedance d(r) (documentation, Computation, "Solver parameters"),
    written out independently of sciad."""
    d0, dmax, width, mid, power = (
        float(getattr(imp, k)) for k in ("d0", "dmax", "width", "midpoint", "power")
    )
    x = min(abs(r) / width, 1.0)
    y = (
        x**power / mid ** (power - 1)
        if x <= mid
        else 1 - (1 - x) ** power / (1 - mid) ** (power - 1)
    )
    return d0 + y * (dmax - d0)


def _rest_violation(model, q, imp=DEFAULT):
    """The exact resting point of the solve: at v = 0 the limit's impulse γ balances a
    step of the free acceleration, M(0 − v_free) = J_Lᵀ γ, and γ = û/R with
    û = −h k d(r) r (MuJoCo's reference, k = 1/(d_max τ ζ)², τ at least 2h) and
    R = (1 − d)/d · J_L M⁻¹ J_Lᵀ, so r = −(γ/h) R/(k d): solved for r by a fixed-point
    iteration on d(r)."""
    f = model._frames(q)
    jac = model._limits(f).jac
    m = model.mass_matrix(q)
    force = model.applied_force(0.0, q, jnp.zeros(model.nv)) - model.bias_force(
        q, jnp.zeros(model.nv)
    )
    gamma = float(-H * jnp.linalg.lstsq(jac.T, force)[0][0])
    w = float(jac[0] @ jnp.linalg.solve(m, jac[0]))
    tau = max(float(imp.time_constant), 2 * H)
    k = 1 / (float(imp.dmax) * tau * float(imp.damping_ratio)) ** 2
    r = 0.0
    for _ in range(200):
        d = _sigmoid_impedance(imp, r)
        r = -(gamma / H) * (1 - d) / d * w / (k * d)
    return r, gamma


def _pendulum(low, high, **kw):
    return rigid.MultiBody(
        [
            rigid.Body(
                "bob",
                joint=rigid.HingeJoint(axis=Y, range=(low, high), **kw),
                com=jnp.array([0.0, 0.0, -1.0]),
                mass=1.0,
                inertia=jnp.full(3, 1e-3),
            )
        ]
    )


def test_hinge_and_slider_rest_on_their_limits():
    """A pendulum swung into its lower bound and a slider dropped 0.5 m onto its lower
    bound: neither passes the bound by more than v τ/e (the critically damped reference
    of time constant τ stopping an impact speed v), and both
    come to rest exactly at the solve's fixed point (to 1e-10), a violation of ≈ 4e-4
    of the bound, with a positive impulse (the limit pushes, never pulls)."""
    pendulum = _pendulum(0.2, 1.0)
    slider = rigid.MultiBody(
        [
            rigid.Body(
                "block",
                joint=rigid.SliderJoint(axis=jnp.array([0.0, 0.0, 1.0]), range=(-0.5, 0.5)),
                mass=2.0,
                inertia=jnp.full(3, 0.1),
            )
        ]
    )
    for model, q0, low, speed in (
        (pendulum, 0.9, 0.2, np.sqrt(2 * 9.81 * (np.cos(0.2) - np.cos(0.9)))),
        (slider, 0.0, -0.5, np.sqrt(2 * 9.81 * 0.5)),
    ):
        assert model.constrained and isinstance(model.default_integrator(), rigid.SemiImplicitEuler)
        traj = _run(model, (jnp.full(1, q0), jnp.zeros(1)), 3000)
        q = np.asarray(traj.ys[0][:, 0])
        # MuJoCo's critically damped reference stops it within v τ/e (τ = 0.02 s)
        assert low - q.min() < speed * 0.02 / np.e * 1.05
        violation, gamma = _rest_violation(model, traj.ys[0][-1])
        assert gamma > 0 and -1e-3 < violation < 0
        np.testing.assert_allclose(q[-1], low + violation, rtol=0, atol=1e-10)
        assert abs(float(traj.ys[1][-1, 0])) < 1e-10


def test_a_limit_with_its_own_impedance_rests_at_its_fixed_point():
    """`limit_impedance` replaces the model's impedance for that limit alone: the
    pendulum rests at −(γ/h) R/(k d) past its bound (to 1e-10), over 60 times deeper
    for τ' = 0.1 and a flat d' = 1/1.4 than with the defaults, while the default limit
    keeps the defaults' fixed point. A τ' below two steps is used as 2·dt (MuJoCo's
    refsafe)."""
    own = flat(0.4, 0.1)
    model = _pendulum(0.2, 1.0, limit_impedance=own)
    traj = _run(model, (jnp.full(1, 0.9), jnp.zeros(1)), 3000)
    q = traj.ys[0][-1]
    violation, gamma = _rest_violation(model, q, own)
    default, _ = _rest_violation(_pendulum(0.2, 1.0), q)
    assert gamma > 0 and violation / default > 60
    np.testing.assert_allclose(float(q[0]), 0.2 + violation, rtol=0, atol=1e-10)
    assert model.joints[0].limit_parameters(DEFAULT) is own
    assert _pendulum(0.2, 1.0).joints[0].limit_parameters(DEFAULT) is DEFAULT
    short_imp = flat(0.4, H / 4)
    short = _pendulum(0.2, 1.0, limit_impedance=short_imp)
    q = _run(short, (jnp.full(1, 0.9), jnp.zeros(1)), 3000).ys[0][-1]
    violation, _ = _rest_violation(short, q, short_imp)
    np.testing.assert_allclose(float(q[0]), 0.2 + violation, rtol=0, atol=1e-10)


def test_ball_cone_limit_rests_on_the_cone():
    """A horizontal rod on a ball joint falls under gravity until its rotation angle
    reaches `max_angle` = 0.4 rad: it stays a rotation about y (the symmetry), never
    passes the cone by more than a step of its speed, and rests at the fixed point."""
    model = rigid.MultiBody(
        [
            rigid.Body(
                "rod",
                joint=rigid.BallJoint(max_angle=0.4),
                com=jnp.array([0.5, 0.0, 0.0]),
                mass=1.0,
                inertia=jnp.array([1e-3, 0.02, 0.02]),
            )
        ]
    )
    q0, v0 = model.default_state()
    traj = _run(model, (q0, v0), 2000)
    log = jax.vmap(lambda q: rigid.BallJoint().difference(q, q0))(traj.ys[0])
    theta = np.linalg.norm(np.asarray(log), axis=1)
    np.testing.assert_allclose(np.asarray(log)[:, [0, 2]], 0.0, atol=1e-12)
    assert float(log[-1, 1]) > 0  # tilted down: a positive rotation about y
    speed = float(jnp.max(jnp.linalg.norm(traj.ys[1], axis=1)))
    assert theta.max() - 0.4 < speed * 0.02 / np.e * 1.05  # within v τ/e, as above
    violation, gamma = _rest_violation(model, traj.ys[0][-1])
    assert gamma > 0 and -1e-3 < violation < 0
    np.testing.assert_allclose(theta[-1], 0.4 - violation, rtol=0, atol=1e-10)


def _swing(v0, high, n_steps=600):
    """The final angle of a pendulum started at 0 with speed v0, its range (−1, high)."""
    model = _pendulum(-1.0, 0.3)
    model = eqx.tree_at(lambda m: m.joints[0].range, model, jnp.stack([jnp.asarray(-1.0), high]))
    q0, _ = model.default_state()
    return sciad.simulate(model, (q0, v0[None]), dt=H, n_steps=n_steps).y1[0][0]


def test_gradients_through_a_limit_impact():
    """A pendulum swung at 2.49 rad/s hits its upper bound 0.3 rad, stops and swings
    back: the final angle's derivatives with respect to the initial speed and the
    bound, in reverse and forward mode, equal central differences (rtol 1e-6); its
    Hessian (forward over reverse) equals central differences of the gradient; `vmap`
    of value and gradient over speeds equals a loop. The final angle is piecewise
    smooth: it jumps where the step at which the limit first acts changes (every
    0.019 rad/s in the speed and 2.3 mrad in the bound here: the limit is caught one
    step later, a step's travel deeper), as with any time-stepping constraint solver;
    the point and the differences lie inside one piece (the nearest jumps are
    9e-3 rad/s and 1.2e-3 rad away)."""
    final = lambda x: _swing(x[0], x[1])  # noqa: E731
    x = jnp.array([2.49, 0.3])
    value_and_grad = jax.jit(jax.value_and_grad(final))
    _, rev = value_and_grad(x)
    fwd = jax.jit(jax.jacfwd(final))(x)
    hessian = jax.jit(jax.jacfwd(jax.grad(final)))(x)
    for k in range(2):
        e = jnp.zeros(2).at[k].set(1e-6)
        fd = (value_and_grad(x + e)[0] - value_and_grad(x - e)[0]) / 2e-6
        assert abs(float(fd)) > 1e-2
        np.testing.assert_allclose(rev[k], fd, rtol=1e-6)
        e = jnp.zeros(2).at[k].set(1e-5)
        fd2 = (value_and_grad(x + e)[1] - value_and_grad(x - e)[1]) / 2e-5
        np.testing.assert_allclose(hessian[:, k], fd2, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(fwd, rev, rtol=1e-10)
    xs = jnp.array([[2.48, 0.3], [2.49, 0.3], [2.49, 0.301]])
    batched = jax.jit(jax.vmap(value_and_grad))(xs)
    for i, xi in enumerate(xs):
        one = value_and_grad(xi)
        np.testing.assert_allclose(batched[0][i], one[0], rtol=1e-12)
        np.testing.assert_allclose(batched[1][i], one[1], rtol=1e-12)


def test_constraint_errors():
    """A hard limit needs time stepping: FreeBodySplitting and the vector field refuse
    it, naming the joint (RKMK4 solves it at every stage); a soft limit runs anywhere;
    an unknown limit kind is refused."""
    model = _pendulum(-0.5, 0.5)
    y0 = model.default_state()
    with pytest.raises(ValueError, match=r"hard limits \(joint 'bob'"):
        sciad.simulate(model, y0, dt=H, n_steps=2, integrator=rigid.FreeBodySplitting())
    assert rigid.RKMK4().check_every_step(model)
    with pytest.raises(ValueError, match="no smooth vector field"):
        model.vector_field(0.0, y0)
    soft = _pendulum(-0.5, 0.5, limit="soft")
    assert not soft.constrained and isinstance(soft.default_integrator(), rigid.RKMK4)
    # A constrained step is a Newton solve: simulate checks finiteness after each.
    euler = rigid.SemiImplicitEuler()
    assert euler.check_every_step(model) and not euler.check_every_step(soft)
    with pytest.raises(ValueError, match="'hard' .* or 'soft'"):
        rigid.HingeJoint(range=(-1.0, 1.0), limit="stiff")


ARM = """<mujoco><option timestep="0.001"/><worldbody>
<body name="upper"><joint name="shoulder" type="hinge" axis="0 1 0" range="-30 40"/>
  <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04"/>
  <body name="lower" pos="0.4 0 0"><joint name="elbow" type="hinge" axis="0 1 0" range="-20 25"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/></body></body>
</worldbody></mujoco>"""


def test_arm_falls_onto_its_limits_like_mujoco():
    """A two-link arm released horizontally folds under gravity: the elbow hits its
    lower bound, passes it by 0.14 rad over about τ (MuJoCo's soft limit), bounces,
    and both joints come to rest on their upper bounds. MJCF limits become hard
    limits with MuJoCo's impedance, so the whole 1.5 s run equals MuJoCo's to 1e-10
    (before the first limit acts, at step 128, to 1e-12), and both rest (speeds below
    1e-9) on the bounds."""
    mujoco = pytest.importorskip("mujoco")
    m = mujoco.MjModel.from_xml_string(ARM)
    mj = rigid.from_mujoco(m)
    assert [j.limit for j in mj.model.joints] == ["hard", "hard"]
    n = 1500
    traj = sciad.simulate(
        mj.model,
        mj.y0,
        dt=mj.dt,
        n_steps=n,
        integrator=mj.integrator,
        saveat=sciad.SaveAt(steps=1),
    )
    ours = np.asarray(mj.q_to_qpos(traj.ys[0]))
    d = mujoco.MjData(m)
    theirs = []
    for _ in range(n):
        mujoco.mj_step(m, d)
        theirs.append(d.qpos.copy())
    theirs = np.asarray(theirs)
    lo, hi = m.jnt_range[:, 0], m.jnt_range[:, 1]
    first = int(np.argmax(np.any((theirs <= lo) | (theirs >= hi), axis=1)))
    assert first > 100
    np.testing.assert_allclose(ours[:first], theirs[:first], rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10)
    assert np.max(np.maximum(theirs - hi, lo - theirs)) > 0.1  # a soft limit's overshoot
    np.testing.assert_allclose(ours[-1], hi, atol=1e-3)
    assert np.max(np.abs(np.asarray(traj.ys[1][-1]))) < 1e-9

"""Tendons (`FixedTendon`, `SpatialTendon`, `TendonActuator`): lengths, Jacobians,
passive and actuator forces and the limit and friction rows against MuJoCo C
(`mj_forward`: `ten_length`, `ten_J`, `qfrc_passive`, `qfrc_actuator`, `efc_pos`,
`efc_J`) on small models and on the corpus models that use them; spring tendons against
the closed-form oscillation; gradients through a simulation against finite
differences."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid

mujoco = pytest.importorskip("mujoco")


def _xml(extra_tendon="", option=""):
    """Three hinges and a slider in a chain (one hinge with a reference position), a
    free box, sites on each (one on a massless welded frame) and in the world; a fixed
    and a spatial tendon with springs (dead bands), dampers and actuators."""
    return f"""
<mujoco>
  <option timestep="0.002" jacobian="dense" {option}><flag contact="disable"/></option>
  <worldbody>
    <site name="w" pos="0 0.5 2"/>
    <body name="a" pos="0 0 1">
      <joint name="j1" type="hinge" axis="0 1 0" ref="0.2" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05"/>
      <site name="s1" pos="0.3 0.05 0"/>
      <body name="b" pos="0.5 0 0">
        <joint name="j2" type="hinge" axis="0 0.6 0.8"/>
        <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.04"/>
        <body name="frame" pos="0.1 0 0.05" euler="0 0 30"><site name="s2" pos="0.1 0.02 0"/></body>
        <body name="c" pos="0.5 0 0">
          <joint name="j3" type="slide" axis="1 0 0"/>
          <geom type="sphere" size="0.1"/>
          <site name="s3" pos="0.05 0.1 0"/>
        </body>
      </body>
    </body>
    <body name="box" pos="1 1 1">
      <freejoint/>
      <geom type="box" size="0.1 0.2 0.3"/>
      <site name="s4" pos="0.1 0 0.2"/>
    </body>
  </worldbody>
  <tendon>
    <fixed name="fix" stiffness="3" springlength="-0.1 0.2" damping="0.4">
      <joint joint="j1" coef="1.5"/><joint joint="j2" coef="-0.7"/><joint joint="j3" coef="2"/>
    </fixed>
    <spatial name="sp" stiffness="5" springlength="0.9 1.4" damping="0.2">
      <site site="w"/><site site="s1"/><site site="s2"/><site site="s3"/><site site="s4"/>
    </spatial>
    {extra_tendon}
  </tendon>
  <actuator>
    <motor tendon="fix" gear="2"/>
    <position tendon="sp" kp="4" kv="0.5"/>
    <general tendon="sp" gear="1.5" gainprm="2" biasprm="0.3 -1 -0.2" biastype="affine"
             ctrllimited="true" ctrlrange="-0.5 0.5"/>
    <motor joint="j1" gear="0.7"/>
  </actuator>
</mujoco>"""


LIMITED = """
    <fixed name="lim" limited="true" range="-0.2 0.3" margin="0.05" frictionloss="0.7"
           solreflimit="0.05 0.8" solimplimit="0.8 0.9 0.01 0.4 3" solreffriction="0.03 1.2">
      <joint joint="j1" coef="1"/><joint joint="j2" coef="1"/>
    </fixed>
    <spatial name="rope" limited="true" range="0.5 1.2" margin="0.02">
      <site site="s1"/><site site="s4"/>
    </spatial>"""


def _dense(m, d, rownnz, rowadr, colind, values, rows):
    out = np.zeros((len(rows), m.nv))
    for k, i in enumerate(rows):
        a, n = rowadr[i], rownnz[i]
        out[k, colind[a : a + n]] = values[a : a + n]
    return out


def _ten_j(m, d):
    return _dense(m, d, m.ten_J_rownnz, m.ten_J_rowadr, m.ten_J_colind, d.ten_J, range(m.ntendon))


def _efc_j(m, d, rows):
    if mujoco.mj_isSparse(m):
        return _dense(m, d, d.efc_J_rownnz, d.efc_J_rowadr, d.efc_J_colind, d.efc_J, rows)
    return d.efc_J.reshape(-1, m.nv)[rows]


def _random_state(m, d, rng, scale=0.5):
    mujoco.mj_resetData(m, d)
    d.qpos[:] = d.qpos + scale * rng.standard_normal(m.nq)
    mujoco.mj_normalizeQuat(m, d.qpos)
    d.qvel[:] = rng.standard_normal(m.nv)
    d.ctrl[:] = rng.uniform(-1.0, 1.0, m.nu)
    mujoco.mj_forward(m, d)


def _with_control(mj, ctrl):
    control = rigid.ConstantControl(jnp.asarray(ctrl))
    return eqx.tree_at(lambda x: x.control, mj.model, control, is_leaf=lambda x: x is None)


def _check_against_mujoco(m, mj, seeds, tol=1e-12):
    d = mujoco.MjData(m)
    for seed in seeds:
        _random_state(m, d, np.random.default_rng(seed))
        model = _with_control(mj, d.ctrl.copy()) if m.nu else mj.model
        q, v = mj.qpos_to_q(d.qpos), mj.qvel_to_v(d.qvel)
        f = model._frames(q, v)
        length, jac = f.tendons
        np.testing.assert_allclose(length, d.ten_length, rtol=0, atol=tol)
        np.testing.assert_allclose(jac, _ten_j(m, d), rtol=0, atol=tol)
        np.testing.assert_allclose(jac @ v, d.ten_velocity, rtol=0, atol=tol)
        # Everything but gravity and inertia: joint and tendon springs and dampers,
        # and actuators on joints and tendons.
        tau = model.applied_force(0.0, q, v)
        np.testing.assert_allclose(tau, d.qfrc_passive + d.qfrc_actuator, rtol=0, atol=tol)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_small_model_matches_mujoco(seed):
    m = mujoco.MjModel.from_xml_string(_xml())
    _check_against_mujoco(m, rigid.from_mujoco(m), [seed])


def test_tendon_actuators_alone_match_mujoco():
    """The actuators' share: MuJoCo's qfrc_actuator = Σ actuator_moment · force."""
    m = mujoco.MjModel.from_xml_string(_xml())
    d = mujoco.MjData(m)
    _random_state(m, d, np.random.default_rng(7))
    mj = rigid.from_mujoco(m)
    model = _with_control(mj, d.ctrl.copy())
    q, v = mj.qpos_to_q(d.qpos), mj.qvel_to_v(d.qvel)
    unforced = _with_control(mj, np.zeros(m.nu))
    idle = eqx.tree_at(lambda x: x.actuators, unforced, ())
    diff = model.applied_force(0.0, q, v) - idle.applied_force(0.0, q, v)
    np.testing.assert_allclose(diff, d.qfrc_actuator, rtol=0, atol=1e-12)
    assert np.abs(d.qfrc_actuator).max() > 0.1


def test_potential_energy_matches_mujoco():
    xml = _xml(option='gravity="0 0 0"').replace("<flag ", '<flag energy="enable" ')
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    _random_state(m, d, np.random.default_rng(3))
    mj = rigid.from_mujoco(m)
    energy = mj.model.potential_energy(mj.qpos_to_q(d.qpos))
    assert abs(d.energy[0]) > 0.1  # both tendons stretched beyond their dead bands
    np.testing.assert_allclose(energy, d.energy[0], rtol=1e-13)


def _tendon_rows_against_mujoco(m, mj, d):
    """The tendon limit and friction rows against MuJoCo's: the active limit rows'
    violation (efc_pos − efc_margin) and Jacobian, the friction rows' Jacobian and
    bound, per tendon and side. Returns the (tendon, side) pairs whose limit acted."""
    q, v = mj.qpos_to_q(d.qpos), mj.qvel_to_v(d.qvel)
    f = mj.model._frames(q, v)
    blocks = rigid._tendons.tendon_rows(mj.model, f)
    limits = [b for b in blocks if not b.friction]
    frictions = [b for b in blocks if b.friction]
    T = mujoco.mjtConstraint
    lim_ids = np.flatnonzero(d.efc_type == T.mjCNSTR_LIMIT_TENDON)
    limited = np.flatnonzero(m.tendon_limited)
    sides = set()
    if limits:
        (b,) = limits
        active = np.asarray(b.active)
        both = np.concatenate([limited, limited])
        side = np.repeat([0, 1], limited.size)
        sides = {(int(t), int(k)) for t, k in zip(both[active], side[active], strict=True)}
        r = np.asarray(b.violation)[active]
        jac = np.asarray(b.jac)[active]
        order = np.argsort(both[active], kind="stable")
        np.testing.assert_allclose(r[order], (d.efc_pos - d.efc_margin)[lim_ids], atol=1e-12)
        np.testing.assert_allclose(jac[order], _efc_j(m, d, lim_ids), atol=1e-12)
        np.testing.assert_allclose(
            np.asarray(b.diagonal)[active][order], m.tendon_invweight0[d.efc_id[lim_ids]]
        )
        imp = np.asarray(b.impedance)[active][order]
        np.testing.assert_allclose(imp[:, :2], m.tendon_solref_lim[d.efc_id[lim_ids]])
        np.testing.assert_allclose(imp[:, 2:], m.tendon_solimp_lim[d.efc_id[lim_ids]])
    assert len(sides) == lim_ids.size
    fri_ids = np.flatnonzero(d.efc_type == T.mjCNSTR_FRICTION_TENDON)
    if frictions:
        (b,) = frictions
        np.testing.assert_allclose(np.asarray(b.jac), _efc_j(m, d, fri_ids), atol=1e-12)
        np.testing.assert_allclose(np.asarray(b.upper), d.efc_frictionloss[fri_ids])
        np.testing.assert_allclose(np.asarray(b.lower), -d.efc_frictionloss[fri_ids])
        np.testing.assert_allclose(np.asarray(b.impedance)[:, :2], m.tendon_solref_fri[[2]])
    else:
        assert fri_ids.size == 0
    return sides


def _rows_at_random_states(m, mj, seed, n, scale):
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    seen = set()
    for _ in range(n):
        _random_state(m, d, rng, scale=scale)
        seen |= _tendon_rows_against_mujoco(m, mj, d)
    return seen


def test_limit_and_friction_rows_match_mujoco():
    m = mujoco.MjModel.from_xml_string(_xml(LIMITED))
    seen = _rows_at_random_states(m, rigid.from_mujoco(m), 11, 12, 0.8)
    # Both ends of the fixed tendon's range, and the rope taut.
    assert seen == {(2, 0), (2, 1), (3, 1)}


# --------------------------------------------------------------------------- corpus


@pytest.fixture(scope="module")
def corpus_paths():
    from .real_models import corpus

    return dict(corpus())


@pytest.mark.parametrize(
    "name",
    [
        "dm_control/point_mass",
        "dm_control/ball_in_cup",
        "dm_control/fish",
        "gymnasium/humanoid",
        "gymnasium/humanoidstandup",
    ],
)
def test_corpus_models_match_mujoco(corpus_paths, name):
    from .real_models import compile_model, quiet_mujoco

    m = compile_model(corpus_paths[name])
    with quiet_mujoco():
        mj = rigid.from_mujoco(m)
    assert len(mj.model.tendons) == m.ntendon
    _check_against_mujoco(m, mj, range(4))
    if m.tendon_limited.any():
        assert _rows_at_random_states(m, mj, 5, 8, 1.0)


# --------------------------------------------------------------------------- analytic


def _slider(tendon, mass=2.0, actuators=()):
    body = rigid.Body(
        "cart",
        joint=rigid.SliderJoint(axis=(1.0, 0.0, 0.0)),
        mass=mass,
        inertia=jnp.full(3, 0.1),
    )
    return rigid.MultiBody([body], gravity=(0.0, 0.0, 0.0), tendons=[tendon], actuators=actuators)


@pytest.mark.parametrize("kind", ["fixed", "spatial"])
def test_spring_tendon_oscillates_harmonically(kind):
    """A mass on a slider held by a tendon spring: x'' = −(c² k / m)(x − x₀)."""
    k, mass, x_start = 3.0, 2.0, 0.7
    if kind == "fixed":
        c, rest = 1.5, 0.3  # ℓ = c x, spring length 0.3: x₀ = 0.2
        tendon = rigid.FixedTendon("t", [("cart", c)], stiffness=k, springlength=rest)
        x0 = rest / c
    else:
        c, rest = 1.0, 0.5  # ℓ = x + 0.2 from the world origin, x > −0.2: x₀ = 0.3
        tendon = rigid.SpatialTendon(
            "t",
            [(None, (0.0, 0.0, 0.0)), ("cart", (0.2, 0.0, 0.0))],
            stiffness=k,
            springlength=rest,
        )
        x0 = rest - 0.2
    model = _slider(tendon, mass)
    omega = c * np.sqrt(k / mass)
    t1 = 2.0
    traj = sciad.simulate(
        model,
        (jnp.array([x_start]), jnp.zeros(1)),
        dt=1e-3,
        n_steps=2000,
        integrator=rigid.RKMK4(),
    )
    x, v = (float(a[0]) for a in traj.y1)
    np.testing.assert_allclose(x, x0 + (x_start - x0) * np.cos(omega * t1), atol=1e-11)
    np.testing.assert_allclose(v, -(x_start - x0) * omega * np.sin(omega * t1), atol=1e-11)


def test_dead_band_spring_half_period():
    """Released at rest A beyond the dead band's upper end, the mass swings back, coasts
    across the band at speed A ω and comes to rest A below its lower end after
    π/ω + w/(A ω) (w the band's width)."""
    k, mass, lo, hi, amp = 3.0, 2.0, -0.1, 0.25, 0.4
    tendon = rigid.FixedTendon("t", [("cart", 1.0)], stiffness=k, springlength=(lo, hi))
    model = _slider(tendon, mass)
    omega = np.sqrt(k / mass)
    t_half = np.pi / omega + (hi - lo) / (amp * omega)
    n = 4000
    traj = sciad.simulate(
        model,
        (jnp.array([hi + amp]), jnp.zeros(1)),
        dt=float(t_half / n),
        n_steps=n,
        integrator=rigid.RKMK4(),
    )
    x, v = (float(a[0]) for a in traj.y1)
    # The force's kinks at the band's ends cost RK4 its order there: O(h²) per kink.
    np.testing.assert_allclose(x, lo - amp, atol=1e-6)
    np.testing.assert_allclose(v, 0.0, atol=1e-5)


def test_tendon_damper_and_energy():
    """A damped tendon spring loses energy at the rate b ℓ̇², and an undamped one keeps
    its energy (kinetic + tendon spring) to round-off over the run."""
    tendon = rigid.SpatialTendon(
        "t", [(None, (0.0, 0.1, 0.0)), ("cart", (0.2, 0.0, 0.0))], stiffness=3.0, springlength=0.5
    )
    model = _slider(tendon)
    y0 = (jnp.array([0.9]), jnp.zeros(1))
    traj = sciad.simulate(model, y0, dt=1e-3, n_steps=3000, integrator=rigid.RKMK4())
    np.testing.assert_allclose(model.energy(traj.y1), model.energy(y0), rtol=1e-11)
    damped = eqx.tree_at(lambda x: x.tendons[0].damping, model, jnp.asarray(0.5))
    q, v = jnp.array([0.6]), jnp.array([0.8])
    f = damped._frames(q, v)
    _, jac = f.tendons
    power = jnp.dot(damped.applied_force(0.0, q, v) - model.applied_force(0.0, q, v), v)
    np.testing.assert_allclose(power, -0.5 * (jac @ v)[0] ** 2, rtol=1e-13)


# --------------------------------------------------------------------------- gradients


def _loss_model():
    m = mujoco.MjModel.from_xml_string(_xml())
    mj = rigid.from_mujoco(m)
    ctrl = jnp.array([0.3, 0.9, -0.2, 0.1])
    q0, v0 = mj.y0
    # The fixed tendon stretched beyond its dead band.
    return _with_control(mj, ctrl), (q0.at[:3].add(jnp.array([0.4, -0.3, 0.2])), v0)


def _loss(params, model, y0):
    k, kp, b = params
    model = eqx.tree_at(
        lambda x: (x.tendons[0].stiffness, x.actuators[1].gain, x.tendons[1].damping),
        model,
        (k, kp, b),
    )
    model = eqx.tree_at(lambda x: x.actuators[1].bias_position, model, -kp)
    traj = sciad.simulate(model, y0, dt=2e-3, n_steps=40, integrator=rigid.RKMK4())
    q, v = traj.y1
    return jnp.sum(q[:3] ** 2) + 0.1 * jnp.sum(v**2)


def test_gradients_match_finite_differences():
    model, y0 = _loss_model()
    p = jnp.array([3.0, 4.0, 0.2])
    loss = jax.jit(lambda p: _loss(p, model, y0))
    grad = jax.grad(loss)(p)
    eps = 1e-5
    fd = np.array([(loss(p + eps * e) - loss(p - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(grad, fd, rtol=1e-7, atol=1e-10)
    direction = jnp.array([0.3, -0.5, 0.8])
    _, tangent = jax.jvp(loss, (p,), (direction,))
    np.testing.assert_allclose(tangent, jnp.dot(grad, direction), rtol=1e-10)
    assert np.all(np.abs(fd) > 1e-6)


def test_length_jacobian_is_the_derivative_of_the_length():
    """J v = dℓ/dt along q(t) = q ⊕ t v, for both kinds, with the free body's
    quaternion on its manifold (forward-mode through the kinematics)."""
    m = mujoco.MjModel.from_xml_string(_xml())
    mj = rigid.from_mujoco(m)
    model = mj.model
    rng = np.random.default_rng(4)
    q = model.normalize(mj.y0[0] + 0.4 * jnp.asarray(rng.standard_normal(model.nq)))
    v = jnp.asarray(rng.standard_normal(model.nv))

    def lengths(t):
        return model._frames(model.integrate_positions(q, t * v)).tendons[0]

    _, dl = jax.jvp(lengths, (0.0,), (1.0,))
    _, jac = model._frames(q).tendons
    np.testing.assert_allclose(dl, jac @ v, rtol=1e-12, atol=1e-13)


# --------------------------------------------------------------------------- trajectories


def _run_beside_mujoco(m, mj, d, n):
    """n steps of MuJoCo C (`mj_step`) and of sciad from MuJoCo's state `d`: the
    largest qpos difference, and how many steps had a tendon limit or friction row."""
    q0, v0 = mj.qpos_to_q(d.qpos.copy()), mj.qvel_to_v(d.qvel.copy())
    T = mujoco.mjtConstraint
    qpos, rows = [], 0
    for _ in range(n):
        mujoco.mj_step(m, d)
        qpos.append(d.qpos.copy())
        tendon = (d.efc_type == T.mjCNSTR_LIMIT_TENDON) | (d.efc_type == T.mjCNSTR_FRICTION_TENDON)
        rows += bool(tendon.any())
    traj = sciad.simulate(
        mj.model,
        (q0, v0),
        dt=mj.dt,
        n_steps=n,
        integrator=mj.integrator,
        saveat=sciad.SaveAt(steps=1),
    )
    ours = np.asarray(mj.q_to_qpos(traj.ys[0]))[-n:]
    return np.abs(ours - np.asarray(qpos)).max(), rows


@pytest.mark.parametrize("integrator", ["Euler", "RK4"])
def test_limits_and_friction_losses_run_as_mujoco(integrator):
    """The small model with a limited fixed tendon (friction loss, own solref/solimp,
    margin) and a limited spatial rope, driven by its actuators: 500 steps beside
    MuJoCo C, the rows acting at almost every step, to round-off (with MuJoCo's solver
    run to convergence: its default tolerance 1e-8 leaves 1e-9 differences under RK4).
    Measured: Euler 8e-15, RK4 3e-12 (sciad solves every RK4 stage's rows as MuJoCo
    does)."""
    option = f'integrator="{integrator}" tolerance="1e-15"'
    m = mujoco.MjModel.from_xml_string(_xml(LIMITED, option=option))
    ctrl = np.array([0.3, 0.9, -0.2, 0.1])
    mj = rigid.from_mujoco(m, control=rigid.ConstantControl(jnp.asarray(ctrl)))
    d = mujoco.MjData(m)
    d.ctrl[:] = ctrl
    d.qpos[:3] += [0.4, -0.3, 0.2]
    err, rows = _run_beside_mujoco(m, mj, d, 500)
    assert rows > 400
    assert err < (1e-13 if integrator == "Euler" else 1e-10)


@pytest.mark.parametrize("name", ["dm_control/point_mass", "dm_control/ball_in_cup"])
def test_corpus_trajectories_match_mujoco(corpus_paths, name):
    """point_mass (a mass driven through two fixed tendons, with joint limits) and
    ball_in_cup (a ball on a string: a spatial tendon with a limit, thrown so that the
    string goes taut): 1,000 steps beside MuJoCo C with constant controls."""
    from .real_models import compile_model, quiet_mujoco

    m = compile_model(corpus_paths[name])
    ctrl = np.random.default_rng(1).uniform(-1.0, 1.0, m.nu)
    with quiet_mujoco():
        mj = rigid.from_mujoco(m, control=rigid.ConstantControl(jnp.asarray(ctrl)))
    d = mujoco.MjData(m)
    d.qpos[:] += 0.05 * np.random.default_rng(0).standard_normal(m.nq)
    d.ctrl[:] = ctrl
    if name.endswith("ball_in_cup"):
        d.qpos[2:4] = (0.25, -0.1)  # the ball out of the cup, thrown outwards
        d.qvel[2] = 1.0
    err, rows = _run_beside_mujoco(m, mj, d, 1000)
    assert rows > (100 if name.endswith("ball_in_cup") else -1)
    assert err < 1e-10


def test_hand_built_servo_and_limit():
    """A slider driven through a fixed tendon by `TendonActuator.position` towards a
    target beyond the tendon's limit comes to rest on the limit; a velocity servo
    alone drives ℓ̇ to its target."""
    tendon = rigid.FixedTendon("t", [("cart", 2.0)], range=(-0.5, 0.4), damping=0.5)
    servo = rigid.TendonActuator.position("t", kp=20.0, kv=2.0)
    model = eqx.tree_at(
        lambda x: x.control,
        _slider(tendon, actuators=[servo]),
        rigid.ConstantControl(jnp.array([1.0])),
        is_leaf=lambda x: x is None,
    )
    assert model.constrained
    traj = sciad.simulate(model, (jnp.zeros(1), jnp.zeros(1)), dt=1e-3, n_steps=4000)
    x = float(traj.y1[0][0])
    np.testing.assert_allclose(2.0 * x, 0.4, atol=1e-3)  # on the limit, not at u = 1
    free = _slider(
        rigid.FixedTendon("t", [("cart", 2.0)]),
        actuators=[rigid.TendonActuator.velocity("t", kv=5.0)],
    )
    free = eqx.tree_at(
        lambda x: x.control,
        free,
        rigid.ConstantControl(jnp.array([0.6])),
        is_leaf=lambda x: x is None,
    )
    traj = sciad.simulate(free, (jnp.zeros(1), jnp.zeros(1)), dt=1e-3, n_steps=3000)
    np.testing.assert_allclose(2.0 * float(traj.y1[1][0]), 0.6, rtol=1e-9)


def test_gradients_through_tendon_limits_and_friction():
    """Reverse mode through 200 steps with the small model's tendon limits and
    friction loss acting (implicitly differentiated constraint solves) against central
    differences, with respect to a tendon stiffness and the friction loss."""
    m = mujoco.MjModel.from_xml_string(_xml(LIMITED))
    mj = rigid.from_mujoco(m, control=rigid.ConstantControl(jnp.array([0.3, 0.9, -0.2, 0.1])))
    q0, v0 = mj.y0
    y0 = (q0.at[:3].add(jnp.array([0.4, -0.3, 0.2])), v0)

    def loss(p):
        model = eqx.tree_at(
            lambda x: (x.tendons[0].stiffness, x.tendons[2].frictionloss), mj.model, (p[0], p[1])
        )
        traj = sciad.simulate(model, y0, dt=mj.dt, n_steps=200, integrator=mj.integrator)
        return jnp.sum(traj.y1[0][:3] ** 2)

    loss = jax.jit(loss)
    p = jnp.array([3.0, 0.7])
    grad = jax.grad(loss)(p)
    eps = 1e-6
    fd = np.array([(loss(p + eps * e) - loss(p - eps * e)) / (2 * eps) for e in np.eye(2)])
    np.testing.assert_allclose(grad, fd, rtol=1e-5)
    assert np.all(np.abs(fd) > 1e-4)

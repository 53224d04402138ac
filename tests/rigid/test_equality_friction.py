"""Joint friction losses (`HingeJoint`/`SliderJoint` `frictionloss`) and tendon
equality constraints (`TendonEquality`) against MuJoCo C: the constraint rows
(`efc_pos`, `efc_J`, `efc_diagApprox`, `efc_frictionloss`) at random states, and
trajectories beside `mj_step` under Euler and RK4, with the friction rows sticking and
slipping and the equalities with and without a second tendon and a polynomial;
gradients by reverse and forward mode against central differences."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid

mujoco = pytest.importorskip("mujoco")


def _friction_xml(option=""):
    """A pendulum whose hinge has a friction loss (own solreffriction/solimpfriction)
    and, on it, a slider along the hinge's axis with a friction loss (the defaults), a
    motor on each."""
    return f"""
<mujoco>
  <option timestep="0.002" tolerance="1e-15" {option}/>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0" frictionloss="0.6" damping="0.05"
             solreffriction="0.03 1.1" solimpfriction="0.8 0.9 0.01 0.4 3"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05" mass="0.5"/>
      <body name="bead" pos="0.3 0 0">
        <joint name="slide" type="slide" axis="0 1 0" frictionloss="0.6"/>
        <geom type="sphere" size="0.08" mass="0.3"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="hinge" gear="1"/>
    <motor joint="slide" gear="1"/>
  </actuator>
</mujoco>"""


def _equality_xml(equality, option=""):
    """Two sliders (one along a tilted axis) and a hinge; a fixed tendon on each slider,
    a spatial tendon from the world to the hinged arm; `equality` couples them."""
    return f"""
<mujoco>
  <option timestep="0.002" tolerance="1e-15" {option}><flag contact="disable"/></option>
  <worldbody>
    <site name="w" pos="0.2 0.3 2"/>
    <body name="x1" pos="0 0 1">
      <joint name="s1" type="slide" axis="1 0 0.5" damping="0.1"/>
      <geom type="box" size="0.1 0.1 0.1"/>
    </body>
    <body name="x2" pos="0 1 1">
      <joint name="s2" type="slide" axis="0 0 1" ref="0.1"/>
      <geom type="sphere" size="0.1" mass="2"/>
    </body>
    <body name="arm" pos="1 0 1">
      <joint name="h" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05"/>
      <site name="tip" pos="0.5 0 0"/>
    </body>
  </worldbody>
  <tendon>
    <fixed name="t1"><joint joint="s1" coef="1"/></fixed>
    <fixed name="t2"><joint joint="s2" coef="2"/></fixed>
    <spatial name="rope"><site site="w"/><site site="tip"/></spatial>
  </tendon>
  <equality>{equality}</equality>
  <actuator><motor joint="s1"/><motor joint="s2"/><motor joint="h"/></actuator>
</mujoco>"""


EQUALITIES = {
    "pair": '<tendon tendon1="t1" tendon2="t2"/>',
    "polynomial": '<tendon tendon1="t1" tendon2="t2" polycoef="0.05 -0.5 0.8 -0.3 0.2" '
    'solref="0.01 0.8" solimp="0.8 0.95 0.01 0.3 2"/>',
    "single": '<tendon tendon1="t2" polycoef="0.1 0 0 0 0"/>',
    "spatial": '<tendon tendon1="rope" tendon2="t1" polycoef="0 0.7 0 0 0"/>',
}


def _converted(m, ctrl):
    return rigid.from_mujoco(m, control=rigid.ConstantControl(jnp.asarray(ctrl)))


# --------------------------------------------------------------------------- rows


def _rows_against_mujoco(m, mj, kinds, seed):
    """sciad's friction and equality rows at a random state against MuJoCo's rows of
    the constraint types `kinds` (in MuJoCo's order)."""
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    d.qpos[:] = m.qpos0 + 0.4 * rng.standard_normal(m.nq)
    d.qvel[:] = rng.standard_normal(m.nv)
    mujoco.mj_forward(m, d)
    q = mj.qpos_to_q(d.qpos)
    model = mj.model
    blocks = model._extra_rows(model._frames(q, jnp.asarray(d.qvel)), q)
    ids = np.nonzero(np.isin(d.efc_type, [int(k) for k in kinds]))[0]
    assert not mujoco.mj_isSparse(m)
    jac = d.efc_J.reshape(-1, m.nv)
    ours = [b for b in blocks if len(b.violation)]
    r = np.concatenate([np.asarray(b.violation) for b in ours])
    np.testing.assert_allclose(r, d.efc_pos[ids], atol=1e-13)
    np.testing.assert_allclose(np.concatenate([b.jac for b in ours]), jac[ids], atol=1e-13)
    diag = np.concatenate([np.asarray(b.diagonal) for b in ours])
    imp = d.efc_KBIP[ids, 2]  # MuJoCo's R = (1 − d)/d · diagApprox
    np.testing.assert_allclose(diag, d.efc_R[ids] * imp / (1 - imp), rtol=1e-10)
    upper = np.concatenate([np.asarray(b.upper) for b in ours])
    np.testing.assert_array_equal(
        upper, np.where(d.efc_frictionloss[ids] > 0, d.efc_frictionloss[ids], np.inf)
    )


@pytest.mark.parametrize("seed", [0, 1])
def test_friction_and_equality_rows_match_mujoco(seed):
    """The rows' values, Jacobians, inverse weights and bounds at random states."""
    T = mujoco.mjtConstraint
    m = mujoco.MjModel.from_xml_string(_friction_xml())
    _rows_against_mujoco(m, _converted(m, np.zeros(2)), [T.mjCNSTR_FRICTION_DOF], seed)
    for eq in EQUALITIES.values():
        m = mujoco.MjModel.from_xml_string(_equality_xml(eq))
        _rows_against_mujoco(m, _converted(m, np.zeros(3)), [T.mjCNSTR_EQUALITY], seed)


# --------------------------------------------------------------------------- trajectories


def _beside_mujoco(m, mj, d, n, kind):
    """n steps of `mj_step` and of sciad from MuJoCo's state `d`: the largest qpos
    difference, and per step the rows of constraint type `kind` (efc_force, and
    efc_frictionloss for friction rows)."""
    q0, v0 = mj.qpos_to_q(d.qpos.copy()), mj.qvel_to_v(d.qvel.copy())
    qpos, forces = [], []
    for _ in range(n):
        mujoco.mj_step(m, d)
        qpos.append(d.qpos.copy())
        rows = d.efc_type == kind
        forces.append((d.efc_force[rows].copy(), d.efc_frictionloss[rows].copy()))
    traj = sciad.simulate(
        mj.model,
        (q0, v0),
        dt=mj.dt,
        n_steps=n,
        integrator=mj.integrator,
        saveat=sciad.SaveAt(steps=1),
    )
    ours = np.asarray(mj.q_to_qpos(traj.ys[0]))[-n:]
    return np.abs(ours - np.asarray(qpos)).max(), forces


@pytest.mark.parametrize("integrator", ["Euler", "RK4"])
def test_friction_loss_sticks_and_slips_as_mujoco(integrator):
    """The pendulum and its bead, thrown, slip against their friction losses, then
    stick where gravity and the motors are weaker than them (slip: the row's force at
    its bound ±F): 500 steps beside MuJoCo C, both regimes seen, to round-off
    (measured: Euler 2.2e-15, RK4 2.0e-15)."""
    m = mujoco.MjModel.from_xml_string(_friction_xml(f'integrator="{integrator}"'))
    ctrl = np.array([0.3, -0.2])
    mj = _converted(m, ctrl)
    assert mj.model.constrained
    d = mujoco.MjData(m)
    d.ctrl[:] = ctrl
    d.qpos[:] = (1.2, 0.05)
    d.qvel[:] = (2.0, 1.0)
    err, forces = _beside_mujoco(m, mj, d, 500, mujoco.mjtConstraint.mjCNSTR_FRICTION_DOF)
    slipping = np.array([np.isclose(np.abs(f), loss, rtol=1e-9) for f, loss in forces])
    assert slipping[:20].all() and not slipping[-100:].any()
    assert err < 1e-13


@pytest.mark.parametrize(
    ("name", "integrator"),
    [(name, "Euler") for name in EQUALITIES] + [("pair", "RK4"), ("polynomial", "RK4")],
)
def test_tendon_equalities_run_as_mujoco(name, integrator):
    """Sliders and an arm coupled by a tendon equality (a pair, a polynomial with its
    own solref/solimp, a single tendon held at an offset, a spatial tendon against a
    fixed one), started off the constraint and driven: 500 steps beside MuJoCo C, to
    round-off (measured: Euler ≤ 2.2e-15, RK4 4.2e-15)."""
    m = mujoco.MjModel.from_xml_string(
        _equality_xml(EQUALITIES[name], f'integrator="{integrator}"')
    )
    ctrl = np.array([0.5, -1.0, 0.2])
    mj = _converted(m, ctrl)
    d = mujoco.MjData(m)
    d.ctrl[:] = ctrl
    d.qpos[:] += (0.1, -0.05, 0.3)
    d.qvel[:] = (0.2, 0.0, -0.5)
    err, forces = _beside_mujoco(m, mj, d, 500, mujoco.mjtConstraint.mjCNSTR_EQUALITY)
    assert min(np.abs(f).max() for f, _ in forces) > 1e-6  # the row acts at every step
    assert err < 1e-13


def test_default_reference_is_the_length_at_the_default_state():
    """A `TendonEquality` without `reference` measures from the tendons' lengths at
    the model's default state: MuJoCo's `tendon_length0` for a converted model."""
    m = mujoco.MjModel.from_xml_string(_equality_xml(EQUALITIES["spatial"]))
    mj = _converted(m, np.array([0.5, -1.0, 0.2]))
    own = eqx.tree_at(
        lambda x: x.equalities[0].reference, mj.model, None, is_leaf=lambda x: x is None
    )
    q = mj.y0[0] + jnp.array([0.1, -0.2, 0.3])
    f = own._frames(q)
    r_own, _ = own.equalities[0].row(own, f, q)
    r_mj, _ = mj.model.equalities[0].row(mj.model, f, q)
    np.testing.assert_allclose(r_own, r_mj, rtol=0, atol=1e-15)
    assert abs(float(r_mj)) > 1e-3


# --------------------------------------------------------------------------- gradients


def _hand_built():
    """A slider pulled by gravity along a slope against its friction loss, coupled
    through a tendon equality to a second slider."""
    link = dict(mass=1.0, inertia=(0.1, 0.1, 0.1))
    bodies = [
        rigid.Body("a", joint=rigid.SliderJoint(axis=(1.0, 0.0, -0.6), frictionloss=0.8), **link),
        rigid.Body(
            "b",
            joint=rigid.SliderJoint(axis=(0.0, 0.0, 1.0), damping=0.3),
            mass=2.0,
            inertia=(0.1, 0.1, 0.1),
            pos=(0.0, 1.0, 0.0),
        ),
    ]
    tendons = [rigid.FixedTendon("ta", [("a", 1.0)]), rigid.FixedTendon("tb", [("b", 1.0)])]
    eq = rigid.TendonEquality("ta", "tb", polycoef=(0.0, -0.5, 0.0, 0.0, 0.0))
    return rigid.MultiBody(bodies, tendons=tendons, equalities=[eq])


def test_gradients_through_friction_loss_and_equality():
    """d(final position)/d(frictionloss, polycoef c₁) by reverse and forward mode
    agree with each other and with central differences, through 100 steps in which
    the slider slips throughout (the loss is smooth there)."""
    model = _hand_built()
    assert model.constrained
    y0 = (jnp.zeros(2), jnp.array([0.5, 0.0]))

    def final(p):
        mb = eqx.tree_at(
            lambda x: (x.joints[0].frictionloss, x.equalities[0].polycoef),
            model,
            (p[0], jnp.array([0.0, p[1], 0.0, 0.0, 0.0])),
        )
        traj = sciad.simulate(mb, y0, dt=2e-3, n_steps=100, integrator=rigid.SemiImplicitEuler())
        return traj.y1[0][0]

    p = jnp.array([0.8, -0.5])
    grad = jax.jit(jax.grad(final))(p)
    # One compiled forward-mode program gives the tangents and, as its primal outputs,
    # the values for the central differences.
    jvp = jax.jit(lambda x, e: jax.jvp(final, (x,), (e,)))
    tangents = [jvp(p, e)[1] for e in jnp.eye(2)]
    eps = 1e-6
    fd = np.array(
        [(jvp(p + eps * e, e)[0] - jvp(p - eps * e, e)[0]) / (2 * eps) for e in jnp.eye(2)]
    )
    np.testing.assert_allclose(grad, tangents, rtol=1e-10)
    np.testing.assert_allclose(grad, fd, rtol=1e-6)
    assert np.all(np.abs(fd) > 1e-3)
    assert float(jvp(p, jnp.eye(2)[0])[0]) > 0.05  # it moved down the slope


def test_friction_alone_makes_the_model_constrained():
    """A model whose only constraint is a joint friction loss runs with time stepping
    and holds still while gravity pulls less than the friction loss."""
    joint = rigid.HingeJoint(axis=(0.0, 1.0, 0.0), frictionloss=2.0)
    model = rigid.MultiBody(
        [rigid.Body("a", joint=joint, mass=1.0, inertia=(0.1, 0.1, 0.1), com=(0.1, 0.0, 0.0))]
    )
    assert model.constrained
    assert "joint friction losses ('a')" in model.constraint_names()
    with pytest.raises(ValueError, match="no smooth vector field"):
        model.vector_field(0.0, model.default_state())
    traj = sciad.simulate(model, model.default_state(), dt=1e-3, n_steps=200)
    # It creeps (a soft friction row), two orders of magnitude less than it would fall
    # without friction: about ½ q̈ t².
    fall = 0.5 * model.accelerations(0.0, *model.default_state())[0] * 0.2**2
    assert abs(float(traj.y1[0][0])) < 0.02 * abs(float(fall))

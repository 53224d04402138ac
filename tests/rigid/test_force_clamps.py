"""Actuator force clamps and gravity compensation against MuJoCo C: an actuator's
`forcerange` (`force_range`), a joint's and a tendon's `actuatorfrcrange`
(`actuator_force_range`) and a body's `gravcomp` (passive, or through the actuators
with `actuatorgravcomp`), run beside `mj_step` under Euler and RK4 with the clamps
active and inactive; gradients through the clamps by reverse and forward mode
against central differences; and the precise errors for bad values."""

import equinox as eqx
import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid

mujoco = pytest.importorskip("mujoco")


def _arm(tight: bool, option: str = "", free: bool = True) -> str:
    """A hinged arm with a slider at its tip and a free float: gravity compensation
    on every body (the elbow's and the slider's through their actuators), actuator
    force ranges (one with a negative gear) and joint actuator force ranges; `tight`
    ranges bind within the run, the others never do. `free=False`: without the float."""
    shoulder, elbow, fr1, fr2, fr3 = (
        ("-1.5 1.2", "-0.05 0.05", "-0.5 0.4", "-0.3 0.2", "-0.5 0.5")
        if tight
        else ("-90 80", "-70 60", "-50 40", "-30 20", "-50 50")
    )
    return f"""
<mujoco>
  <option timestep="0.005" {option}><flag contact="disable"/></option>
  <worldbody>
    <body name="upper" pos="0 0 1" gravcomp="0.6">
      <joint name="shoulder" type="hinge" axis="0 1 0" damping="0.2"
             actuatorfrcrange="{shoulder}"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04"/>
      <body name="lower" pos="0.4 0 0" gravcomp="1">
        <joint name="elbow" type="hinge" axis="0 1 0" ref="0.2" damping="0.1"
               actuatorgravcomp="true" actuatorfrcrange="{elbow}"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
        <body name="tip" pos="0.3 0 0" gravcomp="0.3">
          <joint name="slide" type="slide" axis="1 0 0.5" actuatorgravcomp="true"/>
          <geom type="sphere" size="0.05"/>
        </body>
      </body>
    </body>
    {FLOAT if free else ""}
  </worldbody>
  <actuator>
    <motor name="m1" joint="shoulder" gear="2" forcerange="{fr1}"/>
    <position name="p1" joint="shoulder" kp="3" kv="0.2"/>
    <motor name="m2" joint="elbow" gear="-1.5" forcerange="{fr2}"/>
    <motor name="m3" joint="slide" forcerange="{fr3}"/>
  </actuator>
</mujoco>"""


def _tendons(tight: bool, option: str = "") -> str:
    """Two hinges and a slider under a fixed tendon (two actuators of gear −2 on it)
    and a spatial tendon (one actuator of gear 1.5), both with actuator force ranges,
    and a joint actuator force range on the first hinge that also clamps the tendon
    actuators' share."""
    fixed, spatial, j1 = (
        ("-0.6 0.5", "-0.4 0.3", "-0.2 0.7") if tight else ("-60 50", "-40 30", "-80 70")
    )
    return f"""
<mujoco>
  <option timestep="0.005" {option}><flag contact="disable"/></option>
  <worldbody>
    <site name="w" pos="0 0.3 1.5"/>
    <body name="a" pos="0 0 1">
      <joint name="j1" type="hinge" axis="0 1 0" damping="0.1" actuatorfrcrange="{j1}"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04"/>
      <site name="s1" pos="0.3 0.05 0"/>
      <body name="b" pos="0.4 0 0">
        <joint name="j2" type="hinge" axis="0 0.6 0.8" damping="0.1"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
        <body name="c" pos="0.3 0 0">
          <joint name="j3" type="slide" axis="1 0 0"/>
          <geom type="sphere" size="0.05"/>
          <site name="s3" pos="0.05 0.05 0"/>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="fix" actuatorfrcrange="{fixed}">
      <joint joint="j1" coef="1"/><joint joint="j2" coef="-0.7"/><joint joint="j3" coef="2"/>
    </fixed>
    <spatial name="sp" actuatorfrcrange="{spatial}"><site site="w"/><site site="s1"/><site site="s3"/></spatial>
  </tendon>
  <actuator>
    <motor name="t1" tendon="fix" gear="-2"/>
    <general name="t2" tendon="fix" gear="-2" gainprm="1.5" biastype="affine" biasprm="0.1 -2 -0.3"/>
    <motor name="t3" tendon="sp" gear="1.5"/>
    <motor name="j" joint="j1" gear="0.5"/>
  </actuator>
</mujoco>"""


FLOAT = """<body name="float" pos="1 0 1" gravcomp="0.7">
      <freejoint/>
      <geom type="box" size="0.1 0.2 0.05"/>
    </body>"""
ARM_CTRL = np.array([1.0, 0.8, 0.6, 2.0])
TENDON_CTRL = np.array([0.9, -0.7, 0.6, 1.5])


@eqx.filter_jit
def _simulate(model, y0, dt, integrator, n):
    return sciad.simulate(
        model, y0, dt=dt, n_steps=n, integrator=integrator, saveat=sciad.SaveAt(steps=1)
    )


def _run_both(xml, ctrl, n=300, seed=0):
    """n steps of `mj_step` and of sciad from the same perturbed state (constant
    controls): the largest |Δqpos| and |Δqvel| over the run, and MuJoCo's data at its
    end."""
    m = mujoco.MjModel.from_xml_string(xml)
    mj = rigid.from_mujoco(m, control=rigid.ConstantControl(jnp.asarray(ctrl)))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    d.qpos[:] = m.qpos0 + 0.3 * rng.standard_normal(m.nq)
    mujoco.mj_normalizeQuat(m, d.qpos)
    d.qvel[:] = 0.5 * rng.standard_normal(m.nv)
    d.ctrl[:] = ctrl
    y0 = (mj.qpos_to_q(d.qpos.copy()), jnp.asarray(d.qvel.copy()))
    qpos, qvel = [], []
    for _ in range(n):
        mujoco.mj_step(m, d)
        qpos.append(d.qpos.copy())
        qvel.append(d.qvel.copy())
    traj = _simulate(mj.model, y0, mj.dt, mj.integrator, n)
    dq = np.abs(np.asarray(mj.q_to_qpos(traj.ys[0])) - np.asarray(qpos)).max()
    dv = np.abs(np.asarray(traj.ys[1]) - np.asarray(qvel)).max()
    return dq, dv, m, d


def _at_bound(x, lo, hi):
    return np.isclose(x, lo, rtol=0, atol=1e-12) | np.isclose(x, hi, rtol=0, atol=1e-12)


@pytest.mark.parametrize("integrator", ["Euler", "RK4"])
@pytest.mark.parametrize("tight", [True, False], ids=["active", "inactive"])
def test_arm_runs_as_mujoco(integrator, tight):
    """300 steps beside MuJoCo C, qpos and qvel to round-off (measured:
    |Δqpos| ≤ 9.8e-15, |Δqvel| ≤ 1.9e-14 over the four cases), with the actuator and joint clamps binding at the end (`active`) or
    never (`inactive`), gravity compensation passive on the shoulder and the float
    and through the actuators on the elbow and slider."""
    xml = _arm(tight, f'integrator="{integrator}"')
    dq, dv, m, d = _run_both(xml, ARM_CTRL)
    mujoco.mj_forward(m, d)
    force_bound = _at_bound(d.actuator_force, *m.actuator_forcerange.T)[[0, 2, 3]]
    joint_bound = _at_bound(d.qfrc_actuator[:2], *m.jnt_actfrcrange[:2].T)
    if tight:
        assert force_bound.all() and joint_bound.all()
    else:
        assert not force_bound.any() and not joint_bound.any()
    assert np.abs(d.qfrc_gravcomp).max() > 0.1
    assert dq < 1e-10 and dv < 1e-10, (dq, dv)


@pytest.mark.parametrize("integrator", ["Euler", "RK4"])
@pytest.mark.parametrize("tight", [True, False], ids=["active", "inactive"])
def test_tendon_clamps_run_as_mujoco(integrator, tight):
    """300 steps beside MuJoCo C with the tendons' actuator force ranges (the
    actuators' forces scaled together) and the joint's range on the tendon
    actuators' share, all binding at the end (`active`) or never (`inactive`): qpos
    and qvel to round-off (measured: |Δqpos| ≤ 8.0e-15, |Δqvel| ≤ 2.3e-14)."""
    xml = _tendons(tight, f'integrator="{integrator}"')
    dq, dv, m, d = _run_both(xml, TENDON_CTRL)
    mujoco.mj_forward(m, d)
    fix = d.actuator_force[0] + d.actuator_force[1]
    scaled = _at_bound(np.array([fix, d.actuator_force[2]]), *m.tendon_actfrcrange.T)
    scaled = np.append(scaled, _at_bound(d.qfrc_actuator[0], *m.jnt_actfrcrange[0]))
    assert scaled.all() if tight else not scaled.any()
    assert dq < 1e-10 and dv < 1e-10, (dq, dv)


def _final(mj, y0, integrator):
    def fn(p):
        u, gravcomp = p
        model = eqx.tree_at(lambda mb: mb.control.value, mj.model, u)
        model = eqx.tree_at(lambda mb: mb.gravcomp, model, model.gravcomp.at[1].set(gravcomp))
        traj = sciad.simulate(model, y0, dt=mj.dt, n_steps=100, integrator=integrator)
        return traj.y1[0][0] + 0.5 * traj.y1[0][1]

    return fn


def test_gradients_through_the_clamps():
    """d(final shoulder + ½ elbow angle)/d(controls, the upper arm's gravcomp) through
    100 steps with clamps binding: reverse and forward mode agree with central
    differences (relative 1e-6) in float64, finite everywhere; zero for the controls
    whose forces stay clamped (the elbow motor behind the elbow's bound, the
    saturated slider motor), nonzero for the others."""
    m = mujoco.MjModel.from_xml_string(_arm(True, free=False))
    ctrl = jnp.asarray([0.3, 0.2, 0.25, 0.6])
    mj = rigid.from_mujoco(m, control=rigid.ConstantControl(ctrl))
    y0 = (mj.y0[0] + 0.1, mj.y0[1])
    fn = _final(mj, y0, rigid.SemiImplicitEuler())
    p0 = (ctrl, jnp.asarray(0.6))
    flat, unravel = jax.flatten_util.ravel_pytree(p0)
    value_and_grad = jax.jit(jax.value_and_grad(lambda x: fn(unravel(x))))
    grad = value_and_grad(flat)[1]
    jvp = jax.jit(jax.vmap(lambda t: jax.jvp(lambda x: fn(unravel(x)), (flat,), (t,))[1]))
    forward = jvp(jnp.eye(flat.shape[0]))
    h = 1e-6
    central = np.array(
        [
            (float(value_and_grad(flat + h * e)[0]) - float(value_and_grad(flat - h * e)[0]))
            / (2 * h)
            for e in np.eye(flat.shape[0])
        ]
    )
    assert np.all(np.isfinite(np.asarray(grad)))
    np.testing.assert_allclose(grad, central, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(forward, central, rtol=1e-6, atol=1e-9)
    assert np.all(central[[2, 3]] == 0) and np.all(central[[0, 1, 4]] != 0)


def test_clamped_force_is_gradient_safe():
    """A tendon whose actuators' forces sum to zero (MuJoCo leaves it unscaled):
    the model's forces and their gradient stay finite."""
    m = mujoco.MjModel.from_xml_string(_tendons(True))
    mj = rigid.from_mujoco(m, control=rigid.ConstantControl(jnp.zeros(4)))
    model = eqx.tree_at(lambda mb: mb.actuators[1].bias_constant, mj.model, jnp.asarray(0.0))
    q, v = mj.y0

    def f(u):
        mb = eqx.tree_at(lambda mb: mb.control.value, model, u)
        return jnp.sum(mb.applied_force(0.0, q, v))

    g = jax.jit(jax.grad(f))(jnp.zeros(4))
    assert np.all(np.isfinite(np.asarray(g)))


def test_bad_values_raise():
    """Each new field refuses bad values with a precise error before tracing."""
    with pytest.raises(ValueError, match="force_range must have lower <= upper"):
        rigid.JointActuator.motor("a", force_range=(1.0, -1.0))
    with pytest.raises(ValueError, match="force_range"):
        rigid.TendonActuator("t", force_range=(1.0, 2.0, 3.0))
    with pytest.raises(ValueError, match="actuator_force_range must have lower <= upper"):
        rigid.HingeJoint(actuator_force_range=(2.0, 1.0))
    with pytest.raises(TypeError, match="actuator_gravcomp"):
        rigid.SliderJoint(actuator_gravcomp=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="actuator_force_range must have lower <= upper"):
        rigid.FixedTendon("t", [("a", 1.0)], actuator_force_range=(1.0, 0.0))
    with pytest.raises(ValueError, match="gravcomp must be finite"):
        rigid.Body("b", mass=1.0, inertia=(1.0, 1.0, 1.0), gravcomp=float("nan"))


def test_mjcf_refusals():
    """What stays refused: gravity compensation through the actuators of a ball
    joint, and a tendon range with actuators of different gears. (MuJoCo's compiler
    itself refuses reversed ranges.)"""
    ball = """<mujoco><worldbody><body gravcomp="1"><joint type="ball" actuatorgravcomp="true"/>
      <geom size="0.1"/></body></worldbody></mujoco>"""
    with pytest.raises(ValueError, match="actuatorgravcomp on a ball or free joint"):
        rigid.from_mujoco(mujoco.MjModel.from_xml_string(ball))
    xml = _tendons(True).replace('gear="-2" gainprm', 'gear="3" gainprm')
    with pytest.raises(ValueError, match="different gears"):
        rigid.from_mujoco(mujoco.MjModel.from_xml_string(xml))


def _thrusters(option: str = "") -> str:
    """A quadrotor (a free body, four rotors at sites: thrust along the body's z axis
    and a drag torque, one rotor's force clamped) and a hinged arm pushed by a
    thruster at a rotated site on its child link (a velocity-dependent bias)."""
    clamp = ('forcerange="0 2.2"', "", "", "")
    rotors = "".join(
        f'<motor site="r{i}" gear="0 0 1 0 0 {0.05 * s}" ctrllimited="true" ctrlrange="0 4"'
        f" {clamp[i]}/>"
        for i, s in enumerate((1, -1, 1, -1))
    )
    sites = "".join(
        f'<site name="r{i}" pos="{x} {y} 0.02"/>'
        for i, (x, y) in enumerate(((0.2, 0), (0, 0.2), (-0.2, 0), (0, -0.2)))
    )
    return f"""
<mujoco>
  <option timestep="0.005" {option}><flag contact="disable"/></option>
  <worldbody>
    <body name="drone" pos="0 0 1">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.02" mass="0.8"/>
      {sites}
    </body>
    <body name="arm" pos="1 0 1">
      <joint name="h1" type="hinge" axis="0 1 0" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <body name="fore" pos="0.3 0 0">
        <joint name="h2" type="hinge" axis="0 0 1"/>
        <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
        <site name="jet" pos="0.2 0 0" euler="20 30 0"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    {rotors}
    <general site="jet" gear="0.3 0 1 0.02 0 0" gainprm="2" biastype="affine"
             biasprm="0.1 0 -0.4" forcerange="-1 1.5"/>
  </actuator>
</mujoco>"""


THRUST_CTRL = np.array([2.5, 1.9, 2.1, 1.8, 0.9])


@pytest.mark.parametrize("integrator", ["Euler", "RK4"])
def test_site_transmissions_run_as_mujoco(integrator):
    """Wrenches at sites (MuJoCo's site transmission without a reference site): a
    quadrotor and a thruster on a hinged arm, 300 steps beside MuJoCo C, qpos and
    qvel to round-off, with the clamped rotor and the thruster at their force range."""
    dq, dv, m, d = _run_both(_thrusters(f'integrator="{integrator}"'), THRUST_CTRL)
    mujoco.mj_forward(m, d)
    assert d.actuator_force[0] == 2.2 and d.actuator_force[4] == 1.5
    assert dq < 1e-10 and dv < 1e-10, (dq, dv)


@pytest.mark.slow  # ~25 s of CPU: its own reverse- and forward-mode programs
def test_gradient_through_a_site_transmission():
    """d(final arm angles)/d(the jet's gear, the controls) through 60 Euler steps, by
    reverse and forward mode against central differences in float64 (relative
    1e-6): exactly zero for the rotors (they move another body) and for the jet's
    own control (its force is clamped), nonzero for the gear."""
    m = mujoco.MjModel.from_xml_string(_thrusters())
    ctrl = jnp.asarray(THRUST_CTRL)
    mj = rigid.from_mujoco(m, control=rigid.ConstantControl(ctrl))
    integrator = rigid.SemiImplicitEuler()

    def fn(x):
        model = eqx.tree_at(lambda mb: mb.actuators[4].gear, mj.model, x[:6])
        model = eqx.tree_at(lambda mb: mb.control.value, model, x[6:])
        traj = sciad.simulate(model, mj.y0, dt=mj.dt, n_steps=60, integrator=integrator)
        return traj.y1[0][7] + 0.5 * traj.y1[0][8]

    x0 = jnp.concatenate([mj.model.actuators[4].gear, ctrl])
    value_and_grad = jax.jit(jax.value_and_grad(fn))
    grad = np.asarray(value_and_grad(x0)[1])
    forward = np.asarray(jax.jit(jax.vmap(lambda t: jax.jvp(fn, (x0,), (t,))[1]))(jnp.eye(11)))
    h = 1e-6
    central = np.array(
        [
            (float(value_and_grad(x0 + h * e)[0]) - float(value_and_grad(x0 - h * e)[0])) / (2 * h)
            for e in np.eye(11)
        ]
    )
    np.testing.assert_allclose(grad, central, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(forward, central, rtol=1e-6, atol=1e-9)
    assert np.all(grad[6:] == 0) and np.all(central[[0, 2, 3]] != 0)


def test_gravity_compensation_conserves_its_energy():
    """A pendulum compensated by 60 %: its angular acceleration is 40 % of the
    uncompensated one's (to 1e-14), and the energy with the compensation counted is
    conserved over 2000 RK4 steps (measured: 9e-14 J)."""

    def pendulum(gravcomp):
        joint = rigid.HingeJoint(axis=(0.0, 1.0, 0.0))
        body = rigid.Body(
            "bob",
            joint=joint,
            com=(0.0, 0.0, -1.0),
            mass=1.0,
            inertia=(1e-3,) * 3,
            gravcomp=gravcomp,
        )
        return rigid.MultiBody([body])

    mb, bare = pendulum(0.6), pendulum(0.0)
    q, v = jnp.array([1.0]), jnp.array([0.0])
    ratio = float(mb.accelerations(0.0, q, v)[0] / bare.accelerations(0.0, q, v)[0])
    assert abs(ratio - 0.4) < 1e-14
    traj = sciad.simulate(
        mb,
        (q, v),
        dt=1e-3,
        n_steps=2000,
        integrator=rigid.RKMK4(),
        saveat=sciad.SaveAt(steps=100, fn=lambda t, y, m: m.energy(y)),
    )
    assert float(jnp.max(traj.ys) - jnp.min(traj.ys)) < 1e-12

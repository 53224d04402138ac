"""MuJoCo's `implicitfast` and `implicit` integrators (`SemiImplicitEuler(implicit=
"fast")`, `"full"`) against MuJoCo C: which velocity derivatives each takes implicitly
(actuator velocity gains unless saturated, joint and tendon damping, fluid forces,
Coriolis forces), the sparsity MuJoCo keeps, the local solve of a lone free body, with
and without constraints; the stability that is their point; gradients against central
differences."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid

mujoco = pytest.importorskip("mujoco")

# A light three-link arm held by stiff position servos (kp 2000, kv 200 on a 0.05 kg
# wrist, as robot arms in MuJoCo Menagerie are), joint damping and armature, one servo
# saturated by its forcerange; a slider carries a velocity servo.
ARM = """<mujoco><option timestep="0.002" integrator="{integrator}" {option}>{flag}</option>
<default><general gaintype="fixed" biastype="affine" gainprm="2000" biasprm="0 -2000 -200"/></default>
<worldbody>
<body name="a" pos="0 0 0.5"><joint name="j1" axis="0 0 1" damping="0.5" armature="0.01"/>
  <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/>
  <body name="b" pos="0.3 0 0"><joint name="j2" axis="0 1 0" armature="0.002"/>
    <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02" mass="0.2"/>
    <body name="c" pos="0.2 0 0"><joint name="j3" axis="1 0 0" damping="0.01"/>
      <geom type="box" size="0.03 0.02 0.01" pos="0.03 0 0" mass="0.05"/>
      <body name="d" pos="0.06 0 0"><joint name="s" type="slide" axis="1 0 0"/>
        <geom type="sphere" size="0.01" mass="0.02"/></body>
    </body>
  </body>
</body>
{extra}
</worldbody>
<actuator>
  <general joint="j1"/><general joint="j2" forcerange="-3 3"/><general joint="j3"/>
  <velocity joint="s" kv="5"/>
</actuator></mujoco>"""

# The runs without a floor touch nothing (MuJoCo finds no contact in them): their
# geoms' 39 pairs are switched off, which leaves the physics as it is and spares the
# compiler every pair's narrowphase.
NO_CONTACT = '<flag contact="disable"/>'

# Two sibling fingers coupled by a damped fixed tendon driven by a position servo with
# a velocity gain (their cross derivatives lie outside M's sparsity, and MuJoCo drops
# them); a lone free body (its gyroscopic derivative is implicit under implicitfast
# too); a free body with a finned child; all in a dense medium (inertia-box and
# ellipsoid fluid models).
OTHERS = """<body name="palm" pos="1 0 0.3"><joint name="wrist" axis="0 0 1" damping="0.1"/>
  <geom type="box" size="0.04 0.04 0.01" mass="0.3"/>
  <body name="f1" pos="0.03 0 0"><joint name="f1" axis="0 1 0"/>
    <geom type="capsule" fromto="0 0 0 0 0 0.06" size="0.008" mass="0.02"/></body>
  <body name="f2" pos="-0.03 0 0"><joint name="f2" axis="0 1 0"/>
    <geom type="capsule" fromto="0 0 0 0 0 0.06" size="0.008" mass="0.02"/></body>
</body>
<body name="lone" pos="0 2 1"><freejoint/><geom type="box" size="0.1 0.2 0.3" mass="2"/></body>
<body name="base" pos="2 0 1"><freejoint/><geom type="box" size="0.05 0.1 0.02" mass="1"/>
  <body name="fin" pos="0.05 0 0"><joint axis="0 1 0" damping="0.01"/>
    <geom type="ellipsoid" size="0.1 0.05 0.005" pos="0.1 0 0" mass="0.1"
      fluidshape="ellipsoid"/></body></body>"""
TENDON = """<tendon><fixed name="grip" damping="0.05"><joint joint="f1" coef="0.5"/>
  <joint joint="f2" coef="-0.5"/></fixed></tendon>"""
GRIP = '<position tendon="grip" kp="20" kv="2"/>'
WORLD = (
    ARM.format(
        integrator="{integrator}",
        option='density="1000" viscosity="0.01"',
        flag=NO_CONTACT,
        extra=OTHERS,
    )
    .replace("<actuator>", TENDON + "<actuator>")
    .replace("</actuator>", GRIP + "</actuator>")
)

# The arm above a floor it falls onto, with a joint limit: the constrained step.
FLOOR = '<geom type="plane" size="2 2 0.1" pos="0 0 0.4"/>'


def _run(xml, integrator, n, seed=0, ctrl=None):
    """sciad and MuJoCo (solve converged) n steps from a random velocity: the largest
    differences in qpos and qvel over the run."""
    m = mujoco.MjModel.from_xml_string(xml.format(integrator=integrator))
    m.opt.tolerance, m.opt.iterations = 0.0, 1000
    u = None if ctrl is None else rigid.ConstantControl(jnp.asarray(ctrl))
    mj = rigid.from_mujoco(m, control=u)
    d = mujoco.MjData(m)
    d.qvel[:] = np.random.default_rng(seed).normal(size=m.nv)
    if ctrl is not None:
        d.ctrl[:] = ctrl
    q0 = mj.qpos_to_q(jnp.asarray(d.qpos))
    traj = sciad.simulate(
        mj.model,
        (q0, jnp.asarray(d.qvel)),
        dt=mj.dt,
        n_steps=n,
        integrator=mj.integrator,
        saveat=sciad.SaveAt(steps=1),
    )
    qs, vs = np.asarray(jax.vmap(mj.q_to_qpos)(traj.ys[0])), np.asarray(traj.ys[1])
    dq = dv = 0.0
    contacts = 0
    for k in range(n):
        mujoco.mj_step(m, d)
        dq = max(dq, np.abs(qs[k] - d.qpos).max())
        dv = max(dv, np.abs(vs[k] - d.qvel).max())
        contacts += d.ncon
    return mj, dq, dv, contacts


@pytest.mark.parametrize("integrator", ["implicitfast", "implicit"])
def test_implicit_integrators_match_mujoco(integrator):
    """The servoed arm (one servo saturated), the tendon-coupled fingers, the spinning
    lone free body and the finned one, in a dense medium: 200 steps agree with mj_step
    to 1e-10 in qpos and qvel (measured 2026-11-29: 3.3e-14 and 9.3e-13 for
    implicitfast, 1.2e-14 and 9.4e-13 for implicit). Each rule counts: kept, the
    fingers' cross terms part the runs by 1.5 in qpos; under implicitfast, the lone
    body's block without its gyroscopic derivative by 3.2e-4, the fluid derivative
    unsymmetrised by 8.4e-3."""
    mj, dq, dv, _ = _run(WORLD, integrator, 200, ctrl=[0.3, 1.0, -0.2, 0.1, 0.4])
    assert mj.integrator == rigid.SemiImplicitEuler(
        implicit="fast" if integrator == "implicitfast" else "full"
    )
    assert dq < 1e-10 and dv < 1e-10, (dq, dv)


def test_explicit_servos_blow_up_where_implicitfast_holds():
    """The same arm under MuJoCo's Euler (only the joint damping implicit): the wrist's
    kv/I·h ≫ 2, so the run turns non-finite, in MuJoCo as in sciad, which says so;
    implicitfast keeps it finite (the reason robot models ask for it)."""
    xml = ARM.format(integrator="Euler", option="", flag=NO_CONTACT, extra="")
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qvel[:] = 0.1
    for _ in range(100):
        mujoco.mj_step(m, d)
    assert d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number > 0
    mj = rigid.from_mujoco(m)
    y0 = (mj.y0[0], jnp.full(m.nv, 0.1))
    with pytest.raises(Exception, match="non-finite"):
        sciad.simulate(mj.model, y0, dt=mj.dt, n_steps=100, integrator=mj.integrator)
    fast = rigid.SemiImplicitEuler(implicit="fast")
    y1 = sciad.simulate(mj.model, y0, dt=mj.dt, n_steps=100, integrator=fast).y1
    assert np.all(np.isfinite(np.asarray(y1[1])))


def test_arm_falling_on_a_floor_matches_mujoco():
    """The constrained step: the arm's elbow servo (saturated) swings it down onto a
    floor, against a joint limit, under implicitfast: 400 steps agree with mj_step
    (solve converged) to 1e-9 (measured 1.1e-16 in qpos, 6.6e-15 in qvel)."""
    limit = ARM.replace('name="j2" axis="0 1 0"', 'name="j2" axis="0 1 0" range="-57 40"')
    xml = limit.format(integrator="{integrator}", option="", flag="", extra=FLOOR)
    _, dq, dv, contacts = _run(xml, "implicitfast", 400, seed=3, ctrl=[0.0, 1.4, 0.0, 0.0])
    assert contacts > 0
    assert dq < 1e-9 and dv < 1e-9, (dq, dv)


@pytest.mark.parametrize("implicit", ["fast", "full"])
def test_gradient_through_implicit_steps_matches_finite_differences(implicit):
    """d(final qvel · w)/d(the first servo's kv, the elbow's armature) through 50 steps
    (the elbow's servo saturating): reverse mode equals forward mode to 1e-10 and
    central differences (float64; steps 1e-2 and 2e-7, where their error is below
    2e-8 relative) to 1e-6."""
    m = mujoco.MjModel.from_xml_string(
        ARM.format(integrator="Euler", option="", flag=NO_CONTACT, extra="")
    )
    mj = rigid.from_mujoco(m, control=rigid.ConstantControl(jnp.asarray([0.3, 0.5, -0.2, 0.1])))
    integrator = rigid.SemiImplicitEuler(implicit=implicit)
    v0 = jnp.asarray(np.random.default_rng(4).normal(size=m.nv))
    w = jnp.asarray(np.random.default_rng(5).normal(size=m.nv))

    def loss(p):
        model = eqx.tree_at(lambda mb: mb.actuators[0].bias_velocity, mj.model, p[0])
        model = eqx.tree_at(lambda mb: mb.joints[1].armature, model, p[1])
        y1 = sciad.simulate(model, (mj.y0[0], v0), dt=mj.dt, n_steps=50, integrator=integrator).y1
        return jnp.dot(y1[1], w)

    p0 = jnp.asarray([-200.0, 0.002])
    g = jax.jit(jax.grad(loss))(p0)
    fwd = jax.jit(jax.jacfwd(loss))(p0)
    np.testing.assert_allclose(np.asarray(g), np.asarray(fwd), rtol=1e-10, atol=1e-12)
    value = jax.jit(loss)
    steps = jnp.asarray([1e-2, 2e-7])
    fd = [
        (value(p0 + h * e) - value(p0 - h * e)) / (2 * h)
        for e, h in zip(jnp.eye(2), steps, strict=True)
    ]
    np.testing.assert_allclose(np.asarray(g), np.asarray(fd), rtol=1e-6)

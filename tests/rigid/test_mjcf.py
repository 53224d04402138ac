"""MJCF import (`sciad.rigid.load_mjcf`, `from_mujoco`) with MuJoCo C as the reference:
the converted models' mass matrices, bias forces, actuator forces and trajectories, the
qpos/qvel converters, the colliding geom pairs against `mj_collision`, and a precise
error for every feature the converter cannot represent."""

from pathlib import Path
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid

from .scenes import chain_mjcf, quadruped_mjcf, random_state

mujoco = pytest.importorskip("mujoco")

ANT = Path(__file__).resolve().parents[2] / "benchmarks" / "scenes" / "ant.xml"

# Hinge and slider with reference positions, a position servo with gear and a clamped
# control range, a velocity servo, and a general affine actuator.
SERVO_XML = """<mujoco><option timestep="0.002"/><worldbody>
<body name="arm" pos="0 0 1" euler="10 -20 5"><joint name="hinge" type="hinge" axis="0 1 0.2"
    pos="0.02 0 0" ref="20" damping="0.2" armature="0.01" {hinge_range}/>
  <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.03"/>
  <body name="cart" pos="0.5 0 0"><joint name="slide" type="slide" axis="1 0 0.1" ref="0.1"
      damping="0.1" {slide_range}/>
    <geom type="box" size="0.05 0.04 0.03" euler="0 30 0"/></body></body>
</worldbody><actuator>
<position name="servo" joint="hinge" kp="5" kv="0.3" gear="2" ctrlrange="-0.5 0.5"/>
<velocity name="speed" joint="slide" kv="3" gear="1.5"/>
<general name="affine" joint="slide" gainprm="2" biastype="affine" biasprm="0.1 -0.4 -0.2"
    gear="0.7"/>
</actuator></mujoco>"""
SERVO = SERVO_XML.format(hinge_range="", slide_range="")
SERVO_LIMITED = SERVO_XML.format(hinge_range='range="-10 12"', slide_range='range="0.05 0.3"')

# A massless frame (a site holder, folded into its parent) between two moving bodies,
# with a rotated placement, a welded massive body, and a welded point mass (zero
# inertia, as the sensor links of gymnasium-robotics' Fetch).
MASSLESS = """<mujoco><worldbody><body name="base" pos="0 0 1"><freejoint/>
<geom type="box" size="0.2 0.1 0.05"/>
<body name="tag" pos="-0.1 0.05 0.02"><inertial pos="0.02 0 0.01" mass="0.3" diaginertia="0 0 0"/></body>
<body name="frame" pos="0.2 0.05 0" quat="0.9 0.1 0.3 -0.2"><site name="mount"/>
  <body name="link" pos="0.05 0 0" euler="0 10 0"><joint type="hinge" axis="0 0 1" pos="0 0.01 0"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/>
    <body name="weight" pos="0.3 0 0"><geom type="sphere" size="0.05"/></body></body>
</body></body></worldbody></mujoco>"""

FREE = """<mujoco><option timestep="0.001" integrator="RK4"/><worldbody>
<body name="top" pos="0.1 0.2 1" quat="0.8 0.2 -0.1 0.3"><freejoint/>
<inertial pos="0.1 -0.05 0.2" quat="0.9 0.2 -0.3 0.1" mass="2" diaginertia="0.1 0.2 0.3"/>
</body></worldbody></mujoco>"""

# Several joints in one body, as MuJoCo's planar walkers have them: a torso on a planar
# root (two slides and a hinge, with off-origin joint positions), an abdomen on two
# hinges through different points, a leg on one, a two-slide target, actuators on
# joints of multi-joint bodies, and joint springs (stiffness, springref; a slider's
# springref with a ref, a hinge's in degrees).
PLANAR = """<mujoco><option timestep="0.002"><flag contact="disable"/></option><worldbody>
<body name="torso" pos="0.1 0 1.2" euler="0 5 0">
  <joint name="rootx" type="slide" axis="1 0 0" damping="0.1"/>
  <joint name="rootz" type="slide" axis="0 0 1" ref="0.3" stiffness="50" springref="0.2"/>
  <joint name="rooty" type="hinge" axis="0 1 0" pos="0 0 -0.1" armature="0.01"/>
  <geom type="capsule" fromto="0 0 -0.2 0 0 0.2" size="0.05"/>
  <body name="abdomen" pos="0 0 -0.25" euler="3 -4 10">
    <joint name="abdomen_y" type="hinge" axis="0 1 0" pos="0 0.01 0.05"/>
    <joint name="abdomen_z" type="hinge" axis="0.1 0 1" pos="0.02 0 0" damping="0.05"
      stiffness="3" springref="10"/>
    <geom type="box" size="0.05 0.08 0.06" pos="0.01 0.02 -0.05"/>
    <body name="leg" pos="0 0.05 -0.1"><joint name="knee" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.02 0 -0.3" size="0.03"/></body>
  </body>
</body>
<body name="target" pos="0.5 0.5 0.1">
  <joint name="tx" type="slide" axis="1 0 0"/><joint name="ty" type="slide" axis="0 1 0"/>
  <geom type="sphere" size="0.03"/></body>
</worldbody><actuator>
<motor name="hip" joint="abdomen_y" gear="2"/><motor name="push" joint="rootx"/>
<position name="aim" joint="ty" kp="3"/>
</actuator></mujoco>"""

# tests/rigid/test_mujoco.py checks the converted chain, quadruped, free body and
# MIXED_MJCF (every joint type) the same way.
SCENES = {
    "chain": chain_mjcf(5, damping=0.1),
    "free": FREE,
    "servo": SERVO,
    "massless": MASSLESS,
    "ant": ANT.read_text(),
    "planar": PLANAR,
}


def mujoco_at(m, d, mj, q, v):
    d.qpos[:], d.qvel[:] = np.asarray(mj.q_to_qpos(q)), np.asarray(mj.v_to_qvel(v))
    mujoco.mj_forward(m, d)


@eqx.filter_jit
def terms(model, q, v):
    pos, _ = model.forward_kinematics(q)
    return model.mass_matrix(q), model.bias_force(q, v), pos


@pytest.mark.parametrize("scene", ["servo", "massless", "ant", "planar"])
def test_mass_matrix_bias_and_poses_match_mujoco(scene):
    """The converted model's mass matrix (mj_fullM), bias forces (qfrc_bias) and body
    positions (xpos) equal MuJoCo's at random states to 1e-12 relative to their scale
    (measured ≤ 2e-15): reference positions, off-centre and tilted joint axes, rotated
    bodies and principal axes, welded and folded massless bodies, the ant, and bodies
    with several joints (the chains of massless links they become carry no MuJoCo
    body: only the bodies MuJoCo has are compared)."""
    m = mujoco.MjModel.from_xml_string(SCENES[scene])
    d = mujoco.MjData(m)
    mj = rigid.from_mujoco(m)
    ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, n) for n in mj.model.names]
    ours = [i for i, b in enumerate(ids) if b >= 0]
    body_ids = [ids[i] for i in ours]
    for seed in range(3):
        q, v = random_state(mj.model, seed)
        mujoco_at(m, d, mj, q, v)
        full = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, full)
        mass, bias, pos = terms(mj.model, q, v)
        got = (mass, bias, pos[np.asarray(ours)])
        for x, ref in zip(got, (full, d.qfrc_bias, d.xpos[body_ids]), strict=True):
            assert np.max(np.abs(np.asarray(x) - ref)) < 1e-12 * (1 + np.max(np.abs(ref)))


def mujoco_run(m, qpos, qvel, n, ctrl=None):
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = qpos, qvel
    for k in range(n):
        if ctrl is not None:
            d.ctrl[:] = ctrl[k]
        mujoco.mj_step(m, d)
    return d.qpos.copy(), d.qvel.copy()


@pytest.mark.parametrize(
    "scene, n, control",
    [
        pytest.param("chain", 1000, None, marks=pytest.mark.slow),
        pytest.param("free", 1000, None, marks=pytest.mark.slow),
        ("servo", 1000, [0.9, 0.2, -0.1]),  # the servo's 0.9 is clamped to 0.5
        ("massless", 500, None),
        ("planar", 500, [0.3, -0.2, 0.1]),
    ],
)
def test_trajectory_matches_mujoco(scene, n, control):
    """From a random state, the converted model run with `sciad.simulate` and the
    integrator the file names (Euler → SemiImplicitEuler with implicit damping, RK4 →
    RKMK4) reproduces mj_step: qpos and qvel agree to 1e-10 (measured ≤ 1e-13)
    after n steps, with actuators (gears, servos, references, clamped controls)."""
    m = mujoco.MjModel.from_xml_string(SCENES[scene])
    u = None if control is None else rigid.ConstantControl(jnp.asarray(control))
    mj = rigid.from_mujoco(m, control=u)
    q, v = random_state(mj.model, 5, scale=0.5)
    y1 = sciad.simulate(mj.model, (q, v), dt=mj.dt, n_steps=n, integrator=mj.integrator).y1
    qpos, qvel = mujoco_run(
        m, np.asarray(mj.q_to_qpos(q)), np.asarray(mj.v_to_qvel(v)), n, [control] * n
    )
    assert np.max(np.abs(np.asarray(mj.q_to_qpos(y1[0])) - qpos)) < 1e-10
    assert np.max(np.abs(np.asarray(mj.v_to_qvel(y1[1])) - qvel)) < 1e-10


@pytest.mark.slow
def test_quadruped_with_control_sequence_matches_mujoco():
    """The quadruped's eight motors (gear 2) following a random control sequence
    (an InterpolatedControl with knots at the step times), 500 Euler steps: agreement
    with mj_step to 1e-10."""
    m = mujoco.MjModel.from_xml_string(quadruped_mjcf())
    n = 500
    ctrl = np.cumsum(np.random.default_rng(3).normal(size=(n, 8)) * 0.1, axis=0)
    u = rigid.InterpolatedControl(jnp.arange(n, dtype=float) * m.opt.timestep, jnp.asarray(ctrl))
    mj = rigid.from_mujoco(m, control=u)
    q, v = random_state(mj.model, 2, scale=0.5)
    y1 = sciad.simulate(mj.model, (q, v), dt=mj.dt, n_steps=n, integrator=mj.integrator).y1
    qpos, qvel = mujoco_run(m, np.asarray(q), np.asarray(v), n, ctrl)
    assert np.max(np.abs(np.asarray(y1[0]) - qpos)) < 1e-10
    assert np.max(np.abs(np.asarray(y1[1]) - qvel)) < 1e-10


def test_actuator_and_passive_forces_match_mujoco():
    """sciad's applied force (actuators + damping) equals MuJoCo's qfrc_actuator +
    qfrc_passive to 1e-12 at random states and random controls, inside and outside the
    control range (measured 2e-16): gear, kp, kv, affine biases and the reference
    position map exactly."""
    m = mujoco.MjModel.from_xml_string(SERVO)
    d = mujoco.MjData(m)
    mj = rigid.from_mujoco(m, control=rigid.ConstantControl(jnp.zeros(3)))
    force = eqx.filter_jit(lambda model, q, v: model.applied_force(0.0, q, v))
    rng = np.random.default_rng(0)
    for seed in range(4):
        q, v = random_state(mj.model, seed)
        u = rng.normal(size=3)
        model = eqx.tree_at(lambda mb: mb.control.value, mj.model, jnp.asarray(u))
        d.ctrl[:] = u
        mujoco_at(m, d, mj, q, v)
        want = d.qfrc_actuator + d.qfrc_passive
        assert np.max(np.abs(np.asarray(force(model, q, v)) - want)) < 1e-12 * (
            1 + np.abs(want).max()
        )


def test_converters_and_initial_state():
    """q = qpos − ref on hinges and sliders and q = qpos elsewhere; v = qvel; the
    converters invert each other and broadcast over batches; y0 is qpos0 (keyframes
    are ignored) with zero velocity."""
    xml = SERVO.replace("</mujoco>", '<keyframe><key qpos="0.3 0.2"/></keyframe></mujoco>')
    m = mujoco.MjModel.from_xml_string(xml)
    mj = rigid.from_mujoco(m)
    np.testing.assert_allclose(np.asarray(mj.qpos_offset), [np.deg2rad(20), 0.1], rtol=1e-15)
    np.testing.assert_array_equal(np.asarray(mj.y0[0]), [0.0, 0.0])
    np.testing.assert_array_equal(np.asarray(mj.y0[1]), [0.0, 0.0])
    qpos = np.random.default_rng(0).normal(size=(5, 2))
    np.testing.assert_allclose(np.asarray(mj.q_to_qpos(mj.qpos_to_q(qpos))), qpos, atol=1e-15)
    np.testing.assert_array_equal(np.asarray(mj.qvel_to_v(qpos)), qpos)
    free = rigid.from_mujoco(mujoco.MjModel.from_xml_string(FREE))
    np.testing.assert_array_equal(np.asarray(free.qpos_offset), np.zeros(7))
    np.testing.assert_allclose(np.asarray(free.y0[0][:3]), [0.1, 0.2, 1.0], rtol=1e-15)


def test_limits_rest_like_mujoco():
    """Hard limits on the bounds `range − ref`: the servo presses the arm onto its
    upper limit and gravity the cart onto its lower end stop; after 4 s both rest
    within 1e-3 (rad, m) of where MuJoCo's constraints hold them (measured 5.5e-4 rad
    and 1.5e-4 m: MuJoCo's acceleration-level constraint rests 6.0e-4 rad and
    1.6e-4 m past the bounds, sciad's velocity-level one 5e-5 and 8e-6). With soft
    limits (spring-dampers of MuJoCo's time constant) the gaps were 8e-3 and 1.3e-3."""
    m = mujoco.MjModel.from_xml_string(SERVO_LIMITED)
    control = [0.5, 0.2, -0.1]
    mj = rigid.from_mujoco(m, control=rigid.ConstantControl(jnp.asarray(control)))
    n = 2000
    y1 = sciad.simulate(mj.model, mj.y0, dt=mj.dt, n_steps=n, integrator=mj.integrator).y1
    qpos, _ = mujoco_run(m, m.qpos0, np.zeros(2), n, [control] * n)
    upper, lower = m.jnt_range[0, 1], m.jnt_range[1, 0]
    assert [j.limit for j in mj.model.joints] == ["hard", "hard"]
    assert qpos[0] > upper - 1e-3 and qpos[1] < lower + 1e-3  # both on their limits
    assert np.max(np.abs(np.asarray(mj.q_to_qpos(y1[0])) - qpos)) < 1e-3


def test_options_and_flags():
    """Integrators, time step, gravity and the disable flags map as documented."""

    def load(option="", flags="", body=""):
        return rigid.load_mjcf(
            f"<mujoco><option {option}><flag {flags}/></option><worldbody>"
            '<body name="b"><joint name="j" type="hinge" damping="0.5" range="-1 1"/>'
            f'<geom size="0.1" pos="0.2 0 0"/>{body}</body></worldbody>'
            '<actuator><motor joint="j" ctrlrange="-1 1"/></actuator></mujoco>'
        )

    base = load('timestep="0.005" gravity="0 1 -3"')
    assert base.dt == 0.005 and base.integrator == rigid.SemiImplicitEuler(implicit="damping")
    np.testing.assert_array_equal(np.asarray(base.model.gravity), [0.0, 1.0, -3.0])
    joint = base.model.joints[0]
    assert isinstance(joint, rigid.HingeJoint) and float(joint.damping) == 0.5
    assert joint.range is not None and base.model.actuators[0].ctrl_range is not None
    # RK4 maps to RKMK4, with a hard limit (a constraint) too: it solves it per stage.
    assert isinstance(load('integrator="RK4"').integrator, rigid.RKMK4)
    for name, mode in (("implicit", "full"), ("implicitfast", "fast")):
        assert load(f'integrator="{name}"').integrator == rigid.SemiImplicitEuler(implicit=mode)
    assert load(flags='eulerdamp="disable"').integrator == rigid.SemiImplicitEuler(implicit="none")
    np.testing.assert_array_equal(np.asarray(load(flags='gravity="disable"').model.gravity), 0.0)
    undamped = load(flags='damper="disable"').model.joints[0]
    unlimited = load(flags='limit="disable"').model.joints[0]
    assert isinstance(undamped, rigid.HingeJoint) and float(undamped.damping) == 0.0
    assert isinstance(unlimited, rigid.HingeJoint) and unlimited.range is None
    assert load(flags='clampctrl="disable"').model.actuators[0].ctrl_range is None
    assert load().model.pairs == ()  # one body and no ground: nothing to collide
    sensors = load(body='<site name="s"/>').model  # sites and sensors carry no physics
    assert sensors.names == ("b",)


def test_load_from_path_string_and_errors(tmp_path, monkeypatch):
    """A path, a pathlib.Path and the XML text give the same model; a missing file,
    a non-MjModel and a missing MuJoCo raise precise errors (more in tests/bad_inputs.py)."""
    from_path, from_text = rigid.load_mjcf(str(ANT)), rigid.load_mjcf(ANT.read_text())
    from_pathlib = rigid.load_mjcf(ANT, assets={})
    for other in (from_text, from_pathlib):
        assert jax_tree_equal(from_path, other)
    with pytest.raises(FileNotFoundError, match="no such file"):
        rigid.load_mjcf(tmp_path / "missing.xml")
    with pytest.raises(TypeError, match="compiled mujoco.MjModel"):
        rigid.from_mujoco("<mujoco/>")
    monkeypatch.setitem(sys.modules, "mujoco", None)
    with pytest.raises(ImportError, match=r'pip install "sciad\[mjcf\]"'):
        rigid.load_mjcf(str(ANT))


def jax_tree_equal(a, b):
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return jax.tree.structure(a) == jax.tree.structure(b) and all(
        np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(la, lb, strict=True)
    )


# --------------------------------------------------------------------------- geoms

PAIRS_XML = """<mujoco><worldbody>
<geom name="floor" type="plane" size="5 5 0.1"/>
<geom name="post" type="sphere" size="0.1" pos="0 0 0.02"/>
<body name="a" pos="0 0 0.05"><freejoint/><geom name="a_sphere" type="sphere" size="0.1"/>
  <body name="a_weld" pos="0.05 0 0"><geom name="weld_box" type="box" size="0.05 0.05 0.05"
      euler="10 20 30"/>
    <body name="b" pos="0.05 0 0"><joint type="hinge" axis="0 1 0"/>
      <geom name="b_capsule" type="capsule" fromto="0 0 0.05 0.02 0 -0.1" size="0.05"/>
      <body name="c" pos="0 0.05 0"><joint type="hinge" axis="1 0 0"/>
        <geom name="c_sphere" type="sphere" size="0.08"/></body>
    </body>
  </body>
  <body name="frame" pos="0 -0.05 0" quat="0.9 0 0.2 0.1"><site name="s"/>
    <body name="d" pos="0.01 0 0"><joint type="slide" axis="0 0 1"/>
      <geom name="d_sphere" type="sphere" size="0.07" friction="0.7"/>
      <geom name="d_ghost" type="sphere" size="0.07" pos="0 0.01 0" contype="2" conaffinity="2"/>
    </body>
  </body>
</body>
<body name="e" pos="0.1 0 0.05"><joint type="ball"/>
  <geom name="e_capsule" type="capsule" size="0.05 0.1" contype="2" conaffinity="2"/></body>
<body name="f" pos="-0.02 0 0.05"><freejoint/><geom name="f_sphere" type="sphere" size="0.1"
    condim="1" friction="0.2"/>
  <geom name="f_visual" type="ellipsoid" size="0.1 0.2 0.3" contype="0" conaffinity="0"/></body>
</worldbody><contact><exclude body1="e" body2="a"/><exclude body1="f" body2="world"/></contact>
</mujoco>"""


def contact_pairs(m, d, mj, q):
    """MuJoCo's colliding geom pairs at q, and sciad's static pairs, as name pairs; and
    the deepest penetration per body pair from each."""
    mujoco_at(m, d, mj, q, jnp.zeros(m.nv))
    name = lambda g: mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g)  # noqa: E731
    ours = {frozenset((name(mj.geom_ids[i]), name(mj.geom_ids[j]))) for i, j in mj.model.pairs}
    theirs, deepest = set(), {}
    for c in d.contact[: d.ncon]:
        theirs.add(frozenset((name(c.geom1), name(c.geom2))))
        key = frozenset(int(m.geom_bodyid[g]) for g in (c.geom1, c.geom2))
        deepest[key] = min(deepest.get(key, np.inf), c.dist)
    contacts = eqx.filter_jit(lambda model, q: model.contacts(q))(mj.model, q)
    ids = [0] + [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, n) for n in mj.model.names]
    ours_deepest = {}
    for dist, a, b in zip(np.asarray(contacts.dist), contacts.body_a, contacts.body_b, strict=True):
        key = frozenset((ids[a + 1], ids[b + 1]))
        ours_deepest[key] = min(ours_deepest.get(key, np.inf), dist)
    return ours, theirs, ours_deepest, deepest


def test_geom_pairs_match_mj_collision():
    """Spheres, capsules (fromto), a rotated box, a plane and a world sphere on free,
    hinge, ball and slide bodies, a welded body, a massless frame folded into its
    parent, contype/conaffinity masks, a visual-only ellipsoid and two <exclude>s, all
    overlapping at qpos0: the geom pairs sciad collides are exactly those in MuJoCo's
    mj_collision contact list, and the deepest penetration of every body pair equals
    MuJoCo's to 1e-12 (measured 4e-17: geom sizes and placements convert exactly)."""
    m = mujoco.MjModel.from_xml_string(PAIRS_XML)
    d = mujoco.MjData(m)
    mj = rigid.from_mujoco(m)
    ours, theirs, ours_deepest, deepest = contact_pairs(m, d, mj, mj.y0[0])
    assert len(theirs) == 20 and ours == theirs
    assert set(ours_deepest) == set(deepest)
    for key, dist in deepest.items():
        assert abs(ours_deepest[key] - dist) < 1e-12, key
    geoms = {g.name: g for g in mj.model.geoms}
    assert "f_visual" not in geoms  # never collides: not converted
    assert float(geoms["d_sphere"].friction) == 0.7
    # condim 1 against condim-3 geoms only: MuJoCo's pair takes condim 3 and the larger
    # friction, its own included, so the geom keeps its coefficient.
    assert float(geoms["f_sphere"].friction) == 0.2 and geoms["f_sphere"].condim == 1
    assert geoms["floor"].body is None and geoms["weld_box"].body == "a_weld"
    assert geoms["d_sphere"].body == "d" and mj.model.parents[mj.model.body_index("d")] == 0


def test_ant_scene():
    """benchmarks/scenes/ant.xml: 13 bodies (4 welded stubs), nq 15, nv 14, eight
    motors (gear 150, controls clamped to ±1), limited hinges. Lowered into the ground
    only its four feet touch it, as in Brax's ant; with every geom made to collide
    (contype 1), the 17 torso/leg/foot–ground pairs are MuJoCo's."""
    xml = ANT.read_text()
    model = rigid.from_mujoco(mujoco.MjModel.from_xml_string(xml)).model
    assert (model.nq, model.nv, len(model.names), len(model.actuators)) == (15, 14, 13, 8)
    assert all(float(a.gain) == 150.0 for a in model.actuators)
    assert all(np.array_equal(np.asarray(a.ctrl_range), [-1, 1]) for a in model.actuators)
    hinges = [j for j in model.joints if isinstance(j, rigid.HingeJoint)]
    assert len(hinges) == 8 and all(j.range is not None and j.limit == "hard" for j in hinges)
    every = xml.replace('contype="0" conaffinity="0"/>', 'contype="1" conaffinity="0"/>')
    assert every != xml
    for text, n in ((xml, 4), (every, 17)):
        m = mujoco.MjModel.from_xml_string(text)
        mj = rigid.from_mujoco(m)
        assert mj.dt == 0.01 and float(mj.model.contact.impedance.time_constant) == 0.02
        q = mj.y0[0].at[2].set(0.0)
        ours, theirs, _, _ = contact_pairs(m, mujoco.MjData(m), mj, q)
        assert len(theirs) == n and ours == theirs


@pytest.mark.slow
def test_ant_falls_like_mujoco():
    """The ant dropped with its ankles inside their ranges (at ±0.9 rad) lands and
    settles on its legs, its hinges' limits hard: the torso height and the ankle
    angles follow MuJoCo's within 2 cm and 0.05 rad over 2 s (measured 1.4 cm at the
    landing, 7 mm after 2 s, and 0.018 rad; the constraint models differ: sciad's is
    velocity-level with MuJoCo's time constant and impedance)."""
    m = mujoco.MjModel.from_xml_path(str(ANT))
    mj = rigid.from_mujoco(m)
    qpos = np.array(m.qpos0)
    ankles = [8, 10, 12, 14]
    qpos[ankles] = 0.9 * np.sign(m.jnt_range[[2, 4, 6, 8], 0])  # ranges 30..70 or -70..-30
    n, every = 200, 10
    traj = sciad.simulate(
        mj.model,
        (mj.qpos_to_q(qpos), mj.y0[1]),
        dt=mj.dt,
        n_steps=n,
        integrator=mj.integrator,
        saveat=sciad.SaveAt(steps=every),
    )
    assert traj.result == sciad.RESULTS.successful
    ours = np.asarray(mj.q_to_qpos(traj.ys[0]))
    d = mujoco.MjData(m)
    d.qpos[:] = qpos
    theirs = []
    for k in range(n):
        mujoco.mj_step(m, d)
        if (k + 1) % every == 0:
            theirs.append(d.qpos.copy())
    theirs = np.asarray(theirs)
    assert theirs[-1, 2] < 0.6  # it fell and stands on its legs
    assert np.max(np.abs(ours[:, 2] - theirs[:, 2])) < 0.02
    assert np.max(np.abs(ours[:, ankles] - theirs[:, ankles])) < 0.05


def test_filter_mismatch_is_refused_or_reproduced():
    """A moving link under a base welded to the world: MuJoCo collides them (its parent
    filter skips the world's weld group). The converter either reproduces that pair or
    refuses the model, naming both geoms; it never silently drops a MuJoCo contact."""
    xml = """<mujoco><worldbody><body name="base"><geom name="base" size="0.1"/>
    <body name="link"><joint type="hinge"/><geom name="link" size="0.1" pos="0.1 0 0"/>
    </body></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    try:
        mj = rigid.from_mujoco(m)
    except ValueError as e:
        assert "MJCF geom 'base' and MJCF geom 'link' collide in MuJoCo but not" in str(e)
    else:
        ours, theirs, _, _ = contact_pairs(m, mujoco.MjData(m), mj, mj.y0[0])
        assert ours == theirs == {frozenset(("base", "link"))}


# --------------------------------------------------------------------------- refusals

_BODY = '<body name="b"><joint name="j" type="hinge"/><geom name="g" size="0.1"/></body>'


def _world(inner, extra=""):
    return f"<mujoco><worldbody>{inner}</worldbody>{extra}</mujoco>"


UNSUPPORTED = {
    "tendon armature": (
        _world(
            _BODY,
            '<tendon><fixed name="t" armature="0.1"><joint joint="j" coef="1"/></fixed></tendon>',
        ),
        r"MJCF tendon 't': tendon armature is not supported",
    ),
    "unnamed tendon": (
        _world(_BODY, '<tendon><fixed armature="0.1"><joint joint="j" coef="1"/></fixed></tendon>'),
        r"MJCF tendon #0 \(unnamed\)",
    ),
    "tendon side site inside": (
        _world(
            '<body name="b"><joint name="j" type="hinge"/><geom name="g" size="0.1"/>'
            '<site name="s1"/><site name="s2" pos="0 0 1"/><site name="s3" pos="0 0 -1"/></body>'
            '<site name="w" pos="1 0 0"/>',
            '<tendon><spatial name="t"><site site="w"/><geom geom="g" sidesite="s1"/>'
            '<site site="s2"/></spatial></tendon>',
        ),
        r"MJCF tendon 't': a side site inside the sphere or cylinder",
    ),
    "site transmission with a reference site": (
        _world(
            '<site name="ref"/><body name="b"><freejoint/><geom size="0.1"/><site name="s"/>'
            "</body>",
            '<actuator><motor name="thrust" site="s" refsite="ref" gear="0 0 1 0 0 0"/></actuator>',
        ),
        r"MJCF actuator 'thrust': a site transmission with a reference site is not supported",
    ),
    "actuator on a ball joint": (
        _world(
            '<body name="b"><joint name="j" type="ball"/><geom size="0.1"/></body>',
            '<actuator><motor name="m" joint="j"/></actuator>',
        ),
        r"MJCF actuator 'm': actuators on MJCF joint 'j' \(a free or ball joint\)",
    ),
    "actuator dynamics": (
        _world(_BODY, '<actuator><general name="f" joint="j" dyntype="user"/></actuator>'),
        r"MJCF actuator 'f': activation dynamics mjDYN_USER are not supported",
    ),
    "tendon force range with unequal gears": (
        _world(
            _BODY,
            '<tendon><fixed name="t" actuatorfrcrange="-1 1"><joint joint="j" coef="1"/>'
            '</fixed></tendon><actuator><motor tendon="t" gear="1"/><motor tendon="t" gear="2"/>'
            "</actuator>",
        ),
        r"MJCF tendon 't': actuatorfrcrange with actuators of different gears",
    ),
    "height field against a mesh": (
        _world(
            '<geom name="terrain" type="hfield" hfield="h"/><body name="b" pos="0 0 1">'
            '<freejoint/><geom name="rock" type="mesh" mesh="tet"/></body>',
            '<asset><hfield name="h" nrow="3" ncol="3" size="1 1 0.1 0.1"/>'
            '<mesh name="tet" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/></asset>',
        ),
        r"no collision function for geom 'terrain' \(HeightField on the world\) against "
        r"geom 'rock' \(ConvexMesh on body 'b'\)",
    ),
    "explicit pair with adhesion": (
        _world(
            '<geom name="floor" type="plane" size="1 1 1"/><body name="b" pos="0 0 1">'
            '<freejoint/><geom name="ball" size="0.1"/></body>',
            '<contact><pair geom1="floor" geom2="ball" adhesion="1"/></contact>',
        ),
        r"MJCF pair #0 \(unnamed\): adhesion is not supported",
    ),
    "geom solref mixed": (
        _world(
            '<geom name="floor" type="plane" size="1 1 1"/><body name="b" pos="0 0 1">'
            '<freejoint/><geom name="ball" size="0.1" solref="-1000 10"/></body>'
        ),
        r"MJCF geom 'ball': solref \(-1000.0, 10.0\) mixes the standard format",
    ),
    "geom solmix": (
        _world(
            '<geom name="floor" type="plane" size="1 1 1" solmix="2"/>'
            '<body name="b" pos="0 0 1"><freejoint/><geom name="ball" size="0.1"/></body>'
        ),
        r"MJCF geom 'ball': solmix 1.0 differs from MJCF geom 'floor'",
    ),
    "box on a height field": (
        _world(
            '<geom name="terrain" type="hfield" hfield="h"/><body name="b" pos="0 0 1">'
            '<freejoint/><geom name="cube" type="box" size="0.1 0.1 0.1"/></body>',
            '<asset><hfield name="h" nrow="3" ncol="3" size="1 1 0.1 0.1"/></asset>',
        ),
        r"no collision function for geom 'terrain' \(HeightField on the world\) against "
        r"geom 'cube' \(Box on body 'b'\)",
    ),
    "geom margin on a height-field pair": (
        _world(
            '<geom name="terrain" type="hfield" hfield="h"/><body name="b" pos="0 0 1">'
            '<freejoint/><geom name="rod" type="capsule" size="0.05 0.1" margin="0.01"/></body>',
            '<asset><hfield name="h" nrow="3" ncol="3" size="1 1 0.1 0.1"/></asset>',
        ),
        r"geom 'terrain' \(HeightField on the world\) and geom 'rod' \(Capsule on body 'b'\): "
        "a margin",
    ),
    "ball joint stiffness": (
        _world(
            '<body name="b"><joint name="spring" type="ball" stiffness="10"/><geom size="0.1"/></body>'
        ),
        r"MJCF joint 'spring': stiffness of a ball or free joint",
    ),
    "frictionloss": (
        _world(
            '<body name="b"><joint name="dry" type="ball" frictionloss="1"/>'
            '<geom size="0.1"/></body>'
        ),
        r"MJCF joint 'dry': frictionloss on a ball or free joint is not supported",
    ),
    "gravcomp through a ball joint's actuators": (
        _world(
            '<body name="b" gravcomp="1"><joint name="j" type="ball" actuatorgravcomp="true"/>'
            '<geom size="0.1"/></body>'
        ),
        r"MJCF joint 'j': actuatorgravcomp on a ball or free joint",
    ),
    "noslip with the elliptic cone": (
        _world(
            '<geom type="plane" size="1 1 1"/><body name="b" pos="0 0 1"><freejoint/>'
            '<geom size="0.1"/></body>'
        ).replace("<worldbody>", '<option noslip_iterations="4" cone="elliptic"/><worldbody>'),
        r'MJCF <option noslip_iterations="4" cone="elliptic">: MuJoCo\'s noslip post-solve '
        "for the elliptic cone",
    ),
    "noslip without islands": (
        _world(
            '<geom type="plane" size="1 1 1"/><body name="b" pos="0 0 1"><freejoint/>'
            '<geom size="0.1"/></body>'
        ).replace(
            "<worldbody>",
            '<option noslip_iterations="4"><flag island="disable"/></option><worldbody>',
        ),
        r'MJCF <option noslip_iterations="4"><flag island="disable">: MuJoCo\'s noslip over '
        "the whole model",
    ),
    **{
        f"flag {flag}": (
            _world('<body name="b"><freejoint/><geom size="0.1"/></body>').replace(
                "<worldbody>", f"<option><flag {flag}/></option><worldbody>"
            ),
            f"MJCF <option><flag {flag}>: {what}",
        )
        for flag, what in (
            ('override="enable"', "overriding contact parameters"),
            ('refsafe="disable"', "sciad always keeps time constants"),
            ('nativeccd="disable"', "libccd's contacts"),
            ('multiccd="disable"', "single-point convex contacts"),
            ('sleep="enable"', "sleeping bodies"),
            ('diagexact="enable"', "the exact constraint diagonal"),
            ('speculative="enable"', "speculative contacts"),
        )
    },
}


@pytest.mark.parametrize("case", list(UNSUPPORTED))
def test_unsupported_feature_raises_naming_it(case):
    """Every feature the converter cannot represent faithfully raises ValueError at load
    time, naming the MuJoCo element (by name, or index when unnamed) and the feature."""
    xml, match = UNSUPPORTED[case]
    with pytest.raises(ValueError, match=match):
        rigid.load_mjcf(xml)


def test_geom_solref_solimp_and_margins():
    """Each geom carries its own `Impedance`, MuJoCo's solref and solimp one to one; a
    pair mixes them as MuJoCo does with equal solmix (the mean of every parameter),
    and its margins add up: a ball resting on a plane with margins 0.005 + 0.01
    hovers at r + 0.015 less the sink MuJoCo's impedance gives, where MuJoCo's does."""
    xml = """<mujoco><option timestep="0.002"/><worldbody>
    <geom name="floor" type="plane" size="1 1 1" margin="0.005" solref="0.04 1"
        solimp="0.9 0.9 0.001"/>
    <body name="b" pos="0 0 0.3"><freejoint/><geom name="ball" size="0.1" margin="0.01"
        solref="0.01 2" mass="1"/></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    mj = rigid.from_mujoco(m)
    floor, ball = mj.model.geoms
    assert float(ball.margin) == 0.01
    np.testing.assert_array_equal(floor.impedance.stacked(), [0.04, 1.0, 0.9, 0.9, 0.001, 0.5, 2.0])
    np.testing.assert_array_equal(ball.impedance.stacked(), [0.01, 2.0, 0.9, 0.95, 0.001, 0.5, 2.0])
    c = mj.model.contacts(mj.y0[0])
    np.testing.assert_allclose(
        c.impedance[0], [0.025, 1.5, 0.9, 0.925, 0.001, 0.5, 2.0], rtol=1e-15
    )
    np.testing.assert_allclose(float(c.dist[0]), 0.2 - 0.015, rtol=1e-14)
    d_mj = mujoco.MjData(m)
    for _ in range(1000):
        mujoco.mj_step(m, d_mj)
    y1 = sciad.simulate(mj.model, mj.y0, dt=mj.dt, n_steps=1000, integrator=mj.integrator).y1
    z = float(y1[0][2])  # measured: 0.113965, 7e-13 from MuJoCo's
    assert 0.1 + 0.015 - 2e-3 < z < 0.1 + 0.015 and abs(z - d_mj.qpos[2]) < 1e-10


def test_limits_with_margins_and_their_own_solref_rest_near_mujoco():
    """A pole falling onto its limit (range ±30°) rests where MuJoCo's does, to 1e-10
    rad after 3 s at dt = 2 ms (measured: 9e-15 and 3e-13): with a limit margin of 0.1
    rad (the limit engages 0.1 rad inside the range; MuJoCo takes a hinge's margin in
    radians) and with a non-default solreflimit/solimplimit (whose impedance rises
    over 1 cm, so the pole rests 8e-3 rad past the bound)."""
    for attrs, deep in (
        ('margin="0.1"', 1e-3),
        ('solreflimit=".08 1" solimplimit="0 .99 .01"', 1e-2),
    ):
        xml = f"""<mujoco><option timestep="0.002"/><worldbody><body name="pole" pos="0 0 1">
        <joint name="hinge" type="hinge" axis="0 1 0" range="-30 30" {attrs}/>
        <geom type="capsule" fromto="0 0 0 0 0 0.6" size="0.05"/></body></worldbody></mujoco>"""
        m = mujoco.MjModel.from_xml_string(xml)
        d = mujoco.MjData(m)
        d.qpos[0] = 0.3
        for _ in range(1500):
            mujoco.mj_step(m, d)
        mj = rigid.from_mujoco(m)
        assert mj.model.joints[0].limit == "hard"
        y0 = (jnp.array([0.3]), jnp.zeros(1))
        q = sciad.simulate(mj.model, y0, dt=mj.dt, n_steps=1500, integrator=mj.integrator).y1[0]
        engaged = np.deg2rad(30) - (0.1 if "margin" in attrs else 0.0)
        assert abs(float(q[0]) - d.qpos[0]) < 1e-10 and abs(float(q[0]) - engaged) < deep


def test_rk4_with_constraints_is_mujocos_rk4_until_they_act():
    """RKMK4 solves the constraints at every stage, as MuJoCo's RK4: a cart-pole whose
    cart has a range it never reaches follows MuJoCo's RK4 to round-off over 1,000
    steps (an Euler substitute was 4.7 off by step 590), and a ball dropped on the floor
    under RK4 lands and comes to rest as MuJoCo's does, to round-off (measured 2e-14
    over 500 steps)."""
    cartpole = """<mujoco><option timestep="0.01" integrator="RK4"/><worldbody>
    <body name="cart"><joint name="slider" type="slide" axis="1 0 0" range="-3 3"/>
      <geom type="box" size="0.2 0.1 0.1" contype="0" conaffinity="0" mass="1"/>
      <body name="pole"><joint name="hinge" type="hinge" axis="0 1 0" damping="0.01"/>
        <geom type="capsule" fromto="0 0 0 0 0 1" size="0.05" contype="0" conaffinity="0"
            mass="0.1"/></body></body></worldbody></mujoco>"""
    ball = """<mujoco><option timestep="0.002" integrator="RK4"/><worldbody>
    <geom type="plane" size="1 1 1"/><body name="b" pos="0 0 0.3"><freejoint/>
    <geom size="0.1" mass="1"/></body></worldbody></mujoco>"""
    for xml, n, tol in ((cartpole, 1000, 1e-10), (ball, 500, 1e-10)):
        m = mujoco.MjModel.from_xml_string(xml)
        mj = rigid.from_mujoco(m)
        assert isinstance(mj.integrator, rigid.RKMK4) and mj.model.constrained
        q0 = mj.y0[0].at[1].set(0.2) if xml is cartpole else mj.y0[0]
        traj = sciad.simulate(
            mj.model, (q0, mj.y0[1]), dt=mj.dt, n_steps=n, integrator=mj.integrator
        )
        assert traj.result == sciad.RESULTS.successful
        qpos, _ = mujoco_run(m, np.asarray(mj.q_to_qpos(q0)), np.zeros(m.nv), n)
        assert np.max(np.abs(np.asarray(mj.q_to_qpos(traj.y1[0])) - qpos)) < tol


def test_every_blocker_of_a_model_is_listed_in_one_error():
    """A model with several unsupported features names all of them at once, each with
    its element, so that one load tells the user everything that is missing."""
    xml = _world(
        '<geom name="floor" type="plane" size="1 1 0.1"/>'
        '<body name="target" mocap="true"/>'
        '<body name="b" gravcomp="1"><joint name="j" frictionloss="0.1"/>'
        '<geom name="g" size="0.1" solref="-1 1"/><site name="s"/></body><site name="r"/>',
        '<tendon><fixed name="t" armature="0.1"><joint joint="j" coef="1"/></fixed></tendon>'
        '<actuator><general name="m" joint="j" dyntype="user"/>'
        '<motor name="th" site="s" refsite="r" gear="0 0 1 0 0 0"/></actuator>',
    )
    with pytest.raises(ValueError) as e:
        rigid.load_mjcf(xml)
    msg = str(e.value)
    assert msg.startswith("MJCF model: sciad.rigid cannot represent 4 features")
    for part in (
        "MJCF tendon 't': tendon armature",
        "MJCF actuator 'th': a site transmission with a reference site",
        "MJCF actuator 'm': activation dynamics mjDYN_USER are not supported",
        "MJCF geom 'g': solref (-1.0, 1.0) mixes the standard format",
    ):
        assert part in msg, part


def test_massless_links_of_a_multi_joint_body():
    """A body with k joints becomes k − 1 massless links named "body/joint" and the
    body itself on the last joint; a moving massless link must carry mass."""
    mj = rigid.load_mjcf(PLANAR)
    names = mj.model.names
    assert names[:5] == ("torso/rootx", "torso/rootz", "torso", "abdomen/abdomen_y", "abdomen")
    assert [float(x) for x in mj.model.mass[:2]] == [0.0, 0.0]
    with pytest.raises(ValueError, match="'lone' is massless and moves"):
        rigid.MultiBody(
            [rigid.Body("lone", joint=rigid.HingeJoint(), mass=0.0, inertia=np.zeros(3))]
        )


def test_sensors_keyframes_and_visual_geoms_are_ignored():
    """Sensors, keyframes, cameras, lights and non-colliding geoms of any type carry no
    physics: the model converts (the initial state is qpos0, not the keyframe)."""
    xml = _world(
        '<light pos="0 0 3"/><camera name="c" pos="0 -2 1"/>'
        '<body name="b"><joint name="j" type="hinge"/><geom size="0.1"/>'
        '<geom type="ellipsoid" size="0.1 0.2 0.3" contype="0" conaffinity="0"/></body>',
        '<sensor><jointpos joint="j"/></sensor><keyframe><key qpos="0.5"/></keyframe>',
    )
    mj = rigid.load_mjcf(xml)
    assert mj.model.names == ("b",) and mj.model.geoms == ()
    np.testing.assert_array_equal(np.asarray(mj.y0[0]), [0.0])

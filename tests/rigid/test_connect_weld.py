"""Connect and weld equality constraints (`ConnectEquality`, `WeldEquality`, MuJoCo's
`<equality><connect>` and `<weld>`) and mocap bodies against MuJoCo C: the rows
(`efc_pos`, `efc_J`, `diagApprox`, and `efc_R`, `efc_aref` with the impedance at the
norm of the rows) at random states, and trajectories beside `mj_step` under Euler and
RK4 (a four-bar linkage closed by a connect, a free body welded to an arm with
`relpose`, `anchor` and `torquescale`, site forms, a free body welded to a mocap
body); the gradient of a final position with respect to the mocap body's position
and the weld's anchor by reverse and forward mode against central differences; and
the checks of the constructors, the model and the importer."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid
from sciad.rigid._impedance import row_terms

from .test_equality_friction import _beside_mujoco

mujoco = pytest.importorskip("mujoco")

_OPTION = '<option timestep="0.002" tolerance="1e-15" {}><flag contact="disable"/></option>'

# Four independent mechanisms in one model (one compiled program for all): each is
# (bodies, equalities, actuators).
FOURBAR = (
    """
    <body name="crank" pos="0 0 1">
      <joint name="h1" type="hinge" axis="0 1 0" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
      <body name="coupler" pos="0.2 0 0">
        <joint name="h2" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.5 0 0.1" size="0.02"/>
      </body>
    </body>
    <body name="rocker" pos="0.5 0 1">
      <joint name="h3" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0.1" size="0.02"/>
    </body>""",
    '<connect body1="coupler" body2="rocker" anchor="0.5 0 0.1"/>',
    '<motor joint="h1"/>',
)
WELD = (
    """
    <body name="arm" pos="0 2 1">
      <joint name="h4" type="hinge" axis="0 1 0"/>
      <joint name="h5" type="hinge" axis="1 0 0"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03"/>
    </body>
    <body name="w" pos="0.5 2 1">
      <joint type="free"/>
      <geom type="box" size="0.1 0.05 0.03"/>
    </body>""",
    '<weld body1="w" body2="arm" relpose="0.1 0 0.2 0.9 0.1 0.3 0.2" anchor="0.3 0 0.01" '
    'torquescale="0.5" solref="0.01 0.8" solimp="0.8 0.95 0.01 0.3 2"/>',
    '<motor joint="h4"/>',
)
SITES = (
    """
    <body name="arm2" pos="0 4 1">
      <joint name="h6" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03"/>
      <site name="a" pos="0.4 0 0" quat="0.7 0.1 -0.3 0.2"/>
      <body name="frame" pos="0.2 0 0" quat="0.9 0 0.2 0">
        <inertial pos="0 0 0" mass="0.1" diaginertia="1e-3 1e-3 1e-3"/>
        <site name="c" pos="0.1 0.05 0"/>
      </body>
    </body>
    <body name="w2" pos="0.5 4 1.1">
      <joint type="free"/>
      <geom type="box" size="0.1 0.05 0.03"/>
      <site name="b" pos="0.1 0.02 0" quat="0.9 0.1 0.3 0.2"/>
    </body>
    <body name="p" pos="0 4.5 1">
      <joint type="ball"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02"/>
      <site name="d" pos="0 0 -0.3"/>
    </body>""",
    '<weld site1="b" site2="a" torquescale="2"/><connect site1="d" site2="c"/>',
    "",
)
MOCAP = (
    """
    <body name="target" mocap="true" pos="0.3 6.1 1.2" quat="0.8 0.2 0.1 0.3">
      <site name="t" size="0.01"/>
    </body>
    <body name="hand" pos="0 6 1">
      <joint type="free"/>
      <geom type="box" size="0.1 0.05 0.03"/>
    </body>""",
    '<weld body1="target" body2="hand" anchor="0.05 0 0"/>',
    "",
)
# A connect on a massless frame folded into its parent (the tip of an arm), whose own
# inverse weights (body_invweight0) differ from the arm's: MuJoCo's `diagApprox` uses
# the frame's, which the converted equality carries (as metaworld's Sawyer welds to
# its mocap target do).
FOLDED = (
    """
    <body name="bar" pos="0 9 1">
      <joint type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03"/>
      <body name="tip" pos="0.4 0 0"/>
    </body>
    <body name="bob" pos="0.4 9 1.3">
      <joint type="free"/>
      <geom size="0.05"/>
    </body>""",
    '<connect body1="bob" body2="tip" anchor="0 0 -0.3"/>',
    "",
)
ALL = (FOURBAR, WELD, SITES, MOCAP, FOLDED)
# The weld started near its relative pose (the free body spins slowly): sciad's RKMK4
# differs from MuJoCo's RK4 by the dexp⁻¹ correction of free rotations, which a
# violent start (ALL's welds pull their bodies over 0.4 m and half a turn) makes
# visible (3e-13 after one step, 1.8e-8 after 300), unrelated to the rows.
GENTLE = (
    FOURBAR,
    (WELD[0], WELD[1].replace("0.1 0 0.2 0.9 0.1 0.3 0.2", "-0.2 0 0.02 1 0.02 0 0.01"), ""),
    MOCAP,
)


def _model(parts=ALL, integrator="Euler"):
    option = _OPTION.format(f'integrator="{integrator}"')
    bodies, equalities, actuators = ("".join(p[i] for p in parts) for i in range(3))
    return mujoco.MjModel.from_xml_string(
        f"<mujoco>{option}<worldbody>{bodies}</worldbody><equality>{equalities}</equality>"
        f"<actuator>{actuators}</actuator></mujoco>"
    )


def _converted(m):
    return rigid.from_mujoco(m, control=rigid.ConstantControl(jnp.full(m.nu, 0.3)))


@eqx.filter_jit
def _rows(model, q, v, dt):
    """The equality block at (q, v) and its R and a_ref (MuJoCo's `efc_R`,
    `efc_aref`), compiled once per model."""
    (block,) = model._extra_rows(model._frames(q, v), q, v)
    u = block.jac @ v
    ref, r = row_terms(block.impedance, block.violation, u, block.diagonal, dt, at=block.at)
    return block, r, (ref - u) / dt - block.bias  # MuJoCo 4 subtracts J̇v (mj_Jdotv)


def test_connect_weld_rows_match_mujoco():
    """The rows' values, Jacobians, inverse weights (`diagApprox`), R and a_ref at
    random states (measured: all ≤ 1e-13 absolute, R and a_ref ≤ 1e-12 relative)."""
    m = _model()
    mj = _converted(m)
    assert {type(e) for e in mj.model.equalities} <= {rigid.ConnectEquality, rigid.WeldEquality}
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    rows = None
    for _ in range(3):
        d.qpos[:] = m.qpos0 + 0.4 * rng.standard_normal(m.nq)
        d.qvel[:] = rng.standard_normal(m.nv)
        mujoco.mj_forward(m, d)
        rows = d.efc_type == int(mujoco.mjtConstraint.mjCNSTR_EQUALITY)
        q, v = mj.qpos_to_q(d.qpos), mj.qvel_to_v(d.qvel)
        block, r, aref = _rows(mj.model, q, v, m.opt.timestep)
        np.testing.assert_allclose(block.violation, d.efc_pos[rows], atol=1e-13)
        np.testing.assert_allclose(block.jac, d.efc_J.reshape(-1, m.nv)[rows], atol=1e-13)
        imp = d.efc_KBIP[rows, 2]  # MuJoCo's R = (1 − d)/d · diagApprox
        np.testing.assert_allclose(block.diagonal, d.efc_R[rows] * imp / (1 - imp), rtol=1e-10)
        np.testing.assert_allclose(r, d.efc_R[rows], rtol=1e-12)
        np.testing.assert_allclose(aref, d.efc_aref[rows], rtol=1e-11, atol=1e-11)
    assert rows is not None and rows.sum() == sum(
        3 if type(e) is rigid.ConnectEquality else 6 for e in mj.model.equalities
    )


def _start(m, seed=0):
    """A state off the constraints (qpos0 perturbed, a random velocity)."""
    d = mujoco.MjData(m)
    d.ctrl[:] = 0.3
    rng = np.random.default_rng(seed)
    d.qpos[:] = m.qpos0 + 0.05 * rng.standard_normal(m.nq)
    d.qvel[:] = 0.5 * rng.standard_normal(m.nv)
    mujoco.mj_normalizeQuat(m, d.qpos)
    return d


@pytest.mark.parametrize(
    ("parts", "integrator"),
    [(ALL, "Euler"), pytest.param(GENTLE, "RK4", marks=pytest.mark.slow)],
)
def test_connect_weld_run_as_mujoco(parts, integrator):
    """The mechanisms started off their constraints: 300 steps beside MuJoCo C, to
    round-off (measured: Euler 2.3e-11 with ALL's violent start, RK4 4.5e-12 on GENTLE)."""
    m = _model(parts, integrator)
    mj = _converted(m)
    d = _start(m)
    err, forces = _beside_mujoco(m, mj, d, 300, mujoco.mjtConstraint.mjCNSTR_EQUALITY)
    assert min(np.abs(f).max() for f, _ in forces) > 1e-6  # the rows act at every step
    assert err < 1e-10, err


@pytest.mark.slow
def test_gradient_with_respect_to_the_mocap_pose_and_the_anchor():
    """d(final hand position)/d(mocap position, weld anchor) through 50 Euler steps:
    forward mode (the 3×6 Jacobian) and reverse mode (the gradient of one
    coordinate) against central differences in float64 (measured: forward against
    central 1.3e-9 of entries up to 0.97, reverse against forward 1.1e-16)."""
    m = _model((MOCAP,))
    mj = _converted(m)
    i = mj.model.body_index("target")
    d = _start(m)
    y0 = (mj.qpos_to_q(d.qpos), mj.qvel_to_v(d.qvel))

    def final(p):
        model = eqx.tree_at(lambda mb: mb.pos, mj.model, mj.model.pos.at[i].set(p[:3]))
        model = eqx.tree_at(lambda mb: mb.equalities[0].anchor1, model, p[3:])
        traj = sciad.simulate(model, y0, dt=mj.dt, n_steps=50, integrator=mj.integrator)
        return traj.y1[0][:3]

    p0 = jnp.concatenate([mj.model.pos[i], mj.model.equalities[0].anchor1])
    # forward mode returns the value too: the central differences reuse its program
    forward = jax.jit(jax.jacfwd(lambda p: (lambda y: (y, y))(final(p)), has_aux=True))
    fwd = np.asarray(forward(p0)[0])
    rev = np.asarray(jax.jit(jax.grad(lambda p: final(p)[0]))(p0))

    def value(p):
        return forward(p)[1]

    h = 1e-6
    central = np.stack(
        [
            (np.asarray(value(p0 + h * e)) - np.asarray(value(p0 - h * e))) / (2 * h)
            for e in jnp.eye(6)
        ],
        axis=1,
    )
    np.testing.assert_allclose(fwd, central, atol=1e-8)
    np.testing.assert_allclose(rev, fwd[0], atol=1e-12)
    assert np.abs(fwd[:, :3]).max() > 0.1  # the hand follows the target


def test_connect_weld_checks():
    """Constructors, the model and the importer refuse bad input before tracing."""
    with pytest.raises(TypeError, match="body1 must be a non-empty str"):
        rigid.ConnectEquality("")
    with pytest.raises(TypeError, match="body2"):
        rigid.WeldEquality("a", 3)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValueError, match="must differ"):
        rigid.WeldEquality("a", "a")
    with pytest.raises(ValueError, match="anchor1"):
        rigid.ConnectEquality("a", anchor1=(0.0, 1.0))
    with pytest.raises(ValueError, match="nonzero quaternion"):
        rigid.WeldEquality("a", quat1=(0.0, 0.0, 0.0, 0.0))
    with pytest.raises(TypeError, match="torquescale"):
        rigid.WeldEquality("a", torquescale=(1.0, 2.0))  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="impedance"):
        rigid.ConnectEquality("a", impedance=1.0)  # pyright: ignore[reportArgumentType]
    link = dict(mass=1.0, inertia=(0.1, 0.1, 0.1))
    bodies = [rigid.Body("a", joint=rigid.HingeJoint(axis=(0.0, 1.0, 0.0)), **link)]
    with pytest.raises(ValueError, match="ConnectEquality: no body named 'x'"):
        rigid.MultiBody(bodies, equalities=[rigid.ConnectEquality("a", "x")])
    with pytest.raises(TypeError, match="equalities"):
        rigid.MultiBody(bodies, equalities=["a"])  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValueError, match="inverse_weights must be finite and >= 0"):
        rigid.ConnectEquality("a", inverse_weights=(-1.0, 0.0))
    with pytest.raises(ValueError, match="inverse_weights"):
        rigid.WeldEquality("a", inverse_weights=(1.0, 2.0, 3.0))


def test_native_weld_holds_the_default_pose():
    """A native `WeldEquality` without a second frame holds the default relative pose:
    its rows vanish there; a body welded to the world at an offset stays put."""
    link = dict(mass=1.0, inertia=(0.1, 0.1, 0.1))
    bodies = [
        rigid.Body("a", joint=rigid.HingeJoint(axis=(0.0, 1.0, 0.0)), **link),
        rigid.Body("b", joint=rigid.FreeJoint(), pos=(0.5, 0.0, 0.0), **link),
    ]
    weld = rigid.WeldEquality("b", "a", anchor1=(0.1, 0.0, 0.0), quat1=(0.9, 0.1, 0.0, 0.2))
    connect = rigid.ConnectEquality("b", anchor1=(0.0, 0.0, 0.1))
    model = rigid.MultiBody(bodies, equalities=[weld, connect])
    q, _ = model.default_state()
    (block,) = eqx.filter_jit(lambda mb, q: mb._extra_rows(mb._frames(q), q))(model, q)
    np.testing.assert_allclose(block.violation, 0.0, atol=1e-15)
    assert block.jac.shape == (9, model.nv)


def test_mocap_body_is_a_fixed_body_that_collides():
    """A mocap body becomes a body fixed to the world at its pose, massless ones
    included, its geom colliding with a free body's (the importer checks the pairs
    against MuJoCo's); moving it is a change of the model's `pos`."""
    xml = """<mujoco><worldbody>
      <body name="paddle" mocap="true" pos="0 0 0.5" quat="0.9 0.1 0 0">
        <geom type="box" size="0.2 0.2 0.02" mass="0"/></body>
      <body name="ball" pos="0 0 1"><freejoint/><geom size="0.05"/></body>
    </worldbody></mujoco>"""
    mj = rigid.load_mjcf(xml)
    i = mj.model.body_index("paddle")
    assert isinstance(mj.model.joints[i], rigid.FixedJoint)
    np.testing.assert_allclose(mj.model.pos[i], (0.0, 0.0, 0.5))
    assert len(mj.model.pairs) == 1
    assert {mj.model.geom_body[g] for g in mj.model.pairs[0]} == {i, mj.model.body_index("ball")}

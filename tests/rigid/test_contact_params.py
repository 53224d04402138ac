"""MuJoCo's contact parameters with MuJoCo C as the reference: torsional and rolling
friction (condim 4 and 6) with both cones, contact priorities, the direct `solref`
format (stiffness and damping) for contacts and limits, and gradients through a
condim-6 contact against central differences."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid

from ..helpers import fd_directional

mujoco = pytest.importorskip("mujoco")

# MuJoCo's solver run to convergence (its default tolerance, 1e-8, leaves the elliptic
# cone's Newton iterate about 1e-7 from the minimiser sciad converges to).
TIGHT = 'tolerance="1e-15" iterations="500" ls_tolerance="1e-12"'


def ball_xml(cone: str, condim: int, impratio: float = 1.0) -> str:
    return f"""<mujoco><option timestep="0.002" cone="{cone}" impratio="{impratio}" {TIGHT}/>
    <worldbody><geom name="floor" type="plane" size="1 1 1"/>
    <body name="b" pos="0 0 0.1"><freejoint/><geom name="ball" size="0.1" condim="{condim}"
    friction="0.7 0.02 0.01" mass="1"/></body></worldbody></mujoco>"""


# Two free bodies on a floor and a tilted box: the ball (condim 6, priority 1, direct
# solref) against the floor of priority 2 (standard solref, condim 3): the floor's
# parameters; the cube (condim 4) against the box of equal priority whose solref is
# direct: the larger condim and friction, and the direct solref (MuJoCo's minimum).
PRIORITY_XML = f"""<mujoco><option timestep="0.002" cone="CONE" {TIGHT}/><worldbody>
<geom name="floor" type="plane" size="1 1 1" friction="0.2 0.001 0.001" solref="0.05 0.5"
    priority="2"/>
<geom name="slope" type="box" size="0.3 0.3 0.05" pos="0.8 0 0" euler="0 10 0"
    solref="-2000 -40" friction="0.3"/>
<body name="b" pos="0 0 0.1"><freejoint/><geom name="ball" size="0.1" condim="6"
    priority="1" friction="0.9 0.02 0.01" solref="-10000 -30" mass="1"/></body>
<body name="c" pos="0.8 0 0.2"><freejoint/><geom name="cube" type="box"
    size="0.05 0.05 0.05" condim="4" friction="0.5 0.01 0.01" mass="1"/></body>
</worldbody></mujoco>"""


def compare(xml: str, qvel0: np.ndarray, n: int, z0: float = 0.0995) -> tuple[float, float]:
    """Max |qpos − MuJoCo's| and |qvel − MuJoCo's| after n steps from qpos0 with the
    first body's height z0 and velocity qvel0."""
    m = mujoco.MjModel.from_xml_string(xml)
    mj = rigid.from_mujoco(m)
    qpos0 = np.array(mj.q_to_qpos(mj.y0[0]))
    qpos0[2] = z0
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = qpos0, qvel0
    for _ in range(n):
        mujoco.mj_step(m, d)
    y0 = (mj.qpos_to_q(jnp.asarray(qpos0)), mj.qvel_to_v(jnp.asarray(qvel0)))
    y1 = sciad.simulate(mj.model, y0, dt=mj.dt, n_steps=n, integrator=mj.integrator).y1
    dq = np.max(np.abs(np.asarray(mj.q_to_qpos(y1[0])) - d.qpos))
    dv = np.max(np.abs(np.asarray(mj.v_to_qvel(y1[1])) - d.qvel))
    return float(dq), float(dv)


SPIN = np.array([1.0, 0.5, 0.0, 2.0, -3.0, 20.0])  # sliding, rolling and spinning


@pytest.mark.parametrize(
    "cone, condim, impratio, tol",
    [
        ("pyramidal", 6, 1.0, 1e-12),  # measured 6e-15
        ("pyramidal", 4, 2.0, 1e-12),  # measured 5e-14
        ("elliptic", 6, 1.0, 1e-8),  # measured 4e-10 (MuJoCo's line search tolerance)
        ("elliptic", 4, 3.0, 1e-8),  # measured 2e-10
    ],
)
def test_ball_rolling_and_spinning_matches_mujoco(cone, condim, impratio, tol):
    """A ball thrown spinning onto a plane: its rolling and spin decay under torsional
    (condim 4) and rolling (condim 6) friction as MuJoCo's do: qpos and qvel agree
    with mj_step after 300 steps (0.6 s), with either cone and impratio."""
    dq, dv = compare(ball_xml(cone, condim, impratio), SPIN, 300)
    assert dq < tol and dv < 10 * tol


def test_torsional_and_rolling_friction_slow_the_ball():
    """The checks above could pass with the extra rows doing nothing only if MuJoCo's
    did nothing too: condim 6 stops the spin (20 rad/s) that condim 3 keeps."""
    m3, m6 = (mujoco.MjModel.from_xml_string(ball_xml("pyramidal", k)) for k in (3, 6))
    spins = []
    for m in (m3, m6):
        mj = rigid.from_mujoco(m)
        q0 = np.array(mj.q_to_qpos(mj.y0[0]))
        q0[2] = 0.0995
        y0 = (mj.qpos_to_q(jnp.asarray(q0)), mj.qvel_to_v(jnp.asarray(SPIN)))
        y1 = sciad.simulate(mj.model, y0, dt=mj.dt, n_steps=300, integrator=mj.integrator).y1
        spins.append(float(mj.v_to_qvel(y1[1])[5]))
    assert spins[0] > 19.0 and abs(spins[1]) < 10.0


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_priority_and_direct_solref_match_mujoco(cone):
    """Contact priority (the higher geom's condim, friction and solref) and the direct
    solref format (a pair of equal priority takes the smaller of each value, as
    MuJoCo's mj_contactParam): the contacts carry MuJoCo's dim, friction and solref,
    and 400 steps agree with mj_step."""
    xml = PRIORITY_XML.replace("CONE", cone)
    m = mujoco.MjModel.from_xml_string(xml)
    mj = rigid.from_mujoco(m)
    c = mj.model.contacts(mj.y0[0])
    names = [g.name for g in mj.model.geoms]
    pairs = {}
    for k in range(len(c.dist)):
        a, b = (names[i] for i in _pair_of_point(mj.model, k))
        pairs[frozenset((a, b))] = (int(c.dim[k]), np.asarray(c.friction[k]), c.impedance[k])
    dim, fri, imp = pairs[frozenset(("floor", "ball"))]
    assert dim == 3 and np.allclose(fri, [0.2, 0.2, 0.001, 0.001, 0.001])
    np.testing.assert_allclose(imp[:2], [0.05, 0.5])
    dim, fri, imp = pairs[frozenset(("slope", "cube"))]
    assert dim == 4 and np.allclose(fri, [0.5, 0.5, 0.01, 0.01, 0.01])
    np.testing.assert_allclose(imp[:2], [-2000.0, -40.0])
    dim, _, imp = pairs[frozenset(("floor", "cube"))]
    assert dim == 3
    np.testing.assert_allclose(imp[:2], [0.05, 0.5])
    qvel0 = np.zeros(12)
    qvel0[:6] = SPIN
    dq, dv = compare(xml, qvel0, 400)
    tol = 1e-12 if cone == "pyramidal" else 1e-8  # measured 4e-15 and 9e-10
    assert dq < tol and dv < 10 * tol


def _pair_of_point(model: rigid.MultiBody, k: int) -> tuple[int, int]:
    """The geom pair of the model's k-th candidate contact point."""
    from sciad.rigid._collision import _pair_groups

    start = 0
    for _, n, ia, ib, _ in _pair_groups(model.geoms, model.pairs):
        if k < start + n * len(ia):
            j = (k - start) // n
            return int(ia[j]), int(ib[j])
        start += n * len(ia)
    raise IndexError(k)


def test_direct_solref_limit_and_ball_bounce_match_mujoco():
    """The direct format on a joint limit (solreflimit = −stiffness, −damping) and on a
    contact: a pendulum swinging into its limit and a ball dropped on a direct-solref
    floor agree with mj_step to round-off over 500 steps."""
    xml = """<mujoco><option timestep="0.002"/><worldbody>
    <geom name="floor" type="plane" size="1 1 1" solref="-5000 -20"/>
    <body name="arm" pos="0 0 1"><joint name="hinge" type="hinge" axis="0 1 0"
        limited="true" range="-30 30" solreflimit="-800 -5"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" contype="0"
        conaffinity="0" mass="1"/></body>
    <body name="ball" pos="0.5 0 0.3"><freejoint/><geom size="0.05" mass="0.2"/></body>
    </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    mj = rigid.from_mujoco(m)
    assert float(mj.model.geoms[0].impedance.time_constant) == -5000.0
    d = mujoco.MjData(m)
    qpos0 = np.array(m.qpos0)
    qvel0 = np.zeros(m.nv)
    qvel0[0] = 4.0
    d.qvel[:] = qvel0
    depth, swing = 0.0, 0.0
    for _ in range(500):
        mujoco.mj_step(m, d)
        depth = max(depth, 0.05 - d.qpos[3])
        swing = max(swing, d.qpos[0])
    assert depth > 1e-3 and swing > np.deg2rad(30)  # both constraints act
    y0 = (mj.qpos_to_q(jnp.asarray(qpos0)), mj.qvel_to_v(jnp.asarray(qvel0)))
    y1 = sciad.simulate(mj.model, y0, dt=mj.dt, n_steps=500, integrator=mj.integrator).y1
    assert np.max(np.abs(np.asarray(mj.q_to_qpos(y1[0])) - d.qpos)) < 1e-10
    assert np.max(np.abs(np.asarray(mj.v_to_qvel(y1[1])) - d.qvel)) < 1e-9


@pytest.fixture(scope="module")
def rolling_loss():
    m = mujoco.MjModel.from_xml_string(ball_xml("elliptic", 6))
    mj = rigid.from_mujoco(m)
    q0 = np.array(mj.q_to_qpos(mj.y0[0]))
    q0[2] = 0.0995
    q = mj.qpos_to_q(jnp.asarray(q0))

    def loss(v0):
        y1 = sciad.simulate(mj.model, (q, v0), dt=mj.dt, n_steps=40, integrator=mj.integrator).y1
        return jnp.sum(y1[0][:3] ** 2) + 0.01 * jnp.sum(y1[1] ** 2)

    return loss, mj.qvel_to_v(jnp.asarray(SPIN))


def test_condim6_gradients_match_finite_differences(rolling_loss):
    """jax.grad and jax.jvp of a 40-step rollout of the spinning ball (condim 6,
    elliptic cone: sliding, torsional and rolling friction acting) against central
    differences of the loss along a random direction (relative 1e-6)."""
    loss, v0 = rolling_loss
    direction = jax.random.normal(jax.random.key(0), v0.shape, v0.dtype)
    # One forward-mode program gives the tangent and the values for the differences.
    jvp = jax.jit(lambda v: jax.jvp(loss, (v,), (direction,)))
    fd = float(fd_directional(lambda v: jvp(v)[0], v0, direction, eps=1e-6))
    grad = jax.jit(jax.grad(loss))(v0)
    _, tangent = jvp(v0)
    assert abs(float(grad @ direction) - fd) < 1e-6 * (abs(fd) + 1e-3)
    assert abs(float(tangent) - fd) < 1e-6 * (abs(fd) + 1e-3)

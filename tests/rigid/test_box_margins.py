"""Geom margins and gaps on box–box and capsule–box pairs with MuJoCo C as the
reference: the contact lists of `mj_collision` for random separated-within-margin and
penetrating poses, a run of boxes and a capsule with margins settling on a box beside
`mj_step`, and gradients through margin contacts against central differences."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid
from sciad.rigid._collision import contact_frames

from ..helpers import fd_directional
from .scenes import touching
from .test_contact_pairs import _points

mujoco = pytest.importorskip("mujoco")

TIGHT = 'tolerance="1e-15" iterations="500" ls_tolerance="1e-12"'

# A fixed box and a free box or capsule, both with a margin (MuJoCo adds them) and a
# gap (MuJoCo takes the larger).
FREE = {
    "box": 'type="box" size="0.05 0.07 0.04"',
    "capsule": 'type="capsule" size="0.03 0.08"',
}


def _pair(kind):
    return f"""<mujoco><worldbody>
<geom name="a" type="box" size="0.1 0.08 0.06" margin="0.02" gap="0.004"/>
<body name="b" pos="0 0 0.3"><freejoint/><geom name="b" {FREE[kind]}
    margin="0.01" gap="0.002"/></body></worldbody></mujoco>"""


_contacts = eqx.filter_jit(lambda model, q: model.contacts(q))


def _poses(m, d, rng, n, level, lying=False, deepest=0.01):
    """`n` poses of the free geom: a random orientation (nearly level if `level`;
    turned to lie along x first if `lying`), moved along a random direction to touch
    the fixed box (bisection on mj_geomDistance), then by an offset in
    [−`deepest`, 0.025] (penetrating to beyond margin + gap)."""
    out = []
    while len(out) < n:
        if level:
            quat = np.r_[1.0, 0.05 * rng.normal(size=3)]
            if lying:  # (w, x, y, z) ⊗ a quarter turn about y
                w, x, y, z = quat
                quat = np.r_[w - y, x + z, y + w, z - x]
        else:
            quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        hi = touching(m, d, lambda s, u=u, quat=quat: np.r_[s * u, quat], 0.0, 1.0)
        out.append(np.r_[(hi + rng.uniform(-deepest, 0.025)) * u, quat])
    return out


@pytest.mark.parametrize("kind", ["box", "capsule"])
@pytest.mark.parametrize("level", [False, True])
def test_margin_contacts_match_mj_collision(kind, level):
    """For 120 random poses of a box (edge–edge, edge–face, corner–face; or nearly
    level, face–face patches) or a capsule (any orientation, its segment's end inside
    the box for the deepest; or lying nearly level, on a face, along or across an
    edge), mj_collision's contacts are exactly sciad's candidates with dist < gap:
    count, distance (plus the margin), position, normal and activity, to 1e-12
    (measured: boxes 6e-17 in distance, 1.9e-15 in position, 4.4e-16 in normal;
    capsules 2.8e-17, 2.4e-15 and 9.9e-14). Both separated (within margin and gap) and penetrating poses
    occur, and for the capsule both one and two contacts."""
    m = mujoco.MjModel.from_xml_string(_pair(kind))
    d = mujoco.MjData(m)
    mj = rigid.from_mujoco(m)
    pts = _points(mj.model)
    kinds = {"apart": 0, "excluded": 0, "penetrating": 0, "one": 0, "two": 0}
    capsule = kind == "capsule"
    rng = np.random.default_rng(int(level) + 2 * capsule)
    for qpos in _poses(m, d, rng, 120, level, capsule, 0.06 if capsule else 0.01):
        d.qpos[:] = qpos
        mujoco.mj_forward(m, d)
        c = _contacts(mj.model, jnp.asarray(qpos))
        frames = np.asarray(contact_frames(c.normal, c.tangent))
        dist, gap, point = np.asarray(c.dist), np.asarray(c.gap), np.asarray(c.point)
        mine = [k for k in range(len(pts)) if dist[k] < gap[k]]
        assert len(mine) == d.ncon, qpos
        for con in d.contact[: d.ncon]:
            k = min(mine, key=lambda k: np.linalg.norm(point[k] - con.pos))
            sign = 1.0 if pts[k][0] == con.geom[0] else -1.0
            np.testing.assert_allclose(point[k], con.pos, atol=1e-12)
            assert abs(dist[k] + con.includemargin - con.dist) < 1e-12
            np.testing.assert_allclose(sign * frames[k, 0], con.frame[:3], atol=1e-12)
            assert (dist[k] < 0) == (not con.exclude)
            kinds["excluded"] += int(con.exclude)
            kinds["apart"] += int(0 < con.dist < con.includemargin)
            kinds["penetrating"] += int(con.dist < 0)
        kinds["one"] += d.ncon == 1
        kinds["two"] += d.ncon == 2
    needed = ["apart", "penetrating", "one", "two"] + ([] if capsule else ["excluded"])
    assert min(kinds[k] for k in needed) >= 3, kinds


# Boxes with margins (and a gap) dropped onto a fixed box, one spinning, one tilted,
# and a capsule, nearly level, dropped onto its end and rolling.
STACK = f"""<mujoco><option timestep="0.002" cone="elliptic" {TIGHT}/><worldbody>
<geom name="table" type="box" size="0.4 0.4 0.05" pos="0 0 -0.05" margin="0.002"/>
<body name="b1" pos="0.1 0 0.06"><freejoint/><geom type="box" size="0.04 0.03 0.05"
    margin="0.003" gap="0.002" mass="0.3"/></body>
<body name="b2" pos="-0.15 0.1 0.08" euler="20 10 0"><freejoint/><geom type="box"
    size="0.05 0.05 0.02" margin="0.001" mass="0.2"/></body>
<body name="b3" pos="0.1 0.02 0.17" euler="0 0 30"><freejoint/><geom type="box"
    size="0.03 0.03 0.03" margin="0.004" mass="0.1"/></body>
<body name="rod" pos="0 -0.2 0.04" euler="88 0 20"><freejoint/><geom type="capsule"
    size="0.02 0.1" margin="0.003" gap="0.001" mass="0.2"/></body>
</worldbody></mujoco>"""


def test_box_stack_run_matches_mj_step():
    """300 steps (0.6 s) of three boxes and a capsule with margins falling onto a box
    and onto each other, beside mj_step: max |Δqpos| < 1e-11, |Δqvel| < 1e-12
    (measured: 3.0e-13 and 1.2e-15). Margin contacts act: MuJoCo reports active
    contacts with dist > 0 (the capsule's: 540, on two points for 271 steps)."""
    m = mujoco.MjModel.from_xml_string(STACK)
    d = mujoco.MjData(m)
    mj = rigid.from_mujoco(m)
    qvel0 = np.zeros(m.nv)
    qvel0[:6] = [0.2, 0.0, 0.0, 0.0, 0.0, 6.0]
    d.qvel[:] = qvel0
    apart = 0
    for _ in range(300):
        mujoco.mj_step(m, d)
        apart += sum(int(0 < c.dist and not c.exclude) for c in d.contact[: d.ncon])
    assert apart > 100
    y0 = (mj.y0[0], mj.qvel_to_v(jnp.asarray(qvel0)))
    y1 = sciad.simulate(mj.model, y0, dt=mj.dt, n_steps=300, integrator=mj.integrator).y1
    dq = np.max(np.abs(np.asarray(mj.q_to_qpos(y1[0])) - d.qpos))
    dv = np.max(np.abs(np.asarray(mj.v_to_qvel(y1[1])) - d.qvel))
    assert dq < 1e-11 and dv < 1e-12, (dq, dv)


@pytest.mark.slow  # 58 s, mostly compiling the reverse pass
@pytest.mark.filterwarnings("ignore:.*deep in each other")
def test_margin_contact_gradient_matches_finite_differences():
    """d(final x, z of a box sliding on a box within the margin)/d(initial velocity)
    over 40 steps: reverse mode, forward mode and central differences agree to a
    relative 1e-6."""
    m = mujoco.MjModel.from_xml_string(STACK)
    mj = rigid.from_mujoco(m)
    q0 = mj.y0[0].at[2].set(0.0515)  # b1 starts 1.5 mm above the table, in its margin

    def final(v):
        v0 = mj.qvel_to_v(jnp.zeros(m.nv).at[:6].set(v))
        y1 = sciad.simulate(mj.model, (q0, v0), dt=mj.dt, n_steps=40).y1
        return y1[0][0] + y1[0][2]

    v = jnp.asarray([0.3, 0.1, -0.05, 0.0, 0.5, 2.0])
    grad = jax.jit(jax.grad(final))(v)
    jvp = jax.jit(lambda x, t: jax.jvp(final, (x,), (t,)))
    for e in (jnp.eye(6)[0], jnp.eye(6)[2], jnp.asarray([0.2, -0.5, 0.7, 0.1, 0.3, -0.4])):
        fd = float(fd_directional(lambda x, e=e: jvp(x, e)[0], v, e, eps=1e-6))
        tangent = float(jvp(v, e)[1])
        assert abs(fd) > 1e-4
        assert abs(float(grad @ e) - fd) < 1e-6 * abs(fd), (e, grad @ e, fd)
        assert abs(tangent - fd) < 1e-6 * abs(fd), (e, tangent, fd)

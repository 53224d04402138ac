"""Margins on the pairs whose contact sets depend on them, with MuJoCo C as the
reference: a plane against a mesh (the face corners within the margin), a sphere
against a box, and the clipped pairs (a box, a mesh or a capsule resting on a mesh
slab or a disc within its margin: the clipped points out to the margin, each with its
own distance), then gradients through such separated contacts against central
differences."""

import functools
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad.rigid as rigid

from .scenes import touching
from .test_mesh import _rows
from .test_mesh_clip import _assets

mujoco = pytest.importorskip("mujoco")
Rotation = pytest.importorskip("scipy.spatial.transform").Rotation

# the pair's margin: MuJoCo 4 sums the two geoms' (0.01 each)
MARGIN = 0.02
BASES = {
    "plane": 'type="plane" size="1 1 .1"',
    "slab": 'type="mesh" mesh="slab"',
    "disc": 'type="cylinder" size=".3 .02"',
    "box": 'type="box" size=".1 .07 .04"',
}
TOPS = {
    "rock": 'type="mesh" mesh="rock"',
    "cube": 'type="mesh" mesh="cube"',
    "oct": 'type="mesh" mesh="oct"',
    "box": 'type="box" size=".07 .05 .03"',
    "capsule": 'type="capsule" size=".03 .08"',
    "sphere": 'type="sphere" size=".05"',
}

_contacts = eqx.filter_jit(lambda model, q: model.contacts(q))


@functools.cache
def _model(base: str, top: str):
    """A free `top` over a world `base`, both with a 0.01 margin (the pair's: 0.02)."""
    xml = f"""<mujoco>{_assets()}<worldbody><geom {BASES[base]} margin="0.01"/>
    <body pos="0 0 0.3"><freejoint/><geom {TOPS[top]} margin="0.01"/></body>
    </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the clipped pairs' margin warning
        return m, rigid.from_mujoco(m)


def _place(m, d, rot, xy, offset: float):
    """MuJoCo's state `d` with the free geom at rotation `rot` over `xy`, lowered to
    touch the base (bisection on mj_geomDistance), then raised by `offset` (length;
    negative: into the base), after mj_forward."""
    quat = rot.as_quat(scalar_first=True)
    d.qpos[:] = np.r_[xy, touching(m, d, lambda z: np.r_[xy, z, quat], -0.3, 0.3) + offset, quat]
    mujoco.mj_forward(m, d)


def _poses(m, rng, n: int, tilt: float | None, lying: bool):
    """`n` states (qpos) of the free geom: tilted by `tilt` (rad, normal) from upright
    (or lying on its side), or at a random orientation (`tilt` None), touching the
    base then moved by an offset in [−3 mm, margin] (penetrating to apart within the
    margin); those with a contact."""
    d = mujoco.MjData(m)
    out = []
    while len(out) < n:
        if tilt is None:
            rot = Rotation.random(random_state=rng)
        else:
            rot = Rotation.from_euler("y", np.pi / 2 if lying else 0.0)
            rot = rot * Rotation.from_rotvec(tilt * rng.normal(size=3))
        _place(m, d, rot, 0.02 * rng.normal(size=2), rng.uniform(-0.003, MARGIN))
        if d.ncon:
            out.append(d.qpos.copy())
    return out


def _ours_and_mujocos(m, mj, qpos):
    """Our contacts within the margin and MuJoCo's (distance, normal, point rows,
    sorted), at MuJoCo's state `qpos`, with MuJoCo's normals from the base to the
    free geom (ours: from the first geom of the pair in sciad's order)."""
    d = mujoco.MjData(m)
    d.qpos[:] = qpos
    mujoco.mj_forward(m, d)
    c = _contacts(mj.model, mj.qpos_to_q(jnp.asarray(qpos)))
    on = np.asarray(c.dist) < 0
    ours = _rows(np.asarray(c.dist)[on] + MARGIN, np.asarray(c.normal)[on], c.point[on])
    ref = np.array([np.r_[x.dist, x.frame[:3], x.pos] for x in d.contact[: d.ncon]])
    return ours, _rows(*np.split(ref, [1, 4], 1))


@pytest.mark.parametrize("top", ["rock", "cube", "oct"])
def test_plane_mesh_margin_matches_mj_forward(top):
    """A mesh over a plane, 20 poses (half random, half nearly lying on a face) from 3
    mm deep to apart within the margin: MuJoCo's mjc_PlaneConvex keeps the support
    vertex and the corners of the face there within the margin; ours are its contacts,
    count, distances, normals and points, to round-off (measured 1.8e-15)."""
    m, mj = _model("plane", top)
    rng = np.random.default_rng(0)
    poses = _poses(m, rng, 10, None, False) + _poses(m, rng, 10, 0.02, False)
    counts = set()
    for qpos in poses:
        ours, ref = _ours_and_mujocos(m, mj, qpos)
        assert ours.shape == ref.shape
        np.testing.assert_allclose(ours, ref, atol=1e-12)
        counts.add(len(ref))
    assert len(counts) >= 2  # single vertices and face corners


def test_sphere_box_margin_matches_mj_forward():
    """A sphere over a box (the box is the world's, the sphere free), 20 random poses
    from 3 mm deep to apart within the margin: MuJoCo's mjraw_SphereBox point,
    distance and normal to round-off (measured 1.1e-16)."""
    m, mj = _model("box", "sphere")
    for qpos in _poses(m, np.random.default_rng(1), 20, None, False):
        ours, ref = _ours_and_mujocos(m, mj, qpos)
        np.testing.assert_allclose(ours, ref, atol=1e-12)


@pytest.mark.parametrize(
    "base, top, lying",
    [
        ("slab", "box", False),
        ("slab", "cube", False),
        ("slab", "capsule", True),
        ("disc", "capsule", True),
    ],
)
def test_resting_within_the_margin_matches_mj_forward(base, top, lying):
    """A box or a cube mesh level on a mesh slab, a capsule lying on the slab or on a
    disc, tilted 0.05 rad (normal), 12 poses from 3 mm deep to apart within the
    margin: MuJoCo 4 clips them and keeps the points within the margin, each with its
    own distance; a capsule's segment is moved by its radius plus half the margin, the
    other face by half the margin. Ours are MuJoCo's contacts to round-off (measured
    5.5e-14), with several points at most poses."""
    m, mj = _model(base, top)
    multi, apart = 0, 0
    for qpos in _poses(m, np.random.default_rng(2), 12, 0.05, lying):
        ours, ref = _ours_and_mujocos(m, mj, qpos)
        assert ours.shape == ref.shape
        np.testing.assert_allclose(ours, ref, atol=1e-12)
        multi += len(ref) > 1
        apart += ref[:, 0].min() > 0
    assert multi >= 9
    assert apart >= 2


@pytest.mark.parametrize("top", ["box", "capsule"])
def test_gradients_of_separated_clipped_contacts(top):
    """A box level on the slab and a capsule lying on it, 4 mm apart (within the 0.02
    margin): the clipped points' distances as functions of the pose (6 velocity
    directions) and of the margin, reverse and forward mode against central
    differences (eps 1e-6, float64), to 1e-8 (measured 1.2e-11)."""
    m, mj = _model("slab", top)
    d = mujoco.MjData(m)
    rot = Rotation.from_euler("y", np.pi / 2 if top == "capsule" else 0.0)
    _place(m, d, rot * Rotation.from_rotvec([0.02, 0.01, 0.3]), [0.01, -0.02], 0.004)
    q0 = mj.qpos_to_q(jnp.asarray(d.qpos))
    c0 = _contacts(mj.model, q0)
    on = np.asarray(c0.dist) < 0
    assert on.sum() >= 2

    def dists(x):
        model = eqx.tree_at(lambda mb: mb.geoms[1].margin, mj.model, x[6])
        return model.contacts(model.integrate_positions(q0, x[:6])).dist[on]

    x0 = jnp.r_[jnp.zeros(6), mj.model.geoms[1].margin]
    rev = jax.jit(jax.jacrev(dists))(x0)
    fwd = jax.jit(jax.jacfwd(dists))(x0)
    f = jax.jit(dists)
    eps = 1e-6
    fd = np.stack([(f(x0 + eps * e) - f(x0 - eps * e)) / (2 * eps) for e in jnp.eye(7)], 1)
    np.testing.assert_allclose(rev, fwd, atol=1e-12)
    np.testing.assert_allclose(rev, fd, atol=1e-8)

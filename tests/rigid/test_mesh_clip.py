"""Box–mesh and mesh–mesh contact sets (MuJoCo 4's native convex collision with its
`multicontact` polygon clipping) against MuJoCo C: contacts at resting and random
poses, a box and a mesh dropped on a mesh slab beside `mj_step`, and gradients
through the clipped contacts."""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad.rigid as rigid

from .scenes import two_free_geoms_touching
from .test_mesh import _rows, _shape_of, drop_beside_mj_step, MESHES, position_jacobians

mujoco = pytest.importorskip("mujoco")
Rotation = pytest.importorskip("scipy.spatial.transform").Rotation

SLAB = np.array([[x, y, z] for z in (-0.05, 0.05) for y in (-0.5, 0.5) for x in (-0.5, 0.5)])
GEOMS = {
    "box": 'type="box" size=".1 .07 .04"',
    "rock": 'type="mesh" mesh="rock"',
    "cube": 'type="mesh" mesh="cube"',
    "capsule": 'type="capsule" size=".03 .08"',
}


def _assets() -> str:
    meshes = {
        "slab": SLAB,
        "rock": MESHES["rock"],
        "cube": MESHES["cube"],
        "oct": MESHES["octagon"],
    }
    rows = "".join(
        f'<mesh name="{k}" vertex="{" ".join(map(str, v.ravel()))}"/>' for k, v in meshes.items()
    )
    return f"<asset>{rows}</asset>"


@functools.cache
def _on_slab(geom: str):
    """A free geom above a tilted mesh slab (the world's)."""
    xml = f"""<mujoco><option timestep="0.002"/>{_assets()}<worldbody>
    <geom type="mesh" mesh="slab" euler="3 -2 0"/>
    <body pos="0 0 0.2"><freejoint/><geom {GEOMS[geom]}/></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    return m, rigid.from_mujoco(m)


_contacts = eqx.filter_jit(lambda model, q: model.contacts(q))


def _compare(c, d, atol):
    active = np.asarray(c.dist) < 0
    ours = _rows(np.asarray(c.dist)[active], c.normal[active], c.point[active])
    ref = np.array([np.r_[x.dist, x.frame[:3], x.pos] for x in d.contact[: d.ncon]])
    assert ours.shape[0] == d.ncon
    np.testing.assert_allclose(ours, _rows(*np.split(ref, [1, 4], 1)), atol=atol)


@pytest.mark.parametrize("geom", ["box", "rock"])
def test_resting_on_a_slab_matches_mujoco(geom):
    """A box or the rock pressed into the slab, flat and tilted (face–face: the clipped
    polygon, 3 or 4 points of differing depths), or on an edge or a corner: the contact
    set is MuJoCo's, count, depths, normals and points to 1e-7 (measured 3e-8: the
    normal is a mesh face's, which MuJoCo computes from the vertices before it rounds
    them to float32, sciad from the rounded ones)."""
    m, mj = _on_slab(geom)
    d = mujoco.MjData(m)
    slab = Rotation.from_euler("xyz", [3, -2, 0], degrees=True)
    counts = set()
    for k, tilt in enumerate([(0, 0, 0), (2, 1, 0.5), (3, -2, 40), (40, 0, 0), (35, 30, 10)]):
        body = slab * Rotation.from_euler("xyz", tilt, degrees=True)
        lowest = np.min(
            (MESHES["rock"] if geom == "rock" else _box_corners())
            @ body.as_matrix().T
            @ slab.as_matrix()[:, 2]
        )
        d.qpos[:3] = slab.as_matrix()[:, 2] * (0.05 - lowest - 0.01) + [0.02 * k, -0.01 * k, 0]
        d.qpos[3:] = body.as_quat(scalar_first=True)
        mujoco.mj_forward(m, d)
        _compare(_contacts(mj.model, mj.qpos_to_q(jnp.asarray(d.qpos))), d, 1e-7)
        counts.add(d.ncon)
    assert len(counts) >= 2 and max(counts) >= 3


def _box_corners():
    return np.array([[x, y, z] for x in (-0.1, 0.1) for y in (-0.07, 0.07) for z in (-0.04, 0.04)])


def _pair(a: str, b: str):
    xml = f"""<mujoco>{_assets()}<worldbody>
    <body><freejoint/><geom {GEOMS[a]}/></body>
    <body><freejoint/><geom type="mesh" mesh="{b}"/></body></worldbody></mujoco>"""
    return mujoco.MjModel.from_xml_string(xml)


@pytest.mark.parametrize("a, b", [("box", "rock"), ("cube", "oct")])
def test_random_poses_match_mujoco(a, b):
    """Box–rock and cube–octagon-prism at 24 random penetrating poses (vertex–face,
    edge–edge and face–face): where MuJoCo finds aligned features the clipped points
    (2 to 4) match it to 1e-7, a single contact (GJK/EPA) to MuJoCo's EPA tolerance
    (distance 2e-6, normal 3e-3, point 5e-4, as the sphere–mesh test). The contact
    count differs at 1 of the 24 poses of box–rock (measured: MuJoCo returns an edge
    contact of 2 points along a normal 11° from the least-penetration one, which
    sciad's features of that normal do not give) and at 1 of cube–octagon (MuJoCo's
    EPA, stopping at its tolerance 1e-6, ends on the face of a cube face 0.5° from the
    normal, 1.3e-6 deeper than the least penetration, and clips an edge against it)."""
    from sciad.rigid._narrowphase import _COLLIDE

    m = _pair(a, b)
    shapes = [_shape_of(m, g) for g in (0, 1)]
    fn = jax.jit(_COLLIDE[(type(shapes[0]), rigid.ConvexMesh)][0])
    miss, multi = 0, 0
    for d in two_free_geoms_touching(m, mujoco.MjData(m), 24, 0, 0.08):
        got = _check_pose(fn, shapes, d, 1e-7)
        miss += got is None
        multi += bool(got)
    assert miss <= 1
    assert multi >= 5


def _check_pose(fn, shapes, d, multi_atol: float) -> bool | None:
    """Our contacts of MuJoCo's pair `d` (its two free geoms) against its: None where
    the counts differ; else True for several points (checked to `multi_atol`), False
    for one (checked to MuJoCo's EPA tolerance: distance 2e-6, normal 3e-3, point
    5e-4)."""
    fr = [jnp.asarray(x) for g in (0, 1) for x in (d.geom_xmat[g].reshape(3, 3), d.geom_xpos[g])]
    p = fn(shapes[0], fr[0], fr[1], shapes[1], fr[2], fr[3])
    active = np.asarray(p.dist) < 0
    if int(np.sum(active)) != d.ncon:
        return None
    ours = _rows(np.asarray(p.dist)[active], p.normal[active], p.point[active])
    ref = np.array([np.r_[x.dist, x.frame[:3], x.pos] for x in d.contact[: d.ncon]])
    ref = _rows(*np.split(ref, [1, 4], 1))
    if d.ncon > 1:
        np.testing.assert_allclose(ours, ref, atol=multi_atol)
        return True
    assert abs(ours[0, 0] - ref[0, 0]) < 2e-6
    np.testing.assert_allclose(ours[0, 1:4], ref[0, 1:4], atol=3e-3)
    np.testing.assert_allclose(ours[0, 4:], ref[0, 4:], atol=5e-4)
    return False


@pytest.mark.slow
@pytest.mark.parametrize("geom, steps, tol", [("box", 300, 1e-12), ("rock", 200, 1e-8)])
def test_dropped_on_a_slab_matches_mj_step(geom, steps, tol):
    """The box (300 steps, 0.6 s) or the rock (200 steps) dropped spinning on the
    tilted slab lands, tumbles and rests on clipped contacts as in MuJoCo: qpos after
    the run agrees with mj_step (box: measured 5.6e-16; rock: 1.9e-10, its single-point
    contacts carrying MuJoCo's EPA tolerance; past 220 steps the rock's run departs
    from MuJoCo's, 2e-4 at 250 steps, at a switch between contact sets)."""
    ncon, dq, _ = drop_beside_mj_step(*_on_slab(geom), steps)
    assert ncon >= 3
    assert dq < tol


@pytest.mark.slow
def test_gradient_through_clipped_contacts_matches_central_differences():
    """The box resting tilted on the slab on 4 clipped contacts (0.2 to 2.5 mm deep),
    pushed sideways: d(final position)/d(initial velocity) after 40 steps by reverse
    and forward mode agree (1e-10; measured 3e-16) and match central differences (eps 1e-6, float64) to
    1e-6 relative (measured 2.9e-11 absolute, J up to 0.019)."""
    m, mj = _on_slab("box")
    d = mujoco.MjData(m)
    slab = Rotation.from_euler("xyz", [3, -2, 0], degrees=True)
    body = slab * Rotation.from_euler("xyz", [0.5, 0.3, 10], degrees=True)
    lowest = np.min(_box_corners() @ body.as_matrix().T @ slab.as_matrix()[:, 2])
    d.qpos[:3] = slab.as_matrix()[:, 2] * (0.05 - lowest - 0.0025)
    d.qpos[3:] = body.as_quat(scalar_first=True)
    mujoco.mj_forward(m, d)
    assert d.ncon == 4
    q = mj.qpos_to_q(jnp.asarray(d.qpos))

    v0 = mj.qvel_to_v(jnp.asarray([0.3, 0.1, 0.0, 0.0, 0.0, 0.5]))
    rev, fwd, fd = position_jacobians(mj, q, v0, 40)
    np.testing.assert_allclose(rev, fwd, atol=1e-10)
    np.testing.assert_allclose(rev, fd, rtol=1e-6, atol=1e-8)


def test_a_capsule_against_a_mesh_matches_mujoco():
    """A capsule against the rock at 24 random touching poses: the count at every pose
    is MuJoCo's (measured: all 30 of a longer run); two clipped points (the capsule's
    segment, moved by its radius across its axis along the first normal, clipped by a
    face) to 1e-5 (measured 4.6e-6: the first normal is MuJoCo's EPA's to its tolerance
    1e-6); one point to MuJoCo's EPA tolerance, as above."""
    from sciad.rigid._narrowphase import _COLLIDE

    xml = f"""<mujoco>{_assets()}<worldbody>
    <body><freejoint/><geom type="capsule" size=".03 .08"/></body>
    <body><freejoint/><geom type="mesh" mesh="rock"/></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    shapes = (rigid.Capsule(0.03, 0.08), _shape_of(m, 1))
    fn = jax.jit(_COLLIDE[(rigid.Capsule, rigid.ConvexMesh)][0])
    multi = 0
    for d in two_free_geoms_touching(m, mujoco.MjData(m), 24, 0, 0.08):
        got = _check_pose(fn, shapes, d, 1e-5)
        assert got is not None
        multi += got
    assert multi >= 4


def test_a_capsule_resting_on_a_slab_matches_mujoco():
    """A capsule lying on the tilted slab, tilted up to 0.06 rad and pressed 4 mm in:
    MuJoCo's contact set (one point, or the two clipped ends of differing depths) to
    round-off."""
    m, mj = _on_slab("capsule")
    d = mujoco.MjData(m)
    slab = Rotation.from_euler("xyz", [3, -2, 0], degrees=True)
    rng = np.random.default_rng(0)
    counts = set()
    for _ in range(6):
        body = (
            slab
            * Rotation.from_rotvec([*rng.uniform(-0.06, 0.06, 2), 0.0])
            * Rotation.from_euler("xyz", [90, 0, rng.uniform(0, 360)], degrees=True)
        )
        d.qpos[3:] = body.as_quat(scalar_first=True)
        lo, hi = 0.0, 0.3  # the height along the slab's normal at which MuJoCo's deepest is 4 mm
        for _ in range(60):
            d.qpos[:3] = slab.as_matrix()[:, 2] * (0.5 * (lo + hi))
            mujoco.mj_forward(m, d)
            deep = d.ncon and min(c.dist for c in d.contact[: d.ncon]) < -0.004
            lo, hi = (0.5 * (lo + hi), hi) if deep else (lo, 0.5 * (lo + hi))
        d.qpos[:3] = slab.as_matrix()[:, 2] * hi
        mujoco.mj_forward(m, d)
        _compare(_contacts(mj.model, mj.qpos_to_q(jnp.asarray(d.qpos))), d, 1e-12)
        counts.add(d.ncon)
    assert counts == {1, 2}

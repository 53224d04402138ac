"""Capsule–cylinder, box–cylinder, cylinder–cylinder and cylinder–mesh contact sets
against MuJoCo 4's `mj_collision` at resting poses (a cap's 16-gon, a cylinder's side
line and a capsule's segment clipped as MuJoCo 4 clips them), and gradients through
the clipped points against central differences."""

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad.rigid as rigid
from sciad.rigid._narrowphase import _COLLIDE, _kind, _ORDER

from .test_mesh_clip import _assets

mujoco = pytest.importorskip("mujoco")
Rotation = pytest.importorskip("scipy.spatial.transform").Rotation

GEOMS = {
    "capsule": ('type="capsule" size=".03 .08"', lambda: rigid.Capsule(0.03, 0.08)),
    "cylinder": ('type="cylinder" size=".06 .04"', lambda: rigid.Cylinder(0.06, 0.04)),
    "box": ('type="box" size=".07 .05 .03"', lambda: rigid.Box(jnp.asarray([0.07, 0.05, 0.03]))),
    "disc": ('type="cylinder" size=".12 .01"', lambda: rigid.Cylinder(0.12, 0.01)),
    # meshes: their shapes are MuJoCo's processed hulls (`from_mujoco`'s)
    "cube": ('type="mesh" mesh="cube"', None),
    "rock": ('type="mesh" mesh="rock"', None),
    "slab": ('type="mesh" mesh="slab"', None),
}
# (the world's geom, the free geom lying on it, the free geom's resting orientation)
CASES = {
    "capsule on a disc": ("disc", "capsule", (np.pi / 2, 0.0, 0.0)),
    "capsule across a cap": ("cylinder", "capsule", (np.pi / 2, 0.0, 0.0)),
    "box on a disc": ("disc", "box", (0.0, 0.0, 0.0)),
    "cylinder on its side on a box": ("box", "cylinder", (np.pi / 2, 0.0, 0.0)),
    "cylinder standing on a box": ("box", "cylinder", (0.0, 0.0, 0.0)),
    "cube on a disc": ("disc", "cube", (0.0, 0.0, 0.0)),
    "rock on a disc": ("disc", "rock", (0.0, 0.0, 0.0)),
    "cylinder on its side on a slab": ("slab", "cylinder", (np.pi / 2, 0.0, 0.0)),
}


@functools.cache
def _scene(base: str, top: str):
    xml = f"""<mujoco>{_assets()}<worldbody><geom {GEOMS[base][0]}/>
    <body><freejoint/><geom {GEOMS[top][0]}/></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cylinder–mesh's (test_cylinder_mesh_warns)
        loaded = rigid.from_mujoco(m).model.geoms
    shapes = tuple(
        loaded[g].shape if GEOMS[k][1] is None else GEOMS[k][1]() for g, k in enumerate((base, top))
    )
    # sciad's pair order (its table's), with MuJoCo's normal sign where it differs
    i, j = (0, 1) if _ORDER.index(_kind(shapes[0])) <= _ORDER.index(_kind(shapes[1])) else (1, 0)
    fn = jax.jit(_COLLIDE[(_kind(shapes[i]), _kind(shapes[j]))][0])
    return m, shapes, (i, j), fn


def _resting(m, d, rng, rest, tilt=0.06, depth=0.004):
    """A random pose of the free geom lying on the world's, tilted up to `tilt` rad
    from `rest`, lowered until MuJoCo's deepest contact is `depth` deep."""
    rot = (
        Rotation.from_euler("z", rng.uniform(0, 2 * np.pi))
        * Rotation.from_rotvec([*rng.uniform(-tilt, tilt, 2), 0.0])
        * Rotation.from_euler("xyz", rest)
    )
    d.qpos[3:7] = rot.as_quat(scalar_first=True)
    d.qpos[:2] = rng.uniform(-0.05, 0.05, 2)
    lo, hi = 0.0, 0.5
    for _ in range(60):
        d.qpos[2] = 0.5 * (lo + hi)
        mujoco.mj_forward(m, d)
        if d.ncon and min(c.dist for c in d.contact[: d.ncon]) < -depth:
            lo = d.qpos[2]
        else:
            hi = d.qpos[2]
    d.qpos[2] = hi
    mujoco.mj_forward(m, d)


def _rows(dist, normal, point):
    rows = np.c_[dist, normal, point].reshape(-1, 7)
    return rows[np.lexsort(rows.T[::-1])]


def _sets(case: str, n: int, seed: int = 0):
    """(ours, MuJoCo's) contact sets as sorted rows (dist, normal, point), at n poses."""
    base, top, rest = CASES[case]
    m, shapes, (i, j), fn = _scene(base, top)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        _resting(m, d, rng, rest)
        fr = [
            (jnp.asarray(d.geom_xmat[g].reshape(3, 3)), jnp.asarray(d.geom_xpos[g])) for g in (0, 1)
        ]
        p = fn(shapes[i], *fr[i], shapes[j], *fr[j])
        active = np.asarray(p.dist) < 0
        ours = _rows(
            np.asarray(p.dist)[active], np.asarray(p.normal)[active], np.asarray(p.point)[active]
        )
        ref = np.array([np.r_[c.dist, c.frame[:3], c.pos] for c in d.contact[: d.ncon]])
        if d.contact.geom[0][0] != i:
            ref[:, 1:4] *= -1
        out.append((ours, _rows(ref[:, 0], ref[:, 1:4], ref[:, 4:])))
    return out


@pytest.mark.parametrize(
    "case, atol",
    [
        # the capsule's segment, moved by its radius, clipped by the disc's 16-gon
        ("capsule on a disc", 1e-12),
        # the segment crosses the rim: MuJoCo's first normal (its EPA's, to 1e-6) sets
        # the move across the axis (measured up to 2.2e-7 apart)
        ("capsule across a cap", 1e-6),
        # the box's face clipped by the 16-gon
        ("box on a disc", 1e-12),
    ],
)
def test_resting_contact_sets_match_mujoco(case, atol):
    """Eight resting poses each (tilted up to 0.06 rad, 4 mm deep): the contact count
    at every pose, and the points, normals and depths, which differ point to point
    (1 or 2 points for the capsule, up to 4 for the box), are MuJoCo 4's."""
    multi = 0
    for ours, ref in _sets(case, 8):
        assert ours.shape == ref.shape
        np.testing.assert_allclose(ours, ref, atol=atol)
        multi += ref.shape[0] > 1
    assert multi >= 4


def test_a_cylinder_lying_on_a_box_is_clipped_along_its_side_line():
    """The side line through the rims' support points is clipped by the box's face:
    two points whose depths differ, as MuJoCo's; the line's place along the rim
    follows the first normal (MuJoCo's EPA stops at ccd_tolerance 1e-6: its points lie
    up to 6e-5 m along the tangent from ours, measured)."""
    multi = 0
    for ours, ref in _sets("cylinder on its side on a box", 8):
        assert ours.shape == ref.shape
        np.testing.assert_allclose(ours[:, :4], ref[:, :4], atol=1e-6)
        np.testing.assert_allclose(ours[:, 4:], ref[:, 4:], atol=1e-4)
        multi += ref.shape[0] > 1
        if ref.shape[0] == 2:
            assert abs(ref[0, 0] - ref[1, 0]) > 1e-4  # not one copied depth
    assert multi >= 6


def test_a_cylinder_standing_on_a_box_has_four_points_of_the_clipped_cap():
    """The cap's 16-gon clipped by the box's face has more than four corners; MuJoCo
    keeps four by its greedy largest-area search, whose start depends on how its EPA
    orders the cap (not reproduced: the four kept corners differ at most poses). The
    count and the deepest corner's depth agree where MuJoCo keeps the deepest corner;
    every point of ours is a corner of the clipped cap (its depth is its height above
    the box's face)."""
    for ours, ref in _sets("cylinder standing on a box", 6):
        assert ours.shape == ref.shape == (4, 7)
        # depths along the box's face normal (+z): the midpoints sit half a depth up
        np.testing.assert_allclose(ours[:, 6], 0.03 + 0.5 * ours[:, 0], atol=1e-12)
        assert np.min(ours[:, 0]) <= np.min(ref[:, 0]) + 1e-12


def test_cylinder_mesh_contact_sets_match_mujoco():
    """Cylinder–mesh, eight resting poses each (tilted up to 0.06 rad, 4 mm deep):
    a cylinder lying on a mesh slab is clipped along its side line as on a box (count,
    depths and normals to 1e-6, points to 1e-4 along the rim); a mesh cube on a disc
    gives MuJoCo's count at every pose and its whole set at five (measured: the other
    three keep another four of more clipped corners, as a box's cap does); a rock on a
    disc gives MuJoCo's whole set to 1e-12 at six, and one point where MuJoCo gives two
    at the other two (near the rim, MuJoCo's EPA normal, a few hundredths of a radian
    off, selects the rock's edge: the warning `check_pairs` gives)."""
    for ours, ref in _sets("cylinder on its side on a slab", 8):
        assert ours.shape == ref.shape
        np.testing.assert_allclose(ours[:, :4], ref[:, :4], atol=1e-6)
        np.testing.assert_allclose(ours[:, 4:], ref[:, 4:], atol=1e-4)
    for case, same in (("cube on a disc", 5), ("rock on a disc", 6)):
        sets = _sets(case, 8)
        exact = [o.shape == r.shape and np.allclose(o, r, rtol=0, atol=1e-12) for o, r in sets]
        assert sum(exact) == same, (case, exact)
        if case == "cube on a disc":
            assert all(o.shape == r.shape for o, r in sets)
        else:
            assert all(o.shape[0] <= r.shape[0] for o, r in sets)


def test_cylinder_mesh_warns():
    """A model with a cylinder–mesh pair loads, with one warning naming the first pair
    and the rim's choice."""
    xml = f"""<mujoco>{_assets()}<worldbody><geom name="disc" {GEOMS["disc"][0]}/>
    <body name="b"><freejoint/><geom name="rock" {GEOMS["rock"][0]}/></body>
    <body name="c" pos="0 0 1"><freejoint/><geom name="c" {GEOMS["rock"][0]}/></body>
    </worldbody></mujoco>"""
    with pytest.warns(UserWarning, match=r"2 cylinder–mesh pair\(s\) \(first: geom 'disc'.*rim"):
        rigid.load_mjcf(xml)


@pytest.mark.parametrize(
    "case", ["capsule on a disc", "box on a disc", "cube on a disc", "rock on a disc"]
)
def test_clipped_points_gradients_match_central_differences(case):
    """d(depths and points of the two deepest clipped points)/d(free geom's pose), a
    capsule's, a box's, a mesh cube's or a rock's on a disc: forward and reverse mode
    agree and match central differences in float64. (Reverse mode was NaN wherever the
    clipping face has fewer corners than the widest face of the pair, a box's 4 against
    the cap's 16: the padding's zero-length edges normalised as 0/0.)"""
    m, shapes, (i, j), fn = _scene(*CASES[case][:2])
    d = mujoco.MjData(m)
    rng = np.random.default_rng(3)
    while True:
        _resting(m, d, rng, CASES[case][2])
        if d.ncon >= 2:
            break
    frames = [
        (jnp.asarray(d.geom_xmat[g].reshape(3, 3)), jnp.asarray(d.geom_xpos[g])) for g in (0, 1)
    ]

    def out(x):
        w = x[3:]
        k = jnp.asarray([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
        moved = [frames[0], (jax.scipy.linalg.expm(k) @ frames[1][0], frames[1][1] + x[:3])]
        p = fn(shapes[i], *moved[i], shapes[j], *moved[j])
        order = jnp.argsort(jax.lax.stop_gradient(p.dist))[:2]
        return jnp.concatenate([p.dist[order], p.point[order].ravel()])

    x0, eps = jnp.zeros(6), 1e-6
    fwd = jax.jit(jax.jacfwd(out))(x0)
    rev = jax.jit(jax.jacrev(out))(x0)
    assert np.all(np.isfinite(fwd))
    np.testing.assert_allclose(fwd, rev, atol=1e-12)
    f = jax.jit(out)
    steps = eps * np.eye(6)
    fd = np.stack([(f(x0 + s) - f(x0 - s)) / (2 * eps) for s in steps], axis=1)
    np.testing.assert_allclose(fwd, fd, atol=1e-7)

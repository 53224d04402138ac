"""Contacts: narrow-phase distances against independent geometry, pair filtering,
analytic contact mechanics (sliding at μg, restitution, resting, inclines, stacks),
gradients through the converged contact solve, batching, failures, and MuJoCo C."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
from sciad._core._geometry import quat_multiply, quat_to_matrix
import sciad.rigid as rigid
import sciad.rigid._narrowphase as rigid_narrowphase

from ..helpers import central_fd
from .scenes import flat, HARDEST, value_grad_fd, value_jvp_fd

G = 9.81
HALF = jnp.array([0.1, 0.1, 0.1])


def rot(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return jnp.asarray(np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis]))


def free_body(name, shape, pos, quat=(1.0, 0.0, 0.0, 0.0), **geom):
    body = rigid.Body(
        name, joint=rigid.FreeJoint(), pos=pos, quat=quat, shape=shape, density=1000.0
    )
    return body, rigid.Geom(shape, body=name, **geom)


def box_on_plane(mu=0.5, softness=1e-2, plane_quat=(1.0, 0.0, 0.0, 0.0), z=0.1, **kw):
    body, geom = free_body("box", rigid.Box(HALF), (0.0, 0.0, z), friction=0.0)
    floor = rigid.Geom(rigid.Plane(), quat=plane_quat, friction=mu)
    return rigid.MultiBody(
        [body], geoms=[floor, geom], contact=rigid.ContactModel(impedance=flat(softness), **kw)
    )


@pytest.fixture(scope="module")
def sliding_box():
    return box_on_plane()


@eqx.filter_jit
def run(model, y0, dt, n_steps, every=1, throw=True):
    return sciad.simulate(
        model, y0, dt=dt, n_steps=n_steps, saveat=sciad.SaveAt(steps=every), throw=throw
    )


# ------------------------------------------------------------------ narrow phase


def contacts_of(bodies, geoms, q=None, **kw):
    mb = rigid.MultiBody(bodies, geoms=geoms, gravity=(0.0, 0.0, 0.0), **kw)
    q = mb.default_state()[0] if q is None else q
    return mb, mb.contacts(q)


def segment_points(c, axis, h, n=4001):
    t = np.linspace(-h, h, n)[:, None]
    return np.asarray(c) + t * np.asarray(axis)


def test_sphere_capsule_cylinder_box_against_a_tilted_plane():
    tilt = rot([1.0, 2.0, 0.5], 0.4)
    quat = rot([0.3, -1.0, 0.2], 1.1)
    shapes = {
        "sphere": rigid.Sphere(0.2),
        "capsule": rigid.Capsule(0.1, 0.3),
        "box": rigid.Box(jnp.array([0.1, 0.2, 0.3])),
        "cylinder": rigid.Cylinder(0.15, 0.25),
    }
    plane = rigid.Geom(rigid.Plane(), quat=tilt, pos=jnp.array([0.0, 0.0, -0.05]), contype=0)
    bodies, geoms = [], [plane]
    for i, (name, s) in enumerate(shapes.items()):
        b, g = free_body(name, s, (0.5 * i, 0.1, 0.15), quat, conaffinity=0)
        bodies.append(b)
        geoms.append(g)
    _, c = contacts_of(bodies, geoms)
    n = np.asarray(quat_to_matrix(tilt))[:, 2]
    r = np.asarray(quat_to_matrix(quat))
    offset = np.array([0.0, 0.0, -0.05])
    # The exact lowest point of each shape along −n, from its support function.
    k = 0
    for i, name in enumerate(shapes):
        centre = np.array([0.5 * i, 0.1, 0.15])
        axis = r[:, 2]
        if name == "sphere":
            low, m = (centre - offset) @ n - 0.2, 1
        elif name == "capsule":
            low, m = (centre - offset) @ n - 0.3 * abs(axis @ n) - 0.1, 2
        elif name == "box":
            low, m = (centre - offset) @ n - np.abs(r.T @ n) @ np.array([0.1, 0.2, 0.3]), 8
        else:
            low = (centre - offset) @ n - 0.25 * abs(axis @ n) - 0.15 * np.sqrt(1 - (axis @ n) ** 2)
            m = 6
        np.testing.assert_allclose(float(c.dist[k : k + m].min()), low, atol=1e-12)
        np.testing.assert_allclose(np.asarray(c.normal[k : k + m]), np.tile(n, (m, 1)), atol=1e-14)
        # Points lie midway: on the plane's side by φ/2 from the surface point.
        np.testing.assert_allclose(
            (np.asarray(c.point[k : k + m]) - offset) @ n,
            0.5 * np.asarray(c.dist[k : k + m]),
            atol=1e-12,
        )
        k += m
    assert k == c.dist.shape[0]


@pytest.mark.parametrize("gap", [0.05, -0.03])
def test_sphere_sphere_capsule_pairs_against_sampled_distances(gap):
    qa, qb = rot([1.0, 0.2, 0.0], 0.7), rot([0.0, 1.0, 1.0], -0.4)
    s1, g1 = free_body("s", rigid.Sphere(0.2), (0.0, 0.0, 0.0))
    c1, gc1 = free_body("c1", rigid.Capsule(0.1, 0.3), (0.0, 0.0, 0.0), qa)
    c2, gc2 = free_body("c2", rigid.Capsule(0.15, 0.2), (0.0, 0.0, 0.0), qb)
    # Place them so that each pair's exact distance is `gap` along a known direction.
    ra, rb = np.asarray(quat_to_matrix(qa)), np.asarray(quat_to_matrix(qb))
    pa = segment_points([0, 0, 0], ra[:, 2], 0.3)
    perp = np.cross(ra[:, 2], [0.0, 0.0, 1.0])
    perp /= np.linalg.norm(perp)
    # sphere beside capsule 1's segment middle
    s_pos = 0.1 * ra[:, 2] + perp * (0.2 + 0.1 + gap)
    # capsule 2 far away on the other side, checked by sampling
    c2_pos = -perp * 0.6 + np.array([0.0, 0.0, 0.05])
    s1 = rigid.Body("s", joint=rigid.FreeJoint(), pos=s_pos, shape=rigid.Sphere(0.2), density=1.0)
    c2 = rigid.Body(
        "c2",
        joint=rigid.FreeJoint(),
        pos=c2_pos,
        quat=qb,
        shape=rigid.Capsule(0.15, 0.2),
        density=1.0,
    )
    mb, c = contacts_of([s1, c1, c2], [g1, gc1, gc2])
    pairs = {tuple(mb.geom_body[i] for i in p): k for k, p in enumerate(mb.pairs)}
    pb = segment_points(c2_pos, rb[:, 2], 0.2)
    sampled = {
        (0, 1): np.min(np.linalg.norm(pa - s_pos, axis=1)) - 0.3,
        (0, 2): np.min(np.linalg.norm(pb - s_pos, axis=1)) - 0.35,
        (1, 2): np.min(np.linalg.norm(pa[:, None] - pb[None, ::10], axis=-1)) - 0.25,
    }
    for key, want in sampled.items():
        k = pairs[key]
        np.testing.assert_allclose(float(c.dist[k]), want, atol=2e-5)
    np.testing.assert_allclose(float(c.dist[pairs[(0, 1)]]), gap, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(c.normal), axis=1), 1.0, atol=1e-14)


@pytest.mark.parametrize(
    "centre, want",
    [
        ((0.3, 0.05, 0.0), 0.3 - 0.1 - 0.05),
        ((0.12, 0.0, 0.0), -(0.05 - 0.02)),
        ((0.0, 0.02, 0.03), -0.12),
    ],
)
def test_sphere_box_signed_distance(centre, want):
    # outside a face; overlapping a face; centre inside (depth to the nearest face + r)
    quat = rot([0.0, 0.0, 1.0], 0.3)
    r = np.asarray(quat_to_matrix(quat))
    box = rigid.Body(
        "box",
        joint=rigid.FreeJoint(),
        quat=quat,
        shape=rigid.Box(jnp.array([0.1, 0.1, 0.1])),
        density=1.0,
    )
    ball = rigid.Body(
        "ball",
        joint=rigid.FreeJoint(),
        pos=r @ np.asarray(centre),
        shape=rigid.Sphere(0.05),
        density=1.0,
    )
    geoms = [
        rigid.Geom(rigid.Box(jnp.array([0.1, 0.1, 0.1])), body="box"),
        rigid.Geom(rigid.Sphere(0.05), body="ball"),
    ]
    _, c = contacts_of([box, ball], geoms)
    np.testing.assert_allclose(float(c.dist[0]), want, atol=1e-12)


def test_box_stacked_on_a_box_overlaps_by_the_vertex_depth():
    a, ga = free_body("a", rigid.Box(HALF), (0.0, 0.0, 0.0))
    b, gb = free_body(
        "b", rigid.Box(jnp.array([0.05, 0.05, 0.05])), (0.01, 0.02, 0.149), rot([0, 0, 1], 0.5)
    )
    _, c = contacts_of([a, b], [ga, gb])
    np.testing.assert_allclose(float(c.dist.min()), -0.001, atol=1e-12)
    low = np.asarray(c.dist) < 0
    assert low.sum() == 4  # the small box's four bottom corners
    np.testing.assert_allclose(
        np.asarray(c.normal)[low], np.tile([0.0, 0.0, 1.0], (4, 1)), atol=1e-12
    )


def crossed_edges(dz, shift=(0.0, 0.0)):
    """Cube a (half 0.1) turned 45° about x, its top edge along x at z = 0.1√2; cube b
    (half 0.08) turned 45° about y above it, its bottom edge along y, overlapping a's
    top edge by `dz`. No corner of either lies inside the other."""
    a, ga = free_body("a", rigid.Box(HALF), (0.0, 0.0, 0.0), rot([1, 0, 0], np.pi / 4))
    zb = 0.1 * np.sqrt(2) + 0.08 * np.sqrt(2) - dz
    b, gb = free_body("b", rigid.Box(jnp.full(3, 0.08)), (*shift, zb), rot([0, 1, 0], np.pi / 4))
    return [a, b], [ga, gb]


@pytest.mark.parametrize("shift", [(0.0, 0.0), (0.03, -0.02)])
def test_crossed_box_edges_touch_at_the_separating_axis_depth(shift):
    """Edge–edge contact: one point, at the crossing of the two edges, depth the
    overlap, normal z; every corner stays outside (the face–vertex points alone
    would miss this contact)."""
    _, c = contacts_of(*crossed_edges(0.002, shift))
    dist = np.asarray(c.dist)
    assert dist.shape == (25,)
    assert np.all(dist[:24] > 0)
    np.testing.assert_allclose(dist[24], -0.002, atol=1e-14)
    np.testing.assert_allclose(np.asarray(c.normal[24]), [0.0, 0.0, 1.0], atol=1e-14)
    crossing = [shift[0], 0.0, 0.1 * np.sqrt(2) - 0.001]
    np.testing.assert_allclose(np.asarray(c.point[24]), crossing, atol=1e-14)
    _, apart = contacts_of(*crossed_edges(-0.01, shift))
    assert np.all(np.asarray(apart.dist) > 0)


def mujoco_pair(geom_a, geom_b):
    """Two free bodies, a and b, with MJCF geoms of the given attributes (gravity off),
    in MuJoCo C and in sciad: MuJoCo's data, sciad's jitted contacts, and
    `place(qpos)`, which sets MuJoCo's state and returns its deepest contact distance
    (inf without contacts)."""
    mujoco = pytest.importorskip("mujoco")
    xml = f"""<mujoco><option gravity="0 0 0"/><worldbody>
    <body name="a"><freejoint/><geom {geom_a}/></body>
    <body name="b"><freejoint/><geom {geom_b}/></body>
    </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    model = rigid.load_mjcf(xml).model

    def place(qpos):
        d.qpos[:] = qpos
        mujoco.mj_forward(m, d)
        return d.contact.dist[: d.ncon].min() if d.ncon else np.inf

    return d, jax.jit(lambda q: model.contacts(q)), place


def press(place, qpos, body, u, depth):
    """Put free body `body` (0 or 1) at s u, the other staying where `qpos` has it,
    bisecting the separation s ∈ [0, 0.6] until MuJoCo reports `depth` (< 0) of
    penetration; leave MuJoCo's state there."""

    def at(s):
        q = np.array(qpos, dtype=float)
        q[7 * body : 7 * body + 3] = s * u
        return q

    lo, hi = 0.0, 0.6
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if place(at(mid)) < depth else (lo, mid)
    place(at(lo))


def wxyz(rotation):
    """A scipy `Rotation` as MuJoCo's quaternion (w, x, y, z)."""
    x = rotation.as_quat()
    return [x[3], x[0], x[1], x[2]]


def assert_contacts_equal_mujoco(c, d):
    """sciad's acting contacts `c` (dist < 0) equal MuJoCo's in `d` one to one: every
    point, depth and normal to 1e-12. Returns the acting mask."""
    on = np.asarray(c.dist) < 0
    ours = np.c_[np.asarray(c.point)[on], np.asarray(c.dist)[on], np.asarray(c.normal)[on]]
    frame = d.contact.frame[: d.ncon, :3]
    theirs = np.c_[d.contact.pos[: d.ncon], d.contact.dist[: d.ncon], frame]
    assert len(ours) == len(theirs)
    close = np.max(np.abs(ours[:, None] - theirs[None]), axis=-1) < 1e-12
    assert np.all(np.any(close, axis=0)) and np.all(np.any(close, axis=1))
    return on


def test_box_box_contacts_equal_mujoco():
    """The whole contact set of two boxes — every point, depth and normal — equals
    MuJoCo C's to 1e-12: in 40 random orientations and directions, each pair moved
    together until MuJoCo reports 3 mm of penetration (a third of them edge–edge),
    and in 40 face–face poses (a random turn about the common normal, half with a tilt
    up to 0.08 rad), whose clipped patches have 1 to 7 vertices and one of which
    (tilted) is an edge–edge contact."""
    from scipy.spatial.transform import Rotation

    ha, hb = (0.1, 0.15, 0.2), (0.12, 0.08, 0.1)
    d, contacts, place = mujoco_pair(
        f'type="box" size="{ha[0]} {ha[1]} {ha[2]}"', f'type="box" size="{hb[0]} {hb[1]} {hb[2]}"'
    )
    rng = np.random.default_rng(1)

    def qpos(qa, qb, pb):
        return np.concatenate([[0.0, 0.0, 0.0], qa, pb, qb])

    def compare():  # at MuJoCo's current pose: (number of points, edge–edge?)
        on = assert_contacts_equal_mujoco(contacts(jnp.asarray(d.qpos)), d)
        return int(on.sum()), bool(on[24])

    edges = 0
    for _ in range(40):
        qa, qb = wxyz(Rotation.random(random_state=rng)), wxyz(Rotation.random(random_state=rng))
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        press(place, qpos(qa, qb, np.zeros(3)), 1, u, -0.003)
        edges += compare()[1]
    assert edges >= 10
    sizes, edges = set(), 0
    for k in range(40):
        turn = Rotation.from_euler(
            "zx", [rng.uniform(0, np.pi), rng.uniform(-0.08, 0.08) * (k % 2)]
        )
        shift = [rng.uniform(-0.05, 0.05), rng.uniform(-0.05, 0.05), ha[2] + hb[2] - 0.002]
        place(qpos([1.0, 0.0, 0.0, 0.0], wxyz(turn), np.asarray(shift)))
        size, edge = compare()
        sizes.add(size)
        edges += edge
    assert edges >= 1 and min(sizes) == 1 and max(sizes) == 7


def test_a_tower_of_equal_cubes_matches_mujoco_and_rests():
    """Three equal cubes stacked face to face on a plane: every face of a pair
    coincides, so each corner is found twice by the clipping (a crossing at a
    corner); it is kept once, as in MuJoCo, whose 12 contacts (point, depth, normal)
    these equal to 1e-12. Over 1,000 of MuJoCo's 2 ms steps the tower settles into
    the soft contacts by 0.3–0.9 mm and rests, as MuJoCo's does, to round-off
    (measured 6e-13 while settling, 6e-16 at rest). (This test once ran sciad at
    1 ms against MuJoCo's 2 ms and found 2.5e-6: the soft contacts' rest depth
    depends on the step.)"""
    mujoco = pytest.importorskip("mujoco")
    xml = """<mujoco><worldbody><geom type="plane" size="1 1 0.1"/>
    <body name="a" pos="0 0 0.1"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
    <body name="b" pos="0 0 0.3"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
    <body name="c" pos="0 0 0.5"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
    </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qpos[[2, 9, 16]] -= [1e-4, 2e-4, 3e-4]
    mujoco.mj_forward(m, d)
    loaded = rigid.load_mjcf(xml)
    model = loaded.model
    assert assert_contacts_equal_mujoco(model.contacts(jnp.asarray(d.qpos)), d).sum() == 12
    q0, v0 = model.default_state()
    assert loaded.dt == m.opt.timestep == 2e-3
    q = np.asarray(run(model, (q0, v0), loaded.dt, 1000, every=250).ys[0])
    m.opt.tolerance = 1e-15  # MuJoCo's solve converged as far as sciad's
    d = mujoco.MjData(m)
    ref = []
    for k in range(1000):
        mujoco.mj_step(m, d)
        if k % 250 == 249:
            ref.append(d.qpos.copy())
    np.testing.assert_allclose(q, np.array(ref), rtol=0, atol=1e-11)
    np.testing.assert_allclose(q, np.tile(np.asarray(q0), (4, 1)), atol=1e-3)
    np.testing.assert_allclose(q[2:], np.tile(q[-1], (2, 1)), atol=1e-6)


def test_a_cube_turned_45_degrees_rests_on_a_cube():
    """No corner of either cube lies inside the other: the contact patch is the
    octagon where the squares overlap, found by clipping (its 8 vertices at the
    overlap depth), and the top cube rests on it. Without the clipped points it fell
    through the lower cube."""
    base = rigid.Geom(rigid.Box(HALF), pos=(0.0, 0.0, 0.1))
    top, gt = free_body("top", rigid.Box(HALF), (0.0, 0.0, 0.2999), rot([0, 0, 1], np.pi / 4))
    _, c = contacts_of([top], [base, gt])
    on = np.asarray(c.dist) < 0
    assert on.sum() == 8
    np.testing.assert_allclose(np.asarray(c.dist)[on], -1e-4, atol=1e-15)
    a, b = 0.1, 0.1 * (np.sqrt(2) - 1)  # the octagon's vertices: (±a, ±b) and (±b, ±a)
    octagon = [(sx * p, sy * q) for p, q in ((a, b), (b, a)) for sx in (-1, 1) for sy in (-1, 1)]
    got = np.asarray(c.point)[on]
    np.testing.assert_allclose(got[:, 2], 0.19995, atol=1e-15)
    for vertex in octagon:
        assert np.min(np.linalg.norm(got[:, :2] - np.asarray(vertex), axis=1)) < 1e-15
    mb = rigid.MultiBody([top], geoms=[base, gt])
    q0, v0 = mb.default_state()
    q = np.asarray(run(mb, (q0, v0), 1e-3, 1000, every=250).ys[0])
    # pushed out of the 0.1 mm overlap to the soft contact's rest depth, then still
    np.testing.assert_allclose(q, np.tile(np.asarray(q0), (4, 1)), atol=1.1e-4)
    np.testing.assert_allclose(q[1:], np.tile(q[-1], (3, 1)), atol=1e-9)
    np.testing.assert_allclose(q[:, 3:], np.tile(np.asarray(q0[3:]), (4, 1)), atol=1e-12)

    # Rocked about x from rest: the gradient of its final pose with respect to the
    # initial angular velocity (the patch's vertices move with the pose) is finite
    # and matches central differences (of the same compiled program's values).
    def pose(wx):
        v = v0.at[3].set(wx)
        y1 = sciad.simulate(mb, (q0, v), dt=1e-3, n_steps=64).y1[0]
        return y1[2] + y1[4]

    _, g, fd = value_grad_fd(pose, 0.3, eps=1e-6)
    assert np.isfinite(g)
    np.testing.assert_allclose(g, fd, rtol=1e-6)


def test_box_rests_crossed_on_a_box_edge():
    """The crossed cube resting on the fixed cube's edge (an edge–edge contact only)
    neither falls through nor slides off: after 0.5 s it has moved less than 1 mm."""
    bodies, (ga, gb) = crossed_edges(0.0)
    fixed = rigid.Geom(rigid.Box(HALF), quat=rot([1, 0, 0], np.pi / 4))
    mb = rigid.MultiBody(bodies[1:], geoms=[fixed, gb])
    q0, v0 = mb.default_state()
    traj = run(mb, (q0, v0), 1e-3, 500, every=100)
    moved = np.asarray(traj.ys[0][:, :3]) - np.asarray(q0[:3])
    assert np.max(np.abs(moved)) < 1e-3

    # Dropped onto the edge from 1 mm: the gradient of its height after the impact
    # with respect to the drop height is finite and matches finite differences.
    def height(dz):
        q = q0.at[2].add(dz)
        return sciad.simulate(mb, (q, v0), dt=1e-3, n_steps=64).y1[0][2]

    _, g, fd = value_grad_fd(height, 0.001, eps=1e-7)
    assert np.isfinite(g)
    np.testing.assert_allclose(g, fd, rtol=1e-5)


def test_capsule_box_against_mujoco_and_sampling():
    """60 random poses, each pair moved together until MuJoCo C reports 3 mm of
    penetration, or 60 mm for every third (a segment end inside the box): the whole
    contact set, one or two points, equals MuJoCo's (`mjraw_CapsuleBox`) one to one
    (point, depth, normal, to 1e-12); at 3 mm the deepest point equals the minimum of
    the box's signed distance over 200,001 points of the segment (minus the radius)
    to 1e-10."""
    from scipy.spatial.transform import Rotation

    hb, r, h = np.array([0.1, 0.15, 0.2]), 0.05, 0.12
    d, contacts, place = mujoco_pair(
        f'type="capsule" size="{r} {h}"', f'type="box" size="{hb[0]} {hb[1]} {hb[2]}"'
    )
    rng = np.random.default_rng(2)

    def rotation(q):
        return Rotation.from_quat([q[1], q[2], q[3], q[0]])

    def sampled_depth(q):
        t = np.linspace(-1.0, 1.0, 200_001)[:, None]
        points = q[:3] + t * rotation(q[3:7]).apply([0.0, 0.0, h])
        out = np.abs(rotation(q[10:]).inv().apply(points - q[7:10])) - hb
        sdf = np.linalg.norm(np.maximum(out, 0.0), axis=1) + np.minimum(out.max(axis=1), 0.0)
        return sdf.min() - r

    counts = []
    for k in range(60):
        qa, qb = (np.roll(Rotation.random(random_state=rng).as_quat(), 1) for _ in range(2))
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        deep = k % 3 == 0
        press(
            place,
            np.concatenate([np.zeros(3), qa, np.zeros(3), qb]),
            0,
            u,
            -0.06 if deep else -0.003,
        )
        c = contacts(jnp.asarray(d.qpos))
        counts.append(int(np.sum(assert_contacts_equal_mujoco(c, d))))
        if not deep:
            np.testing.assert_allclose(np.min(c.dist), sampled_depth(d.qpos), atol=1e-10)
    assert counts.count(1) >= 5 and counts.count(2) >= 5, counts


def test_sphere_cylinder_against_mujoco():
    """60 random poses, half at 3 mm and half at 30 mm of MuJoCo C penetration (side,
    cap and rim contacts, the sphere's centre inside the cylinder for the deep ones),
    and, with a margin of 0.01 on each geom, 40 with the sphere apart, 1 to 18 mm
    from the cylinder: the contact point, distance (plus the margin) and normal equal
    MuJoCo's to 1e-12 (measured 1.1e-15 apart); and a ball dropped on a cylinder's rim
    (beyond it, so the rim pushes it off) has a finite gradient that matches central
    differences."""
    from scipy.spatial.transform import Rotation

    for margin, n, seed in ((0.0, 60, 3), (0.01, 40, 4)):
        d, contacts, place = mujoco_pair(
            f'type="sphere" size="0.05" margin="{margin}"',
            f'type="cylinder" size="0.1 0.15" margin="{margin}"',
        )
        rng = np.random.default_rng(seed)
        for k in range(n):
            qb = np.roll(Rotation.random(random_state=rng).as_quat(), 1)
            u = rng.normal(size=3)
            u /= np.linalg.norm(u)
            qpos = np.concatenate([np.zeros(3), [1.0, 0.0, 0.0, 0.0], np.zeros(3), qb])
            press(
                place, qpos, 0, u, rng.uniform(0.001, 0.018) if margin else (-0.003, -0.03)[k % 2]
            )
            assert d.ncon == 1 and (d.contact.dist[0] > 0) == (margin > 0)
            c = contacts(jnp.asarray(d.qpos))
            ours = np.r_[
                np.asarray(c.point[0]), np.asarray(c.dist[0]) + 2 * margin, np.asarray(c.normal[0])
            ]
            theirs = np.r_[d.contact.pos[0], d.contact.dist[0], d.contact.frame[0, :3]]
            np.testing.assert_allclose(ours, theirs, atol=1e-12)

    cylinder = rigid.Geom(rigid.Cylinder(0.1, 0.15))
    ball, g = free_body("ball", rigid.Sphere(0.05), (0.12, 0.0, 0.19))
    mb = rigid.MultiBody([ball], geoms=[cylinder, g])
    q0, v0 = mb.default_state()

    def final_x(x0):
        return sciad.simulate(mb, (q0.at[0].set(x0), v0), dt=1e-3, n_steps=100).y1[0][0]

    _, grad, fd = value_grad_fd(final_x, 0.12, eps=1e-6)
    assert np.isfinite(grad) and grad > 1.0  # pushed outward from the rim
    np.testing.assert_allclose(grad, fd, rtol=1e-6)


# A capsule's quaternion lying along −y, its axis exactly level: as MuJoCo parses
# "0.7071067811865476 0.7071067811865476 0 0" (w = x: R's last row has no round-off;
# `rot([1, 0, 0], π/2)`'s sin and cos differ in the last bit, which tilts the axis by
# 2e-16, enough for MuJoCo's capsule–box to see a segment pointing at a corner).
LYING = jnp.asarray([np.sqrt(0.5), np.sqrt(0.5), 0.0, 0.0])


@pytest.mark.parametrize("across", [False, True])
def test_capsule_rests_on_a_box(across):
    """A capsule lying on a box's top face rests on two points, as in MuJoCo: its
    ends, or, lying across a narrower box, where it crosses the box's edges. It neither
    rotates nor slides over 0.5 s, sinks into MuJoCo's soft contact by under 0.5 mm
    and is at rest from 0.2 s. (Across the box, the gradient of its pose after being
    set rocking is checked against central differences by
    `test_capsule_rocking_gradient_when_saving_every_step`.)"""
    half = jnp.array([0.3, 0.06 if across else 0.3, 0.1])
    base = rigid.Geom(rigid.Box(half))
    capsule = rigid.Capsule(0.05, 0.2)
    body, geom = free_body("cap", capsule, (0.02, 0.0, 0.1 + 0.05 - 1e-4), LYING)
    _, c = contacts_of([body], [base, geom])
    on = np.asarray(c.dist) < 0
    assert on.sum() == 2
    ends_y = np.sort(np.asarray(c.point)[on][:, 1])
    np.testing.assert_allclose(ends_y, [-0.06, 0.06] if across else [-0.2, 0.2], atol=1e-12)
    np.testing.assert_allclose(np.asarray(c.dist)[on], -1e-4, atol=1e-12)
    mb = rigid.MultiBody([body], geoms=[base, geom])
    q0, v0 = mb.default_state()
    q = np.asarray(run(mb, (q0, v0), 1e-3, 500, every=100).ys[0])
    np.testing.assert_allclose(q[:, :2], np.tile(np.asarray(q0[:2]), (5, 1)), atol=1e-9)
    assert np.all(np.abs(q[:, 2] - float(q0[2])) < 5e-4)
    np.testing.assert_allclose(q[2:], np.tile(q[-1], (3, 1)), atol=1e-9)
    np.testing.assert_allclose(q[:, 3:], np.tile(np.asarray(q0[3:]), (5, 1)), atol=1e-9)


def test_capsule_rocking_gradient_when_saving_every_step():
    """The capsule resting across the narrow box (as above) set rocking, saving every
    step, so that `CheckpointAdjoint` checkpoints and the backward pass recomputes the
    steps: the gradient of its pose is finite and matches central differences, and
    reverse mode equals forward mode. It did not (0.012577 against 0.012041) with
    sciad's earlier capsule–box: the capsule's deepest point lies exactly where it
    leaves the top face, and whether the face or an edge was nearest there was decided
    by round-off, differently in the recomputation, which changed the contact set.
    MuJoCo's capsule–box, now used, decides by the signs of the axis's components,
    zero here up to round-off (`_capsule_box`: counted as zero)."""
    body, geom = free_body("cap", rigid.Capsule(0.05, 0.2), (0.02, 0.0, 0.15 - 1e-4), LYING)
    mb = rigid.MultiBody([body], geoms=[rigid.Geom(rigid.Box(jnp.array([0.3, 0.06, 0.1]))), geom])
    q0, v0 = mb.default_state()

    def pose(wy):
        traj = sciad.simulate(
            mb, (q0, v0.at[4].set(wy)), dt=1e-3, n_steps=64, saveat=sciad.SaveAt(steps=1)
        )
        return traj.ys[0][-1, 2] + traj.ys[0][-1, 5]

    _, forward, fd = value_jvp_fd(pose, 0.5, eps=1e-6)
    g = jax.jit(jax.grad(pose))(0.5)
    assert np.isfinite(g)
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    np.testing.assert_allclose(g, forward, rtol=1e-10)


def test_capsule_capsule_contacts_equal_mujoco():
    """Capsule–capsule contact sets equal MuJoCo C's to 1e-12: one point in 30 random
    orientations pressed together until MuJoCo reports 3 mm of penetration, and two
    (the ends of the overlap) in 20 exactly parallel poses with a random turn, axial
    shift and side."""
    from scipy.spatial.transform import Rotation

    d, contacts, place = mujoco_pair(
        'type="capsule" size="0.05 0.2"', 'type="capsule" size="0.06 0.15"'
    )
    rng = np.random.default_rng(3)

    def compare(n):
        c = contacts(jnp.asarray(d.qpos))
        on = assert_contacts_equal_mujoco(c, d)
        assert on.sum() == n
        np.testing.assert_allclose(np.asarray(c.weight)[on], 1.0, atol=0)

    for _ in range(30):
        qa, qb = wxyz(Rotation.random(random_state=rng)), wxyz(Rotation.random(random_state=rng))
        u = rng.normal(size=3)
        press(place, np.r_[0.0, 0.0, 0.0, qa, 0.0, 0.0, 0.0, qb], 1, u / np.linalg.norm(u), -0.003)
        compare(1)
    for _ in range(20):
        turn = Rotation.random(random_state=rng)
        side = rng.uniform(0, 2 * np.pi)
        local = [0.107 * np.cos(side), 0.107 * np.sin(side), rng.uniform(-0.3, 0.3)]
        pb = turn.apply(local)
        place(np.r_[0.0, 0.0, 0.0, wxyz(turn), pb, wxyz(turn)])
        compare(2)


def parallel_capsules(shift=0.05, turn=0.0):
    """A capsule lying on an equal fixed one, both along x, 0.1 mm deep; the top one
    shifted along x and turned about the vertical by `turn`."""
    along_x = rot([0, 1, 0], np.pi / 2)
    base = rigid.Geom(rigid.Capsule(0.05, 0.2), quat=along_x)
    quat = quat_multiply(rot([0, 0, 1], turn), along_x)
    body, geom = free_body("cap", rigid.Capsule(0.05, 0.2), (shift, 0.0, 0.1 - 1e-4), quat)
    return [body], [base, geom]


def test_capsule_rests_on_a_parallel_capsule():
    """A capsule lying on a parallel one rests on the ends of their overlap: after
    0.2 s it neither rocks nor turns (tilted by 1.8e-5 rad from the start: the two
    supports sit 0.2 and 0.15 m from its centre, so the soft contacts press in
    unequally) and its position changes by under 1e-6 m (MuJoCo's soft friction
    creeps under the tilt's tangential load: 1.9e-7 m over 0.6 s). The
    closest point alone, unique nowhere on the line of contact, balanced it on one
    end of the overlap: it still rocked by 4e-5 rad after 1 s, 0.18 mm deep."""
    bodies, geoms = parallel_capsules()
    _, c = contacts_of(bodies, geoms)
    on = np.asarray(c.dist) < 0
    np.testing.assert_allclose(np.sort(np.asarray(c.point)[on][:, 0]), [-0.15, 0.2], atol=1e-12)
    np.testing.assert_allclose(np.asarray(c.dist)[on], -1e-4, atol=1e-12)
    mb = rigid.MultiBody(bodies, geoms=geoms)
    q0, v0 = mb.default_state()
    q = np.asarray(run(mb, (q0, v0), 1e-3, 1000, every=200).ys[0])
    np.testing.assert_allclose(q[1:], np.tile(q[-1], (4, 1)), atol=1e-6)
    np.testing.assert_allclose(q[:, :3], np.tile(np.asarray(q0[:3]), (5, 1)), atol=5e-4)
    np.testing.assert_allclose(q[:, 3:], np.tile(np.asarray(q0[3:]), (5, 1)), atol=1e-4)


def test_capsule_pair_hands_over_to_its_end_points_smoothly():
    """The end points' weight w is 1 below sin θ = 1e-4, 0 above 1e-2 and ½ where
    sin²θ is midway; the closest point's is 1 − w. A capsule spun at 0.5 rad/s about
    the vertical turns through the whole band in 64 ms, and the gradient of its final
    pose with respect to the spin rate agrees in reverse mode (saving every step, so
    the backward pass recomputes the steps), forward mode and central differences."""
    low, high = rigid_narrowphase.PARALLEL_SINES
    for sine, w in ((0.5 * low, 1.0), (np.sqrt(0.5 * (low**2 + high**2)), 0.5), (2 * high, 0.0)):
        _, c = contacts_of(*parallel_capsules(turn=np.arcsin(sine)))
        np.testing.assert_allclose(np.asarray(c.weight), [1.0 - w, w, w], atol=1e-9)
    bodies, geoms = parallel_capsules()
    mb = rigid.MultiBody(bodies, geoms=geoms)
    q0, v0 = mb.default_state()

    def pose(spin):
        traj = sciad.simulate(
            mb, (q0, v0.at[5].set(spin)), dt=1e-3, n_steps=64, saveat=sciad.SaveAt(steps=1)
        )
        y = traj.ys[0][-1]
        return y[2] + y[4] + y[5] + y[6]

    _, forward, fd = value_jvp_fd(pose, 0.5, eps=1e-6)
    np.testing.assert_allclose(jax.jit(jax.grad(pose))(0.5), forward, rtol=1e-10)
    np.testing.assert_allclose(forward, fd, rtol=1e-7)


def test_aligned_boxes_gradient_when_saving_every_step():
    """A cube set rocking about y on a fixed cube of the same size, edges aligned:
    the rocking keeps the y-edges aligned, so patch vertices lie exactly on the
    reference face's sides. Saving every step (the backward pass recomputes the
    steps), reverse mode equals forward mode and central differences. Without the
    clipping's round-off margin reverse mode gave +1.43e-5 and forward mode −1.89e-5,
    against −1.47e-5 from differences: each evaluation's last bit kept or dropped
    those vertices."""
    body, geom = free_body("top", rigid.Box(HALF), (0.0, 0.0, 0.2 - 1e-4))
    mb = rigid.MultiBody([body], geoms=[rigid.Geom(rigid.Box(HALF)), geom])
    q0, v0 = mb.default_state()

    def pose(wy):
        traj = sciad.simulate(
            mb, (q0, v0.at[4].set(wy)), dt=1e-3, n_steps=64, saveat=sciad.SaveAt(steps=1)
        )
        return traj.ys[0][-1, 0] + traj.ys[0][-1, 2] + traj.ys[0][-1, 5]

    grad = jax.jit(jax.grad(pose))(0.5)
    _, forward, fd = value_jvp_fd(pose, 0.5, eps=1e-6)
    np.testing.assert_allclose(grad, forward, rtol=1e-10)
    np.testing.assert_allclose(grad, fd, rtol=1e-6)


def test_pair_filtering_follows_mujoco():
    shape = rigid.Sphere(0.1)
    bodies = [
        rigid.Body("a", joint=rigid.FreeJoint(), shape=shape, density=1.0),
        rigid.Body(
            "b",
            parent="a",
            joint=rigid.HingeJoint(axis=jnp.array([0.0, 1.0, 0.0])),
            shape=shape,
            density=1.0,
        ),
        rigid.Body(
            "c",
            parent="b",
            joint=rigid.HingeJoint(axis=jnp.array([0.0, 1.0, 0.0])),
            shape=shape,
            density=1.0,
        ),
        rigid.Body("w", parent="c", shape=shape, density=1.0),  # welded to c
    ]
    geoms = [rigid.Geom(rigid.Plane())] + [rigid.Geom(shape, body=n) for n in "abcw"]
    pairs = lambda **kw: {  # noqa: E731
        tuple(sorted(mb.geom_body[i] for i in p))
        for mb in [rigid.MultiBody(bodies, geoms=kw.pop("geoms", geoms), **kw)]
        for p in mb.pairs
    }
    # world–every body; a–c, a–w; not parent–child (a–b, b–c), not within a weld
    # group (c–w), nor with the parent of a weld group (b–w, w being welded to c)
    assert pairs() == {(-1, 0), (-1, 1), (-1, 2), (-1, 3), (0, 2), (0, 3)}
    assert pairs(exclude=[("a", "c"), (None, "b")]) == {(-1, 0), (-1, 2), (-1, 3), (0, 3)}
    masked = list(geoms)
    masked[1] = rigid.Geom(shape, body="a", contype=2, conaffinity=2)
    assert pairs(geoms=masked) == {(-1, 1), (-1, 2), (-1, 3)}


def test_unsupported_integrators_raise():
    mb = box_on_plane()
    y0 = mb.default_state()
    with pytest.raises(ValueError, match="use sciad.rigid.SemiImplicitEuler"):
        sciad.simulate(mb, y0, dt=1e-3, n_steps=2, integrator=rigid.FreeBodySplitting())
    with pytest.raises(ValueError, match="no smooth vector field"):
        sciad.simulate(mb, y0, dt=1e-3, n_steps=2, integrator=sciad.RK4())
    assert isinstance(mb.default_integrator(), rigid.SemiImplicitEuler)
    with pytest.raises(TypeError, match="no volume or mass"):
        rigid.Body("p", shape=rigid.Plane(), density=1.0)


# ------------------------------------------------------------------ mechanics


def test_sliding_box_decelerates_at_mu_g_and_stops(sliding_box):
    """A box sliding at 1 m/s on a plane (a flat impedance d = 1/1.01, τ = 0.02 s):
    it slides for 0.2 s (hopping on its corners by up to 0.3 mm, as MuJoCo's soft
    contact does: `test_sliding_box_against_mujoco`) and comes to rest without
    tumbling, at
    the depth where the reference's stiffness carries its weight: k d r = g/A per
    corner with A = 4/m, r = g (1 − d) τ² (the corners' R = (1 − d)/d · A)."""
    q0, v0 = sliding_box.default_state()
    traj = run(sliding_box, (q0, v0.at[0].set(1.0)), 1e-3, 1000)
    vx = np.asarray(traj.ys[1][:, 0])
    sliding = vx > 1e-2
    assert 150 < sliding.sum() < 300 and not sliding[300:].any()
    assert np.max(np.abs(vx[-100:])) < 1e-4  # at rest (soft stiction: slow creep)
    z = np.asarray(traj.ys[0][:, 2])
    assert np.all(np.abs(z - 0.1) < 5e-4)
    d = 1 / 1.01
    np.testing.assert_allclose(z[-1], 0.1 - G * (1 - d) * 0.02**2, rtol=0, atol=1e-10)
    quat = np.asarray(traj.ys[0][:, 3:])
    np.testing.assert_allclose(np.abs(quat[:, 0]), 1.0, atol=1e-5)  # no tumbling


def test_box_on_an_incline_accelerates_at_g_sin_minus_mu_cos():
    theta, mu = 0.5, 0.3
    mb = box_on_plane(mu=mu, plane_quat=rot([0.0, 1.0, 0.0], -theta), z=0.12)
    q0, v0 = mb.default_state()
    q0 = q0.at[3:].set(rot([0.0, 1.0, 0.0], -theta))  # aligned with the slope
    traj = run(mb, (q0, v0), 1e-3, 600)
    v = np.asarray(traj.ys[1][:, :3])
    down = -np.array([np.cos(theta), 0.0, np.sin(theta)])  # downhill, along the plane
    normal = np.array([-np.sin(theta), 0.0, np.cos(theta)])
    dv_down, dv_n = np.diff(v @ down)[50:], np.diff(v @ normal)[50:]
    # Sliding: Δv_down = g sinθ dt − μ (g cosθ dt + Δv_n), the friction impulse being μ
    # times the normal impulse; settled, the acceleration is g (sinθ − μ cosθ).
    dt = 1e-3
    np.testing.assert_allclose(
        dv_down, G * np.sin(theta) * dt - mu * (G * np.cos(theta) * dt + dv_n), rtol=1e-8
    )
    # (airborne steps, the box hopping on its corners in MuJoCo's soft contact, satisfy
    # it with Δv_n = −g cosθ dt), and it slides: 1 m/s gained over the last 0.5 s
    assert (v[-1] - v[100]) @ down > 1.0


def test_box_rests_on_a_plane_within_a_millimetre_for_10_seconds(sliding_box):
    q0, v0 = sliding_box.default_state()
    q0 = q0.at[2].set(0.1005)  # dropped from 0.5 mm
    # Ten runs of 1,000 steps, each from the last one's end (the state is (q, v): the
    # same 10,000 steps), with the program `test_sliding_box_decelerates_at_mu_g_and_stops`
    # compiled: the positions after every 1,000 steps.
    y, pos = (q0, v0), []
    for _ in range(10):
        y = run(sliding_box, y, 1e-3, 1000).y1
        pos.append(np.asarray(y[0][:3]))
    pos = np.array(pos)
    assert np.max(np.linalg.norm(pos - pos[0] + np.array([0, 0, 0.0005]), axis=1)) < 1e-3
    # it settles at the soft contact's equilibrium depth and stays there
    assert np.max(np.abs(np.diff(pos[1:], axis=0))) < 1e-9


def test_stacked_boxes_rest():
    base, gb = free_body("base", rigid.Box(HALF), (0.0, 0.0, 0.1))
    top, gt = free_body(
        "top", rigid.Box(jnp.array([0.05, 0.05, 0.05])), (0.02, 0.01, 0.25), rot([0, 0, 1], 0.4)
    )
    mb = rigid.MultiBody([base, top], geoms=[rigid.Geom(rigid.Plane()), gb, gt])
    q0, v0 = mb.default_state()
    traj = run(mb, (q0, v0), 1e-3, 2000, every=500)
    q = np.asarray(traj.ys[0])
    # both sink into MuJoCo's soft contacts (under 1 mm), and they rest; the turned top
    # box creeps on the soft friction (measured 2e-5 m over 2 s) but does not slide
    np.testing.assert_allclose(
        q[:, [0, 1, 7, 8]], np.tile(np.asarray(q0)[[0, 1, 7, 8]], (4, 1)), atol=1e-4
    )
    assert np.all(np.abs(q[:, [2, 9]] - np.asarray(q0)[[2, 9]]) < 1e-3)
    np.testing.assert_allclose(q[2:], np.tile(q[-1], (2, 1)), atol=1e-6)


def bounce(restitution, softness, dt):
    body, geom = free_body("ball", rigid.Sphere(0.1), (0.0, 0.0, 1.0), restitution=restitution)
    mb = rigid.MultiBody(
        [body],
        geoms=[rigid.Geom(rigid.Plane()), geom],
        contact=rigid.ContactModel(impedance=flat(softness)),
    )
    q0, v0 = mb.default_state()
    return run(mb, (q0, v0), dt, int(round(0.9 / dt)), every=1)


@pytest.mark.parametrize("e", [0.5, 0.8])
def test_bounce_height_follows_restitution(e):
    traj = bounce(e, HARDEST, 1e-4)
    z = np.asarray(traj.ys[0][:, 2])
    first = np.argmax(z < 0.1)
    apex = z[first:].max() - 0.1
    # drop height 0.9 → apex e²·0.9 (O(dt) from the step that detects the impact)
    np.testing.assert_allclose(apex, e**2 * 0.9, rtol=2e-3)


def test_softness_softens_the_impact_as_documented():
    eps, e = 0.1, 0.5
    traj = bounce(e, eps, 1e-3)
    vz = np.asarray(traj.ys[1][:, 2])
    k = np.argmax(vz > 0)  # the impact step
    # v⁺ = (e − ε)/(1 + ε)·|v⁻| with v⁻ the approach velocity (plus one step of gravity)
    np.testing.assert_allclose(
        vz[k], (e - eps) / (1 + eps) * (-vz[k - 1]) - (1 - 0) * 0.0, rtol=2e-2
    )


# ------------------------------------------------------------------ gradients


def stop_x(model, vx, n=320, dt=1e-3, adjoint=sciad.CheckpointAdjoint()):
    q0, v0 = model.default_state()
    y0 = (q0, v0.at[0].set(vx))
    return sciad.simulate(model, y0, dt=dt, n_steps=n, adjoint=adjoint).y1[0][0]


@pytest.mark.slow
def test_sliding_gradient_reverse_forward_and_fd_agree(sliding_box):
    """d(final x)/d(initial vx, μ) through converged contact solves: reverse mode
    (checkpointed and direct) equals forward mode and central differences; the
    continuous law gives v/(μg) and −x/μ, approximately."""

    def rev(adjoint):
        loss = lambda vx, mu: stop_x(box_on_plane(mu=mu), vx, adjoint=adjoint)  # noqa: E731
        return jax.jit(jax.grad(loss, argnums=(0, 1)))(1.0, 0.5)

    g = rev(sciad.CheckpointAdjoint())
    np.testing.assert_allclose(np.asarray(rev(sciad.DirectAdjoint())), np.asarray(g), rtol=1e-12)

    # One forward-mode program gives the value (for the differences) and d/dvx.
    @jax.jit
    def value_and_fwd(vx, mu):
        return jax.jvp(lambda a: stop_x(box_on_plane(mu=mu), a), (vx,), (jnp.ones_like(vx),))

    def f(vx, mu):
        return float(value_and_fwd(jnp.asarray(vx), jnp.asarray(mu))[0])

    fwd = value_and_fwd(jnp.asarray(1.0), jnp.asarray(0.5))[1]
    np.testing.assert_allclose(float(g[0]), float(fwd), rtol=1e-12)
    fd = central_fd(lambda p: f(p[0], p[1]), np.array([1.0, 0.5]), eps=1e-6)
    np.testing.assert_allclose(np.asarray(g), fd, rtol=1e-6)
    # stop distance ≈ v²/(2μg): d/dv ≈ v/(μg) = 0.204 (0.193: the soft contact's hops
    # and creep), d/dμ ≈ −x/μ
    np.testing.assert_allclose(float(g[0]), 1.0 / (0.5 * G), rtol=0.1)
    np.testing.assert_allclose(float(g[1]), -f(1.0, 0.5) / 0.5, rtol=0.1)


@pytest.mark.slow
def test_gradients_finite_through_contact_onset_and_separation():
    """A ball dropped with restitution: the apex after the bounce against the drop
    height, through onset and separation; reverse = FD where the dynamics is smooth."""

    def apex(h):
        body, geom = free_body("ball", rigid.Sphere(0.1), (0.0, 0.0, 0.0), restitution=0.7)
        mb = rigid.MultiBody([body], geoms=[rigid.Geom(rigid.Plane()), geom])
        q0, v0 = mb.default_state()
        traj = sciad.simulate(
            mb, (q0.at[2].set(h), v0), dt=2e-3, n_steps=384, saveat=sciad.SaveAt(t0=True, steps=1)
        )
        return jnp.max(traj.ys[0][200:, 2])

    for _, gh, fd in value_grad_fd(apex, 0.45, 0.5, eps=1e-7):
        assert np.isfinite(gh)
        np.testing.assert_allclose(gh, fd, rtol=1e-5)


@pytest.mark.slow
def test_second_order_through_contacts():
    """The Hessian of the apex after a bounce (from the state in flight at 0.448 s)
    with respect to (restitution, drop height), by reverse over reverse (`jacrev` of
    `grad`) through the contact solve: it agrees with finite differences of the
    gradient and with apex ≈ e² h (∂²/∂e² ≈ 2h). Forward over reverse is exercised
    by notebook 03's meta-gradient."""

    def apex(p):
        body, geom = free_body("ball", rigid.Sphere(0.1), (0.0, 0.0, 0.0), restitution=p[0])
        mb = rigid.MultiBody(
            [body],
            geoms=[rigid.Geom(rigid.Plane()), geom],
            contact=rigid.ContactModel(impedance=flat(HARDEST)),
        )
        q0, v0 = mb.default_state()
        q, v = sciad.simulate(mb, (q0.at[2].set(0.1 + p[1]), v0), dt=2e-3, n_steps=224).y1
        return q[2] + v[2] ** 2 / (2 * G)  # the apex of the flight after the bounce

    p = jnp.array([0.7, 0.2])
    grad = jax.jit(jax.grad(apex))
    hess = jax.jit(jax.jacrev(jax.grad(apex)))(p)  # reverse over reverse
    fd = np.stack(
        [central_fd(lambda x, i=i: grad(x)[i], np.asarray(p), eps=1e-6) for i in range(2)]
    )
    np.testing.assert_allclose(np.asarray(hess), fd, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(float(hess[0, 0]), 2 * 0.2, rtol=3e-2)
    # In discrete time the impact speed is g·dt·(steps of free fall), which does not
    # vary with h between steps: the mixed derivative is zero, as the differences say.
    assert float(hess[0, 1]) == 0.0


def test_contact_solve_derivatives_in_every_mode():
    """The solve's implicit derivatives at the problem level: dv⁺/dθ for θ = (v_free,
    the normal reference velocities, μ) on a problem with a sticking, a sliding and a
    separating contact. Forward and reverse mode equal central differences; the second
    derivatives by forward over reverse (the custom JVP rule differentiated), reverse
    over reverse (the solve's body differentiated: JAX inlines it in the first reverse
    pass) and forward over forward all equal central differences of the Jacobian."""
    from sciad.rigid._constraint_solver import solve_contacts

    # Three contacts on three nearly independent blocks of dofs, so that at y = û − J v
    # the first lies inside its cone, the second beyond its boundary (sliding) and the
    # third in its polar cone (separating), with margins that finite differences keep.
    rng = np.random.default_rng(3)
    nv, nc = 9, 3
    a = 0.1 * rng.normal(size=(nv, nv))
    mass = jnp.asarray(np.eye(nv) + a @ a.T)
    jac_np = np.eye(nv).reshape(nc, 3, nv) + 0.05 * rng.normal(size=(nc, 3, nv))
    jac, inv_r = jnp.asarray(jac_np), jnp.asarray([10.0, 10.0, 10.0])
    w = np.array([[1.0, 0.3, 0.2], [1.0, 2.0, 1.0], [-1.0, 0.3, 0.1]])  # û − J v_free
    v_free0 = np.linalg.lstsq(jac_np[:, 1:].reshape(-1, nv), -w[:, 1:].ravel(), rcond=None)[0]
    un0 = w[:, 0] + jac_np[:, 0] @ v_free0
    theta0 = np.concatenate([v_free0, un0, [0.9, 0.2, 0.5]])
    model = rigid.ContactModel()

    def solve(theta):  # in a scan, as in a simulation (where JAX treats rules differently)
        def step(v, _):
            v_free, un, mu = theta[:nv], theta[nv : nv + nc], theta[nv + nc :]
            u_ref = jnp.stack([un, jnp.zeros(nc), jnp.zeros(nc)], axis=-1)
            return solve_contacts(mass, v_free, v, jac, u_ref, inv_r, mu, model)[0], None

        return jax.lax.scan(step, theta[:nv], None, length=1)[0]

    u0 = np.stack([un0, 0 * un0, 0 * un0], -1)
    y = u0 - np.einsum("cij,j->ci", jac_np, np.asarray(solve(jnp.asarray(theta0))))
    t, yn, mu = np.linalg.norm(y[:, 1:], axis=1), y[:, 0], theta0[nv + nc :]
    assert t[0] < mu[0] * yn[0] - 0.01  # inside K
    assert t[1] > mu[1] * yn[1] + 0.01 and mu[1] * t[1] > -yn[1] + 0.01  # on its boundary
    assert mu[2] * t[2] < -yn[2] - 0.01  # in the polar cone

    def fd_jacobian(f, eps):  # central differences, column by column
        cols = []
        for i in range(theta0.size):
            e = np.zeros_like(theta0)
            e[i] = eps
            cols.append((np.asarray(f(theta0 + e)) - np.asarray(f(theta0 - e))) / (2 * eps))
        return np.stack(cols, axis=-1)

    def with_value(f):  # jacfwd(f) that also returns f: one program for both
        return jax.jit(jax.jacfwd(lambda th: (lambda y: (y, y))(f(th)), has_aux=True))

    x = jnp.asarray(theta0)
    forward = with_value(solve)
    jf, jr = forward(x)[0], jax.jit(jax.jacrev(solve))(x)
    np.testing.assert_allclose(
        np.asarray(jf), fd_jacobian(lambda th: forward(th)[1], 1e-6), rtol=1e-6, atol=1e-9
    )
    np.testing.assert_allclose(np.asarray(jr), np.asarray(jf), rtol=1e-12, atol=1e-14)
    f_k = lambda th: solve(th)[1]  # noqa: E731
    forward_over_reverse = with_value(jax.grad(f_k))  # the rule differentiated
    fd2 = fd_jacobian(lambda th: forward_over_reverse(th)[1], 1e-5)
    for h in (
        lambda th: forward_over_reverse(th)[0],
        jax.jit(jax.jacrev(jax.grad(f_k))),  # reverse over reverse: the solve's body differentiated
        jax.jit(jax.jacfwd(jax.jacfwd(f_k))),
    ):
        np.testing.assert_allclose(np.asarray(h(x)), fd2, rtol=1e-5, atol=1e-8)


def test_vmap_over_initial_velocities_matches_a_loop(sliding_box):
    """16 boxes sliding at different speeds (their solves need different numbers of
    Newton iterations, so under vmap the loop advances only the worlds still iterating,
    four at a time): values and `vmap` of `grad` equal unbatched runs."""
    vxs = jnp.linspace(0.2, 1.7, 16)
    value_and_grad = jax.value_and_grad(lambda vx: stop_x(sliding_box, vx, n=200))
    batched, grads = jax.jit(jax.vmap(value_and_grad))(vxs)
    one = jax.jit(value_and_grad)
    for i in (0, 7, 15):
        value, grad = one(vxs[i])
        np.testing.assert_allclose(float(batched[i]), float(value), rtol=1e-13)
        np.testing.assert_allclose(float(grads[i]), float(grad), rtol=1e-12)


def test_an_unconverged_solve_is_reported():
    mb = box_on_plane(max_iterations=1)
    q0, v0 = mb.default_state()
    traj = run(mb, (q0.at[2].set(0.09), v0.at[0].set(1.0)), 1e-3, 5, throw=False)
    assert traj.result == sciad.RESULTS.solver_failed
    ok = run(box_on_plane(), (q0.at[2].set(0.09), v0.at[0].set(1.0)), 1e-3, 5, throw=False)
    assert ok.result == sciad.RESULTS.successful


def numpy_cone_projection(y, mu):
    """Π_K onto {n ≥ 0, ‖t‖ ≤ μ n}, written independently of sciad (Moreau:
    y = Π_K(y) + Π_K°(y))."""
    n, t = y[0], y[1:]
    s = np.linalg.norm(t)
    if s <= mu * n and n >= 0:
        return y
    if mu * s <= -n:
        return np.zeros(3)
    n_star = (n + mu * s) / (1 + mu**2)
    return np.concatenate([[n_star], mu * n_star * t / s])


def test_stiff_solves_that_converge_are_not_reported_as_failed():
    """500 random stiff problems (softness 1e-5, 8 dofs, up to 6 contacts and 2 hard
    joint limits). Newton's quadratic constant is large when a contact crosses its
    cone's edge in the last steps, so the last step can be above the tolerance while
    the solution is already exact: such solves must count as converged (three did not,
    when the test was the last step's size). Each solution is checked independently
    by the optimality conditions M (v − v_free) = Σ J_cᵀ γ_c + J_Lᵀ γ_L,
    γ_c = Π_K(û_c − J_c v)/R_c ∈ K, γ_L = max(û_L − J_L v, 0)/R_L ≥ 0. A fifth of the
    contacts are frictionless with no tangential motion (y_t = 0 exactly), where
    K = {n ≥ 0, t = 0} must not take in y_n < 0: a frictionless contact that separates
    faster than its reference once pulled the bodies back together."""
    from sciad.rigid._constraint_solver import ScalarRows, solve_contacts

    rng = np.random.default_rng(0)
    nv, nc, b = 8, 6, 500
    a = rng.normal(size=(b, nv, nv))
    mass = a @ np.swapaxes(a, 1, 2) / nv + 0.1 * np.eye(nv)
    v_free = rng.normal(size=(b, nv))
    jac = rng.normal(size=(b, nc, 3, nv))
    frictionless = rng.random((b, nc)) < 0.2
    jac[..., 1:, :] *= ~frictionless[..., None, None]
    u_ref = np.zeros((b, nc, 3))
    u_ref[..., 0] = 0.5 * rng.normal(size=(b, nc))
    minv = np.linalg.inv(mass)
    w = np.einsum("bck,bkl,bcl->bc", jac[:, :, 0], minv, jac[:, :, 0])
    inv_r = np.where(rng.random((b, nc)) < 0.7, 1 / (1e-5 * w), 0.0)
    mu = np.where(frictionless, 0.0, rng.uniform(0.1, 1.5, (b, nc)))
    lim_jac = np.zeros((b, 2, nv))  # ±1 on one dof each, as for hinges and sliders
    lim_jac[:, 0, 0], lim_jac[:, 1, 5] = rng.choice([-1.0, 1.0], (2, b))
    lim_ref = 0.5 * rng.normal(size=(b, 2))
    lim_inv_r = np.where(rng.random((b, 2)) < 0.7, 1 / (1e-5 * minv[:, [0, 5], [0, 5]]), 0.0)
    model = rigid.ContactModel(max_iterations=200)

    def one(mass, v_free, jac, u_ref, inv_r, mu, lim_jac, lim_ref, lim_inv_r):
        zero = jnp.zeros_like(lim_ref)  # limits: force in [0, inf)
        rows = ScalarRows(lim_jac, lim_ref, lim_inv_r, zero, zero + jnp.inf)
        return solve_contacts(mass, v_free, v_free, jac, u_ref, inv_r, mu, model, rows)

    solve = jax.jit(jax.vmap(one))
    v, ok = map(np.asarray, solve(mass, v_free, jac, u_ref, inv_r, mu, lim_jac, lim_ref, lim_inv_r))
    assert ok.all()
    separating = 0
    for i in range(b):
        y = u_ref[i] - jac[i] @ v[i]
        proj = np.stack([numpy_cone_projection(y[c], mu[i, c]) for c in range(nc)])
        gamma = inv_r[i, :, None] * proj
        gamma_lim = lim_inv_r[i] * np.maximum(lim_ref[i] - lim_jac[i] @ v[i], 0.0)
        residual = (
            mass[i] @ (v[i] - v_free[i])
            - np.einsum("cij,ci->j", jac[i], gamma)
            - lim_jac[i].T @ gamma_lim
        )
        momentum = np.abs(mass[i] @ v_free[i]).max() + np.abs(jac[i]).max() * np.abs(gamma).max()
        assert np.abs(residual).max() <= 1e-9 * (momentum + np.abs(gamma_lim).max())
        assert np.all(np.linalg.norm(gamma[:, 1:], axis=1) <= mu[i] * gamma[:, 0] * (1 + 1e-12))
        separating += np.sum(frictionless[i] & (inv_r[i] > 0) & (y[:, 0] < 0))
    assert separating > 20  # the frictionless case above is exercised


# ------------------------------------------------------------------ MuJoCo C


def test_sliding_box_against_mujoco():
    """A box sliding on a plane in MuJoCo C (elliptic cones), converted with
    `from_mujoco`: positions agree with `mj_step` to 1e-9 over 0.3 s, hops on its
    corners included (MuJoCo's impedance, reference and `invweight0`)."""
    mujoco = pytest.importorskip("mujoco")
    xml = """<mujoco><option timestep="0.001" cone="elliptic"/><worldbody>
    <geom type="plane" size="5 5 .1" friction="0.5 0 0"/>
    <body pos="0 0 0.1"><freejoint/><geom type="box" size=".1 .1 .1" density="1000" friction="0 0 0"/></body>
    </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    m.opt.tolerance = 1e-15  # MuJoCo's solve converged as far as sciad's
    d = mujoco.MjData(m)
    d.qvel[0] = 1.0
    ref = []
    for _ in range(300):
        mujoco.mj_step(m, d)
        ref.append(d.qpos[:3].copy())
    mj = rigid.from_mujoco(m)
    q0, v0 = mj.y0
    traj = run(mj.model, (q0, v0.at[0].set(1.0)), 1e-3, 300)
    ref = np.array(ref)
    assert np.ptp(ref[:, 2]) > 1e-4  # it hops
    np.testing.assert_allclose(np.asarray(traj.ys[0][:, :3]), ref, rtol=0, atol=1e-9)


def test_pair_friction_follows_condim_as_mujoco():
    """A pair takes the larger condim and the larger friction: two condim-1 geoms touch
    without friction, a condim-1 geom against a condim-3 one with the larger of the two
    coefficients (its own included), as MuJoCo's mj_contactParam."""
    floor = rigid.Geom(rigid.Plane(), friction=0.5, name="floor")
    balls = [
        rigid.Body(
            n,
            joint=rigid.FreeJoint(),
            pos=jnp.array([x, 0.0, 0.1]),
            mass=1.0,
            inertia=jnp.full(3, 0.004),
        )
        for n, x in (("a", 0.0), ("b", 0.15))
    ]
    geoms = [
        floor,
        rigid.Geom(rigid.Sphere(0.1), body="a", friction=2.0, condim=1, name="ga"),
        rigid.Geom(rigid.Sphere(0.1), body="b", friction=1.0, condim=1, name="gb"),
    ]
    model = rigid.MultiBody(balls, geoms=geoms)
    c = model.contacts(model.default_state()[0])
    by_pair = {
        tuple(sorted((int(a), int(b)))): float(mu)
        for a, b, mu in zip(c.body_a, c.body_b, np.asarray(c.friction[:, 0]), strict=True)
    }
    assert by_pair == {(-1, 0): 2.0, (-1, 1): 1.0, (0, 1): 0.0}
    assert c.dim.tolist() == [3, 3, 1] and c.frictional.tolist() == [True, True, False]
    with pytest.raises(ValueError, match=r"Geom 'g' condim must be one of \(1, 3, 4, 6\); got 5"):
        rigid.Geom(rigid.Sphere(0.1), condim=5, name="g")


def test_a_contact_no_dof_can_move_along_its_normal_is_dropped_not_nan():
    """A sphere resting on a floor on a horizontal slider and a vertical hinge (no dof
    along the contact normal, as Gymnasium's point): the normal row's J M⁻¹ Jᵀ is 0,
    so the contact cannot act; the run stays finite and keeps its speed and spin
    (it went NaN at step 5)."""
    bodies = [
        rigid.Body(
            "x",
            joint=rigid.SliderJoint(axis=(1.0, 0.0, 0.0)),
            pos=(0.0, 0.0, 0.1),
            mass=0.0,
            inertia=jnp.zeros(3),
        ),
        rigid.Body(
            "ball",
            parent="x",
            joint=rigid.HingeJoint(axis=(0.0, 0.0, 1.0)),
            shape=rigid.Sphere(0.1),
            density=1000.0,
        ),
    ]
    geoms = [rigid.Geom(rigid.Plane()), rigid.Geom(rigid.Sphere(0.1), body="ball")]
    model = rigid.MultiBody(bodies, geoms=geoms)
    q0, _ = model.default_state()
    traj = sciad.simulate(model, (q0, jnp.array([0.3, 1.0])), dt=2e-3, n_steps=50)
    assert traj.result == sciad.RESULTS.successful
    np.testing.assert_allclose(np.asarray(traj.y1[1]), [0.3, 1.0], rtol=1e-12)

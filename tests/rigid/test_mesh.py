"""Convex mesh colliders (`ConvexMesh`) against MuJoCo C: contact sets of meshes on a
plane (MuJoCo's `mjc_PlaneConvex`, to round-off) and against spheres and ellipsoids
(GJK/EPA, to MuJoCo's convex tolerance), the cube mesh beside the `Box` collider, mass
properties, a mesh dropped on a plane beside `mj_step`, gradients through a mesh
contact, and refusals."""

import functools
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid
from sciad.rigid._narrowphase import _COLLIDE

from .scenes import two_free_geoms_touching

mujoco = pytest.importorskip("mujoco")
Rotation = pytest.importorskip("scipy.spatial.transform").Rotation

_ANGLES = np.arange(8) * 2 * np.pi / 8
MESHES = {
    "tetra": np.array([[0.0, 0, 0], [0.3, 0, 0], [0, 0.3, 0], [0, 0, 0.3]]),
    "cube": np.array([[x, y, z] for x in (-0.1, 0.1) for y in (-0.1, 0.1) for z in (-0.1, 0.1)]),
    # an irregular hull of 14 points (some inside), and an octagonal prism (16 vertices:
    # MuJoCo hill-climbs its hull graph, and its caps are octagons)
    "rock": np.round(np.random.default_rng(3).normal(size=(14, 3)) * [0.12, 0.08, 0.06], 4),
    "octagon": np.concatenate(
        [np.c_[0.15 * np.cos(_ANGLES), 0.1 * np.sin(_ANGLES), np.full(8, z)] for z in (-0.05, 0.05)]
    ),
}
OTHER = {"sphere": 'size="0.1"', "ellipsoid": 'type="ellipsoid" size="0.1 0.07 0.05"'}


def _asset(mesh: str) -> str:
    vertex = " ".join(map(str, MESHES[mesh].ravel()))
    return f'<asset><mesh name="m" vertex="{vertex}"/></asset>'


@functools.cache
def _plane_model(mesh: str):
    xml = f"""<mujoco><option timestep="0.002"/>{_asset(mesh)}<worldbody>
    <geom name="floor" type="plane" size="2 2 1" euler="0.2 -0.1 0"/>
    <body name="b" pos="0 0 0.3"><freejoint/><geom name="g" type="mesh" mesh="m"/></body>
    </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    return m, rigid.from_mujoco(m)


_contacts = eqx.filter_jit(lambda model, q: model.contacts(q))


def _rows(dist, normal, point):
    """Contacts as rows (dist, normal, point), sorted (MuJoCo's order follows its
    polygons' vertex order)."""
    rows = np.c_[dist, normal, point].reshape(-1, 7)
    return rows[np.lexsort(rows.T[::-1])]


@pytest.mark.parametrize("mesh", list(MESHES))
def test_plane_contacts_match_mujoco_to_round_off(mesh):
    """At random poses and lying flat (a face parallel to the plane: MuJoCo's hill climb
    settles the tie), the active contacts are MuJoCo's: the count (1 to 4), distances,
    normals and points to 1e-12 (measured 1.1e-16)."""
    m, mj = _plane_model(mesh)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    counts = set()
    for k in range(24):
        d.qpos[:3] = [0.0, 0.0, rng.uniform(-0.1, 0.1)]
        flat = Rotation.from_euler("xyz", [0.2, -0.1, 0]) * Rotation.from_euler("z", k)
        pose = flat if k % 4 == 0 else Rotation.random(random_state=rng)
        d.qpos[3:] = pose.as_quat(scalar_first=True)
        mujoco.mj_forward(m, d)
        c = _contacts(mj.model, mj.qpos_to_q(jnp.asarray(d.qpos)))
        active = np.asarray(c.dist) < 0
        ours = _rows(np.asarray(c.dist)[active], c.normal[active], c.point[active])
        ref = [np.r_[x.dist, x.frame[:3], x.pos] for x in d.contact[: d.ncon]]
        assert ours.shape[0] == d.ncon
        if d.ncon:
            np.testing.assert_allclose(ours, _rows(*np.split(np.array(ref), [1, 4], 1)), atol=1e-12)
        counts.add(d.ncon)
    assert len(counts) >= 2


def test_meshes_of_different_sizes_in_one_model():
    """A tetrahedron (4 vertices) and a cube (8) on one plane (kept apart by
    contype/conaffinity): both pairs run in one batch (the tetrahedron padded to the
    cube's sizes: `pad_meshes`), and the contact list is MuJoCo's to 1e-12."""
    tet = " ".join(map(str, MESHES["tetra"].ravel()))
    cube = " ".join(map(str, MESHES["cube"].ravel()))
    xml = f"""<mujoco><asset><mesh name="t" vertex="{tet}"/><mesh name="r" vertex="{cube}"/>
    </asset><worldbody><geom type="plane" size="2 2 1" contype="3" conaffinity="3"/>
    <body pos="0.5 0 0.02" euler="10 20 30"><freejoint/><geom type="mesh" mesh="t" contype="2"
    conaffinity="2"/></body>
    <body pos="0 0 0.01" euler="5 -10 0"><freejoint/><geom type="mesh" mesh="r"/></body>
    </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    mj = rigid.from_mujoco(m)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    c = _contacts(mj.model, mj.qpos_to_q(jnp.asarray(d.qpos)))
    active = np.asarray(c.dist) < 0
    ours = _rows(np.asarray(c.dist)[active], c.normal[active], c.point[active])
    ref = np.array([np.r_[x.dist, x.frame[:3], x.pos] for x in d.contact[: d.ncon]])
    assert ours.shape[0] == d.ncon >= 3
    np.testing.assert_allclose(ours, _rows(*np.split(ref, [1, 4], 1)), atol=1e-12)


def _pair(mesh: str, other: str):
    xml = f"""<mujoco>{_asset(mesh)}<worldbody>
    <body><freejoint/><geom {OTHER[other]}/></body>
    <body><freejoint/><geom type="mesh" mesh="m"/></body></worldbody></mujoco>"""
    return mujoco.MjModel.from_xml_string(xml)


def _poses(m, n, seed=0):
    """Random poses of the two free geoms at which MuJoCo reports a contact: the geoms'
    frames and MuJoCo's contacts."""
    out = []
    for d in two_free_geoms_touching(m, mujoco.MjData(m), n, seed, 0.08):
        frames = [
            jnp.asarray(x) for g in (0, 1) for x in (d.geom_xmat[g].reshape(3, 3), d.geom_xpos[g])
        ]
        out.append((frames, [np.r_[c.dist, c.frame[:3], c.pos] for c in d.contact]))
    return out


@pytest.mark.parametrize(
    "mesh, other",
    [
        ("rock", "sphere"),
        pytest.param("rock", "ellipsoid", marks=pytest.mark.slow),
        pytest.param("octagon", "sphere", marks=pytest.mark.slow),
    ],
)
def test_convex_pairs_match_mujoco(mesh, other):
    """A sphere or an ellipsoid against a mesh (one point, GJK/EPA as MuJoCo's
    `mjc_Convex`) at random penetrating poses: distance within 2e-6, normal within
    3e-3 and point within 5e-4 of MuJoCo's, whose EPA stops at ccd_tolerance 1e-6
    (measured: 8.7e-7, 1.8e-3 (an ellipsoid's curved surface) and 2.0e-4)."""
    m = _pair(mesh, other)
    shapes = [_shape_of(m, g) for g in (0, 1)]
    fn = jax.jit(_COLLIDE[(type(shapes[0]), rigid.ConvexMesh)][0])
    for frames, ref in _poses(m, 8):
        p = fn(shapes[0], frames[0], frames[1], shapes[1], frames[2], frames[3])
        assert len(ref) == 1
        mj = ref[0]
        assert abs(float(p.dist[0]) - mj[0]) < 2e-6
        np.testing.assert_allclose(p.normal[0], mj[1:4], atol=3e-3)
        np.testing.assert_allclose(p.point[0], mj[4:], atol=5e-4)


@pytest.mark.slow
def test_sphere_mesh_gradients_match_central_differences():
    """d(dist)/d(pose) and d(normal)/d(pose) of the rock (translation, rotation) against
    a sphere, through GJK/EPA with the hull's faces as flat directions: forward and
    reverse mode agree and match central differences (eps 1e-5, float64) to 1e-6."""
    m = _pair("rock", "sphere")
    sphere, rock = (_shape_of(m, g) for g in (0, 1))
    fn = _COLLIDE[(rigid.Sphere, rigid.ConvexMesh)][0]

    def out(x, frames):
        ra, pa, rb, pb = frames
        w = x[3:]
        k = jnp.asarray([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
        p = fn(sphere, ra, pa, rock, jax.scipy.linalg.expm(k) @ rb, pb + x[:3])
        return jnp.concatenate([p.dist[:1], p.normal[0]])

    # one compiled program of each mode for every pose (the poses are arguments)
    forward = jax.jit(jax.jacfwd(lambda x, f: (lambda y: (y, y))(out(x, f)), has_aux=True))
    reverse = jax.jit(jax.jacrev(out))
    x0, eps = jnp.zeros(6), 1e-5
    steps = eps * np.eye(6)
    for frames, _ in _poses(m, 2, seed=3):
        jac = forward(x0, frames)[0]
        np.testing.assert_allclose(jac, reverse(x0, frames), atol=1e-12)
        values = np.stack([np.asarray(forward(x0 + s, frames)[1]) for s in (*steps, *-steps)])
        np.testing.assert_allclose(jac, (values[:6] - values[6:]).T / (2 * eps), atol=1e-6)


def _shape_of(m, g):
    mj = rigid.from_mujoco(m)
    return mj.model.geoms[g].shape


def test_cube_mesh_agrees_with_the_box_collider():
    """The cube as a mesh and as a `Box`: against a sphere both give one point (GJK on
    the hull, the closed form on the box), equal to 1e-9 and to MuJoCo's mesh contact;
    on a plane MuJoCo's box takes the corners below the plane and its mesh the face
    most opposed to it, and where those sets coincide ours do too (to 1e-12)."""
    cube = rigid.ConvexMesh(MESHES["cube"])
    box = rigid.Box(jnp.full(3, 0.1))
    sphere = rigid.Sphere(0.1)
    mesh_fn = jax.jit(_COLLIDE[(rigid.Sphere, rigid.ConvexMesh)][0])
    box_fn = jax.jit(_COLLIDE[(rigid.Sphere, rigid.Box)][0])
    for frames, ref in _poses(_pair("cube", "sphere"), 6, seed=1):
        a = mesh_fn(sphere, frames[0], frames[1], cube, frames[2], frames[3])
        b = box_fn(sphere, frames[0], frames[1], box, frames[2], frames[3])
        for x, y in zip(a[:3], b[:3], strict=True):
            np.testing.assert_allclose(x, y, atol=1e-9)
        assert abs(float(a.dist[0]) - ref[0][0]) < 2e-6
    rng = np.random.default_rng(5)
    plane_mesh = jax.jit(_COLLIDE[(rigid.Plane, rigid.ConvexMesh)][0])
    plane_box = jax.jit(_COLLIDE[(rigid.Plane, rigid.Box)][0])
    eye, same = jnp.eye(3), 0
    for k in range(20):
        rot = Rotation.from_euler("xyz", rng.normal(size=3) * (0.05 if k % 2 else 1.0))
        rb, pb = jnp.asarray(rot.as_matrix()), jnp.asarray([0.0, 0.0, rng.uniform(0.0, 0.1)])
        a = plane_mesh(rigid.Plane(), eye, jnp.zeros(3), cube, rb, pb)
        b = plane_box(rigid.Plane(), eye, jnp.zeros(3), box, rb, pb)
        ra, rb_ = (_rows(*(np.asarray(x)[np.asarray(p.dist) < 0] for x in p[:3])) for p in (a, b))
        if ra.shape == rb_.shape:
            same += 1
            np.testing.assert_allclose(ra, rb_, atol=1e-12)
    assert same >= 5


def test_mass_properties_and_bounding_radius_match_mujoco():
    """The hull's volume and inertia per unit mass are MuJoCo's (mesh density 1000;
    MuJoCo stores float32 vertices: 1e-6 relative), its bounding radius MuJoCo's
    `geom_rbound` (the farthest corner of the vertices' box)."""
    for mesh in MESHES:
        m, mj = _plane_model(mesh)
        shape = mj.model.geoms[1].shape
        mass, inertia = shape.mass_properties(1000.0)
        np.testing.assert_allclose(mass, m.body_mass[1], rtol=1e-6)
        np.testing.assert_allclose(inertia, m.body_inertia[1], rtol=1e-6)
        np.testing.assert_allclose(shape.centroid(), 0.0, atol=1e-8)
        np.testing.assert_allclose(shape.bounding_radius(), m.geom_rbound[1], rtol=1e-6)
    # built directly (qhull's faces): the volume does not depend on the frame
    rock = MESHES["rock"]
    np.testing.assert_allclose(
        rigid.ConvexMesh(rock).volume(), rigid.ConvexMesh(rock + 1.0).volume(), rtol=1e-12
    )


def drop_beside_mj_step(m, mj, steps: int):
    """A free body (the model's one) dropped from 0.2 m, tilted and spinning, for
    `steps` steps by mj_step and by sciad: the most contacts MuJoCo had, and the
    largest qpos and qvel differences at the end."""
    d = mujoco.MjData(m)
    q0 = np.array(m.qpos0)
    q0[2] = 0.2
    q0[3:] = Rotation.from_euler("xyz", [0.4, 0.2, 0.1]).as_quat(scalar_first=True)
    v0 = np.array([0.3, -0.2, 0.0, 1.0, -2.0, 0.5])
    d.qpos[:], d.qvel[:] = q0, v0
    ncon = 0
    for _ in range(steps):
        mujoco.mj_step(m, d)
        ncon = max(ncon, d.ncon)
    y0 = (mj.qpos_to_q(jnp.asarray(q0)), mj.qvel_to_v(jnp.asarray(v0)))
    y1 = sciad.simulate(mj.model, y0, dt=mj.dt, n_steps=steps, integrator=mj.integrator).y1
    dq = np.max(np.abs(np.asarray(mj.q_to_qpos(y1[0])) - d.qpos))
    dv = np.max(np.abs(np.asarray(mj.v_to_qvel(y1[1])) - d.qvel))
    return ncon, dq, dv


def test_mesh_dropped_on_a_plane_matches_mj_step():
    """The irregular rock dropped on the tilted plane lands, tumbles and settles as
    MuJoCo's: qpos and qvel after 300 steps (0.6 s) agree with mj_step to round-off."""
    ncon, dq, dv = drop_beside_mj_step(*_plane_model("rock"), 300)
    assert ncon >= 3
    assert dq < 1e-12  # measured 3.9e-16
    assert dv < 1e-10  # measured 1.5e-14


@pytest.mark.slow
def test_gradient_through_plane_contacts_matches_central_differences():
    """The rock sliding on the plane on its contacts: d(final position)/d(initial
    velocity) after 60 steps (from resting on two contacts) by reverse and forward mode agree (1e-10) and match
    central differences (eps 1e-6, float64) to 1e-6 relative."""
    m, mj = _plane_model("rock")
    q0 = np.array(m.qpos0)
    q0[2] = 0.074  # a few mm deep on two points
    q0[3:] = Rotation.from_euler("xyz", [0.2, -0.1, 0.3]).as_quat(scalar_first=True)
    q = mj.qpos_to_q(jnp.asarray(q0))

    v0 = mj.qvel_to_v(jnp.asarray([0.4, 0.1, 0.0, 0.0, 0.0, 1.0]))
    assert int(jnp.sum(_contacts(mj.model, q).dist < 0)) >= 2
    rev, fwd, fd = position_jacobians(mj, q, v0, 60)
    np.testing.assert_allclose(rev, fwd, atol=1e-10)
    np.testing.assert_allclose(rev, fd, rtol=1e-6, atol=1e-8)


def position_jacobians(mj, q, v0, steps: int):
    """d(final position)/d(initial velocity) after `steps` steps from (q, v0): by
    reverse mode, forward mode and central differences (eps 1e-6)."""

    def final(v):
        y1 = sciad.simulate(mj.model, (q, v), dt=mj.dt, n_steps=steps, integrator=mj.integrator)
        return mj.q_to_qpos(y1.y1[0])[:3]

    rev = jax.jit(jax.jacrev(final))(v0)
    # forward mode returns the value too: the central differences reuse its program
    forward = jax.jit(jax.jacfwd(lambda v: (lambda y: (y, y))(final(v)), has_aux=True))
    fwd = forward(v0)[0]
    eps = 1e-6

    def f(v):
        return forward(v)[1]

    fd = np.stack([(f(v0 + eps * e) - f(v0 - eps * e)) / (2 * eps) for e in jnp.eye(6)], 1)
    return rev, fwd, fd


@pytest.mark.slow
def test_meshes_of_different_sizes_collide_in_one_batch_as_alone():
    """A floor and three meshes of 6, 14 and 40 vertices (the first without MuJoCo's
    hull graph) on free bodies crowded together: the pairs of each kind batch into one
    program per kind and graph structure (the meshes padded to common sizes; one
    program per pair of vertex counts made 236 for MuJoCo Menagerie's OP3), and at 6
    random crowded poses every pair's points (distances, normals, points) and their
    derivatives along a random velocity equal the pair collided alone, unpadded, to
    1e-12 (measured: identical)."""
    from sciad._core._geometry import quat_to_matrix
    from sciad.rigid._collision import _pair_groups
    from sciad.rigid._narrowphase import WITH_MARGIN

    rng = np.random.default_rng(7)
    clouds = {n: rng.normal(size=(n, 3)) * [0.08, 0.06, 0.05] for n in (6, 14, 40)}
    assets = "".join(
        f'<mesh name="m{n}" vertex="{" ".join(map(str, v.ravel()))}"/>' for n, v in clouds.items()
    )
    bodies = [f'type="mesh" mesh="m{n}"' for n in clouds]
    xml = f"""<mujoco><asset>{assets}</asset><worldbody>
    <geom type="plane" size="1 1 .1"/>
    {"".join(f'<body pos="0 0 {0.3 * (k + 1)}"><freejoint/><geom {g}/></body>' for k, g in enumerate(bodies))}
    </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    mj = rigid.from_mujoco(m)
    mb = mj.model
    groups = _pair_groups(mb.geoms, mb.pairs)
    # 4 programs (6 unpadded): the floor against the small mesh and against the larger
    # two; the small mesh against the larger two, and those two
    assert len(groups) == 4, [(fn.__name__, len(ia)) for fn, _, ia, _, _ in groups]

    def alone(q):
        """Every pair collided by its own unbatched, unpadded call, in
        `find_contacts`'s order."""
        f = mb._frames(q)
        rot = jnp.concatenate([f.rot, jnp.eye(3)[None]])
        pos = jnp.concatenate([f.pos, jnp.zeros((1, 3))])
        out = []
        for fn, _, ia, ib, _ in groups:
            for i, j in zip(ia.tolist(), ib.tolist(), strict=True):
                ga, gb = mb.geoms[i], mb.geoms[j]
                ba, bb = mb.geom_body[i], mb.geom_body[j]
                ra, rb = rot[ba] @ quat_to_matrix(ga.quat), rot[bb] @ quat_to_matrix(gb.quat)
                pa, pb = pos[ba] + rot[ba] @ ga.pos, pos[bb] + rot[bb] @ gb.pos
                args = (ga.shape, ra, pa, gb.shape, rb, pb)
                p = fn(*args, jnp.asarray(0.0)) if fn in WITH_MARGIN else fn(*args)
                out.append(jnp.concatenate([p.dist[:, None], p.normal, p.point], 1))
        return jnp.concatenate(out)

    def batched(q):
        c = mb._contacts(mb._frames(q))
        return jnp.concatenate([c.dist[:, None], c.normal, c.point], 1)

    tangent = jnp.asarray(rng.normal(size=m.nv))
    zero, one = jnp.asarray(0.0), jnp.asarray(1.0)
    both = [
        jax.jit(
            lambda q, fn=fn: jax.jvp(
                lambda e: fn(mb.integrate_positions(q, e * tangent)), (zero,), (one,)
            )
        )
        for fn in (alone, batched)
    ]
    d = mujoco.MjData(m)
    touching = 0
    for _ in range(6):
        d.qpos[:] = 0.0
        for k in range(len(bodies)):
            d.qpos[7 * k : 7 * k + 3] = rng.uniform(-0.06, 0.06, 3) + [0, 0, 0.05]
            d.qpos[7 * k + 3 : 7 * k + 7] = Rotation.random(random_state=rng).as_quat(
                scalar_first=True
            )
        q = mj.qpos_to_q(jnp.asarray(d.qpos))
        (ref, dref), (got, dgot) = (f(q) for f in both)
        touching += int(np.sum(np.asarray(ref[:, 0]) < 0))
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
        np.testing.assert_allclose(dgot, dref, rtol=0, atol=1e-12)
    assert touching >= 10


def test_refusals():
    """Bad vertices raise precise errors before tracing; a cylinder–mesh pair loads
    with a warning naming the geoms (MuJoCo's choice on a cylinder's rim:
    test_cylinder_clip.py); a margin on a plane–mesh pair loads silently (its
    contacts are MuJoCo's: test_clip_margins.py), on a capsule–mesh pair with a
    warning."""
    with pytest.raises(ValueError, match=r"at least 4 points"):
        rigid.ConvexMesh(jnp.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"shape \(N, 3\); got \(4, 2\)"):
        rigid.ConvexMesh(jnp.zeros((4, 2)))
    with pytest.raises(ValueError, match="finite"):
        rigid.ConvexMesh(jnp.asarray(MESHES["tetra"]).at[0, 0].set(jnp.nan))
    with pytest.raises(ValueError, match="span no volume"):
        rigid.ConvexMesh(jnp.asarray(MESHES["cube"]).at[:, 2].set(0.0))
    with pytest.raises(TypeError, match="concrete vertices"):
        jax.jit(lambda v: rigid.ConvexMesh(v).volume())(jnp.asarray(MESHES["tetra"]))
    xml = f"""<mujoco>{_asset("tetra")}<worldbody><geom name="rock" type="mesh" mesh="m"/>
    <body name="b" pos="0 0 1"><freejoint/><geom name="g" type="cylinder" size="0.1 0.1"/>
    </body></worldbody></mujoco>"""
    with pytest.warns(UserWarning, match=r"1 cylinder–mesh pair\(s\) \(first: geom 'g'.*rim"):
        rigid.load_mjcf(xml)
    # a margin: on a plane–mesh pair it acts as MuJoCo's, on a clipped pair it warns
    for other, warns in (
        ('type="plane" size="1 1 1"', False),
        ('type="capsule" size=".1 .1"', True),
    ):
        xml = f"""<mujoco>{_asset("tetra")}<worldbody><geom {other}/>
        <body pos="0 0 1"><freejoint/><geom type="mesh" mesh="m" margin="0.01"/></body>
        </worldbody></mujoco>"""
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            rigid.load_mjcf(xml)
        assert len([w for w in record if "clipped pair" in str(w.message)]) == warns

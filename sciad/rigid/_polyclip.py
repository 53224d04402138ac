"""Clipped contact sets (a capsule, a box or a convex mesh against a convex mesh; a
capsule, a box or a cylinder against a cylinder), as MuJoCo 4's native convex
collision finds them: the penetration normal from GJK and EPA (`_convex.py`), then
MuJoCo's `multicontact` (engine_collision_gjk.c): the faces (or an edge) of both
shapes aligned with the normal, one polygon clipped against the other
(Sutherland–Hodgman) and cut to at most four points, each with its own depth.
Everything is fixed-size arrays: jit and vmap friendly."""

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array
import numpy as np

from ._convex import convex_contact
from ._mesh import ConvexMesh
from ._shapes import AbstractShape, Box, Capsule, Cylinder
from ._types import MINVAL

# MuJoCo's alignment tolerances (mjFACE_TOL, mjEDGE_TOL): two faces are aligned when
# their normals' dot product is below −0.996, an edge lies in a face when
# |edge · normal| < 0.0888.
FACE_TOL, EDGE_TOL = 0.996, 0.0888
# at most this many points from the clipped polygon (MuJoCo's 4 for box and mesh)
CLIP_CONTACTS = 4
# relative (× the shapes' size) height below the deepest vertex within which a vertex
# belongs to a polytope's supporting feature along the normal
_FEATURE_TOL = 1e-8


class _Poly(NamedTuple):
    """A polytope in the world: vertices (V, 3); faces (F, M) vertex ids in MuJoCo's
    clipping order (clockwise seen from outside), −1-padded; face sizes (F,); outward
    unit face normals (F, 3); each face's member vertices (F, K), −1-padded (a
    cylinder's cap also holds its rim's support point); each vertex's edge ends (V, D),
    −1-padded, in MuJoCo's order."""

    verts: Array
    faces: Array
    ccw: Array
    count: Array
    normals: Array
    members: Array
    edges: Array


_UNROLL = 8  # clip by at most this many edges unrolled (boxes: 4)

# A box's corners: id = x + 2y + 4z with a bit set for the + side (MuJoCo's ids);
# faces +x, −x, +y, −y, +z, −z with corners in MuJoCo's `boxFace` order.
_BOX_SIGNS = np.array([[(i & 1) * 2 - 1, (i & 2) - 1, (i & 4) // 2 - 1] for i in range(8)])
_BOX_FACES = np.array(
    [[7, 3, 1, 5], [2, 6, 4, 0], [2, 3, 7, 6], [4, 5, 1, 0], [6, 7, 5, 4], [3, 2, 0, 1]],
    np.int32,
)
# the same faces counter-clockwise seen from outside, as MuJoCo 4 clips a box's face
# (measured against its contact sets: the order sets which points the largest-area
# quadrilateral keeps)
_BOX_CCW = np.array(
    [[7, 5, 1, 3], [4, 6, 2, 0], [6, 7, 3, 2], [5, 4, 0, 1], [4, 5, 7, 6], [0, 2, 3, 1]],
    np.int32,
)
_BOX_EDGES = np.array([[i ^ 1, i ^ 2, i ^ 4] for i in range(8)], np.int32)  # MuJoCo: x, y, z


def _box_poly(box: Box, rot: Array, pos: Array) -> _Poly:
    dtype = pos.dtype
    verts = pos[None] + (jnp.asarray(_BOX_SIGNS, dtype) * box.half_extents[None]) @ rot.T
    axes = jnp.repeat(rot.T, 2, axis=0) * jnp.asarray([1.0, -1.0] * 3, dtype)[:, None]
    return _Poly(
        verts,
        jnp.asarray(_BOX_FACES),
        jnp.asarray(_BOX_CCW),
        jnp.full(6, 4, jnp.int32),
        axes,
        jnp.asarray(_BOX_FACES),
        jnp.asarray(_BOX_EDGES),
    )


def _mesh_poly(mesh: ConvexMesh, rot: Array, pos: Array) -> _Poly:
    poly = mesh.polygons  # counter-clockwise from outside, −1-padded
    width = poly.shape[1]
    count = jnp.sum(poly >= 0, axis=1, dtype=jnp.int32)
    # MuJoCo's `meshFace` walks a polygon backwards
    back = (count[:, None] - 1 - jnp.arange(width, dtype=jnp.int32)[None]) % jnp.maximum(
        count[:, None], 1
    )
    faces = jnp.where(
        jnp.arange(width, dtype=jnp.int32)[None] < count[:, None],
        poly[jnp.arange(poly.shape[0], dtype=jnp.int32)[:, None], back],
        -1,
    )
    normals, _ = mesh.face_planes()
    return _Poly(
        mesh.vertices @ rot.T + pos[None], faces, poly, count, normals @ rot.T, poly, mesh.edge_ends
    )


# MuJoCo 4 clips a cylinder's caps as regular 16-gons with a corner on the cylinder's x
# axis (measured: a capsule lying across the rim is cut where the 16-gon's side is)
CYLINDER_SIDES = 16
_ANGLES = 2 * np.pi * np.arange(CYLINDER_SIDES) / CYLINDER_SIDES
_RING = np.stack([np.cos(_ANGLES), np.sin(_ANGLES)], axis=1)
# corners: the two rims' support points (0 top, 1 bottom), then the top and bottom 16-gons
_TOP, _BOTTOM = 2 + np.arange(CYLINDER_SIDES), 2 + CYLINDER_SIDES + np.arange(CYLINDER_SIDES)
# the caps clockwise seen from outside (the top seen from +z turns by falling angle)
_CYL_FACES = np.stack([_TOP[::-1], _BOTTOM]).astype(np.int32)
_CYL_MEMBERS = np.stack([np.r_[0, _TOP], np.r_[1, _BOTTOM]]).astype(np.int32)
_CYL_EDGES = np.full((2 + 2 * CYLINDER_SIDES, 1), -1, np.int32)
_CYL_EDGES[:2, 0] = [1, 0]


def _cylinder_poly(cyl: Cylinder, rot: Array, pos: Array, direction: Array) -> _Poly:
    """A cylinder as MuJoCo 4's `multicontact` sees it along `direction` (unit,
    world): two 16-gon caps, no side faces, and one edge, the side line through the
    rims' support points. A support point offers its cap and the side line."""
    dtype = pos.dtype
    ring = jnp.asarray(_RING, dtype) * cyl.radius
    h = jnp.broadcast_to(cyl.half_length, (CYLINDER_SIDES, 1))
    u = jax.lax.stop_gradient(rot.T @ direction)
    flat = jnp.sum(u[:2] ** 2) > 0
    radial = jnp.where(flat, u[:2], jnp.asarray([1.0, 0.0], dtype))
    radial = radial / jnp.sqrt(jnp.sum(radial**2))
    side = jnp.stack(
        [
            jnp.concatenate([cyl.radius * radial, cyl.half_length[None]]),
            jnp.concatenate([cyl.radius * radial, -cyl.half_length[None]]),
        ]
    )
    local = jnp.concatenate(
        [side, jnp.concatenate([ring, h], 1), jnp.concatenate([ring, -h], 1)], axis=0
    )
    return _Poly(
        pos[None] + local @ rot.T,
        jnp.asarray(_CYL_FACES),
        jnp.asarray(_CYL_FACES[:, ::-1].copy()),
        jnp.full(2, CYLINDER_SIDES, jnp.int32),
        jnp.stack([rot[:, 2], -rot[:, 2]]),
        jnp.asarray(_CYL_MEMBERS),
        jnp.asarray(_CYL_EDGES),
    )


def _segment_poly(cap: Capsule, rot: Array, pos: Array) -> _Poly:
    """A capsule's segment (its radius is added to the clipped points): two corners
    joined by one edge and no faces (a placeholder face that holds no corner)."""
    ends = (
        pos[None]
        + jnp.asarray([-1.0, 1.0], pos.dtype)[:, None] * (cap.half_length * rot[:, 2])[None]
    )
    return _Poly(
        ends,
        jnp.asarray([[0, 1]], jnp.int32),
        jnp.asarray([[1, 0]], jnp.int32),
        jnp.full(1, 2, jnp.int32),
        rot[:, 0][None],
        jnp.full((1, 1), -1, jnp.int32),
        jnp.asarray([[1], [0]], jnp.int32),
    )


def _argmax(x: Array, axis: int | None = None) -> Array:
    return jnp.argmax(x, axis=axis).astype(jnp.int32)


def _poly(shape: AbstractShape, rot: Array, pos: Array, direction: Array) -> _Poly:
    """A polytope's corners, faces and edges in the world; a cylinder's side line is
    the one supporting `direction` (unit, world)."""
    if isinstance(shape, Box):
        return _box_poly(shape, rot, pos)
    if isinstance(shape, ConvexMesh):
        return _mesh_poly(shape, rot, pos)
    if isinstance(shape, Cylinder):
        return _cylinder_poly(shape, rot, pos, direction)
    if isinstance(shape, Capsule):
        return _segment_poly(shape, rot, pos)
    raise TypeError(f"no polytope for {type(shape).__name__}")


def _feature(p: _Poly, direction: Array, tol: Array) -> tuple[Array, Array, Array]:
    """The supporting feature along `direction`: its vertices (V,) (within `tol` of the
    farthest), MuJoCo's dimension (1, 2 or 3) and the first two of its vertices."""
    h = p.verts @ direction
    on = h >= jnp.max(h) - tol
    dim = jnp.minimum(jnp.sum(on, dtype=jnp.int32), 3)
    first = _argmax(on)
    second = _argmax(on & (jnp.arange(on.shape[0], dtype=jnp.int32) != first))
    return on, dim, jnp.stack([first, second])


def _cylinder_feature(on: Array, along: Array, other: Array) -> tuple[Array, Array]:
    """A cylinder's feature dimension and first two corners where the normal has
    `along` = n·axis and the other shape's feature has dimension `other` (MuJoCo 4's
    rule, read from its contact sets; its EPA decides it): on a rim, 2, the side line
    (a capsule lying across the cap is clipped, the side of a lying cylinder too); on
    a cap (n along the axis to 1e-9), 3 against another's edge or face (a box's edge
    lying on the cap is clipped) and 1 against a corner (a box's corner on the cap is
    one contact)."""
    cap = (1 - jnp.abs(jax.lax.stop_gradient(along))) < 1e-9
    dim = jnp.where(cap, jnp.where(other >= 2, 3, 1), 2).astype(jnp.int32)
    first = jnp.where(on[0], 0, 1).astype(jnp.int32)
    return dim, jnp.stack([first, 1 - first])


def _candidates(p: _Poly, on: Array, dim: Array) -> Array:
    """The faces (F,) at a supporting feature: those holding all of its vertices, and,
    for a face feature, those lying in it (a plane of several polygons: MuJoCo's EPA
    face picks one of them). Counts each face's members on the feature: O(F·K), never
    a face-by-vertex matrix (a fine mesh has thousands of each)."""
    valid = p.members >= 0
    on_face = jnp.sum(valid & on[jnp.maximum(p.members, 0)], axis=1, dtype=jnp.int32)
    holding = on_face == jnp.sum(on, dtype=jnp.int32)
    # a padding row (no member: `pad_meshes`) lies in no feature
    lying = (on_face == jnp.sum(valid, axis=1, dtype=jnp.int32)) & valid[:, 0] & (dim == 3)
    return holding | lying


def _first(mask: Array) -> tuple[Array, Array]:
    """The first True of a 2-d mask in row-major order (its row and column), and whether
    there is one."""
    k = _argmax(mask.reshape(-1))
    return jnp.stack([k // mask.shape[1], k % mask.shape[1]]), jnp.any(mask)


def _face_points(p: _Poly, f: Array, width: int, ccw: bool = False) -> tuple[Array, Array]:
    """Face f's corners (width, 3) (clockwise seen from outside, or counter-clockwise),
    padded with its first, and its size."""
    ids = (p.ccw if ccw else p.faces)[f]
    if ids.shape[0] < width:
        ids = jnp.concatenate([ids, jnp.full(width - ids.shape[0], -1, ids.dtype)])
    return p.verts[jnp.where(ids >= 0, ids, ids[0])], p.count[f]


def _compact(x: Array, keep: Array, size: int) -> tuple[Array, Array]:
    """The kept rows of x in order, in `size` slots (the rest repeat the first), and
    how many (at most `size`)."""
    slot = jnp.where(keep, jnp.cumsum(keep) - 1, size)
    out = jnp.zeros((size, x.shape[1]), x.dtype).at[slot].set(x, mode="drop")
    n = jnp.minimum(jnp.sum(keep, dtype=jnp.int32), size)
    return jnp.where(jnp.arange(size, dtype=jnp.int32)[:, None] < n, out, out[0][None]), n


def _clip(
    face1: Array,
    n1: Array,
    face2: Array,
    n2: Array,
    normal: Array,
    depth_n: Array,
    size: int,
    margin: Array | float,
) -> tuple[Array, Array]:
    """MuJoCo's `polygonClip`: the polygon face2 (n2 of its rows) clipped by the planes
    through face1's edges (n1 of them) perpendicular to `normal`, one at a time
    (Sutherland–Hodgman), then the points more than `margin` above face1's plane
    dropped: the points (size, 3) and how many."""
    k1 = face1.shape[0]
    v1 = face1
    v2 = jnp.roll(face1, -1, axis=0).at[n1 - 1].set(face1[0])
    pn = jnp.cross(v2 - v1, normal[None])
    # the padding's edges have no length (and are not used): a zero plane, not 0/0,
    # whose NaN would reach every gradient through the masks
    norm2 = jnp.sum(pn**2, axis=-1, keepdims=True)
    pn = jnp.where(norm2 > 0, pn / jnp.sqrt(jnp.where(norm2 > 0, norm2, 1.0)), 0.0)
    pd = jnp.sum(pn * v1, axis=-1)
    poly = jnp.zeros((size, 3), face1.dtype).at[: face2.shape[0]].set(face2)
    count = n2
    idx = jnp.arange(size, dtype=jnp.int32)

    def edge(e, carry):
        poly, count = carry
        p = poly
        q = poly[jnp.where(idx < count - 1, idx + 1, 0)]
        in1 = (p - v1[e][None]) @ pn[e] > -MINVAL
        in2 = (q - v1[e][None]) @ pn[e] > -MINVAL
        pq = q - p
        tmp = pq @ pn[e]
        nz = tmp != 0.0
        t = (pd[e] - p @ pn[e]) / jnp.where(nz, tmp, 1.0)
        live = idx < count
        cross_ok = live & (in1 != in2) & nz & (t >= 0.0) & (t <= 1.0)
        q_ok = live & in2
        cand = jnp.stack([p + t[:, None] * pq, q], axis=1).reshape(2 * size, 3)
        ok = jnp.stack([cross_ok, q_ok], axis=1).reshape(2 * size)
        new, new_count = _compact(cand, ok, size)
        active = e < n1
        return jnp.where(active, new, poly), jnp.where(active, new_count, count)

    # a loop, not unrolled past a box's faces: a fine mesh's merged polygons have tens
    # of corners, and unrolled clips grew the program past 20 MB (a robot arm's 15
    # mesh pairs took 4 minutes to compile)
    poly, count = jax.lax.fori_loop(0, k1, edge, (poly, count), unroll=k1 <= _UNROLL)
    below = ((poly - face1[0][None]) @ depth_n <= margin) & (idx < count)
    return _compact(poly, below, size)


def _area4(a: Array, b: Array, c: Array, d: Array) -> Array:
    e = jnp.cross(d - a, b - d)
    f = jnp.cross(c - b, a - c)
    return 0.5 * jnp.sqrt(jnp.sum((e + f) ** 2))


def _quad(poly: Array, n: Array) -> Array:
    """MuJoCo's `polygonQuad`: the indices (4,) of a large-area quadrilateral of the
    first n points of `poly` by its greedy search."""

    def nxt(i: Array) -> Array:
        return jnp.where(i == n - 1, 0, i + 1)

    def area(a, b, c, d):
        return _area4(poly[a], poly[b], poly[c], poly[d])

    def grow(which: int):
        def cond(s):
            a, b, c, d, m, _ = s
            x = [b, c, d]
            x[which] = nxt(x[which])
            return area(a, *x) > m

        def body(s):
            a, b, c, d, _, _ = s
            x = [b, c, d]
            x[which] = nxt(x[which])
            return (a, *x, area(a, *x), jnp.stack([a, *x]))

        return cond, body

    def outer(a, s):
        _, b, c, d, m, res = s
        s = (a, b, c, d, m, res)

        def cond(s):
            return grow(2)[0](s)

        def body(s):
            s = grow(2)[1](s)
            s = jax.lax.while_loop(*grow(1), s)
            return jax.lax.while_loop(*grow(0), s)

        s = jax.lax.while_loop(cond, body, s)
        _, b, c, d, m, res = s
        bump_b = b == a
        b = jnp.where(bump_b, nxt(b), b)
        bump_c = bump_b & (c == b)
        c = jnp.where(bump_c, nxt(c), c)
        d = jnp.where(bump_c & (d == c), nxt(d), d)
        return jax.lax.cond(a < n, lambda: (a, b, c, d, m, res), lambda: s)

    i = [jnp.asarray(k, n.dtype) for k in range(4)]
    s = (i[0], i[1], i[2], i[3], area(*i), jnp.stack(i))
    s = jax.lax.fori_loop(0, poly.shape[0], lambda a, s: outer(jnp.asarray(a, n.dtype), s), s)
    return s[5]


def _farthest_two(poly: Array, n: Array) -> Array:
    """The first pair (i < j) of the first n points farthest apart (MuJoCo's choice for
    a clipped edge)."""
    size = poly.shape[0]
    d2 = jnp.sum((poly[:, None] - poly[None]) ** 2, axis=-1)
    idx = jnp.arange(size, dtype=jnp.int32)
    ok = (idx[:, None] < idx[None]) & (idx[None] < n)
    d2 = jnp.where(ok, d2, 0.0)
    best = jnp.max(d2)
    k = _argmax((d2 == best).reshape(-1) & (best > 0))
    return jnp.where(best > 0, jnp.stack([k // size, k % size]), jnp.asarray([0, 1], jnp.int32))


class PolyContacts(NamedTuple):
    """A polytope pair's contacts: the convex contact, then the clipped points."""

    dist: Array  # (1 + CLIP_CONTACTS,)
    normal: Array  # (1 + CLIP_CONTACTS, 3)
    point: Array  # (1 + CLIP_CONTACTS, 3)


def polytope_contacts(
    sa: AbstractShape,
    ra: Array,
    pa: Array,
    sb: AbstractShape,
    rb: Array,
    pb: Array,
    margin: Array | float = 0.0,
) -> PolyContacts:
    """A capsule, box or convex mesh `sa` against a convex mesh `sb`, or a capsule, box
    or cylinder `sa` against a cylinder `sb` (world rotations (3, 3) and positions (3,)),
    as MuJoCo 4's `mjc_Convex` (nativeccd, multiccd) returns them:
    5 points, the first the general convex contact (`convex_contact`), the other four
    MuJoCo's `multicontact` polygon clipping; where the clipping gives points, the
    first is inactive. Inactive points get a positive placeholder distance.

    The feature of each polytope that supports the normal n (a → b) is its vertices
    within 1e-8 of the shapes' size of the farthest along n (a's) or −n (b's): a vertex,
    an edge or a face, MuJoCo's EPA face's vertices on it. Its candidate faces are those
    holding all of its vertices. The first pair (a's faces in order, then b's) with
    n_a·n_b < −0.996 is clipped face against face; else, where a's feature is a vertex
    or an edge and no larger than b's, the first of its edges (its own, or at a vertex
    the edges there) within 0.0888 of perpendicular to one of b's candidate faces is
    clipped against that face; else the same with b's edges against a's faces; else
    there is one point.

    Face against face, a's face (counter-clockwise seen from outside) is clipped by the
    planes through b's face's edges along n_a, and the points inside b (below its
    face) are the contacts, with depths along b's face normal, the normal −n_b; an
    edge is clipped by the planes through the other polytope's face's edges along that
    face's normal (MuJoCo 3's rule; MuJoCo 4's face–face rule and its box faces' vertex
    order were found by matching its contact sets, its source not being at hand).
    More than four points: MuJoCo's largest-area quadrilateral search; a clipped edge:
    its two farthest points.

    A cylinder is two 16-gon caps and one edge, the side line through the rims'
    support points (`_cylinder_poly`); its feature dimension is MuJoCo 4's as read from
    its contact sets (`_cylinder_feature`). A capsule is its segment, moved by its
    radius toward b across its axis before it is clipped (MuJoCo 4's points, measured).

    With a `margin` (the pair's, length), the shapes may be apart: the normal is then
    the exact separation direction, and the clipped points within the margin are kept
    (MuJoCo 4's, which also lists them). A capsule's segment then moves by its radius
    plus half the margin and b's face by half the margin, and the depths between these
    inflated shapes plus the margin are the distances (measured against MuJoCo 4 to
    round-off). Within the margin MuJoCo's own normal comes from EPA on the shapes
    inflated by the margin, to its tolerance, so near a feature switch its contact
    set can differ (docs/rigid.md, "Margins on clipped pairs").

    The choices (features, faces, the kept points) are discrete and carry no
    gradient; the points and depths are smooth functions of the poses between them.
    Where MuJoCo's EPA (tolerance 1e-6) ends on a Minkowski face other than the least
    penetration's, its features and so its contact set can differ (a few percent of
    random poses in the tests).

    **Arguments:**

    - `sa`, `ra`, `pa`: a `Box`, a `ConvexMesh`, a `Capsule` or a `Cylinder`, its
      rotation `(3, 3)` and position `(3,)` (length).
    - `sb`, `rb`, `pb`: a `ConvexMesh` or a `Cylinder`, its rotation and position.
    - `margin`: the pair's margin (length, ≥ 0; a traced scalar is fine).

    **Returns:** `PolyContacts(dist (5,), normal (5, 3), point (5, 3))`: signed
    distances (length; negative: penetration), unit normals from a to b, and points
    midway through the overlap.
    """
    first = convex_contact(sa, ra, pa, sb, rb, pb)
    n = jax.lax.stop_gradient(first.normal)
    A, B = _poly(sa, ra, pa, n), _poly(sb, rb, pb, -n)
    A_, B_ = jax.lax.stop_gradient((A, B))
    scale = jax.lax.stop_gradient(sa.bounding_radius() + sb.bounding_radius())
    tol = _FEATURE_TOL * scale
    on_a, dim_a, ends_a = _feature(A_, n, tol)
    on_b, dim_b, ends_b = _feature(B_, -n, tol)
    if isinstance(sa, Cylinder):
        dim_a, ends_a = _cylinder_feature(on_a, ra[:, 2] @ n, dim_b)
    if isinstance(sb, Cylinder):
        dim_b, ends_b = _cylinder_feature(on_b, rb[:, 2] @ n, dim_a)
    cand_a = _candidates(A_, on_a, dim_a)
    cand_b = _candidates(B_, on_b, dim_b)
    dots = A_.normals @ B_.normals.T
    (fa, fb), face_face = _first(cand_a[:, None] & cand_b[None] & (dots < -FACE_TOL))

    def edge_dirs(p: _Poly, dim: Array, ends: Array) -> tuple[Array, Array, Array]:
        """The feature's edges: start (3,), ends (D, 3), unit directions (D, 3), valid."""
        v0 = p.verts[ends[0]]
        at_vertex = p.edges[ends[0]]
        width = max(at_vertex.shape[0], 1)
        end_ids = jnp.where(dim == 2, jnp.full(width, ends[1]).at[1:].set(-1), at_vertex)
        ok = end_ids >= 0
        e = p.verts[jnp.maximum(end_ids, 0)]
        d = e - v0[None]
        d = d / jnp.sqrt(jnp.maximum(jnp.sum(d**2, axis=-1, keepdims=True), 1e-300))
        return e, d, ok

    ea, da, oka = edge_dirs(A_, dim_a, ends_a)
    eb, db, okb = edge_dirs(B_, dim_b, ends_b)
    # a's edge against b's faces: faces outer, edges inner
    (fb1, ja), edge_a = _first(
        cand_b[:, None] & oka[None] & (jnp.abs(B_.normals @ da.T) < EDGE_TOL)
    )
    (fa2, jb), edge_b = _first(
        cand_a[:, None] & okb[None] & (jnp.abs(A_.normals @ db.T) < EDGE_TOL)
    )
    use_a = ~face_face & (dim_a < 3) & (dim_a <= dim_b)
    use_b = ~face_face & ~use_a & (dim_b < 3)
    mode_ff, mode_ea, mode_eb = face_face, use_a & edge_a, use_b & edge_b

    width = max(A.faces.shape[1], B.faces.shape[1])
    size = 2 * width
    # the clipping face (1) and the clipped polygon (2), with the differentiable poses
    fa_use = jnp.where(mode_eb, fa2, fa)
    fb_use = jnp.where(mode_ea, fb1, fb)
    face_a, count_a = _face_points(A, fa_use, width)
    face_a_ccw, _ = _face_points(A, fa_use, width, ccw=True)
    face_b, count_b = _face_points(B, fb_use, width)
    na, nb = A.normals[fa_use], B.normals[fb_use]
    ends_a_edge = jnp.where(dim_a == 2, ends_a[1], A_.edges[ends_a[0], jnp.maximum(ja, 0)])
    ends_b_edge = jnp.where(dim_b == 2, ends_b[1], B_.edges[ends_b[0], jnp.maximum(jb, 0)])
    edge_of_a = jnp.zeros((width, 3), pa.dtype).at[0].set(A.verts[ends_a[0]])
    edge_of_a = edge_of_a.at[1].set(A.verts[ends_a_edge])
    edge_of_b = jnp.zeros((width, 3), pa.dtype).at[0].set(B.verts[ends_b[0]])
    edge_of_b = edge_of_b.at[1].set(B.verts[ends_b_edge])
    two = jnp.asarray(2, count_a.dtype)
    # MuJoCo 4: face–face clips a's face by b's face's edges (planes along −n_a), depths
    # along n_b; a's edge is clipped by b's face, b's edge by a's face
    on_b_face = ~mode_eb
    face1 = jnp.where(on_b_face, face_b, face_a)
    n1 = jnp.where(on_b_face, count_b, count_a)
    face2 = jnp.where(mode_ea, edge_of_a, jnp.where(mode_eb, edge_of_b, face_a_ccw))
    n2 = jnp.where(mode_ea | mode_eb, two, count_a)
    plane_n = jnp.where(mode_ff, -na, jnp.where(mode_eb, na, nb))
    depth_n = jnp.where(mode_eb, na, nb)
    inflate = 0.0
    if isinstance(sa, Capsule):
        # a capsule's segment moves by its radius and half the margin toward b (MuJoCo
        # 4: along the contact normal less its part along the axis), b's face by half
        # the margin along its normal, then the segment is clipped; the depths are
        # between these inflated geoms, plus the margin (measured against MuJoCo 4)
        axis = ra[:, 2]
        across = first.normal - (first.normal @ axis) * axis
        face2 = face2.at[:2].add((sa.radius + 0.5 * margin) * across[None])
        face1 = face1 + 0.5 * margin * depth_n[None]
        inflate = margin
    poly, count = _clip(face1, n1, face2, n2, plane_n, depth_n, size, margin - inflate)
    quad = _quad(jax.lax.stop_gradient(poly), count)
    far = _farthest_two(jax.lax.stop_gradient(poly), count)
    k = jnp.arange(CLIP_CONTACTS, dtype=jnp.int32)
    pick = jnp.where(
        count > CLIP_CONTACTS,
        quad,
        jnp.where((n2 == 2) & (count > 2), jnp.where(k < 2, far[jnp.minimum(k, 1)], 0), k),
    )
    n_out = jnp.where(count > CLIP_CONTACTS, 4, jnp.where((n2 == 2) & (count > 2), 2, count))
    active = (mode_ff | mode_ea | mode_eb) & (k < n_out)
    v = poly[pick]
    depth = (v - face1[0][None]) @ depth_n
    mid = v - 0.5 * depth[:, None] * depth_n[None]
    depth = depth + inflate
    cnormal = jnp.where(on_b_face, -depth_n, depth_n)
    clipped = jnp.any(active)
    placeholder = jnp.abs(first.dist) + 2 * scale
    dist = jnp.concatenate(
        [jnp.where(clipped, placeholder, first.dist)[None], jnp.where(active, depth, placeholder)]
    )
    normals = jnp.concatenate([first.normal[None], jnp.broadcast_to(cnormal, (CLIP_CONTACTS, 3))])
    points = jnp.concatenate([first.point[None], mid])
    return PolyContacts(dist, normals, points)

"""The narrow phase: signed distances, normals and points of every supported pair of
primitive shapes, a fixed number of candidate points per pair kind."""

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array
import numpy as np

from .._core._geometry import cross, safe_norm
from ._capsule_box import capsule_box_centres
from ._convex import convex_contact
from ._hfield import HeightField, hfield_points
from ._mesh import ConvexMesh
from ._polyclip import CLIP_CONTACTS, polytope_contacts
from ._shapes import AbstractShape, Box, Capsule, Cylinder, Ellipsoid, Plane, Sphere
from ._types import MINVAL, round_off

# ---------------------------------------------------------------------------------------
# Narrow phase. Each function takes two geoms' shapes and world poses (rotation (3, 3),
# position (3,)) and returns, for a fixed number K of candidate points, the signed
# distance φ (K,) (negative: penetration), the unit normal (K, 3) pointing from the first
# geom to the second, and the contact point (K, 3) midway through the overlap.
# ---------------------------------------------------------------------------------------


class _Points(NamedTuple):
    dist: Array
    normal: Array
    point: Array
    weight: Array | None = None  # (K,) in [0, 1], the share of the stiffness; None: 1


def _unit(d: Array, fallback: Array) -> tuple[Array, Array]:
    """(|d|, d/|d|), with `fallback` as the direction where d = 0 (finite gradients)."""
    ok = jnp.sum(d**2, axis=-1) > 0
    norm = safe_norm(d, ok)
    return jnp.where(ok, norm, 0.0), jnp.where(ok[..., None], d / norm[..., None], fallback)


def _spheres(ca: Array, ra: Array, cb: Array, rb: Array, fallback: Array) -> _Points:
    """Sphere–sphere, on the last axis (batched over leading ones)."""
    dist, n = _unit(cb - ca, fallback)
    phi = dist - ra - rb
    return _Points(phi, n, ca + n * (ra + 0.5 * phi)[..., None])


def _plane_points(rot_a: Array, pos_a: Array, pts: Array, radius: Array | float) -> _Points:
    """Plane (normal = its z axis) against spheres of `radius` at points (K, 3)."""
    n = rot_a[:, 2]
    phi = (pts - pos_a[None]) @ n - radius
    normal = jnp.broadcast_to(n, pts.shape)
    return _Points(phi, normal, pts - normal * (radius + 0.5 * phi)[:, None])


def _segment(rot: Array, pos: Array, half_length: Array) -> tuple[Array, Array]:
    axis = rot[:, 2]
    return pos - half_length * axis, pos + half_length * axis


def _box_corners(rot: Array, pos: Array, half: Array) -> Array:
    """The 8 corners (8, 3) in MuJoCo's order (`mjc_PlaneBox`: x varies fastest)."""
    signs = jnp.asarray(
        [[sx, sy, sz] for sz in (-1, 1) for sy in (-1, 1) for sx in (-1, 1)], pos.dtype
    )
    return pos[None] + (signs * half[None]) @ rot.T


def _point_box(p: Array, rot: Array, pos: Array, half: Array) -> tuple[Array, Array]:
    """Signed distance of points p (K, 3) to a box, and the outward unit normal (the
    direction to the point outside; the nearest face's normal inside)."""
    phi, n_local = _local_point_box((p - pos[None]) @ rot, half)
    return phi, n_local @ rot.T


def _local_point_box(local: Array, half: Array) -> tuple[Array, Array]:
    """`_point_box` for points (K, 3) in the box's frame; the normal in that frame. A
    point on the surface, or within MuJoCo's `mjMINVAL` of it outside, is inside (as
    in `mjraw_SphereBox`), with the nearest face's normal: the first of −x, +x, −y, …
    at a tie."""
    clamped = jnp.clip(local, -half[None], half[None])
    outside_dist, outside_n = _unit(local - clamped, jnp.zeros_like(local))
    depth = half[None] - jnp.abs(local)  # (K, 3), all non-negative inside
    k = jnp.argmin(depth, axis=-1)
    face = jax.nn.one_hot(k, 3, dtype=local.dtype) * jnp.where(local > 0, 1.0, -1.0)
    inside = outside_dist <= MINVAL
    phi = jnp.where(inside, -jnp.min(depth, axis=-1), outside_dist)
    return phi, jnp.where(inside[:, None], face, outside_n)


def _closest_on_segment(p: Array, a0: Array, a1: Array) -> Array:
    d = a1 - a0
    t = jnp.clip(jnp.dot(p - a0, d) / jnp.dot(d, d), 0.0, 1.0)
    return a0 + t * d


def _segments_closest(p0: Array, p1: Array, q0: Array, q1: Array) -> tuple[Array, Array]:
    """The closest points of two segments (Ericson, *Real-Time Collision Detection*,
    §5.1.9); parallel segments take s = 0 (their nearest points are not unique)."""
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    a, e, f = jnp.dot(d1, d1), jnp.dot(d2, d2), jnp.dot(d2, r)
    c, b = jnp.dot(d1, r), jnp.dot(d1, d2)
    denom = a * e - b * b
    ok = denom > 1e-12 * a * e
    s = jnp.where(ok, jnp.clip((b * f - c * e) / jnp.where(ok, denom, 1.0), 0.0, 1.0), 0.0)
    t = (b * s + f) / e
    s = jnp.where(
        t < 0, jnp.clip(-c / a, 0.0, 1.0), jnp.where(t > 1, jnp.clip((b - c) / a, 0.0, 1.0), s)
    )
    t = jnp.clip(t, 0.0, 1.0)
    return p0 + s * d1, q0 + t * d2


def _plane_sphere(sa, ra, pa, sb, rb, pb) -> _Points:
    return _plane_points(ra, pa, pb[None], sb.radius)


def _plane_capsule(sa, ra, pa, sb, rb, pb) -> _Points:
    """The capsule's two end spheres against the plane, the end along +axis first
    (MuJoCo's `mjc_PlaneCapsule` order, which noslip's sweep order follows)."""
    lo, hi = _segment(rb, pb, sb.half_length)
    return _plane_points(ra, pa, jnp.stack([hi, lo]), sb.radius)


def _plane_box(sa, ra, pa, sb, rb, pb) -> _Points:
    return _plane_points(ra, pa, _box_corners(rb, pb, sb.half_extents), 0.0)


def _plane_cylinder(sa, ra, pa, sb, rb, pb) -> _Points:
    """Three rim points per cap, 120° apart, the first the deepest one (a lying
    cylinder touches along a line: its two deepest points; a standing one on a
    triangle of its bottom rim)."""
    n, axis = ra[:, 2], rb[:, 2]
    down = -n + jnp.dot(n, axis) * axis
    _, d = _unit(down, rb[:, 0])
    e = cross(axis, d)
    ang = jnp.asarray([0.0, 2 * np.pi / 3, 4 * np.pi / 3], pb.dtype)
    rim = sb.radius * (jnp.cos(ang)[:, None] * d[None] + jnp.sin(ang)[:, None] * e[None])
    caps = jnp.stack(_segment(rb, pb, sb.half_length))
    return _plane_points(ra, pa, (caps[:, None, :] + rim[None]).reshape(6, 3), 0.0)


def _sphere_sphere(sa, ra, pa, sb, rb, pb) -> _Points:
    p = _spheres(pa, sa.radius, pb, sb.radius, ra[:, 2])
    return _Points(p.dist[None], p.normal[None], p.point[None])


def _sphere_capsule(sa, ra, pa, sb, rb, pb) -> _Points:
    c = _closest_on_segment(pa, *_segment(rb, pb, sb.half_length))
    p = _spheres(pa, sa.radius, c, sb.radius, rb[:, 0])
    return _Points(p.dist[None], p.normal[None], p.point[None])


# Capsule–capsule hands over from the closest point to the two end points as the axes
# turn parallel, between these sines of the angle between them (MuJoCo switches
# abruptly at the lower one).
PARALLEL_SINES = (1e-4, 1e-2)


def _capsule_capsule(sa, ra, pa, sb, rb, pb) -> _Points:
    """Capsule–capsule (3 points): the segments' closest points, and, from each end
    of b, the nearest point of a and the point of b nearest to that (the ends of the
    segments' overlap when they are parallel, as in MuJoCo). Parallel segments touch
    along a line, where the closest point is not unique and moves along them at a
    rate ~1/θ² as they turn (θ the angle between the axes): the closest point alone
    would balance a capsule lying on another on one point. So the closest point's
    weight is 1 − w and the end points' w, with w = 1 for sin θ ≤ 1e-4, 0 for
    sin θ ≥ 1e-2 and a smoothstep in sin²θ between; a point of weight 0 is
    inactive."""
    a0, a1 = _segment(ra, pa, sa.half_length)
    b0, b1 = _segment(rb, pb, sb.half_length)
    ca, cb = _segments_closest(a0, a1, b0, b1)
    ea = jnp.stack([_closest_on_segment(b0, a0, a1), _closest_on_segment(b1, a0, a1)])
    eb = jnp.stack([_closest_on_segment(ea[0], b0, b1), _closest_on_segment(ea[1], b0, b1)])
    axes = cross(ra[:, 2], rb[:, 2])
    _, fallback = _unit(axes + ra[:, 0] * 1e-3, ra[:, 0])
    p = _spheres(
        jnp.concatenate([ca[None], ea]),
        sa.radius,
        jnp.concatenate([cb[None], eb]),
        sb.radius,
        fallback,
    )
    low, high = PARALLEL_SINES
    x = jnp.clip((jnp.sum(axes**2) - low**2) / (high**2 - low**2), 0.0, 1.0)
    w = 1.0 - x * x * (3.0 - 2.0 * x)
    weight = jnp.stack([1.0 - w, w, w])
    placeholder = jnp.abs(p.dist) + sa.radius + sb.radius
    return _Points(jnp.where(weight > 0, p.dist, placeholder), p.normal, p.point, weight)


def _spheres_box(centres: Array, radius: Array, rot: Array, pos: Array, half: Array) -> _Points:
    """Spheres of `radius` at `centres` (K, 3) against a box; normals sphere → box."""
    phi, n_out = _point_box(centres, rot, pos, half)  # n_out: box → sphere
    phi = phi - radius
    n = -n_out
    return _Points(phi, n, centres + n * (radius + 0.5 * phi)[:, None])


def _sphere_box(sa, ra, pa, sb, rb, pb) -> _Points:
    return _spheres_box(pa[None], sa.radius, rb, pb, sb.half_extents)


def _sphere_cylinder(sa, ra, pa, sb, rb, pb) -> _Points:
    """Sphere–cylinder, in closed form. In the cylinder's frame (radial distance ρ,
    axial z; radius R, half length h): beside the side (|z| ≤ h) the distance is
    ρ − R along the radial direction, above a cap (ρ ≤ R) |z| − h along the axis,
    and past the rim the distance to the rim circle; inside, the nearer of the side
    and the cap. The normal points from the sphere to the cylinder."""
    local = (pa - pb) @ rb
    radius, half = sb.radius, sb.half_length
    rho, radial = _unit(local[:2], jnp.asarray([1.0, 0.0], pa.dtype))
    z, up = jnp.abs(local[2]), _side(local[2])
    side, cap = rho - radius, z - half
    rim = jnp.stack([side, cap])
    rim_dist, rim_dir = _unit(jnp.maximum(rim, 0.0), jnp.zeros(2, pa.dtype))
    inside = (side <= 0) & (cap <= 0)
    toward_side = jnp.where(inside, side >= cap, (cap <= 0))
    toward_cap = jnp.where(inside, cap > side, side <= 0)
    dist = jnp.where(
        inside,
        jnp.maximum(side, cap),
        jnp.where(toward_side, side, jnp.where(toward_cap, cap, rim_dist)),
    )
    # the outward direction (cylinder → sphere) in the cylinder's frame
    radial3 = jnp.concatenate([radial, jnp.zeros(1, pa.dtype)])
    axial3 = jnp.asarray([0.0, 0.0, 1.0], pa.dtype) * up
    out = jnp.where(
        toward_side,
        radial3,
        jnp.where(toward_cap, axial3, rim_dir[0] * radial3 + rim_dir[1] * axial3),
    )
    n = -(rb @ out)
    phi = dist - sa.radius
    return _Points(phi[None], n[None], (pa + n * (sa.radius + 0.5 * phi))[None])


def _capsule_box(sa, ra, pa, sb, rb, pb, margin=0.0) -> _Points:
    """Capsule–box (2 points), as MuJoCo's `mjraw_CapsuleBox`: spheres of the
    capsule's radius against the box at the segment point nearest to the box and at
    MuJoCo's second point (`_capsule_box.capsule_box_centres`), those it collides;
    the others get a positive placeholder distance."""
    half = sb.half_extents
    centres, on = capsule_box_centres(pa, ra, sa.radius, sa.half_length, pb, rb, half, margin)
    spheres = _spheres_box(centres, sa.radius, rb, pb, half)
    placeholder = jnp.abs(spheres.dist) + 2 * (jnp.sum(half) + sa.radius) + margin
    return _Points(jnp.where(on, spheres.dist, placeholder), spheres.normal, spheres.point)


class _Frame(NamedTuple):
    """A box face: centre (3,), outward normal (3,), in-plane axes (2, 3), half sizes (2,)."""

    centre: Array
    normal: Array
    axes: Array
    half: Array


def _face(rot: Array, pos: Array, half: Array, k: Array, sign: Array) -> _Frame:
    """The face of a box whose outward normal is `sign` × its axis k (traced)."""
    others = jnp.stack([(k + 1) % 3, (k + 2) % 3])
    normal = sign * rot[:, k]
    return _Frame(pos + normal * half[k], normal, rot[:, others].T, half[others])


def _side(x: Array) -> Array:
    return jnp.where(x >= 0, 1.0, -1.0)


def _clip(ref: _Frame, inc: _Frame, placeholder: Array) -> _Points:
    """The contact patch of a reference face and an incident face (24 candidates).

    Seen along the reference normal n, the patch is the incident face clipped by the
    reference rectangle (Sutherland–Hodgman); its vertices are among: the incident
    corners within the rectangle (4); the rectangle's corners within the incident
    face, lifted onto it along n (4); and the crossings of the incident edges with the
    rectangle's sides (16). Each candidate is a point x on the incident face; its
    depth is its height (x − c)·n above the reference face (negative: penetrating),
    its contact point midway, x − ½ depth n. Candidates that are not vertices of the
    patch, or repeat an earlier one (within 1e-7 of the boxes' size; 1e-5 in float32), get
    `placeholder` (> 0). The rectangles and the edges' parameter ranges are closed with
    a round-off margin: where edges align (boxes of one size stacked), a vertex lies on
    a side exactly, and a strict test let round-off drop it, differently in
    `jax.checkpoint`'s recomputation; with the margin it is found (once, after the
    de-duplication), however the last bit falls."""
    n = ref.normal
    scale = jnp.sum(ref.half) + jnp.sum(inc.half)
    tol = round_off(n.dtype)  # in coordinates and t (relative)
    ref_half, inc_half = ref.half + tol * scale, inc.half + tol * scale
    signs = jnp.asarray([[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]], n.dtype)
    x0 = inc.centre[None] + (signs * inc.half[None]) @ inc.axes  # corners, in cycle
    x1 = jnp.roll(x0, -1, axis=0)
    c0 = (x0 - ref.centre[None]) @ ref.axes.T  # (4, 2), in the reference face's frame
    c1 = (x1 - ref.centre[None]) @ ref.axes.T
    corner_ok = jnp.all(jnp.abs(c0) <= ref_half[None], axis=-1)
    rc = ref.centre[None] + (signs * ref.half[None]) @ ref.axes
    lift = ((inc.centre[None] - rc) @ inc.normal) / (n @ inc.normal)  # |n·inc| ≥ 1/√3
    xr = rc + lift[:, None] * n[None]
    ref_ok = jnp.all(jnp.abs((xr - inc.centre[None]) @ inc.axes.T) <= inc_half[None], axis=-1)
    # crossings with the side lines (coordinate j = ±half[j], the other one bounded)
    line = jnp.asarray([1.0, -1.0], n.dtype)[None, :, None] * ref.half[:, None, None]
    a0, da = c0.T, (c1 - c0).T  # (2, 4)
    ok = jnp.abs(da) > 1e-12 * (jnp.abs(a0) + jnp.abs(c1.T) + ref.half[:, None])
    t = (line - a0[:, None]) / jnp.where(ok, da, 1.0)[:, None]  # (2 coords, 2 sides, 4)
    other = a0[::-1, None] + t * da[::-1, None]
    cross_ok = ok[:, None] & (t >= -tol) & (t <= 1 + tol)
    cross_ok = cross_ok & (jnp.abs(other) <= ref_half[::-1, None, None])
    t = jnp.where(cross_ok, jnp.clip(t, 0.0, 1.0), 0.0).reshape(16)
    edge_of = jnp.tile(jnp.arange(4), 4)
    xc = x0[edge_of] + t[:, None] * (x1 - x0)[edge_of]
    x = jnp.concatenate([x0, xr, xc])
    valid = jnp.concatenate([corner_ok, ref_ok, cross_ok.reshape(16)])
    # A vertex found twice (a crossing at a corner: faces whose edges meet or align)
    # is kept once, so that coincident faces are not twice as stiff.
    scale2 = jnp.sum(ref.half**2) + jnp.sum(inc.half**2)
    gap2 = jnp.sum((x[:, None] - x[None]) ** 2, axis=-1)
    earlier = jnp.tril(jnp.ones((24, 24), bool), -1)
    same = (1e-14 if n.dtype == jnp.float64 else 1e-10) * scale2  # MuJoCo's tolerances
    valid = valid & ~jnp.any(earlier & valid[None] & (gap2 <= same), axis=1)
    depth = (x - ref.centre[None]) @ n
    point = x - 0.5 * depth[:, None] * n[None]
    return _Points(jnp.where(valid, depth, placeholder), jnp.broadcast_to(n, x.shape), point)


def _box_box(sa, ra, pa, sb, rb, pb) -> _Points:
    """Two boxes (25 points): the separating-axis test, then either a clipped face
    patch (24 candidates) or one edge–edge point, as MuJoCo's box–box collision (its
    contact sets are reproduced to 1e-12 in the tests).

    Along a unit axis L the boxes overlap by r_a + r_b − |L·(p_b − p_a)|, with
    r = Σₖ hₖ |L·eₖ|. The 15 candidate axes are the six face normals and the nine edge
    axes aᵢ × bⱼ (nearly parallel pairs skipped); the least overlap wins, with two
    preferences for faces (a face patch holds a body better than one edge point):
    an edge axis must overlap less by a relative 1e-6, and one within ~8° of the best
    face normal (|cos| > 0.99) by 5% of the face's overlap (ODE's margin).
    - A face axis: the reference face is that face, its normal n toward the other
      box; the incident face is the other box's face most opposed to n; the patch is
      the incident face clipped by the reference face (`_clip`).
    - An edge axis (normal n oriented a → b): one point, midway between the closest
      points of the two edges that lie deepest along n; depth the overlap.
    Inactive candidates get a positive placeholder distance.
    """
    ha, hb = sa.half_extents, sb.half_extents
    d = pb - pa
    axes = cross(ra.T[:, None, :], rb.T[None, :, :]).reshape(9, 3)  # (i, j) ↦ aᵢ × bⱼ
    ok = jnp.sum(axes**2, axis=-1) > 1e-12
    _, unit = _unit(jnp.where(ok[:, None], axes, ra.T[np.arange(9) // 3]), ra.T[0])
    unit = unit * _side(unit @ d)[:, None]  # oriented a → b

    def overlap(axis: Array) -> Array:  # axis (K, 3), unit
        return jnp.abs(axis @ ra) @ ha + jnp.abs(axis @ rb) @ hb - jnp.abs(axis @ d)

    normals = jnp.concatenate([ra.T, rb.T])
    faces = overlap(normals)
    edges = jnp.where(ok, overlap(unit), jnp.inf)
    f, e = jnp.argmin(faces), jnp.argmin(edges)
    best_face, edge = faces[f], edges[e]
    n = unit[e]
    aliased = jnp.abs(n @ normals[f]) > 0.99
    edge_chosen = (edge + 1e-6 * jnp.abs(edge) < best_face) & ~(
        aliased & (edge >= best_face - 0.05 * jnp.abs(best_face))
    )
    placeholder = jnp.sum(ha) + jnp.sum(hb) + jnp.maximum(-jnp.minimum(best_face, edge), 0.0)

    # Face: box r (a if f < 3) holds the reference face.
    k, on_a = f % 3, f < 3
    rr, pr, hr = (jnp.where(on_a, x, y) for x, y in ((ra, rb), (pa, pb), (ha, hb)))
    ri, pi, hi = (jnp.where(on_a, y, x) for x, y in ((ra, rb), (pa, pb), (ha, hb)))
    ref = _face(rr, pr, hr, k, _side(rr[:, k] @ (pi - pr)))
    dots = ref.normal @ ri
    m = jnp.argmax(jnp.abs(dots))
    patch = _clip(ref, _face(ri, pi, hi, m, -_side(dots[m])), placeholder)
    patch_n = patch.normal * jnp.where(on_a, 1.0, -1.0)  # a → b

    # Edge: the edges deepest along n, a's toward b, b's toward a.
    i, j = e // 3, e % 3
    sa_ = _side(n @ ra) * ha
    sb_ = _side(n @ rb) * hb
    ea, eb = ra[:, i], rb[:, j]
    ca = pa + ra @ sa_ - sa_[i] * ea
    cb = pb - rb @ sb_ + sb_[j] * eb
    qa, qb = _segments_closest(ca - ha[i] * ea, ca + ha[i] * ea, cb - hb[j] * eb, cb + hb[j] * eb)

    dist = jnp.concatenate(
        [
            jnp.where(edge_chosen, placeholder, patch.dist),
            jnp.where(edge_chosen, -edge, placeholder)[None],
        ]
    )
    return _Points(
        dist,
        jnp.concatenate([patch_n, n[None]]),
        jnp.concatenate([patch.point, (0.5 * (qa + qb))[None]]),
    )


def _plane_convex(sa, ra, pa, sb, rb, pb) -> _Points:
    """Plane–ellipsoid (1 point), as MuJoCo's `mjc_PlaneConvex`: the shape's support
    point against the plane's normal, exactly."""
    n = ra[:, 2]
    return _plane_points(ra, pa, (rb @ sb.support(-(rb.T @ n)) + pb)[None], 0.0)


# MuJoCo's `mjc_PlaneConvex` for a mesh: at most this many contacts.
PLANE_MESH_CONTACTS = 4


def _plane_mesh(sa, ra, pa, sb, rb, pb, margin=0.0) -> _Points:
    """Plane–mesh (4 points), as MuJoCo's `mjc_PlaneConvex`: the support vertex against
    the plane's normal, then the other corners of the hull face there most opposed to
    the normal (at most a quadrilateral: `ConvexMesh.face_corners`) that lie below the
    plane's `margin` and below the mesh's centre. Points not taken get a positive
    placeholder distance."""
    n = ra[:, 2]
    v = sb.vertices
    local = rb.T @ n
    best = sb.support_index(-local)
    ids, exists = sb.face_corners(best, local)
    pts = jnp.concatenate([v[best][None], v[ids]]) @ rb.T + pb[None]
    p = _plane_points(ra, pa, pts, 0.0)
    below_centre = (pts - pb[None]) @ n <= 0
    ok = jnp.concatenate([jnp.asarray([True]), exists & (p.dist[1:] <= margin) & below_centre[1:]])
    placeholder = jnp.abs(p.dist) + 2 * jax.lax.stop_gradient(sb.bounding_radius())
    return _Points(jnp.where(ok, p.dist, placeholder), p.normal, p.point)


def _convex(sa, ra, pa, sb, rb, pb) -> _Points:
    """One point from the general convex collision (GJK and EPA, `_convex.py`), as
    MuJoCo's `mjc_Convex` for pairs with a sphere or an ellipsoid."""
    c = convex_contact(sa, ra, pa, sb, rb, pb)
    return _Points(c.dist[None], c.normal[None], c.point[None])


def _polytopes(sa, ra, pa, sb, rb, pb, margin=0.0) -> _Points:
    """Box–mesh, mesh–mesh, capsule–mesh, capsule–cylinder and cylinder–cylinder (5
    points), as MuJoCo 4's `mjc_Convex` with its native convex collision: the general
    convex contact, or, where MuJoCo's `multicontact` finds aligned faces (or an edge
    in a face), up to four points of the one clipped by the other, each with its own
    depth, those within the `margin` (`_polyclip.polytope_contacts`)."""
    return _Points(*polytope_contacts(sa, ra, pa, sb, rb, pb, margin))


def _polytopes_swapped(sa, ra, pa, sb, rb, pb, margin=0.0) -> _Points:
    """`_polytopes` with b as MuJoCo's first geom (a box against a cylinder: MuJoCo's
    geom order puts the cylinder first, and the clipping rule follows that order)."""
    dist, normal, point = polytope_contacts(sb, rb, pb, sa, ra, pa, margin)
    return _Points(dist, -normal, point)


def _hfield(sa, ra, pa, sb, rb, pb) -> _Points:
    """2 window² points per pair, batched over the pairs (`BATCHED`): convex shapes
    against the prisms of a height field's cells under them (`_hfield.hfield_points`),
    each by the general convex collision, as MuJoCo's `mjc_ConvexHField`."""
    return _Points(*hfield_points(sa, ra, pa, sb, rb, pb, convex_contact))


# Collision functions that take a batch of pairs themselves (the others are vmapped).
BATCHED = {_hfield}
# Collision functions whose points depend on the pair's margin (a last argument): as
# MuJoCo's, they keep the face corners or clipped points within it.
WITH_MARGIN = {_plane_mesh, _capsule_box, _polytopes, _polytopes_swapped}


# Pair kinds: the first shape type sorts first in this order.
_ORDER = (Plane, HeightField, Sphere, Capsule, Ellipsoid, Box, Cylinder, ConvexMesh)
# Pair kinds without a collision function in MuJoCo either (no contacts, no error).
NEVER_COLLIDE = {(Plane, Plane), (Plane, HeightField), (HeightField, HeightField)}
# Points per pair set by the first shape (None in `_COLLIDE`): a height field's window.
_HFIELD_CONVEX = (Sphere, Capsule, Ellipsoid, Cylinder)
_COLLIDE: dict[tuple[type, type], tuple[Callable, int | None]] = {
    (Plane, Sphere): (_plane_sphere, 1),
    (Plane, Capsule): (_plane_capsule, 2),
    (Plane, Box): (_plane_box, 8),
    (Plane, Cylinder): (_plane_cylinder, 6),
    (Sphere, Sphere): (_sphere_sphere, 1),
    (Sphere, Capsule): (_sphere_capsule, 1),
    (Capsule, Capsule): (_capsule_capsule, 3),
    (Sphere, Box): (_sphere_box, 1),
    (Capsule, Box): (_capsule_box, 2),
    (Sphere, Cylinder): (_sphere_cylinder, 1),
    (Box, Box): (_box_box, 25),
    (Plane, Ellipsoid): (_plane_convex, 1),
    (Sphere, Ellipsoid): (_convex, 1),
    (Capsule, Ellipsoid): (_convex, 1),
    (Ellipsoid, Ellipsoid): (_convex, 1),
    (Ellipsoid, Box): (_convex, 1),
    (Ellipsoid, Cylinder): (_convex, 1),
    (Capsule, Cylinder): (_polytopes, 1 + CLIP_CONTACTS),
    (Box, Cylinder): (_polytopes_swapped, 1 + CLIP_CONTACTS),
    (Cylinder, Cylinder): (_polytopes, 1 + CLIP_CONTACTS),
    **{(HeightField, kind): (_hfield, None) for kind in _HFIELD_CONVEX},
    # meshes, as MuJoCo's table: mjc_PlaneConvex, mjc_Convex with a sphere or an
    # ellipsoid (one point), with a capsule, a box, a cylinder or a mesh
    # (multicontact's clipped polygons; a cylinder with a warning, `RIM_PAIRS`).
    (Plane, ConvexMesh): (_plane_mesh, PLANE_MESH_CONTACTS),
    (Sphere, ConvexMesh): (_convex, 1),
    (Ellipsoid, ConvexMesh): (_convex, 1),
    (Box, ConvexMesh): (_polytopes, 1 + CLIP_CONTACTS),
    (ConvexMesh, ConvexMesh): (_polytopes, 1 + CLIP_CONTACTS),
    (Capsule, ConvexMesh): (_polytopes, 1 + CLIP_CONTACTS),
    (Cylinder, ConvexMesh): (_polytopes, 1 + CLIP_CONTACTS),
}
# Pairs whose contacts on a cylinder's rim MuJoCo 4 chooses by its EPA's normal (to
# its tolerance): a mesh's corner or edge there can be clipped as an edge (two points)
# where sciad, with the exact normal, finds one (`check_pairs` warns).
RIM_PAIRS = {(Cylinder, ConvexMesh)}
# The new pairs' distances are exact apart (the plane's support point; GJK to a
# duality gap of 1e-13 of the shapes' size), so a margin acts as in MuJoCo; a plane
# and a mesh keep the face corners within it, as MuJoCo's (measured to round-off).
_CONVEX_EXACT_APART = {
    k for k, (fn, _) in _COLLIDE.items() if fn in (_plane_convex, _convex, _plane_mesh)
}
# Pairs clipped as MuJoCo 4 clips them (`polytope_contacts`), within the margin too.
CLIPPED = {k for k, (fn, _) in _COLLIDE.items() if fn in (_polytopes, _polytopes_swapped)}


def points_per_pair(kinds: tuple[type, type], first: AbstractShape) -> tuple[Callable, int]:
    """The collision function of a pair kind and its points per pair (static): the
    table's, or, against a height field `first`, 2 window²."""
    fn, k = _COLLIDE[kinds]
    return fn, 2 * first.window**2 if k is None else k  # pyright: ignore


def _kind(shape: AbstractShape) -> type:
    for t in _ORDER:
        if isinstance(shape, t):
            return t
    raise TypeError(f"no collision support for shape {type(shape).__name__}.")

"""General convex–convex collision from support points: GJK for the distance of
separated shapes and EPA for the depth of penetrating ones, as bounded `while` loops
that stop when converged (jit and vmap).

The signed distance of two convex shapes A and B is max over unit n of
min_{b ∈ B} n·b − max_{a ∈ A} n·a: the distance of the Minkowski difference A − B from
the origin when it lies outside (GJK: Gilbert, Johnson and Keerthi, IEEE J. Robot.
Autom. 4, 1988), minus the distance of the origin from its boundary when it lies inside
(EPA: van den Bergen, *Proximity queries and penetration depth computation on 3D game
objects*, GDC 2001). The search runs without gradients; the result is then re-expressed
through the witness points fixed in the shapes' frames, so that the distance has the
exact derivative of a signed distance (Danskin's theorem: the optimal direction is
stationary) and the normal the implicit derivative of the optimality condition
(the witness points' difference is along the normal), wherever one shape is curved
there.
"""

import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array
import numpy as np

from .._core._geometry import cross
from .._core._linalg import sequential_pinv, small_det, small_solve
from ._hfield import Prism
from ._mesh import ConvexMesh
from ._shapes import AbstractShape, Box, Capsule, Cylinder, Sphere

# Iteration limits. GJK and EPA stop when converged (`lax.while_loop`; under `vmap`
# when every pair has, finished pairs frozen). MuJoCo's `ccd_iterations` is 35 with
# `ccd_tolerance` 1e-6; these reach 1e-13 and 1e-10 (× the shapes' size).
GJK_ITERATIONS = 64
EPA_ITERATIONS = 48
_POLISH_STEPS = 4  # Newton steps on the normal after EPA
# Relative tolerances (× the shapes' size): GJK's duality gap, the norm below which the
# origin is taken to lie in the simplex, and EPA's bound gap.
_GJK_TOL, _TOUCH_TOL, _EPA_TOL = 1e-13, 1e-12, 1e-10
# shapes with flat faces (a cylinder's caps), and how many of them, most facing the
# normal, `_polish` tries as the normal
_FLAT = (Box, ConvexMesh, Prism, Cylinder)
_FACES = 8


class _Part(NamedTuple):
    """One shape of a pair: its core (the shape less a rounding ball: a sphere's centre,
    a capsule's axis segment, else the shape itself), the rounding radius and pose."""

    shape: AbstractShape
    radius: Array
    rot: Array
    pos: Array


def _part(shape: AbstractShape, rot: Array, pos: Array) -> _Part:
    if isinstance(shape, (Sphere, Capsule)):
        return _Part(shape, shape.radius, rot, pos)
    return _Part(shape, jnp.zeros((), pos.dtype), rot, pos)


def _core_support(p: _Part, local: Array) -> Array:
    """The core's support point for a unit direction in the shape's frame."""
    if isinstance(p.shape, Sphere):
        return jnp.zeros_like(local)
    if isinstance(p.shape, Capsule):
        return (
            jnp.zeros_like(local)
            .at[2]
            .set(jnp.where(local[2] >= 0, 1.0, -1.0) * p.shape.half_length)
        )
    return p.shape.support(local)


def _core_jacobian(p: _Part, local: Array, point: Array) -> Array:
    if isinstance(p.shape, (Sphere, Capsule)):
        return jnp.zeros((3, 3), local.dtype)
    return p.shape.support_jacobian(local, point)


def _world_support(p: _Part, d: Array) -> Array:
    """The core's support point in the world for a world direction d."""
    return p.rot @ _core_support(p, p.rot.T @ d) + p.pos


def _support(pa: _Part, pb: _Part, d: Array) -> tuple[Array, Array]:
    """World support points of the cores: a = s_A(d), b = s_B(−d)."""
    return _world_support(pa, d), _world_support(pb, -d)


def _normalise(v: Array, fallback: Array) -> Array:
    n2 = jnp.sum(v**2)
    ok = n2 > 0
    return jnp.where(ok, v / jnp.sqrt(jnp.where(ok, n2, 1.0)), fallback)


# The 15 faces of a tetrahedron's simplex (vertex subsets), largest first.
_SUBSETS = [s for k in (4, 3, 2, 1) for s in itertools.combinations(range(4), k)]


def _closest_on_simplex(w: Array, used: Array, scale: Array) -> tuple[Array, Array]:
    """Barycentric coordinates (4,) of the point of the simplex `w[used]` nearest the
    origin (Johnson's sub-algorithm by enumeration: the affine projection onto every
    face, kept where its coordinates are non-negative; the nearest wins) and that point's
    squared norm."""
    best_l = jnp.zeros(4, w.dtype)
    best_d = jnp.asarray(jnp.inf, w.dtype)
    for s in _SUBSETS:
        idx = np.asarray(s)
        p0, e = w[idx[0]], w[idx[1:]] - w[idx[0]][None]
        ok = jnp.all(used[idx])
        if len(s) == 1:
            lam = jnp.ones(1, w.dtype)
        else:
            gram = e @ e.T
            det = small_det(gram)
            size = jnp.prod(jnp.diag(gram))
            ok = ok & (det > 1e-20 * size) & (size > 1e-30 * scale ** (2 * len(e)))
            mu = small_solve(jnp.where(ok, gram, jnp.eye(len(e), dtype=w.dtype)), -e @ p0)
            lam = jnp.concatenate([1 - jnp.sum(mu, keepdims=True), mu])
            ok = ok & jnp.all(lam >= 0)
        x = lam @ w[idx]
        d2 = jnp.sum(x**2)
        better = ok & (d2 < best_d)
        best_l = jnp.where(better, jnp.zeros(4, w.dtype).at[idx].set(lam), best_l)
        best_d = jnp.where(better, d2, best_d)
    return best_l, best_d


class _Simplex(NamedTuple):
    w: Array  # (4, 3) vertices of A − B
    a: Array  # (4, 3) their points on A
    b: Array  # (4, 3) their points on B
    lam: Array  # (4,) barycentric coordinates of the nearest point; 0: unused
    done: Array


def _gjk(pa: _Part, pb: _Part, scale: Array) -> _Simplex:
    """GJK from the centres' difference; stops (the state frozen) at a duality gap below
    `_GJK_TOL`, or when the origin lies in the simplex."""
    dtype = pa.pos.dtype
    ex = jnp.asarray([1.0, 0.0, 0.0], dtype)
    v0 = pa.pos - pb.pos
    v0 = jnp.where(jnp.sum(v0**2) > 0, v0, ex * scale)
    a0, b0 = _support(pa, pb, _normalise(-v0, ex))
    zero = jnp.zeros((4, 3), dtype)
    init = _Simplex(
        zero.at[0].set(a0 - b0),
        zero.at[0].set(a0),
        zero.at[0].set(b0),
        jnp.zeros(4, dtype).at[0].set(1.0),
        jnp.asarray(False),
    )

    def body(carry: tuple[Array, _Simplex]) -> tuple[Array, _Simplex]:
        it, s = carry
        v = s.lam @ s.w
        nv2 = jnp.sum(v**2)
        inside = nv2 <= (_TOUCH_TOL * scale) ** 2
        a, b = _support(pa, pb, _normalise(-v, ex))
        w = a - b
        converged = jnp.dot(v, v - w) <= _GJK_TOL * scale * jnp.sqrt(nv2)
        done = s.done | inside | converged | jnp.all(s.lam > 0)
        slot = jnp.argmin(s.lam > 0)  # a free slot
        used = (s.lam > 0).at[slot].set(True)
        ws, as_, bs = s.w.at[slot].set(w), s.a.at[slot].set(a), s.b.at[slot].set(b)
        lam, _ = _closest_on_simplex(ws, used, scale)
        new = _Simplex(ws, as_, bs, lam, done)
        kept = jax.tree.map(lambda old, nw: jnp.where(done, old, nw), s, new)
        return it + 1, kept._replace(done=done)

    def cond(carry: tuple[Array, _Simplex]) -> Array:
        it, s = carry
        return ~s.done & (it < GJK_ITERATIONS)

    return jax.lax.while_loop(cond, body, (jnp.asarray(0), init))[1]


class _Result(NamedTuple):
    dist: Array  # signed distance of the cores
    normal: Array  # unit, A → B
    a: Array  # witness point on A's core (world)
    b: Array  # witness point on B's core (world)


def _tetrahedron(pa: _Part, pb: _Part, s: _Simplex, scale: Array) -> tuple[Array, Array, Array]:
    """GJK's final simplex (which holds the origin) completed to a tetrahedron with
    support points off its affine hull: vertices (4, 3) of A − B and of A and B."""
    order = jnp.argsort(~(s.lam > 0), stable=True)
    w, a, b = s.w[order], s.a[order], s.b[order]
    count = jnp.sum(s.lam > 0)
    dtype = w.dtype
    axes = jnp.eye(3, dtype=dtype)
    for k in (1, 2, 3):
        e1 = w[1] - w[0]
        e_axis = axes[jnp.argmin(jnp.abs(e1))]
        d = jnp.where(
            k == 1,
            axes[0],
            jnp.where(k == 2, cross(e1, e_axis), cross(e1, w[2] - w[0])),
        )
        d = _normalise(d, axes[2])
        ap, bp = _support(pa, pb, d)
        am, bm = _support(pa, pb, -d)
        plus = jnp.abs(jnp.dot(d, ap - bp - w[0])) >= jnp.abs(jnp.dot(d, am - bm - w[0]))
        an, bn = jnp.where(plus, ap, am), jnp.where(plus, bp, bm)
        grow = count == k
        w = jnp.where(grow, w.at[k].set(an - bn), w)
        a = jnp.where(grow, a.at[k].set(an), a)
        b = jnp.where(grow, b.at[k].set(bn), b)
        count = jnp.where(grow, k + 1, count)
    return w, a, b


def _face_plane(w: Array, idx: Array, scale: Array) -> tuple[Array, Array]:
    """Outward unit normals and distances from the origin of faces `idx` (F, 3)."""
    p0, p1, p2 = w[idx[:, 0]], w[idx[:, 1]], w[idx[:, 2]]
    n = cross(p1 - p0, p2 - p0)
    n2 = jnp.sum(n**2, axis=-1)
    ok = n2 > (1e-30 * scale**4)
    n = n / jnp.sqrt(jnp.where(ok, n2, 1.0))[:, None]
    return n, jnp.where(ok, jnp.sum(n * p0, axis=-1), jnp.inf)


def _epa(pa: _Part, pb: _Part, s: _Simplex, scale: Array, skip: Array) -> _Result:
    """EPA from GJK's simplex: the polytope's face nearest the origin is pushed out to
    the support point along its normal until the bound gap is below `_EPA_TOL`. With
    `skip` (the shapes apart) it takes no step; its result is then not used."""
    w4, a4, b4 = _tetrahedron(pa, pb, s, scale)
    dtype = w4.dtype
    n_vert = 4 + EPA_ITERATIONS
    n_face = 2 * n_vert - 4
    w = jnp.zeros((n_vert, 3), dtype).at[:4].set(w4)
    a = jnp.zeros((n_vert, 3), dtype).at[:4].set(a4)
    b = jnp.zeros((n_vert, 3), dtype).at[:4].set(b4)
    faces = np.array([[0, 1, 2], [0, 3, 1], [0, 2, 3], [1, 3, 2]])
    idx4 = jnp.asarray(faces)
    centre = jnp.mean(w4, axis=0)
    n4 = cross(w4[faces[:, 1]] - w4[faces[:, 0]], w4[faces[:, 2]] - w4[faces[:, 0]])
    flip = jnp.sum(n4 * (w4[faces[:, 0]] - centre[None]), axis=-1) < 0
    idx4 = jnp.where(flip[:, None], idx4[:, jnp.asarray([0, 2, 1])], idx4)
    idx = jnp.zeros((n_face, 3), jnp.int32).at[:4].set(idx4.astype(jnp.int32))
    valid = jnp.zeros(n_face, bool).at[:4].set(True)
    normal, dist = _face_plane(w, idx, scale)
    tol = _EPA_TOL * scale

    def body(carry):
        i, state = carry
        w, a, b, idx, valid, normal, dist, done, best = state
        f = jnp.argmin(jnp.where(valid, dist, jnp.inf))
        n, lower = normal[f], dist[f]
        an, bn = _support(pa, pb, n)
        wn = an - bn
        converged = jnp.dot(wn, n) - lower <= tol
        stop = done | converged
        best = jnp.where(done, best, f)
        v = 4 + i
        visible = valid & (jnp.sum(normal * (wn[None] - w[idx[:, 0]]), axis=-1) > tol)
        visible = visible.at[f].set(True)
        start, end = idx.reshape(-1), jnp.roll(idx, -1, axis=1).reshape(-1)
        vis_e = jnp.repeat(visible, 3)
        reverse = (start[None, :] == end[:, None]) & (end[None, :] == start[:, None])
        horizon = vis_e & ~jnp.any(reverse & vis_e[None, :], axis=1)
        # The visible faces must form a disc: its rim has F + 2 − 2I edges (F faces, I
        # vertices inside it); where round-off breaks that near convergence, stop on
        # this polytope.
        touched = jnp.zeros(n_vert, bool).at[start].max(vis_e)
        rim = jnp.zeros(n_vert, bool).at[start].max(horizon)
        inner = jnp.sum(touched & ~rim)
        stop = stop | (jnp.sum(horizon) != jnp.sum(visible) + 2 - 2 * inner)
        kept = valid & ~visible
        free = jnp.nonzero(~kept, size=n_face, fill_value=n_face)[0]
        rank = jnp.cumsum(horizon) - 1
        slot = jnp.where(horizon, free[jnp.clip(rank, 0, n_face - 1)], n_face)
        new = jnp.stack([start, end, jnp.full_like(start, v)], axis=-1)
        idx2 = idx.at[slot].set(new, mode="drop")
        valid2 = kept.at[slot].set(True, mode="drop")
        w2, a2, b2 = w.at[v].set(wn), a.at[v].set(an), b.at[v].set(bn)
        normal2, dist2 = _face_plane(w2, idx2, scale)
        new_state = (w2, a2, b2, idx2, valid2, normal2, dist2, stop, best)
        old_state = (w, a, b, idx, valid, normal, dist, stop, best)
        return i + 1, jax.tree.map(lambda o, nw: jnp.where(stop, o, nw), old_state, new_state)

    def cond(carry):
        i, (*_, done, _best) = carry
        return ~done & (i < EPA_ITERATIONS)

    state = (w, a, b, idx, valid, normal, dist, skip, jnp.asarray(0))
    _, (w, a, b, idx, valid, normal, dist, done, best) = jax.lax.while_loop(
        cond, body, (jnp.asarray(0), state)
    )
    f = jnp.where(done, best, jnp.argmin(jnp.where(valid, dist, jnp.inf)))
    n, depth = normal[f], dist[f]
    tri = idx[f]
    p = depth * n  # the origin's projection on the face
    p0, p1, p2 = w[tri[0]], w[tri[1]], w[tri[2]]
    area = jnp.stack(
        [
            jnp.dot(cross(p1 - p, p2 - p), n),
            jnp.dot(cross(p2 - p, p0 - p), n),
            jnp.dot(cross(p0 - p, p1 - p), n),
        ]
    )
    lam = area / jnp.sum(area)
    return _Result(-depth, n, lam @ a[tri], lam @ b[tri])


def _curvature(p: _Part, d: Array, x: Array) -> Array:
    """d(support of the core)/d(direction) in the world at the unit direction d, the
    witness point x."""
    local = p.rot.T @ d
    return p.rot @ _core_jacobian(p, local, p.rot.T @ (x - p.pos)) @ p.rot.T


def _onto_core(p: _Part, local: Array) -> Array:
    """A point of the core's surface slid along its flat directions, clipped back onto
    the flat part (shape frame)."""
    if isinstance(p.shape, Capsule):
        h = p.shape.half_length
        return local.at[2].set(jnp.clip(local[2], -h, h))
    if isinstance(p.shape, Box):
        return jnp.clip(local, -p.shape.half_extents, p.shape.half_extents)
    if isinstance(p.shape, Cylinder):
        h, r = p.shape.half_length, p.shape.radius
        rho2 = local[0] ** 2 + local[1] ** 2
        shrink = jnp.where(rho2 > r**2, r / jnp.sqrt(jnp.maximum(rho2, r**2)), 1.0)
        return jnp.stack([local[0] * shrink, local[1] * shrink, jnp.clip(local[2], -h, h)])
    return local


def _newton(pa: _Part, pb: _Part, r: _Result) -> tuple[Array, Array, Array, Array]:
    """One Newton step of the optimality conditions from `r`: Tᵀ(x_A − x_B + Σλe) = 0
    and e·n = 0 for every flat direction e of either core at its witness point (T the
    tangents of n, x the surface points). Returns the step u (2,), the slides λ (6,),
    and the flat directions (6, 3) (world) and which apply (6,)."""
    n = r.normal
    t = _tangents(n)
    eye = jnp.eye(3, dtype=n.dtype)

    def feature(p: _Part, x: Array, d: Array) -> tuple[Array, Array, Array]:
        local = p.rot.T @ (x - p.pos)
        jac = p.rot @ _core_jacobian(p, p.rot.T @ d, local) @ p.rot.T
        flat, on = _flat_directions(p, local)
        return jac + p.radius * (eye - jnp.outer(d, d)), flat @ p.rot.T, on

    ka, ea, on_a = feature(pa, r.a, n)
    kb, eb, on_b = feature(pb, r.b, -n)
    # the tangent basis turns against x_A − x_B = −φ n (φ the shapes' distance)
    phi = r.dist - pa.radius - pb.radius
    hess = t @ (ka + kb) @ t.T + phi * jnp.eye(2, dtype=n.dtype)
    e = jnp.concatenate([ea, eb])
    on = jnp.concatenate([on_a, on_b])
    sign = jnp.concatenate([jnp.ones(3), -jnp.ones(3)]).astype(n.dtype)
    te = t @ e.T  # (2, 6)
    m = jnp.zeros((8, 8), n.dtype)
    m = m.at[:2, :2].set(hess).at[:2, 2:].set(jnp.where(on[None], te * sign[None], 0.0))
    m = m.at[2:, :2].set(jnp.where(on[:, None], te.T, 0.0))
    m = m.at[2:, 2:].set(jnp.diag(jnp.where(on, 0.0, 1.0)))
    rhs = jnp.concatenate([t @ (r.a - r.b), jnp.where(on, e @ n, 0.0)])
    z = -sequential_pinv(m, 1e-10) @ rhs
    return z[:2], jnp.where(on, z[2:], 0.0), e, on


def _polish(pa: _Part, pb: _Part, r: _Result) -> _Result:
    """Newton steps (`_newton`) on the direction after GJK or EPA (EPA's polytope
    approaches a curved surface slowly, and both leave the normal accurate to about the
    square root of their tolerance); each is kept only where it does not lower the
    separation along n,
    min_B n·b − max_A n·a (a flat face, found exactly, refuses them). The witness
    points move to the support points, or, on a flat part, slide along it.

    A cylinder's witness from GJK, a mix of points on its rim, lies on a chord inside
    the rim, so it reads as a point of the flat cap though the rim supports it (GJK
    stopped short: Baxter's arm against its base). Each step therefore also tries the
    cylinder's witness at its support point, where the cap is flat only if it
    supports, and keeps the better of the two.

    Where two flat faces lie flush, GJK stalls short of the distance and a Newton step
    cannot reach the kink of the separation's maximum (two hulls 6e-11 m apart read
    as 3e-8 m deep: the base and shoulder of robosuite's UR5e). Each step therefore
    also tries as the normal each flat shape's `_FACES` faces most facing it (a mesh's
    hull triangles: its polygons may merge triangles 0.01 rad apart), whose separation
    is exact where a vertex, an edge or a face of the other shape rests on the face."""

    def gap(n: Array) -> Array:
        a, b = _support(pa, pb, n)
        return jnp.dot(n, b - a)

    def moved(p: _Part, x: Array, slide: Array, on: Array, d: Array) -> Array:
        local = _onto_core(p, p.rot.T @ (x + slide - p.pos))
        return jnp.where(jnp.any(on), p.rot @ local + p.pos, _world_support(p, d))

    def refresh(p: _Part, x: Array, d: Array) -> Array:
        """The support point where the core is curved at x; x on a flat part."""
        _, on = _flat_directions(p, p.rot.T @ (x - p.pos))
        return jnp.where(jnp.any(on), x, _world_support(p, d))

    def trial(r: _Result) -> _Result:
        u, lam, e, on = _newton(pa, pb, r)
        n = _normalise(r.normal + u @ _tangents(r.normal), r.normal)
        a = moved(pa, r.a, lam[:3] @ e[:3], on[:3], n)
        b = moved(pb, r.b, lam[3:] @ e[3:], on[3:], -n)
        return _Result(gap(n), n, a, b)

    def face(p: _Part, d: Array, on_a: bool) -> _Result:
        """The best normal among the `_FACES` faces of p's core most facing d (A's
        faces as they are, B's reversed, from A to B), with the other core's support
        point and its projection onto the face as the witnesses."""
        normals = _face_normals(p.shape)
        real = jnp.any(normals != 0, axis=1)  # a padded mesh's extra facets are zero
        score = jnp.where(real, normals @ (p.rot.T @ d), -jnp.inf)
        _, idx = jax.lax.top_k(score, min(_FACES, normals.shape[0]))
        m = normals[idx] @ p.rot.T * (1.0 if on_a else -1.0)
        g = jnp.where(real[idx], jax.vmap(gap)(m), -jnp.inf)
        m, g = m[jnp.argmax(g)], jnp.max(g)
        if on_a:
            b = _world_support(pb, -m)
            return _Result(g, m, b - g * m, b)
        a = _world_support(pa, m)
        return _Result(g, m, a, a + g * m)

    def best(x: _Result, y: _Result) -> _Result:
        return jax.tree.map(lambda u, v: jnp.where(x.dist > y.dist, u, v), x, y)

    def step(_, r: _Result) -> _Result:
        n = r.normal
        r = r._replace(a=refresh(pa, r.a, n), b=refresh(pb, r.b, -n), dist=gap(n))
        new = trial(r)
        if isinstance(pa.shape, Cylinder) or isinstance(pb.shape, Cylinder):
            at_a = _world_support(pa, n) if isinstance(pa.shape, Cylinder) else r.a
            at_b = _world_support(pb, -n) if isinstance(pb.shape, Cylinder) else r.b
            new = best(trial(r._replace(a=at_a, b=at_b)), new)
        if isinstance(pa.shape, _FLAT):
            new = best(face(pa, n, True), new)
        if isinstance(pb.shape, _FLAT):
            new = best(face(pb, -n, False), new)
        # not lower, within round-off: the last steps set the normal, the gap's
        # maximum being flat to second order
        better = jnp.isfinite(new.dist) & (new.dist >= r.dist - 1e-15 * jnp.abs(r.dist))
        return jax.tree.map(lambda x, y: jnp.where(better, x, y), new, r)

    return jax.lax.fori_loop(0, _POLISH_STEPS, step, r)


def _solve(pa: _Part, pb: _Part, scale: Array) -> _Result:
    """The cores' signed distance, normal and witness points (no gradients)."""
    s = _gjk(pa, pb, scale)
    v = s.lam @ s.w
    nv2 = jnp.sum(v**2)
    apart = (nv2 > (_TOUCH_TOL * scale) ** 2) & ~jnp.all(s.lam > 0)
    fallback = _normalise(pb.pos - pa.pos, jnp.asarray([0.0, 0.0, 1.0], v.dtype))
    gjk = _Result(jnp.sqrt(nv2), _normalise(-v, fallback), s.lam @ s.a, s.lam @ s.b)
    epa = _epa(pa, pb, s, scale, apart)
    r = jax.tree.map(lambda x, y: jnp.where(apart, x, y), gjk, epa)
    return _polish(pa, pb, r)


def _tangents(n: Array) -> Array:
    """Two unit tangents (2, 3) of a unit normal, as MuJoCo's `mju_makeFrame`."""
    y = jnp.where(jnp.abs(n[1]) < 0.5, jnp.asarray([0.0, 1.0, 0.0]), jnp.asarray([0.0, 0.0, 1.0]))
    y = y.astype(n.dtype)
    y = y - jnp.dot(n, y) * n
    y = y / jnp.sqrt(jnp.sum(y**2))
    return jnp.stack([y, cross(n, y)])


class _Contact(NamedTuple):
    dist: Array
    normal: Array
    point: Array


def _face_normals(shape: AbstractShape) -> Array:
    """The outward unit normals (F, 3) of a flat-faced shape's faces (its frame)."""
    if isinstance(shape, Box):
        eye = jnp.eye(3, dtype=shape.half_extents.dtype)
        return jnp.concatenate([eye, -eye])
    if isinstance(shape, Cylinder):
        return jnp.asarray([[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]], jnp.asarray(shape.radius).dtype)
    if isinstance(shape, Prism):
        return shape.faces()[0]
    assert isinstance(shape, ConvexMesh)
    return shape.facets


def _flat_directions(p: _Part, local: Array) -> tuple[Array, Array]:
    """The directions (3, 3), in the shape's frame, along which the core is flat at the
    witness point `local`, and which of them apply (3,): a capsule's axis inside its
    segment; a box's axes along which the point is inside a face or an edge; a
    cylinder's axis along its side, and its x and y inside a cap; a height-field
    prism's or a mesh's face or edge directions."""
    eye, inner = jnp.eye(3, dtype=local.dtype), 1 - 1e-7
    none = jnp.zeros(3, bool)
    if isinstance(p.shape, Capsule):
        return eye, none.at[2].set(jnp.abs(local[2]) < inner * p.shape.half_length)
    if isinstance(p.shape, Box):
        return eye, jnp.abs(local) < inner * p.shape.half_extents
    if isinstance(p.shape, Cylinder):
        cap = local[0] ** 2 + local[1] ** 2 < (inner * p.shape.radius) ** 2
        side = jnp.abs(local[2]) < inner * p.shape.half_length
        return eye, jnp.stack([cap, cap, side])
    if isinstance(p.shape, (Prism, ConvexMesh)):
        return p.shape.flat_directions(local, 1e-7 * p.shape.bounding_radius())
    return eye, none


def _finish(pa: _Part, pb: _Part, r: _Result) -> _Contact:
    """The contact of the shapes (not their cores) from the search's result `r`, with
    gradients: the witness points fixed in the shapes' frames (moving along curved
    surfaces to first order through the support Jacobians, and along flat directions
    by the Newton slides λ) and the normal turned by one Newton step of the optimality
    conditions (`_newton`), whose value is zero: its derivative is the implicit one."""
    r = jax.lax.stop_gradient(r)
    n = r.normal

    def witness(p: _Part, x: Array, d: Array) -> Array:
        rot0 = jax.lax.stop_gradient(p.rot)
        local = rot0.T @ (x - jax.lax.stop_gradient(p.pos))
        jac = jax.lax.stop_gradient(_core_jacobian(p, rot0.T @ d, local))
        turned = p.rot.T @ d
        return p.rot @ (local + jac @ (turned - jax.lax.stop_gradient(turned))) + p.pos

    # the cores' witness points and the flat directions, moving with the shapes
    moving = r._replace(a=witness(pa, r.a, n), b=witness(pb, r.b, -n))
    u, lam, e, _ = _newton(pa, pb, moving)
    u, lam = u - jax.lax.stop_gradient(u), lam - jax.lax.stop_gradient(lam)
    normal = n + u @ _tangents(n)
    normal = normal / jnp.sqrt(jnp.sum(normal**2))
    xa = moving.a + lam[:3] @ e[:3] + pa.radius * n
    xb = moving.b + lam[3:] @ e[3:] - pb.radius * n
    return _Contact(jnp.dot(n, xb - xa), normal, 0.5 * (xa + xb))


def _scale(pa: _Part, pb: _Part) -> Array:
    return jax.lax.stop_gradient(pa.shape.bounding_radius() + pb.shape.bounding_radius())


def convex_contact(
    sa: AbstractShape, ra: Array, pa: Array, sb: AbstractShape, rb: Array, pb: Array
) -> _Contact:
    """One contact of two convex shapes (world rotations (3, 3), positions (3,)): the
    signed distance, the unit normal from a to b and the point midway between the
    witness points, as MuJoCo's `mjc_Convex` (nativeccd) finds them."""
    part_a, part_b = _part(sa, ra, pa), _part(sb, rb, pb)
    scale = _scale(part_a, part_b)
    stop_a, stop_b = jax.tree.map(jax.lax.stop_gradient, (part_a, part_b))
    return _finish(part_a, part_b, _solve(stop_a, stop_b, scale))

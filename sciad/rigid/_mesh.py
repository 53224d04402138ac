"""Convex mesh colliders: a mesh collides as the convex hull of its vertices, as in
MuJoCo."""

from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int
import numpy as np
import scipy.spatial

from .._core._types import FloatScalar
from .._core._validate import is_concrete
from ._shapes import AbstractShape


def polytope_flat_directions(
    normals: Array, offsets: Array, local: Array, tol: Array
) -> tuple[Array, Array]:
    """The directions (3, 3) along which a convex polytope with face planes
    n·x = o (`normals` (F, 3), `offsets` (F,), one per distinct plane) is flat at the
    surface point `local`, and which apply (3,): a face's two tangents inside a face,
    an edge's direction on an edge, none at a vertex."""
    on = jnp.abs(normals @ local - offsets) < tol
    count = jnp.sum(on)
    first = jnp.argmax(on)
    second = jnp.argmax(on & (jnp.arange(on.shape[0]) != first))
    n1, n2 = normals[first], normals[second]
    helper = jnp.where(
        jnp.abs(n1[0]) < 0.9, jnp.asarray([1.0, 0.0, 0.0]), jnp.asarray([0.0, 1.0, 0.0])
    ).astype(local.dtype)
    t1 = jnp.cross(n1, helper)
    t1 = t1 / jnp.sqrt(jnp.sum(t1**2))
    t2 = jnp.cross(n1, t1)
    edge = jnp.cross(n1, n2)
    edge = edge / jnp.sqrt(jnp.maximum(jnp.sum(edge**2), 1e-30))
    zero = jnp.zeros(3, local.dtype)
    dirs = jnp.where(count == 1, jnp.stack([t1, t2, zero]), jnp.stack([edge, zero, zero]))
    flags = jnp.where(
        count == 1,
        jnp.asarray([True, True, False]),
        jnp.where(count == 2, jnp.asarray([True, False, False]), jnp.zeros(3, bool)),
    )
    return dirs, flags


def _qhull(v: np.ndarray) -> scipy.spatial.ConvexHull:
    try:
        return scipy.spatial.ConvexHull(v)
    except scipy.spatial.QhullError as err:
        raise ValueError(
            "ConvexMesh.vertices span no volume (all in a plane or on a line)."
        ) from err


def _hull_polygons(hull: scipy.spatial.ConvexHull, v: np.ndarray) -> list[list[int]]:
    """The hull's faces as polygons (vertex ids counter-clockwise seen from outside),
    coplanar triangles of qhull's merged (relative tolerance 1e-9)."""
    eq = hull.equations
    key = np.round(np.concatenate([eq[:, :3], eq[:, 3:] / np.max(np.abs(v))], 1) * 1e9)
    _, first, label = np.unique(key, axis=0, return_index=True, return_inverse=True)
    polygons = []
    for k in np.argsort(first):
        ids = np.unique(hull.simplices[label.reshape(-1) == k])
        normal = eq[first[k], :3]
        centre = v[ids].mean(axis=0)
        e1 = v[ids[0]] - centre
        e1 = e1 / np.linalg.norm(e1)
        e2 = np.cross(normal, e1)
        angle = np.arctan2((v[ids] - centre) @ e2, (v[ids] - centre) @ e1)
        polygons.append([int(i) for i in ids[np.argsort(angle)]])
    return polygons


def pad_meshes(meshes: Sequence["ConvexMesh"], xp: Any = jnp) -> list["ConvexMesh"]:
    """The meshes (all with or all without a `graph`) padded to common array sizes, so
    that one batched collision program serves pairs of different meshes (one per
    vertex count would each compile apart: MuJoCo Menagerie's OP3 has 236 such pairs).
    Each collides as before: the extra vertices sit at the vertices' mean, strictly
    inside the hull, so no support point or supporting feature takes them and the
    bounding radius stays; the extra polygons have no vertex (`face_planes` gives them
    no plane) and the extra `facets` are zero (the convex collision skips them); the
    extra hull-graph entries are reached from no seed or neighbour. `xp`: numpy for
    concrete meshes (the traced program then does not grow with their number), else
    jax.numpy."""
    if len(meshes) < 2:
        return list(meshes)

    def top(get: Any, axis: int) -> int:
        return max(np.shape(get(m))[axis] for m in meshes)

    n = top(lambda m: m.vertices, 0)
    p, w = top(lambda m: m.polygons, 0), top(lambda m: m.polygons, 1)
    q, e = top(lambda m: m.polymap, 1), top(lambda m: m.edge_ends, 1)
    t = top(lambda m: m.facets, 0)
    leaves = lambda x: (x.vertices, x.polygons, x.polymap, x.edge_ends, x.facets)  # noqa: E731
    out = []
    for m in meshes:
        v = xp.asarray(m.vertices)
        if not xp.issubdtype(v.dtype, xp.floating):
            v = v.astype(jnp.result_type(float))
        inner = xp.broadcast_to(xp.mean(v, axis=0), (n - v.shape[0], 3))
        parts = (
            xp.concatenate([v, inner]),
            _pad_to(xp, m.polygons, (p, w), -1),
            _pad_to(xp, m.polymap, (n, q), -1),
            _pad_to(xp, m.edge_ends, (n, e), -1),
            _pad_to(xp, m.facets, (t, 3), 0),
        )
        padded = eqx.tree_at(leaves, m, parts)
        if m.graph is not None:
            hull, neighbours, seeds = m.graph
            h, d = top(lambda x: x.graph[0], 0), top(lambda x: x.graph[1], 1)
            graph = (_pad_to(xp, hull, (h,), 0), _pad_to(xp, neighbours, (h, d), -1), seeds)
            padded = eqx.tree_at(lambda x: x.graph, padded, graph)
        out.append(padded)
    return out


def _pad_to(xp: Any, x: Any, shape: tuple[int, ...], fill: int) -> Any:
    """`x` padded at the end of each axis with `fill` up to `shape` (`xp`: numpy or
    jax.numpy)."""
    pad = [(0, s - d) for s, d in zip(shape, np.shape(x), strict=True)]
    return xp.pad(xp.asarray(x), pad, constant_values=fill)


def _pad(rows: list[list[int]]) -> np.ndarray:
    out = np.full((len(rows), max(len(r) for r in rows)), -1, np.int32)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out


# MuJoCo hill-climbs the hull graph for the support point of a mesh with at least
# this many vertices (`mjMESH_HILLCLIMB_MIN`), and searches them all below it.
HILLCLIMB_MIN = 10


def mujoco_graph(m: Any, mesh: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Mesh `mesh`'s hull graph as MuJoCo's compiled model `m` stores it
    (`mesh_graph`: numvert, numface, vert_edgeadr, vert_globalid, edge_localid with −1
    after each vertex's edges; `mesh_extrema`): hull vertices (H,) (ids into the
    vertices), their neighbours (H, D) (positions in the hull, MuJoCo's order,
    −1-padded) and the 27 hill-climb seeds (positions in the hull); `None` without a
    graph."""
    adr = int(m.mesh_graphadr[mesh])
    if adr < 0:
        return None
    graph = np.asarray(m.mesh_graph[adr:])
    nv = int(graph[0])
    edgeadr, globalid = graph[2 : 2 + nv], graph[2 + nv : 2 + 2 * nv]
    edges = graph[2 + 2 * nv :]
    rows = []
    for i in range(nv):
        k, row = int(edgeadr[i]), []
        while edges[k] >= 0:
            row.append(int(edges[k]))
            k += 1
        rows.append(row)
    seeds = np.asarray(m.mesh_extrema[mesh], np.int32).reshape(27)
    return globalid.astype(np.int32), _pad(rows), seeds


def mujoco_polygons(m: Any, mesh: int) -> list[list[int]]:
    """Mesh `mesh`'s hull polygons as MuJoCo's compiled model `m` stores them
    (`mesh_polyvert`: vertex ids counter-clockwise seen from outside)."""
    adr, num = int(m.mesh_polyadr[mesh]), int(m.mesh_polynum[mesh])
    out = []
    for p in range(adr, adr + num):
        start, count = int(m.mesh_polyvertadr[p]), int(m.mesh_polyvertnum[p])
        out.append([int(i) for i in m.mesh_polyvert[start : start + count]])
    return out


class ConvexMesh(AbstractShape):
    """A mesh collider: the convex hull of its vertices, as MuJoCo collides a mesh geom
    (a non-convex mesh collides as its hull). Its volume and inertia are the hull's, of
    uniform density; the support point is the vertex farthest along a direction.

    **Arguments:**

    - `vertices`: shape `(N, 3)`, N ≥ 4 finite points not all in a plane, in the
      geom's frame (length). MuJoCo stores a mesh's vertices relative to its centre of
      mass along its principal axes (`m.mesh_vert`); `load_mjcf` passes those.
    - `polygons`: optional, the hull's faces as lists of vertex ids, counter-clockwise
      seen from outside (`load_mjcf` passes MuJoCo's `mesh_polyvert`); by default
      qhull's (scipy) facets, coplanar triangles merged. The plane contact takes its
      extra points from one of them (see `docs/rigid.md`).
    - `graph`: optional, MuJoCo's hull graph `(hull (H,), neighbours (H, D), seeds
      (27,))` (`load_mjcf` passes `mesh_graph` and `mesh_extrema`): with 10 or more
      vertices, the plane contact's support vertex is found by MuJoCo's hill climb,
      which settles ties (a face parallel to the plane) as MuJoCo does; without it,
      the first farthest vertex.

    **Example:**

    ```python
    corners = jnp.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    tetra = sciad.rigid.ConvexMesh(0.1 * (corners - 0.25))
    mass, inertia = tetra.mass_properties(1000.0)
    ```
    """

    vertices: Float[Array, "N 3"]
    polygons: Int[Array, "P M"]  # vertex ids, counter-clockwise from outside, −1-padded
    polymap: Int[Array, "N Q"]  # each vertex's polygons in ascending order, −1-padded
    # each vertex's edge ends (MuJoCo's `meshEdgeNormals`): for each of its polygons in
    # order, the vertex before it there; −1-padded like `polymap`
    edge_ends: Int[Array, "N Q"]
    graph: tuple[Int[Array, " H"], Int[Array, "H D"], Int[Array, " 27"]] | None
    # the outward unit normals of qhull's triangles of the hull, distinct: the convex
    # collision tries them where flat faces lie flush (MuJoCo's polygons merge
    # triangles up to 0.01 rad apart, too coarse for that)
    facets: Float[Array, "T 3"]

    def __init__(
        self,
        vertices: ArrayLike,
        polygons: list[list[int]] | None = None,
        graph: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ):
        if not is_concrete(vertices):
            raise TypeError("ConvexMesh needs concrete vertices (its hull is computed once).")
        v = np.asarray(vertices)
        if v.ndim != 2 or v.shape[1] != 3:
            raise ValueError(f"ConvexMesh.vertices must have shape (N, 3); got {v.shape}.")
        if v.shape[0] < 4:
            raise ValueError(
                f"ConvexMesh.vertices needs at least 4 points for a solid hull; got {v.shape[0]}."
            )
        if not (np.issubdtype(v.dtype, np.floating) or np.issubdtype(v.dtype, np.integer)):
            raise TypeError(f"ConvexMesh.vertices must be real numbers; got dtype {v.dtype}.")
        if not np.all(np.isfinite(v)):
            raise ValueError("ConvexMesh.vertices must be finite.")
        hull = _qhull(v.astype(np.float64))
        if polygons is None:
            polygons = _hull_polygons(hull, v.astype(np.float64))
        if any(len(p) < 3 or min(p) < 0 or max(p) >= len(v) for p in polygons):
            raise ValueError("ConvexMesh.polygons: each needs 3 or more vertex ids in range.")
        owners: list[list[int]] = [[] for _ in range(len(v))]
        before: list[list[int]] = [[] for _ in range(len(v))]
        for k, p in enumerate(polygons):  # ascending k: each vertex's polygons in order
            for j, i in enumerate(p):
                owners[i].append(k)
                before[i].append(p[j - 1])
        self.vertices = jnp.asarray(vertices)
        self.polygons = jnp.asarray(_pad(polygons), jnp.int32)
        self.polymap = jnp.asarray(_pad([o or [-1] for o in owners]), jnp.int32)
        self.edge_ends = jnp.asarray(_pad([e or [-1] for e in before]), jnp.int32)
        use = graph is not None and len(v) >= HILLCLIMB_MIN
        self.graph = tuple(jnp.asarray(x, jnp.int32) for x in graph) if use else None  # pyright: ignore
        real = self.vertices.dtype if jnp.issubdtype(self.vertices.dtype, jnp.floating) else None
        self.facets = jnp.asarray(np.unique(np.round(hull.equations[:, :3], 14), axis=0), real)

    def _tetrahedra(self) -> tuple[Array, Array]:
        """The hull's polygons fanned into tetrahedra with the vertices' mean: signed
        volumes (T,) (zero for padding) and vertices (T, 4, 3)."""
        v, poly = self.vertices, self.polygons
        m = poly.shape[1]
        a = jnp.repeat(poly[:, :1], m - 2, axis=1).reshape(-1)
        b, c = poly[:, 1:-1].reshape(-1), poly[:, 2:].reshape(-1)
        ok = (b >= 0) & (c >= 0)
        apex = jnp.mean(v, axis=0)
        corners = jnp.stack([v[a], v[jnp.maximum(b, 0)], v[jnp.maximum(c, 0)]], 1)
        tet = jnp.concatenate([jnp.broadcast_to(apex, (a.shape[0], 1, 3)), corners], 1)
        e = corners - apex[None, None]
        vol = jnp.einsum("ti,ti->t", e[:, 0], jnp.cross(e[:, 1], e[:, 2])) / 6
        return jnp.where(ok, vol, 0.0), tet

    def volume(self) -> FloatScalar:
        """The hull's volume."""
        return jnp.sum(self._tetrahedra()[0])

    def centroid(self) -> Float[Array, "3"]:
        """The hull's centre of mass in the shape's frame (zero for MuJoCo's vertices
        of a convex mesh; length)."""
        vol, tet = self._tetrahedra()
        return jnp.sum(vol[:, None] * jnp.mean(tet, axis=1), axis=0) / jnp.sum(vol)

    def unit_inertia(self) -> Float[Array, "3"]:
        """The diagonal of the hull's inertia tensor per unit mass about its centroid,
        in the shape's frame (its principal moments when the vertices are given along
        the principal axes, as MuJoCo stores them)."""
        vol, tet = self._tetrahedra()
        x = tet - self.centroid()[None, None]
        s = jnp.sum(x, axis=1)
        # a tetrahedron's second moment ∫ x xᵀ dV = V/20 (Σᵢ xᵢxᵢᵀ + s sᵀ), s = Σᵢ xᵢ
        second = jnp.einsum("t,tki,tkj->ij", vol / 20, x, x)
        second = second + jnp.einsum("t,ti,tj->ij", vol / 20, s, s)
        inertia = jnp.trace(second) * jnp.eye(3, dtype=second.dtype) - second
        return jnp.diag(inertia) / jnp.sum(vol)

    def face_planes(self) -> tuple[Float[Array, "P 3"], Float[Array, " P"]]:
        """The outward unit normals (P, 3) and offsets (P,) of the hull's polygons'
        planes n·x = o; a padding row (no vertex: `pad_meshes`) has normal 0 and
        offset +∞, a plane no point lies on."""
        v = self.vertices[jnp.maximum(self.polygons[:, :3], 0)]
        n = jnp.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])
        real = (self.polygons[:, 0] >= 0)[:, None]
        norm = jnp.sqrt(jnp.sum(jnp.where(real, n, 1.0) ** 2, axis=-1, keepdims=True))
        n = jnp.where(real, n / norm, 0.0)
        return n, jnp.where(real[:, 0], jnp.sum(n * v[:, 0], axis=-1), jnp.inf)

    def inradius(self) -> FloatScalar:
        """The distance from the origin to the nearest face plane (zero if the origin
        is outside the hull)."""
        return jnp.maximum(jnp.min(self.face_planes()[1]), 0.0)

    def support(self, direction: Float[Array, "3"]) -> Float[Array, "3"]:
        """The first vertex farthest along `direction` (the hull's support point; a
        tie takes the lowest index)."""
        v = self.vertices
        dots = v[:, 0] * direction[0] + v[:, 1] * direction[1] + v[:, 2] * direction[2]
        return v[jnp.argmax(dots)]

    def support_jacobian(
        self, direction: Float[Array, "3"], point: Float[Array, "3"]
    ) -> Float[Array, "3 3"]:
        """Zero: a hull is flat."""
        return jnp.zeros((3, 3), direction.dtype)

    def bounding_radius(self) -> FloatScalar:
        """MuJoCo's `geom_rbound` of a mesh: the distance from the origin to the
        corner (max |x|, max |y|, max |z|) over the vertices (at least the largest
        vertex distance)."""
        return jnp.sqrt(jnp.sum(jnp.max(jnp.abs(self.vertices), axis=0) ** 2))

    def flat_directions(self, local: Array, tol: Array) -> tuple[Array, Array]:
        """The directions (3, 3) along which the hull is flat at the surface point
        `local`, and which apply (3,) (see `polytope_flat_directions`)."""
        normals, offsets = self.face_planes()
        return polytope_flat_directions(normals, offsets, local, tol)

    def support_index(self, direction: Float[Array, "3"]) -> Int[Array, ""]:
        """The index of the vertex farthest along `direction` (shape frame) as MuJoCo's
        support function finds it: by a search of all vertices (the first farthest)
        without a `graph` or below 10 vertices, else by its hill climb from the seed
        of the direction's cell of a 3 × 3 × 3 grid (components beyond ±0.4), moving
        to the first farthest neighbour while one is strictly farther."""
        v = self.vertices
        dots = v[:, 0] * direction[0] + v[:, 1] * direction[1] + v[:, 2] * direction[2]
        if self.graph is None:
            return jnp.argmax(dots)
        hull, neighbours, seeds = self.graph
        hull_dots = dots[hull]
        cell = jnp.where(direction > 0.4, 2, jnp.where(direction < -0.4, 0, 1))
        start = seeds[cell[0] * 9 + cell[1] * 3 + cell[2]]

        def body(state: tuple[Array, Array, Array]) -> tuple[Array, Array, Array]:
            best, value, _ = state
            row = neighbours[best]
            cand = jnp.where(row >= 0, hull_dots[jnp.maximum(row, 0)], -jnp.inf)
            j = jnp.argmax(cand)
            better = cand[j] > value
            return jnp.where(better, row[j], best), jnp.where(better, cand[j], value), better

        init = (start, hull_dots[start], jnp.asarray(True))
        return hull[jax.lax.while_loop(lambda s: s[2], body, init)[0]]

    def face_corners(
        self, vertex: Int[Array, ""], normal: Float[Array, "3"]
    ) -> tuple[Int[Array, "3"], Array]:
        """The other corners (vertex ids (3,) and which exist (3,)) of the face at
        `vertex` whose outward normal is most opposed to the unit `normal` (shape
        frame), as MuJoCo's `mjc_PlaneConvex` picks them: the first of the vertex's
        polygons with the least n_face·`normal` (below 1), cut to its largest-area
        quadrilateral through `vertex` (`_largest_quad`); a triangle gives two."""
        normals, _ = self.face_planes()
        vertex = jnp.asarray(vertex).astype(jnp.int32)
        own = self.polymap[vertex]
        dots = jnp.where(own >= 0, normals[jnp.maximum(own, 0)] @ normal, jnp.inf)
        k = jnp.argmin(dots)
        poly = self.polygons[jnp.maximum(own[k], 0)]
        count = jnp.sum(poly >= 0).astype(jnp.int32)
        start = jnp.argmax(poly == vertex).astype(jnp.int32)
        steps = _largest_quad(self.vertices, poly, count, start)
        ids = poly[(start + steps) % count]
        valid = ((steps < count) | (count > 4)) & (dots[k] < 1.0)
        return ids, valid


def _largest_quad(v: Array, poly: Array, count: Array, a: Array) -> Array:
    """The other three corners of the largest-area quadrilateral a, b, c, d of the
    convex polygon `poly` (its first `count` entries, vertex ids) that keeps position
    `a`, as steps (3,) from `a` around the polygon (1, 2, 3 when it has at most four
    corners), by MuJoCo's greedy search: move d forward while the area grows, after
    each move c, then b."""

    def area(b: Array, c: Array, d: Array) -> Array:
        p = [v[poly[(a + x) % count]] for x in (jnp.zeros_like(b), b, c, d)]
        return 0.5 * jnp.sqrt(jnp.sum(jnp.cross(p[0] - p[2], p[1] - p[3]) ** 2))

    def advance(which: int):
        def cond(s):
            b, c, d, m = s
            nxt = [b, c, d]
            nxt[which] = nxt[which] + 1
            return area(*nxt) > m

        def body(s):
            b, c, d, _ = s
            nxt = [b, c, d]
            nxt[which] = nxt[which] + 1
            return (*nxt, area(*nxt))

        return cond, body

    one, two, three = (jnp.asarray(x, count.dtype) for x in (1, 2, 3))
    init = (one, two, three, area(one, two, three))

    def outer_cond(s):
        b, c, d, m, _ = s
        return (count > 4) & (area(b, c, d + 1) > m)

    def outer(s):
        b, c, d, m, go = s
        d = d + 1
        s = (b, c, d, area(b, c, d))
        s = jax.lax.while_loop(*advance(1), s)
        s = jax.lax.while_loop(*advance(0), s)
        return (*s, go)

    b, c, d, _, _ = jax.lax.while_loop(outer_cond, outer, (*init, jnp.asarray(True)))
    return jnp.stack([b, c, d])

"""Height fields (`HeightField`): MuJoCo's terrain of triangular prisms, and its
collision with convex shapes as MuJoCo's `mjc_ConvexHField` computes it."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float
import numpy as np

from .._core._types import FloatScalar
from .._core._validate import as_float_array, check_int, check_positive, is_concrete
from ._mesh import polytope_flat_directions
from ._shapes import AbstractShape


class HeightField(AbstractShape):
    """A height field: MuJoCo's `hfield` geom, a terrain of elevations on a regular
    grid over the rectangle [−x, x] × [−y, y] of its geom frame, solid down to −base.

    Grid point (i, j) (row i along y, column j along x) lies at
    (2x j/(ncol − 1) − x, 2y i/(nrow − 1) − y) with height z · data[i, j]. As in MuJoCo,
    each grid cell is two triangles, and each triangle with the base below it a
    triangular prism; a convex shape collides with every prism of the cells under it,
    each prism giving at most one contact (MuJoCo's `mjc_ConvexHField`, by the general
    convex collision). For collision only ([`Geom`][sciad.rigid.Geom], fixed to the
    world or a body); it has no volume and no mass.

    **Arguments:**

    - `data`: shape `(nrow, ncol)`, nrow, ncol ≥ 2: the elevations in [0, 1], as
      MuJoCo's `hfield_data` (MuJoCo normalises a height field's data to [0, 1]).
    - `size`: shape `(4,)`, MuJoCo's hfield `size` (x, y, z, base) (length, > 0): the
      half-extents, the top elevation and the depth of the base.
    - `window` (integer ≥ 1, default 4): the cells per axis examined around a
      colliding geom (a static count, so that the collision has a fixed number of
      candidate points, 2 window² per pair). A geom of bounding radius ρ needs
      ⌈2ρ/δ⌉ + 1, δ the smaller grid step; `MultiBody` refuses a smaller window.

    Reference: MuJoCo documentation, Modeling, "Height fields"; MuJoCo's
    engine_collision_convex.c (`mjc_ConvexHField`).

    **Example:**

    ```python
    bumps = jnp.asarray(np.random.default_rng(0).uniform(size=(21, 21)))
    terrain = sciad.rigid.Geom(sciad.rigid.HeightField(bumps, (2.0, 2.0, 0.1, 0.05)))
    ```
    """

    data: Float[Array, "nrow ncol"]
    size: Float[Array, "4"]
    window: int = eqx.field(static=True)

    def __init__(
        self,
        data: Float[ArrayLike, "nrow ncol"],
        size: Float[ArrayLike, "4"] | tuple[float, float, float, float],
        window: int = 4,
    ):
        data = jnp.asarray(data)
        if data.ndim != 2 or min(data.shape) < 2:
            raise ValueError(
                f"HeightField.data must have shape (nrow, ncol) with nrow, ncol >= 2; got "
                f"shape {data.shape}."
            )
        self.data = as_float_array(data, "HeightField.data", data.shape)
        if is_concrete(self.data):
            values = np.asarray(self.data)
            if values.min() < 0 or values.max() > 1:
                raise ValueError(
                    "HeightField.data must lie in [0, 1] (the elevations as fractions of "
                    f"size[2]); got values in [{values.min()}, {values.max()}]."
                )
        self.size = as_float_array(size, "HeightField.size", (4,))
        check_positive(self.size, "HeightField.size", shape=(4,))
        self.window = check_int(window, "HeightField.window")
        if self.window > min(data.shape) - 1:
            raise ValueError(
                f"HeightField.window must be at most min(nrow, ncol) - 1 = "
                f"{min(data.shape) - 1} (the grid's cells); got {self.window}."
            )

    def volume(self) -> FloatScalar:
        """A height field has no volume: raises `TypeError`."""
        raise TypeError("a HeightField has no volume or mass; use it in a Geom for contacts only.")

    def unit_inertia(self) -> Float[Array, "3"]:
        """A height field has no inertia: raises `TypeError`."""
        raise TypeError("a HeightField has no inertia; use it in a Geom for contacts only.")

    def inradius(self) -> FloatScalar:
        """Infinite, as a plane's: a geom meets the terrain's surface, never its centre."""
        return jnp.asarray(jnp.inf)

    def bounding_radius(self) -> FloatScalar:
        """|(x, y, max(z, base))|."""
        x, y, z, base = (self.size[k] for k in range(4))
        return jnp.sqrt(x**2 + y**2 + jnp.maximum(z, base) ** 2)

    def cells_needed(self, radius: float) -> int:
        """The window (cells per axis) a geom of bounding radius `radius` needs:
        ⌈2ρ/δ⌉ + 1 along each axis of grid step δ, at most that axis's cells (static,
        from concrete values)."""
        nrow, ncol = self.data.shape
        need = [
            min(math.ceil(2 * radius * (n - 1) / (2 * float(self.size[k]))) + 1, n - 1)
            for k, n in ((0, ncol), (1, nrow))
        ]
        return max(need)


class Prism(AbstractShape):
    """One prism of a height field (internal: the collision's shape): six vertices
    (3 bottom, then 3 top) relative to their centroid, with MuJoCo's support point
    (`mjc_prism_support`: the bottom or top triangle by the direction's z, the first
    farthest vertex of it)."""

    vertices: Float[Array, "6 3"]

    def volume(self) -> FloatScalar:
        raise TypeError("a height-field prism has no mass.")

    def unit_inertia(self) -> Float[Array, "3"]:
        raise TypeError("a height-field prism has no mass.")

    def inradius(self) -> FloatScalar:
        return jnp.asarray(jnp.inf)

    def support(self, direction: Float[Array, "3"]) -> Float[Array, "3"]:
        tri = jnp.where(direction[2] < 0, self.vertices[:3], self.vertices[3:])
        return tri[jnp.argmax(tri @ direction)]

    def support_jacobian(
        self, direction: Float[Array, "3"], point: Float[Array, "3"]
    ) -> Float[Array, "3 3"]:
        return jnp.zeros((3, 3), direction.dtype)

    def bounding_radius(self) -> FloatScalar:
        return jnp.sqrt(jnp.max(jnp.sum(self.vertices**2, axis=-1)))

    def faces(self) -> tuple[Array, Array]:
        """The outward unit normals (5, 3) and offsets (5,) of the faces n·x = o:
        bottom, top, and the three sides."""
        v = self.vertices
        centroid = jnp.mean(v, axis=0)
        normals, points = [], []
        for a, b, c in ((0, 1, 2), (3, 4, 5), (0, 1, 4), (1, 2, 5), (2, 0, 3)):
            n = jnp.cross(v[b] - v[a], v[c] - v[a])
            n = n / jnp.sqrt(jnp.sum(n**2))
            n = jnp.where(jnp.dot(n, v[a] - centroid) < 0, -n, n)
            normals.append(n)
            points.append(v[a])
        normals = jnp.stack(normals)
        return normals, jnp.sum(normals * jnp.stack(points), axis=-1)

    def flat_directions(self, local: Array, tol: Array) -> tuple[Array, Array]:
        """The directions (3, 3) along which the prism is flat at the surface point
        `local`, and which apply (3,): a face's two tangents inside a face, an edge's
        direction on an edge, none at a vertex."""
        normals, offsets = self.faces()
        return polytope_flat_directions(normals, offsets, local, tol)


def _prisms(field: HeightField, rmin: Array, cmin: Array) -> Array:
    """The 2 w² prisms (w = `field.window`) of the w × w cells from row `rmin` and
    column `cmin`, as vertices (2w², 6, 3) in the field's frame: per cell (r, c), the
    triangles (r+1, c), (r, c), (r+1, c+1) and (r, c), (r+1, c+1), (r, c+1), as
    MuJoCo's `addPrismVert` builds them, over the base at −size[3]."""
    w = field.window
    nrow, ncol = field.data.shape
    x, y, z, base = (field.size[k] for k in range(4))
    heights = jax.lax.dynamic_slice(field.data, (rmin, cmin), (w + 1, w + 1)) * z
    rows = (rmin + jnp.arange(w + 1, dtype=rmin.dtype)).astype(x.dtype) * (2 * y / (nrow - 1)) - y
    cols = (cmin + jnp.arange(w + 1, dtype=cmin.dtype)).astype(x.dtype) * (2 * x / (ncol - 1)) - x
    r, c = np.meshgrid(np.arange(w), np.arange(w), indexing="ij")
    r, c = r.reshape(-1), c.reshape(-1)
    corners = [
        [(r + 1, c), (r, c), (r + 1, c + 1)],
        [(r, c), (r + 1, c + 1), (r, c + 1)],
    ]
    prisms = []
    for tri in corners:
        top = jnp.stack([jnp.stack([cols[j], rows[i], heights[i, j]], -1) for i, j in tri], 1)
        bottom = top.at[..., 2].set(-base)
        prisms.append(jnp.concatenate([bottom, top], axis=1))  # (w², 6, 3)
    # MuJoCo's order: per cell, its first triangle then its second
    return jnp.stack(prisms, axis=1).reshape(-1, 6, 3)


def _window(
    field: HeightField, ra: Array, pa: Array, shape: AbstractShape, rb: Array, pb: Array
) -> tuple[Array, Array, Array]:
    """The prisms (2w², 6, 3) of the w × w cells from the one under the corner of the
    shape's bounding box in the field's frame (clamped into the grid), their centroids,
    and which lie below the shape (MuJoCo's height test: no contact)."""
    nrow, ncol = field.data.shape
    w = field.window
    rot = jax.lax.stop_gradient(ra.T @ rb)
    local = jax.lax.stop_gradient(ra.T @ (pb - pa))
    eye = jnp.eye(3, dtype=pb.dtype)
    low = jnp.stack([(rot @ shape.support(rot.T @ -e) + local)[k] for k, e in enumerate(eye)])
    x, y = (jax.lax.stop_gradient(field.size[k]) for k in range(2))
    cmin = jnp.floor((low[0] + x) / (2 * x) * (ncol - 1)).astype(jnp.int32)
    rmin = jnp.floor((low[1] + y) / (2 * y) * (nrow - 1)).astype(jnp.int32)
    cmin = jnp.clip(cmin, 0, ncol - 1 - w)
    rmin = jnp.clip(rmin, 0, nrow - 1 - w)
    verts = _prisms(field, rmin, cmin)
    below = jnp.all(jax.lax.stop_gradient(verts[:, 3:, 2]) < low[2], axis=1)
    return verts, jnp.mean(verts, axis=1), below


def hfield_points(
    field: HeightField, ra: Array, pa: Array, shape: AbstractShape, rb: Array, pb: Array, contact
) -> tuple[Array, Array, Array]:
    """Batched over pairs (leading axes): the candidate contacts (2w² per pair) of
    convex shapes (poses `rb`, `pb`) with height fields (poses `ra`, `pa`): each prism
    of the window under the shape (`_window`) collided by `contact` (the general
    convex collision: (prism, rotation, position, shape, rotation, position) ↦
    distance, normal, point), as MuJoCo's `mjc_ConvexHField`. Prisms below the shape
    get a positive placeholder distance; when every prism of every pair is below (a
    body standing on something above the terrain), no convex collision runs at all."""
    verts, centre, below = jax.vmap(_window)(field, ra, pa, shape, rb, pb)
    apart = jnp.abs(jax.lax.stop_gradient(jax.vmap(lambda s: s.bounding_radius())(shape)))
    placeholder = jnp.broadcast_to(2 * apart[:, None] + 1, below.shape).astype(pb.dtype)

    def one(ra, pa, shape, rb, pb, v, c):
        out = contact(Prism(v - c[None]), ra, pa + ra @ c, shape, rb, pb)
        return out.dist, out.normal, out.point

    def collide(_):
        per_prism = jax.vmap(one, in_axes=(None, None, None, None, None, 0, 0))
        dist, normal, point = jax.vmap(per_prism)(ra, pa, shape, rb, pb, verts, centre)
        return jnp.where(below, jnp.abs(dist) + placeholder, dist), normal, point

    def skip(_):
        normal = jnp.broadcast_to(ra[:, None, :, 2], below.shape + (3,))
        return placeholder, normal, jnp.broadcast_to(pb[:, None], below.shape + (3,))

    return jax.lax.cond(jnp.any(~below), collide, skip, None)

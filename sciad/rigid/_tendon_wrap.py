"""Spatial tendons wrapping around spheres and cylinders, and pulleys: the path items
`TendonWrap` and `TendonPulley` of a `SpatialTendon`, and the wrap geometry exactly as
MuJoCo's `mju_wrap` (with its `wrap_circle` and `wrap_inside`) computes it.

Every branch of MuJoCo's algorithm is evaluated and selected with `jnp.where`, and
every square root, division, arccosine and arcsine of a branch that may be discarded
sees a safe argument there (the double-`where` trick), so that gradients stay finite
at the switching points (the straight segment grazing the circle, the side-site
choice, a site entering the side's inside wrap)."""

from collections.abc import Sequence
import functools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float
import numpy as np

from .._core._geometry import cross, quat_to_matrix
from .._core._types import Anything, FloatScalar
from .._core._validate import as_float_array, check_positive, is_concrete
from ._grouped import assemble, grouped, stacked
from ._types import MINVAL, QuatLike, ScalarLike, Vec3Like

# The constants of MuJoCo's wrap_inside Newton iteration.
_INSIDE_MAXITER = 20
_INSIDE_ZINIT = 1 - 1e-7
_INSIDE_TOL = 1e-6


class TendonWrap(eqx.Module):
    """A sphere or a cylinder in a [`SpatialTendon`][sciad.rigid.SpatialTendon]'s path
    that the tendon wraps around (MuJoCo's `<geom>` in a `<spatial>` tendon, with its
    optional `sidesite`), placed between two points of the path.

    Where the straight segment between its neighbours misses the circle (the sphere's
    great circle in the plane of the centre and both neighbours, or the cylinder's
    cross-section), the segment stays straight; otherwise the tendon runs from the
    first neighbour to a tangent point, along the arc (a helix on a cylinder, whose
    pitch follows the neighbours' heights) to a second tangent point and on to the
    second neighbour. Of the two ways round, the shorter is taken, or with a `side`
    point the one nearer to it; a `side` point also makes the tendon wrap where the
    segment misses the circle on the side opposite to it. A `side` point inside the
    sphere or cylinder (closer to the centre than `radius`) makes the tendon pass
    through one point of the circle instead, the shortest path from one neighbour to
    the other that touches the circle from inside (MuJoCo's "inside" wrap, solved with
    MuJoCo's Newton iteration). This is MuJoCo's `mju_wrap`, with its lengths, tangent
    points and tendon Jacobian.

    **Arguments:**

    - `body`: the name of the body the sphere or cylinder is fixed to (`None`: the
      world).
    - `pos`: its centre in that body's frame (length), shape `(3,)`.
    - `radius` > 0: its radius (length).
    - `cylinder`: `False` (default) for a sphere, `True` for a cylinder whose axis is
      the local z axis of its frame.
    - `quat`: the orientation (w, x, y, z) of its frame in the body's frame, shape
      `(4,)`, default the identity (only a cylinder's axis depends on it).
    - `side`: optional `(body, pos)`: the side point, fixed to the named body (`None`:
      the world) at `pos` in that body's frame (MuJoCo's `sidesite`).

    **Example:**

    ```python
    pulley_wheel = sciad.rigid.TendonWrap(
        "forearm", (0.0, 0.0, 0.0), 0.04, cylinder=True, side=("forearm", (0.0, -0.1, 0.0))
    )
    ```
    """

    body: str | None = eqx.field(static=True)
    cylinder: bool = eqx.field(static=True)
    side_body: str | None = eqx.field(static=True)
    has_side: bool = eqx.field(static=True)
    pos: Float[Array, "3"]
    quat: Float[Array, "4"]
    radius: FloatScalar
    side: Float[Array, "3"]

    def __init__(
        self,
        body: str | None,
        pos: Vec3Like,
        radius: ScalarLike,
        *,
        cylinder: bool = False,
        quat: QuatLike = (1.0, 0.0, 0.0, 0.0),
        side: tuple[str | None, Vec3Like] | None = None,
    ):
        if body is not None and not isinstance(body, str):
            raise TypeError(f"TendonWrap body must be a body name or None; got {body!r}.")
        if not isinstance(cylinder, bool):
            raise TypeError(f"TendonWrap cylinder must be a bool; got {cylinder!r}.")
        self.body, self.cylinder = body, cylinder
        self.pos = as_float_array(pos, "TendonWrap pos", (3,))
        check_positive(radius, "TendonWrap radius")
        self.radius = as_float_array(radius, "TendonWrap radius")
        self.quat = as_float_array(quat, "TendonWrap quat", (4,))
        if is_concrete(self.quat) and not np.isclose(np.linalg.norm(self.quat), 1.0, atol=1e-9):
            raise ValueError(f"TendonWrap quat must be a unit quaternion; got {quat!r}.")
        if side is None:
            self.side_body, self.has_side, self.side = None, False, jnp.zeros(3)
            return
        if not (
            isinstance(side, (tuple, list))
            and len(side) == 2
            and (side[0] is None or isinstance(side[0], str))
        ):
            raise ValueError(
                f"TendonWrap side must be a (body name or None, pos) pair; got {side!r}."
            )
        self.side_body, self.has_side = side[0], True
        self.side = as_float_array(side[1], "TendonWrap side pos", (3,))


class TendonPulley(eqx.Module):
    """A pulley in a [`SpatialTendon`][sciad.rigid.SpatialTendon]'s path (MuJoCo's
    `<pulley divisor="...">`): it starts a new branch of the path, whose length (and
    Jacobian) counts divided by `divisor`, until the next pulley. The points before
    it and after it are not joined.

    **Arguments:**

    - `divisor` > 0: the branch's divisor (dimensionless), e.g. 2 for the two branches
      of a block and tackle.

    **Example:**

    ```python
    tackle = sciad.rigid.SpatialTendon(
        "tackle",
        [(None, (0.0, 0.0, 1.0)), ("block", (0.0, 0.0, 0.0)), sciad.rigid.TendonPulley(2.0),
         ("block", (0.0, 0.0, 0.0)), (None, (0.1, 0.0, 1.0))],
    )
    ```
    """

    divisor: FloatScalar

    def __init__(self, divisor: ScalarLike):
        check_positive(divisor, "TendonPulley divisor")
        self.divisor = as_float_array(divisor, "TendonPulley divisor")


# --------------------------------------------------------------------------- safe math


def _safe_sqrt(x: Array, ok: Array) -> Array:
    """√x where `ok`, 0 elsewhere, with zero gradient there."""
    return jnp.where(ok, jnp.sqrt(jnp.where(ok, x, 1.0)), 0.0)


def _normalize(v: Array) -> tuple[Array, Array]:
    """MuJoCo's `mju_normalize` over the last axis: v/|v|, or the first unit vector
    where |v| < mjMINVAL; and |v|."""
    sq = jnp.sum(v * v, axis=-1)
    ok = sq >= MINVAL**2
    norm = jnp.sqrt(jnp.where(ok, sq, 1.0))
    e0 = jnp.zeros(v.shape[-1], v.dtype).at[0].set(1.0)
    return jnp.where(ok[..., None], v / norm[..., None], e0), jnp.where(ok, norm, 0.0)


def _acos(x: Array) -> Array:
    """MuJoCo's `mju_acos` (the argument clamped to [−1, 1]), with a zero gradient at
    and beyond ±1."""
    inside = jnp.abs(x) < 1
    return jnp.where(inside, jnp.arccos(jnp.where(inside, x, 0.0)), jnp.where(x > 0, 0.0, math.pi))


def _asin(x: Array) -> Array:
    """MuJoCo's `mju_asin` (the argument clamped to [−1, 1]), gradient-safe at ±1."""
    inside = jnp.abs(x) < 1
    return jnp.where(inside, jnp.arcsin(jnp.where(inside, x, 0.0)), jnp.sign(x) * (math.pi / 2))


def _dot2(a: Array, b: Array) -> Array:
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1]


# --------------------------------------------------------------------------- 2D wraps


def _angle(a: Array, b: Array, ok: Array) -> Array:
    """The signed angle from the 2D vector a to b, in (−π, π] (0 where not `ok`, with
    zero gradient)."""
    y, x = a[0] * b[1] - a[1] * b[0], _dot2(a, b)
    return jnp.where(ok, jnp.arctan2(jnp.where(ok, y, 0.0), jnp.where(ok, x, 1.0)), 0.0)


def _wrap_circle(
    d0: Array, d1: Array, sd: Array | None, radius: Array
) -> tuple[Array, Array, Array, Array]:
    """The circle wrap of MuJoCo 4.0: the tangent points (2,), (2,), the arc length and
    whether the tendon wraps, for the 2D end points `d0`, `d1` and the optional side
    point `sd` (already on the circle).

    The tendon is the shortest path from `d0` to `d1` around the circle whose winding
    angle W about the centre is that of the straight segment (no side point) or of
    the polyline d0 → sd → d1; it is straight where the segment clears the circle with
    that winding, and otherwise wraps in the sense of W through the arc
    |W| − β₀ − β₁ (βᵢ = atan2(√(|dᵢ|² − r²), r), the angle between dᵢ and its
    tangent point)."""
    sqlen0, sqlen1, sqrad = _dot2(d0, d0), _dot2(d1, d1), radius * radius
    outside = (sqlen0 >= sqrad) & (sqlen1 >= sqrad) & (radius >= MINVAL)
    dif = d1 - d0
    dd = _dot2(dif, dif)
    ok = outside & (dd >= MINVAL)
    a = jnp.clip(-_dot2(dif, d0) / jnp.where(ok, dd, 1.0), 0.0, 1.0)
    near = a * dif + d0
    clear = _dot2(near, near) > sqrad
    straight = _angle(d0, d1, ok)
    if sd is None:
        winding = straight
        ok = ok & ~clear
    else:
        winding = _angle(d0, sd, ok) + _angle(sd, d1, ok)
        ok = ok & ~(clear & (jnp.abs(winding - straight) < math.pi))
    sqrt0 = _safe_sqrt(sqlen0 - sqrad, ok)
    sqrt1 = _safe_sqrt(sqlen1 - sqrad, ok)
    inv0, inv1 = 1 / jnp.where(ok, sqlen0, 1.0), 1 / jnp.where(ok, sqlen1, 1.0)
    sgn = jnp.where(winding > 0, -1.0, 1.0)  # +1: clockwise
    t0 = jnp.stack(
        [
            (d0[0] * sqrad + sgn * radius * d0[1] * sqrt0) * inv0,
            (d0[1] * sqrad - sgn * radius * d0[0] * sqrt0) * inv0,
        ]
    )
    t1 = jnp.stack(
        [
            (d1[0] * sqrad - sgn * radius * d1[1] * sqrt1) * inv1,
            (d1[1] * sqrad + sgn * radius * d1[0] * sqrt1) * inv1,
        ]
    )
    beta = jnp.arctan2(sqrt0, radius) + jnp.arctan2(sqrt1, radius)
    return t0, t1, radius * (jnp.abs(winding) - beta), ok


def _inside_f(z: Array, a: Array, b: Array, g: Array) -> Array:
    return _asin(a * z) + _asin(b * z) - 2 * _asin(z) + g


def _wrap_inside(d0: Array, d1: Array, radius: Array) -> tuple[Array, Array]:
    """MuJoCo's `wrap_inside`: the one point (2,) of the circle the tendon passes
    through when its side point is inside, and whether it wraps (the arc length is
    0)."""
    len0, len1 = _normalize(d0)[1], _normalize(d1)[1]
    dif = d1 - d0
    dd = _dot2(dif, dif)
    ok = (len0 > radius) & (len1 > radius) & (radius >= MINVAL) & (len0 >= MINVAL)
    ok = ok & (len1 >= MINVAL)
    apart = dd > MINVAL
    a = -_dot2(dif, d0) / jnp.where(apart, dd, 1.0)
    near = d0 + a * dif
    ok = ok & ~(apart & (a > 0) & (a < 1) & (_normalize(near)[1] <= radius))
    default = radius * _normalize(0.5 * (d0 + d1))[0]
    safe0, safe1 = jnp.where(ok, len0, 1.0), jnp.where(ok, len1, 1.0)
    ca, cb = radius / safe0, radius / safe1
    cos_g = (len0 * len0 + len1 * len1 - dd) / (2 * safe0 * safe1)
    ok = ok & (cos_g >= -1 + MINVAL)
    g = _acos(cos_g)
    z = jnp.asarray(_INSIDE_ZINIT, d0.dtype)
    f = _inside_f(z, ca, cb, g)
    # Newton's method as MuJoCo runs it: stop when |f| <= tol; fall back to the
    # default point if f starts positive, on any step that "should not occur", or
    # after maxiter steps.
    failed = (cos_g > 1 - MINVAL) | (f > 0)
    done = jnp.zeros((), bool)

    def step(_: Anything, carry: tuple[Array, Array, Array, Array]) -> tuple[Array, ...]:
        z, f, done, failed = carry
        done = done | (~failed & (jnp.abs(f) <= _INSIDE_TOL))
        active = ~done & ~failed

        def inv(x: Array) -> Array:
            return 1 / jnp.maximum(MINVAL, _safe_sqrt(x, x > 0))

        df = ca * inv(1 - z * z * ca * ca) + cb * inv(1 - z * z * cb * cb) - 2 * inv(1 - z * z)
        bad = df > -MINVAL
        z1 = z - f / jnp.where(bad, -1.0, df)
        bad = bad | (z1 > z)
        f1 = _inside_f(z1, ca, cb, g)
        bad = bad | (f1 > _INSIDE_TOL)
        z, f = jnp.where(active, z1, z), jnp.where(active, f1, f)
        return z, f, done, failed | (active & bad)

    z, f, done, failed = jax.lax.fori_loop(0, _INSIDE_MAXITER, step, (z, f, done, failed))
    use_d0 = d0[0] * d1[1] - d0[1] * d1[0] > 0
    vec = _normalize(jnp.where(use_d0, d0, d1))[0]
    ang = _asin(z) - _asin(jnp.where(use_d0, ca, cb) * z)
    c, s = jnp.cos(ang), jnp.sin(ang)
    point = radius * jnp.stack([c * vec[0] - s * vec[1], s * vec[0] + c * vec[1]])
    return jnp.where(done & ~failed, point, default), ok


# --------------------------------------------------------------------------- 3D wrap


def wrap(
    x0: Float[Array, "3"],
    x1: Float[Array, "3"],
    centre: Float[Array, "3"],
    rot: Float[Array, "3 3"],
    radius: FloatScalar,
    side: Float[Array, "3"] | None,
    *,
    cylinder: bool,
) -> tuple[Float[Array, "2 3"], FloatScalar, Bool[Array, ""]]:
    """MuJoCo's `mju_wrap` for one wrap: the tangent points (2, 3) in the world, the
    length along the surface between them and whether the tendon wraps (where it does
    not, the points are the ends and the length 0), for the world points `x0`, `x1`,
    the sphere's or cylinder's world `centre` and frame `rot` (its columns the local
    axes) and the world `side` point (`None`: no side site)."""
    p0, p1 = (x0 - centre) @ rot, (x1 - centre) @ rot
    ok = (_normalize(p0)[1] >= MINVAL) & (_normalize(p1)[1] >= MINVAL)
    if cylinder:
        ax0 = jnp.asarray([1.0, 0.0, 0.0], x0.dtype)
        ax1 = jnp.asarray([0.0, 1.0, 0.0], x0.dtype)
    else:
        ax0 = _normalize(p0)[0]
        normal, nrm = _normalize(cross(p0, p1))
        # p0 ∥ p1: MuJoCo's normal from ax0 and (1, 1, 1) with a 0 at ax0's largest
        # component (the first of equals).
        mag = jnp.abs(ax0)
        i = jnp.where(
            (mag[1] > mag[0]) & (mag[1] > mag[2]),
            1,
            jnp.where((mag[2] > mag[0]) & (mag[2] > mag[1]), 2, 0),
        )
        other = jnp.ones(3, x0.dtype).at[i].set(0.0)
        normal = jnp.where(nrm < MINVAL, _normalize(cross(ax0, other))[0], normal)
        ax1 = _normalize(cross(normal, ax0))[0]
    d0 = jnp.stack([p0 @ ax0, p0 @ ax1])
    d1 = jnp.stack([p1 @ ax0, p1 @ ax1])
    if side is None:
        t0, t1, arc, wraps = _wrap_circle(d0, d1, None, radius)
    else:
        s = (side - centre) @ rot
        sd = radius * _normalize(jnp.stack([s @ ax0, s @ ax1]))[0]
        c0, c1, arc, circle = _wrap_circle(d0, d1, sd, radius)
        point, inside_ok = _wrap_inside(d0, d1, radius)
        inside = _normalize(s)[1] < radius
        t0, t1 = jnp.where(inside, point, c0), jnp.where(inside, point, c1)
        arc = jnp.where(inside, 0.0, arc)
        wraps = jnp.where(inside, inside_ok, circle)
    ok = ok & wraps
    res0 = ax0 * t0[0] + ax1 * t0[1]
    res1 = ax0 * t1[0] + ax1 * t1[1]
    if cylinder:
        sq0 = (p0[0] - res0[0]) ** 2 + (p0[1] - res0[1]) ** 2
        sq1 = (p1[0] - res1[0]) ** 2 + (p1[1] - res1[1]) ** 2
        l0, l1 = _safe_sqrt(sq0, ok & (sq0 > 0)), _safe_sqrt(sq1, ok & (sq1 > 0))
        total = l0 + arc + l1
        total = jnp.where(ok & (total > 0), total, 1.0)
        z0 = p0[2] + (p1[2] - p0[2]) * l0 / total
        z1 = p0[2] + (p1[2] - p0[2]) * (l0 + arc) / total
        res0, res1 = res0.at[2].set(z0), res1.at[2].set(z1)
        sq = arc * arc + (z1 - z0) ** 2
        arc = _safe_sqrt(sq, ok & (sq > 0))
    points = jnp.stack([rot @ res0, rot @ res1]) + centre[None]
    ends = jnp.stack([x0, x1])
    return jnp.where(ok, points, ends), jnp.where(ok, arc, 0.0), ok


def _wrap_one(
    has_side: bool, cylinder: bool, a: Array, b: Array, c: Array, r: Array, rad: Array, s: Array
) -> tuple[Array, Array, Array]:
    return wrap(a, b, c, r, rad, s if has_side else None, cylinder=cylinder)


def wrap_frame(w: TendonWrap, rot: Array, pos: Array) -> tuple[Array, Array]:
    """The world centre and frame of `w` given its body's world frame (`rot`, `pos`)."""
    dtype = rot.dtype
    return rot @ w.pos.astype(dtype) + pos, rot @ quat_to_matrix(w.quat.astype(dtype))


# --------------------------------------------------------------------------- paths


def point_jacobians(mb: Anything, f: Anything, idx: np.ndarray, x: Array) -> Array:
    """The translational Jacobians (P, nv, 3) of the world points `x` (P, 3) fixed to
    the bodies `idx` (-1: the world): dof k moves a point with lin_k + ω_k × x when
    body(k) is the point's body or an ancestor of it."""
    topo = mb.topology
    moving = idx >= 0
    mask = jnp.asarray(topo.anc[np.where(moving, idx, 0)][:, topo.dof_body] & moving[:, None])
    s = f.subspace
    jp = s[None, :, 3:] + cross(s[None, :, :3], x[:, None, :])
    return mask.astype(x.dtype)[:, :, None] * jp


def path_points(tendons: Sequence[Anything], mb: Anything, f: Anything) -> tuple[Array, Array]:
    """The world positions (P, 3) and Jacobians (P, nv, 3) of every point of the
    stacked paths of `tendons`."""
    idx = np.asarray([-1 if b is None else mb.body_index(b) for t in tendons for b in t.bodies])
    b = np.where(idx >= 0, idx, 0)
    p = jnp.concatenate([t.points for t in tendons]).astype(f.pos.dtype)
    x = jnp.where((idx >= 0)[:, None], jnp.einsum("pij,pj->pi", f.rot[b], p) + f.pos[b], p)
    return x, point_jacobians(mb, f, idx, x)


def pieces(x0: Array, x1: Array, j0: Array, j1: Array) -> tuple[Array, Array]:
    """The lengths |x1 − x0| (S,) and Jacobians e · (J1 − J0) (S, nv) of straight
    pieces (a zero piece: no direction, zero Jacobian)."""
    d = x1 - x0
    sq = jnp.sum(d * d, axis=-1)
    pos = sq > 0
    norm = jnp.sqrt(jnp.where(pos, sq, 1.0))
    e = jnp.where(pos[:, None], d / norm[:, None], 0.0)
    return jnp.where(pos, norm, 0.0), jnp.einsum("sc,skc->sk", e, j1 - j0)


def wrap_all(
    wraps: Sequence[TendonWrap], mb: Anything, f: Anything, x0: Array, x1: Array
) -> tuple[Array, Array, Array]:
    """`wrap` for every wrap (their segments' ends `x0`, `x1`, (W, 3)): the tangent
    points (W, 2, 3), arc lengths (W,) and whether each wraps (W,), vectorised within
    each static kind (sphere or cylinder, with or without side point)."""
    dtype = f.pos.dtype

    def frame(body: str | None) -> tuple[Array, Array]:
        if body is None:
            return jnp.eye(3, dtype=dtype), jnp.zeros(3, dtype)
        i = mb.body_index(body)
        return f.rot[i], f.pos[i]

    parts, places = [], []
    for idx in grouped(wraps, lambda w: (w.cylinder, w.has_side)):
        ws = [wraps[i] for i in idx]
        centre, rot = zip(*(wrap_frame(w, *frame(w.body)) for w in ws), strict=True)
        side = [frame(w.side_body) for w in ws]
        side = jnp.stack([r @ w.side.astype(dtype) + p for w, (r, p) in zip(ws, side, strict=True)])
        radius = stacked(ws, "radius", dtype)
        one = functools.partial(_wrap_one, ws[0].has_side, ws[0].cylinder)
        out = jax.vmap(one)(x0[idx], x1[idx], jnp.stack(centre), jnp.stack(rot), radius, side)
        parts.append(out)
        places.append(idx)
    return assemble(parts, places)

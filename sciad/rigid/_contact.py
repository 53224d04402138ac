"""Contacts: collision geometry, narrow-phase distance functions, and the contact
solve (a convex, regularised Coulomb problem, differentiated implicitly)."""

from collections.abc import Callable, Sequence
import functools
import sys
from typing import NamedTuple
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float
import numpy as np

from .._core._batching import compacting_while
from .._core._geometry import cross, quat_to_matrix, safe_norm
from .._core._types import Anything, FloatScalar, RealScalarLike
from .._core._validate import (
    as_float_array,
    check_in_range,
    check_int,
    check_positive,
    check_scalar,
    is_concrete,
)
from ._body import _unit_quat
from ._shapes import AbstractShape, Box, Capsule, Cylinder, Plane, Sphere
from ._types import QuatLike, ScalarLike, Vec3Like


class Geom(eqx.Module):
    """Collision geometry: a shape fixed to a body (or to the world), with its
    contact material.

    A geom does not add mass (give the body's inertial parameters, or compute them
    from a shape, in [`Body`][sciad.rigid.Body]). Geoms are listed in
    `MultiBody(..., geoms=[...])`; which pairs can touch follows MuJoCo: geoms of one
    body, or of bodies welded together by [`FixedJoint`][sciad.rigid.FixedJoint]s,
    never collide, nor a body with its parent (unless the parent is the world);
    otherwise a pair collides when `(contype₁ & conaffinity₂) | (contype₂ &
    conaffinity₁)` is nonzero, and it is not excluded by `MultiBody(exclude=...)`.

    **Arguments:**

    - `shape`: a [`Sphere`][sciad.rigid.Sphere], [`Capsule`][sciad.rigid.Capsule],
      [`Box`][sciad.rigid.Box], [`Cylinder`][sciad.rigid.Cylinder] or
      [`Plane`][sciad.rigid.Plane] (its local z axis is the symmetry axis, for
      capsules and cylinders, and the outward normal, for planes).
    - `body`: the name of the body it is fixed to; `None` for the world.
    - `pos`, `quat`: placement in the body frame, shapes `(3,)` (length) and `(4,)`
      (w, x, y, z).
    - `friction`: Coulomb coefficient μ ≥ 0 (a pair uses the larger of its two, as
      MuJoCo does).
    - `condim`: 3 (default: sliding friction) or 1 (frictionless): as MuJoCo's, a pair
      takes the larger of its two, so two condim-1 geoms touch without friction and
      a condim-1 geom against a condim-3 one with the larger coefficient.
    - `restitution`: Newton's coefficient e in [0, 1] (a pair uses the larger): the
      normal velocity after an impact is −e times the one before, for a hard contact.
    - `contype`, `conaffinity`: MuJoCo's collision bitmasks (integers).
    - `name`: an optional name, used in error messages.
    - `time_constant`, `softness`: this geom's own τ and ε (> 0) for its contacts;
      `None` (default): the model's [`ContactModel`][sciad.rigid.ContactModel]'s. A
      pair mixes its two geoms' values as MuJoCo mixes `solref` and `solimp` (equal
      `solmix`): the mean τ, and the ε of the mean impedance d = 1/(1 + ε).
    - `margin` (length, ≥ 0): a pair acts when its distance is below the sum of its
      geoms' margins, as MuJoCo's `margin` (MuJoCo 4 sums a pair's margins): a body
      rests about that far from what it stands on. Only for pairs whose separated
      distance is exact: planes, spheres and capsules with each other, and boxes
      against planes.

    **Example:**

    ```python
    floor = sciad.rigid.Geom(sciad.rigid.Plane(), friction=0.5)
    ball = sciad.rigid.Geom(sciad.rigid.Sphere(0.1), body="ball", restitution=0.8)
    ```
    """

    shape: AbstractShape
    body: str | None = eqx.field(static=True)
    pos: Float[Array, "3"]
    quat: Float[Array, "4"]
    friction: FloatScalar
    restitution: FloatScalar
    contype: int = eqx.field(static=True)
    conaffinity: int = eqx.field(static=True)
    name: str | None = eqx.field(static=True)
    condim: int = eqx.field(static=True)
    time_constant: FloatScalar | None
    softness: FloatScalar | None
    margin: FloatScalar

    def __init__(
        self,
        shape: AbstractShape,
        *,
        body: str | None = None,
        pos: Vec3Like = (0.0, 0.0, 0.0),
        quat: QuatLike = (1.0, 0.0, 0.0, 0.0),
        friction: ScalarLike = 1.0,
        restitution: ScalarLike = 0.0,
        contype: int = 1,
        conaffinity: int = 1,
        name: str | None = None,
        time_constant: ScalarLike | None = None,
        softness: ScalarLike | None = None,
        margin: ScalarLike = 0.0,
        condim: int = 3,
    ):
        if not isinstance(shape, AbstractShape):
            raise TypeError(
                "Geom shape must be a sciad.rigid shape (Sphere, Capsule, Box, Cylinder, "
                f"Plane); got {shape!r}."
            )
        if body is not None and not isinstance(body, str):
            raise TypeError(f"Geom body must be a body name or None; got {body!r}.")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Geom name must be a string or None; got {name!r}.")
        label = f"Geom {name!r}" if name else "Geom"
        self.shape = shape
        self.body = body
        self.pos = as_float_array(pos, f"{label} pos", (3,))
        self.quat = _unit_quat(f"{label} quat", quat)
        check_positive(friction, f"{label} friction", zero_ok=True)
        self.friction = jnp.asarray(friction)
        check_scalar(restitution, f"{label} restitution")
        check_in_range(restitution, f"{label} restitution", 0.0, 1.0)
        self.restitution = jnp.asarray(restitution)
        self.contype = check_int(contype, f"{label} contype", minimum=0)
        self.conaffinity = check_int(conaffinity, f"{label} conaffinity", minimum=0)
        self.name = name
        self.condim = check_int(condim, f"{label} condim", allowed=(1, 3))
        for field, x in (("time_constant", time_constant), ("softness", softness)):
            if x is not None:
                check_positive(x, f"{label} {field}")
        self.time_constant = None if time_constant is None else jnp.asarray(time_constant)
        self.softness = None if softness is None else jnp.asarray(softness)
        check_positive(margin, f"{label} margin", zero_ok=True)
        self.margin = jnp.asarray(margin)


class ContactModel(eqx.Module):
    """How contacts are resolved: a regularised (soft) Coulomb contact, solved to
    convergence each step and differentiated implicitly.

    Each step of [`SemiImplicitEuler`][sciad.rigid.SemiImplicitEuler] finds the new
    velocity v⁺ as the minimiser of the convex function

    ℓ(v) = ½ (v − v_free)ᵀ M (v − v_free) + Σ_c (1/(2R_c)) ‖Π_K(û_c − J_c v)‖²,

    where v_free is the velocity without contacts, J_c maps v to contact c's relative
    velocity in its frame (normal, two tangents), Π_K projects on the friction cone
    K = {‖γ_t‖ ≤ μ γ_n}, and the impulse is γ_c = Π_K(û_c − J_c v⁺)/R_c ∈ K. The
    reference velocity û_c is zero along the tangents and, along the normal, the larger
    of −φ/τ (push a penetration φ < 0 out with time constant τ) and −e u⁻ (Newton
    restitution of the approach velocity u⁻). Only penetrating contacts (φ < 0) act.
    This is the convex formulation of MuJoCo and of Drake's SAP (Todorov 2014; Castro
    et al. 2022), at the velocity level. Newton's method with a backtracking line
    search converges in a few iterations (ℓ is piecewise quadratic, strongly convex).
    The iterations are not differentiated: the solution is differentiated implicitly,
    dv⁺ = −H⁻¹ ∂θ∇ℓ · dθ at the minimiser (∇ℓ = 0 there; H the Hessian of ℓ), by a
    custom JVP rule that is itself differentiable. So reverse mode, forward mode and
    every second-order combination (Hessians, Hessian-vector products, `grad` of
    `grad`) are exact for the converged solve, and a gradient costs one extra
    Hessian factorisation per step, whatever the number of iterations.

    The convex model alone would lift a sliding contact off at normal speed μ|u_t|
    (Anitescu's relaxation); the normal reference is lowered by μ|u_t⁻|, the slip
    before the step (De Saxcé's bipotential correction, made explicit), so a sliding
    contact stays on the surface: it sinks only by τ μ² g h (the slip falls by μ g h
    within a step h), 5e-5 m for μ = 0.5, h = 1 ms and the default τ.

    **The smoothness parameter** is `softness` ε: R_c = ε · (J M⁻¹ Jᵀ)_nn / w_c, the
    contact's compliance relative to its effective inverse mass (w_c is the point's
    weight, 1 except for near-parallel capsule pairs, `Contacts`). ε → 0 is a hard,
    rigid contact with exact Coulomb stiction; larger ε makes the contact a stiff
    spring–damper (a resting body sinks by ≈ τ R γ_n, about 1e-6 m for the
    defaults), makes impulses continuous functions of the state and the solve better
    conditioned, and softens impacts: a single-point impact leaves with normal
    velocity (e − ε)/(1 + ε) times the approach speed. Stiction creeps at speed R γ_t
    under a tangential load. A sliding contact's friction force is exactly μ times
    its normal force, so a sliding box decelerates at μg.

    **Arguments:**

    - `softness`: ε > 0 (dimensionless), default 1e-2.
    - `time_constant`: τ > 0 (time), the penetration-recovery time. Default 0.02
      (MuJoCo's default `solref` time constant). A step h uses max(τ, 2h)
      ([`effective_time_constant`][sciad.rigid.ContactModel.effective_time_constant]),
      as MuJoCo's `refsafe` does: the recovery φ ← φ (1 − h/τ) overshoots for h/τ > 1
      and grows for h/τ > 2, so a τ below two steps would launch a body from the
      ground (a box dropped from 0.2 m with τ = h/2 rose to 1.28 m). The hard joint
      limits use the same time constant.
    - `max_iterations`: Newton iterations before the solve is reported as failed
      (`RESULTS.solver_failed`); default 50.
    - `tolerance`: relative velocity tolerance of the solve, default 1e-10 (raised to
      100 × the machine epsilon in float32): the solve has converged when the full
      Newton step at the current iterate (its error) is below `tolerance` ×
      max(|v_free|, 1); that step is then taken.

    References: Todorov, ICRA 2014, "Convex and analytically-invertible dynamics with
    contacts and constraints"; Castro, Permenter & Han, IEEE T-RO 39 (2023),
    "An unconstrained convex formulation of compliant contact"; Anitescu, Math.
    Program. 105 (2006).

    **Example:** `sciad.rigid.MultiBody(bodies, geoms=geoms, contact=sciad.rigid.ContactModel(softness=1e-3))`
    """

    softness: FloatScalar = eqx.field(default=1e-2, converter=jnp.asarray)
    time_constant: FloatScalar = eqx.field(default=0.02, converter=jnp.asarray)
    max_iterations: int = eqx.field(default=50, static=True)
    tolerance: float = eqx.field(default=1e-10, static=True)

    def __check_init__(self):
        check_positive(self.softness, "ContactModel.softness")
        check_positive(self.time_constant, "ContactModel.time_constant")
        check_int(self.max_iterations, "ContactModel.max_iterations")
        if isinstance(self.tolerance, bool) or not isinstance(self.tolerance, (int, float)):
            raise TypeError(f"ContactModel.tolerance must be a float; got {self.tolerance!r}.")
        check_positive(self.tolerance, "ContactModel.tolerance")

    def effective_time_constant(self, dt: RealScalarLike) -> FloatScalar:
        """The time constant a step of length `dt` uses: max(τ, 2·dt) (MuJoCo's
        `refsafe`; see the class docstring).

        **Example:** `ContactModel(time_constant=1e-3).effective_time_constant(1e-3)` is 2e-3.
        """
        return safe_time_constant(self.time_constant, dt)


def safe_time_constant(time_constant: Array, dt: RealScalarLike) -> Array:
    """max(τ, 2·dt) (MuJoCo's `refsafe`, see `ContactModel`), elementwise."""
    return jnp.maximum(time_constant, 2 * jnp.asarray(dt, time_constant.dtype))


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
    signs = jnp.asarray(
        [[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], pos.dtype
    )
    return pos[None] + (signs * half[None]) @ rot.T


def _point_box(p: Array, rot: Array, pos: Array, half: Array) -> tuple[Array, Array]:
    """Signed distance of points p (K, 3) to a box, and the outward unit normal (the
    direction to the point outside; the nearest face's normal inside)."""
    phi, n_local = _local_point_box((p - pos[None]) @ rot, half)
    return phi, n_local @ rot.T


def _local_point_box(local: Array, half: Array) -> tuple[Array, Array]:
    """`_point_box` for points (K, 3) in the box's frame; the normal in that frame."""
    clamped = jnp.clip(local, -half[None], half[None])
    outside_dist, outside_n = _unit(local - clamped, jnp.zeros_like(local))
    depth = half[None] - jnp.abs(local)  # (K, 3), all positive inside
    k = jnp.argmin(depth, axis=-1)
    face = jax.nn.one_hot(k, 3, dtype=local.dtype) * jnp.where(local >= 0, 1.0, -1.0)
    inside = jnp.all(depth > 0, axis=-1)
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


def _round_off(dtype: jnp.dtype) -> float:
    """The narrow phase's relative round-off margin, 1e3·eps. A discrete choice that
    can sit at an exact tie (which feature is nearest, which patch vertex is kept) is
    closed with it, so the forward pass and `jax.checkpoint`'s recomputation choose
    alike (docs/design.md)."""
    return 1e3 * float(jnp.finfo(dtype).eps)


def _plane_sphere(sa, ra, pa, sb, rb, pb) -> _Points:
    return _plane_points(ra, pa, pb[None], sb.radius)


def _plane_capsule(sa, ra, pa, sb, rb, pb) -> _Points:
    return _plane_points(ra, pa, jnp.stack(_segment(rb, pb, sb.half_length)), sb.radius)


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


def _segment_box_deepest(x0: Array, d: Array, half: Array, crossings: Array) -> Array:
    """The parameter t ∈ [0, 1] minimising the box's signed distance along the segment
    x0 + t d (box frame), exactly: the distance is convex along a line, and its
    minimiser is among the ends, the crossings of the six face planes, the minimiser
    of the squared distance on each piece between crossings (a quadratic), and, inside
    the box, the kinks where two faces are equally deep. `crossings` (2, 3): the t at
    which each coordinate reaches −half and +half."""
    knots = jnp.sort(
        jnp.clip(jnp.concatenate([jnp.asarray([0.0, 1.0], d.dtype), crossings.reshape(6)]), 0, 1)
    )
    # Each piece between knots clamps a fixed set of coordinates: minimise its quadratic.
    mid = 0.5 * (knots[:-1] + knots[1:])  # (7,)
    local = x0[None] + mid[:, None] * d[None]
    target = jnp.clip(local, -half[None], half[None])  # the clamp values on the piece
    clamped = jnp.abs(local) > half[None]
    dd = jnp.where(clamped, d[None], 0.0)
    num = jnp.sum(dd * (target - x0[None]), axis=-1)
    den = jnp.sum(dd * dd, axis=-1)
    piece = jnp.clip(num / jnp.where(den > 0, den, 1.0), knots[:-1], knots[1:])
    # Kinks inside: s_j x_j − h_j = s_k x_k − h_k for the pairs (j, k) and signs.
    j, k = np.array([0, 0, 1]), np.array([1, 2, 2])
    sj = np.array([1.0, 1.0, -1.0, -1.0])[:, None]
    sk = np.array([1.0, -1.0, 1.0, -1.0])[:, None]
    den = sj * d[j][None] - sk * d[k][None]  # (4 signs, 3 pairs)
    num = (half[j] - half[k])[None] - sj * x0[j][None] + sk * x0[k][None]
    kinks = jnp.clip((num / jnp.where(jnp.abs(den) > 1e-30, den, 1.0)).reshape(12), 0, 1)
    t = jnp.concatenate([knots, piece, kinks])
    depth = _local_point_box(x0[None] + t[:, None] * d[None], half)[0]
    return t[jnp.argmin(depth)]


def _capsule_box(sa, ra, pa, sb, rb, pb) -> _Points:
    """Capsule–box (3 points). The segment point deepest in the box, t*, is found
    exactly (`_segment_box_deepest`); the box feature nearest to it (a face, an edge
    or a corner) leaves the segment free along its own directions (two, one, none),
    and the segment is clipped to that feature's extent: [t_lo, t_hi] ∋ t*. The
    contacts are spheres of the capsule's radius against the box at t_lo and t_hi
    (a capsule lying on a face or along an edge rests on two points, where it leaves
    the face or edge), and at t* if it is deeper than both (a capsule pressed into
    the box); duplicates are inactive."""
    half = sb.half_extents
    p0, p1 = _segment(ra, pa, sa.half_length)
    x0 = (p0 - pb) @ rb
    d = (p1 - p0) @ rb
    tiny = 1e-30
    moving = jnp.abs(d) > tiny
    safe = jnp.where(moving, d, tiny)
    a, b = (-half - x0) / safe, (half - x0) / safe  # where each coordinate meets ∓half
    t_star = _segment_box_deepest(x0, d, half, jnp.stack([a, b]))
    at = x0 + t_star * d
    scale = jnp.sum(half) + sa.radius
    tol = _round_off(d.dtype)  # in t and in depths (relative)
    # The nearest feature's directions. A face's extent is closed, with a margin for
    # round-off: t* often lies exactly where the segment leaves a face (a level
    # capsule's deepest points end there), and a test decided by the last bit there
    # could pick an edge instead, a different contact set, in one evaluation of the
    # step and the face in another (the forward pass and the recomputation under
    # `jax.checkpoint`): reverse mode was then wrong on a symmetric pose.
    free = jnp.abs(at) <= half + tol * scale
    inside = jnp.all(free)
    face_axis = jnp.argmin(half - jnp.abs(at))
    free = jnp.where(inside, jnp.arange(3) != face_axis, free)
    lo = jnp.where(free & moving, jnp.minimum(a, b), 0.0)
    hi = jnp.where(free & moving, jnp.maximum(a, b), 1.0)
    none_free = ~jnp.any(free)
    t_lo = jnp.where(none_free, t_star, jnp.clip(jnp.max(lo), 0.0, t_star))
    t_hi = jnp.where(none_free, t_star, jnp.clip(jnp.min(hi), t_star, 1.0))
    t = jnp.stack([t_lo, t_hi, t_star])
    spheres = _spheres_box(p0[None] + t[:, None] * (p1 - p0)[None], sa.radius, rb, pb, half)
    duplicate_hi = t_hi - t_lo <= tol
    shallow_star = spheres.dist[2] >= jnp.minimum(spheres.dist[0], spheres.dist[1]) - tol * scale
    off = jnp.stack([jnp.asarray(False), duplicate_hi, shallow_star])
    placeholder = jnp.abs(spheres.dist) + 2 * scale
    return _Points(jnp.where(off, placeholder, spheres.dist), spheres.normal, spheres.point)


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
    tol = _round_off(n.dtype)  # in coordinates and t (relative)
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


# Pair kinds: the first shape type sorts first in this order.
_ORDER = (Plane, Sphere, Capsule, Box, Cylinder)
_COLLIDE: dict[tuple[type, type], tuple[Callable, int]] = {
    (Plane, Sphere): (_plane_sphere, 1),
    (Plane, Capsule): (_plane_capsule, 2),
    (Plane, Box): (_plane_box, 8),
    (Plane, Cylinder): (_plane_cylinder, 6),
    (Sphere, Sphere): (_sphere_sphere, 1),
    (Sphere, Capsule): (_sphere_capsule, 1),
    (Capsule, Capsule): (_capsule_capsule, 3),
    (Sphere, Box): (_sphere_box, 1),
    (Capsule, Box): (_capsule_box, 3),
    (Sphere, Cylinder): (_sphere_cylinder, 1),
    (Box, Box): (_box_box, 25),
}


def _kind(shape: AbstractShape) -> type:
    for t in _ORDER:
        if isinstance(shape, t):
            return t
    raise TypeError(f"no collision support for shape {type(shape).__name__}.")


def _geom_label(geoms: Sequence[Geom], i: int) -> str:
    g = geoms[i]
    where = "the world" if g.body is None else f"body {g.body!r}"
    name = f"{g.name!r}" if g.name else f"#{i}"
    return f"geom {name} ({type(g.shape).__name__} on {where})"


def contact_pairs(
    geoms: Sequence[Geom],
    body_index: Sequence[int],
    parents: Sequence[int],
    weld_root: Sequence[int],
    exclude: set[frozenset[int]],
) -> tuple[tuple[int, int], ...]:
    """The static list of colliding geom pairs (i, j), ordered so that geom i's shape
    sorts first; raises for a pair no collision function handles.

    MuJoCo's filter: bodies welded together (same weld group; the world's group is
    −1) never collide, nor a weld group with its parent's group unless either is
    welded to the world."""

    def group(b: int) -> int:
        return -1 if b < 0 else weld_root[b]

    def parent_group(g: int) -> int:
        return -1 if g < 0 else group(parents[g])

    pairs = []
    for i in range(len(geoms)):
        for j in range(i + 1, len(geoms)):
            gi, gj = geoms[i], geoms[j]
            bi, bj = body_index[i], body_index[j]
            wi, wj = group(bi), group(bj)
            if wi == wj:
                continue
            if wi >= 0 and wj >= 0 and (wi == parent_group(wj) or wj == parent_group(wi)):
                continue
            if frozenset((bi, bj)) in exclude:
                continue
            if not ((gi.contype & gj.conaffinity) or (gj.contype & gi.conaffinity)):
                continue
            ki, kj = _kind(gi.shape), _kind(gj.shape)
            if _ORDER.index(ki) > _ORDER.index(kj):
                i_, j_, ki, kj = j, i, kj, ki
            else:
                i_, j_ = i, j
            if (ki, kj) not in _COLLIDE:
                if ki is Plane and kj is Plane:
                    continue
                raise ValueError(
                    f"no collision function for {_geom_label(geoms, i_)} against "
                    f"{_geom_label(geoms, j_)} ({ki.__name__}–{kj.__name__} is not "
                    "supported); exclude the pair with MultiBody(exclude=[(body_a, "
                    "body_b)]) or with contype/conaffinity."
                )
            pairs.append((i_, j_))
    return tuple(pairs)


class Contacts(NamedTuple):
    """Candidate contact points of a configuration (C of them, a static number).

    `dist` (C,) signed distances less the pair's margin (negative: penetrating
    or within the margin, where the contact acts), `normal` (C, 3) unit normals
    from body `body_a` to body `body_b` (world frame), `point` (C, 3) contact points,
    `friction` and `restitution` (C,), `weight` (C,) the share of its stiffness each
    point carries (1, except where a capsule–capsule pair hands over between its
    closest point and its end points as the axes turn parallel), the pair's
    `time_constant` and `softness` (C,) (see `Geom`), and the static body indices
    `body_a`, `body_b` (C,) (−1: the world).

    **Example:** `touching = model.contacts(q).dist < 0`
    """

    dist: Float[Array, " C"]
    normal: Float[Array, "C 3"]
    point: Float[Array, "C 3"]
    friction: Float[Array, " C"]
    restitution: Float[Array, " C"]
    weight: Float[Array, " C"]
    time_constant: Float[Array, " C"]
    softness: Float[Array, " C"]
    body_a: np.ndarray
    body_b: np.ndarray


def _pair_groups(
    geoms: Sequence[Geom], pairs: Sequence[tuple[int, int]]
) -> list[tuple[Callable, int, np.ndarray, np.ndarray]]:
    """The pairs grouped by kind and shape structure, in the order of `find_contacts`'s
    points: (collision function, points per pair, first geoms, second geoms)."""
    groups: dict[tuple[type, type, Anything], list[tuple[int, int]]] = {}
    for i, j in pairs:
        key = (_kind(geoms[i].shape), _kind(geoms[j].shape))
        struct = (jax.tree.structure(geoms[i].shape), jax.tree.structure(geoms[j].shape))
        groups.setdefault((*key, struct), []).append((i, j))
    out = []
    for (ka, kb, _), members in groups.items():
        fn, k = _COLLIDE[(ka, kb)]
        out.append(
            (fn, k, np.asarray([m[0] for m in members]), np.asarray([m[1] for m in members]))
        )
    return out


def find_contacts(
    geoms: Sequence[Geom],
    geom_body: Sequence[int],
    pairs: Sequence[tuple[int, int]],
    rot: Array,
    pos: Array,
    model: ContactModel,
) -> Contacts:
    """Every candidate contact point: one batched distance function per pair kind.

    `rot` (n, 3, 3) and `pos` (n, 3) are the body frames in the world; `model` gives
    the time constant and softness of geoms that set none.
    """
    dtype = pos.dtype
    gb = np.asarray(geom_body, dtype=np.int64)
    gpos = jnp.stack([g.pos for g in geoms]).astype(dtype)
    grot = quat_to_matrix(jnp.stack([g.quat for g in geoms]).astype(dtype))
    body_rot = jnp.concatenate([rot, jnp.eye(3, dtype=dtype)[None]])[gb]
    body_pos = jnp.concatenate([pos, jnp.zeros((1, 3), dtype)])[gb]
    wrot = body_rot @ grot
    wpos = body_pos + jnp.einsum("gij,gj->gi", body_rot, gpos)
    parts = []
    for fn, k, ia, ib in _pair_groups(geoms, pairs):
        sa = jax.tree.map(lambda *xs: jnp.stack(xs), *[geoms[i].shape for i in ia])
        sb = jax.tree.map(lambda *xs: jnp.stack(xs), *[geoms[i].shape for i in ib])
        pts = jax.vmap(fn)(sa, wrot[ia], wpos[ia], sb, wrot[ib], wpos[ib])
        weight = jnp.ones_like(pts.dist) if pts.weight is None else pts.weight
        fa = jnp.stack([geoms[i].friction for i in ia]).astype(dtype)
        fb = jnp.stack([geoms[i].friction for i in ib]).astype(dtype)
        ea = jnp.stack([geoms[i].restitution for i in ia]).astype(dtype)
        eb = jnp.stack([geoms[i].restitution for i in ib]).astype(dtype)
        tau, eps, margin = (
            jnp.stack(x).astype(dtype)
            for x in zip(
                *(_pair_material(geoms[i], geoms[j], model) for i, j in zip(ia, ib, strict=True)),
                strict=True,
            )
        )
        parts.append(
            (
                (pts.dist - margin[:, None]).reshape(-1),
                pts.normal.reshape(-1, 3),
                pts.point.reshape(-1, 3),
                jnp.repeat(jnp.maximum(fa, fb) * _pair_condim_mask(geoms, ia, ib, dtype), k),
                jnp.repeat(jnp.maximum(ea, eb), k),
                weight.reshape(-1),
                jnp.repeat(tau, k),
                jnp.repeat(eps, k),
                np.repeat(gb[ia], k),
                np.repeat(gb[ib], k),
            )
        )
    cols = list(zip(*parts, strict=True))
    dist, normal, point, mu, e, weight, tau, eps = (jnp.concatenate(x) for x in cols[:8])
    ba, bb = (np.concatenate(x) for x in cols[8:])
    n_bodies = rot.shape[0]
    ba = np.where(ba == n_bodies, -1, ba)
    bb = np.where(bb == n_bodies, -1, bb)
    return Contacts(dist, normal, point, mu, e, weight, tau, eps, ba, bb)


# Pair kinds whose distance is exact when the geoms are apart (so a margin is exact).
_EXACT_APART = {
    (Plane, Sphere),
    (Plane, Capsule),
    (Plane, Box),
    (Sphere, Sphere),
    (Sphere, Capsule),
    (Capsule, Capsule),
}


def check_margins(geoms: Sequence[Geom], pairs: Sequence[tuple[int, int]]) -> None:
    """Refuse a margin on a pair whose separated distance is not exact."""
    for i, j in pairs:
        a, b = geoms[i], geoms[j]
        if all(is_concrete(g.margin) and float(g.margin) == 0 for g in (a, b)):
            continue
        kinds = (_kind(a.shape), _kind(b.shape))
        if kinds not in _EXACT_APART:
            raise ValueError(
                f"{_geom_label(geoms, i)} and {_geom_label(geoms, j)}: a margin "
                f"needs the distance of separated geoms, which the {kinds[0].__name__}–"
                f"{kinds[1].__name__} contact does not compute exactly (planes, spheres "
                "and capsules with each other, and boxes against planes, do)."
            )


def _pair_condim_mask(
    geoms: Sequence[Geom], ia: np.ndarray, ib: np.ndarray, dtype: Anything
) -> Array:
    """1 where a pair has friction (the larger condim is 3), 0 for two condim-1 geoms."""
    return jnp.asarray(
        [max(geoms[i].condim, geoms[j].condim) > 1 for i, j in zip(ia, ib, strict=True)], dtype
    )


def _pair_material(a: Geom, b: Geom, model: ContactModel) -> tuple[Array, Array, Array]:
    """A pair's time constant, softness and margin (see `Geom`): the model's τ
    and ε when neither geom sets its own, else the mean τ and the ε of the mean
    impedance d = 1/(1 + ε), as MuJoCo mixes solref and solimp."""
    if a.time_constant is None and b.time_constant is None:
        tau = model.time_constant
    else:
        tau = (
            sum(model.time_constant if g.time_constant is None else g.time_constant for g in (a, b))
            / 2
        )
    if a.softness is None and b.softness is None:
        eps = model.softness
    else:
        d = (
            sum(1 / (1 + (model.softness if g.softness is None else g.softness)) for g in (a, b))
            / 2
        )
        eps = (1 - d) / d
    return (
        jnp.asarray(tau),
        jnp.asarray(eps),
        a.margin + b.margin,
    )


# A contact deeper than this fraction of the smaller geom's inradius when a run starts
# is warned about (`warn_deep_penetration`).
DEEP_PENETRATION = 0.1

# The candidate points' distances, compiled once per model structure without XLA's
# optimisations (it runs once per `simulate` call: compiling fast matters, not running;
# filter_jit passes `compiler_options` on to jax.jit, which its type stubs omit).
_distances = eqx.filter_jit(  # pyright: ignore[reportCallIssue]
    lambda model, q: (lambda c: (c.dist, c.time_constant))(model.contacts(q)),
    compiler_options={"xla_backend_optimization_level": 0},
)


# Frames of these packages are skipped when a warning names the user's call.
_LIBRARY = frozenset({"sciad", "equinox", "jax", "jaxtyping", "beartype"})


def warn_deep_penetration(model: Anything, q: Array) -> None:
    """Warn (`UserWarning`) for every geom pair of `model` (a `MultiBody` with contacts)
    that penetrates, at configuration `q`, deeper than `DEEP_PENETRATION` times the
    smaller of the two geoms' inradii (`AbstractShape.inradius`): the contact pushes
    such a pair apart at about depth/τ, which can launch a body into the air. Nothing
    is checked unless `q` and the model are concrete."""
    if not all(is_concrete(x) for x in jax.tree.leaves((model, q))):
        return
    dist, taus = (np.asarray(x) for x in _distances(model, q))
    geoms = model.geoms
    groups = _pair_groups(geoms, model.pairs)
    ia = np.concatenate([np.repeat(a, k) for _, k, a, _ in groups])
    ib = np.concatenate([np.repeat(b, k) for _, k, _, b in groups])
    size = np.asarray([float(g.shape.inradius()) for g in geoms])
    limit = DEEP_PENETRATION * np.minimum(size[ia], size[ib])
    deep = -dist > limit
    # The stacklevel of the user's call: the first frame outside sciad and the libraries
    # that wrap its methods (this frame is level 1).
    frame, level = sys._getframe(), 1
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in _LIBRARY:
        frame, level = frame.f_back, level + 1
    for i, j in dict.fromkeys(zip(ia[deep].tolist(), ib[deep].tolist(), strict=True)):
        mine = (ia == i) & (ib == j)
        depth, allowed = float(np.max(-dist[mine])), float(limit[mine][0])
        tau = float(taus[mine][0])
        warnings.warn(
            f"{_geom_label(geoms, i)} and {_geom_label(geoms, j)} start {depth:.3g} deep "
            f"in each other, more than {DEEP_PENETRATION} of the smaller geom's inradius "
            f"({allowed:.3g}): the contact will push them apart at up to "
            f"depth/time_constant = {depth / tau:.3g} (length/time), which can launch a "
            "body. Start them touching or apart.",
            UserWarning,
            stacklevel=level,
        )


def contact_frames(normal: Float[Array, "C 3"]) -> Float[Array, "C 3 3"]:
    """Orthonormal frames (rows: normal, tangent, tangent), branch-free (Duff et al.,
    J. Comput. Graph. Tech. 6, 2017)."""
    x, y, z = normal[:, 0], normal[:, 1], normal[:, 2]
    s = jnp.where(z >= 0, 1.0, -1.0)
    a = -1.0 / (s + z)
    b = x * y * a
    t1 = jnp.stack([1.0 + s * x * x * a, s * b, -s * x], axis=-1)
    t2 = jnp.stack([b, s + y * y * a, -y], axis=-1)
    return jnp.stack([normal, t1, t2], axis=1)


def contact_jacobian(
    body_jac: Float[Array, "n 6 nv"], c: Contacts, frames: Float[Array, "C 3 3"]
) -> Float[Array, "C 3 nv"]:
    """J (C, 3, nv): v ↦ the velocity of body b's material point at each contact point
    relative to body a's, in the contact frame (normal, tangent, tangent)."""
    nv = body_jac.shape[-1]
    jac = jnp.concatenate([body_jac, jnp.zeros((1, 6, nv), body_jac.dtype)])

    def point_jac(bodies: np.ndarray) -> Array:
        jb = jac[np.where(bodies < 0, body_jac.shape[0], bodies)]  # (C, 6, nv)
        ang, lin = jb[:, :3], jb[:, 3:]
        # v_point = v_o + ω × p = v_o − p × ω
        return lin - jnp.swapaxes(cross(c.point[:, None, :], jnp.swapaxes(ang, 1, 2)), 1, 2)

    rel = point_jac(c.body_b) - point_jac(c.body_a)
    return jnp.einsum("cij,cjk->cik", frames, rel)


# ---------------------------------------------------------------------------------------
# The contact solve.
# ---------------------------------------------------------------------------------------


class _Problem(NamedTuple):
    mass: Array  # (nv, nv) M (+ h D)
    v_free: Array  # (nv,)
    jac: Array  # (C, 3, nv)
    u_ref: Array  # (C, 3)
    inv_r: Array  # (C,) active / R (0 for inactive contacts)
    mu: Array  # (C,)
    lim_jac: Array  # (L, nv) the hard joint limits' rows
    lim_ref: Array  # (L,)
    lim_inv_r: Array  # (L,)


class _Cone(NamedTuple):
    """Where y lies relative to K = {(n, t): ‖t‖ ≤ μ n}, per contact."""

    tangent_norm: Array  # ‖t‖
    direction: Array  # t̂ (0 where t = 0)
    inside: Array  # y ∈ K: Π_K(y) = y
    polar: Array  # y in the polar cone: Π_K(y) = 0
    n_star: Array  # Π_K(y)'s normal part on the boundary, (n + μ‖t‖)/(1 + μ²)


def _cone(y: Array, mu: Array) -> _Cone:
    yn, yt = y[..., 0], y[..., 1:]
    s, direction = _unit(yt, jnp.zeros_like(yt))
    # yn ≥ 0 matters only for μ = 0, where ‖t‖ ≤ μ yn would admit (yn < 0, t = 0).
    inside = (s <= mu * yn) & (yn >= 0)
    return _Cone(s, direction, inside, mu * s <= -yn, (yn + mu * s) / (1.0 + mu**2))


def _cone_projection(y: Array, mu: Array) -> Array:
    """Π_K(y) for K = {(n, t): ‖t‖ ≤ μ n}, per contact: y (..., 3), μ (...)."""
    c = _cone(y, mu)
    boundary = jnp.concatenate([c.n_star[..., None], (mu * c.n_star)[..., None] * c.direction], -1)
    return jnp.where(c.inside[..., None], y, jnp.where(c.polar[..., None], 0.0, boundary))


def _cone_jacobian(y: Array, mu: Array) -> Array:
    """∂Π_K/∂y (..., 3, 3): the identity inside K, zero in its polar cone, and on the
    boundary, where Π_K(y) = n* (1, μ t̂) with n* = (n + μ‖t‖)/(1 + μ²),
    u uᵀ/(1 + μ²) + (μ n*/‖t‖) (0 ⊕ (I − t̂ t̂ᵀ)) with u = (1, μ t̂)."""
    c = _cone(y, mu)
    d = c.direction
    u = jnp.concatenate([jnp.ones_like(c.n_star)[..., None], mu[..., None] * d], -1)
    # ‖t‖ > 0 on the boundary; elsewhere 1, so that the unused branch stays finite.
    curvature = mu * c.n_star / jnp.where(c.inside | c.polar, 1.0, c.tangent_norm)
    eye2 = jnp.broadcast_to(jnp.eye(2, dtype=y.dtype), d.shape + (2,))
    across = (
        jnp.zeros(y.shape + (3,), y.dtype)
        .at[..., 1:, 1:]
        .set(eye2 - d[..., :, None] * d[..., None, :])
    )
    boundary = u[..., :, None] * u[..., None, :] / (1.0 + mu**2)[..., None, None]
    boundary = boundary + curvature[..., None, None] * across
    eye = jnp.broadcast_to(jnp.eye(3, dtype=y.dtype), boundary.shape)
    return jnp.where(
        c.inside[..., None, None], eye, jnp.where(c.polar[..., None, None], 0.0, boundary)
    )


class _Rows(NamedTuple):
    """The constraint residuals at v: contacts' y = û − J v (C, 3) and Π_K(y), hard
    limits' z = û_L − J_L v (L,) (their projection on [0, ∞) is max(z, 0))."""

    y: Array
    proj: Array
    z: Array


def _rows(v: Array, p: _Problem) -> _Rows:
    y = p.u_ref - jnp.einsum("cij,j->ci", p.jac, v)
    return _Rows(y, _cone_projection(y, p.mu), p.lim_ref - p.lim_jac @ v)


def _penalty(r: _Rows, p: _Problem) -> Array:
    """Σ_c ‖Π_K(y_c)‖²/(2R_c) + Σ_l max(z_l, 0)²/(2R_l)."""
    contacts = jnp.sum(p.inv_r * jnp.sum(r.proj**2, axis=-1))
    return 0.5 * (contacts + jnp.sum(p.lim_inv_r * jnp.maximum(r.z, 0.0) ** 2))


def _gradient(v: Array, p: _Problem) -> tuple[Array, _Rows]:
    """∇ℓ(v) = M (v − v_free) − Jᵀ γ − J_Lᵀ γ_L, with γ = Π_K(y)/R and
    γ_L = max(z, 0)/R_L."""
    r = _rows(v, p)
    g = p.mass @ (v - p.v_free) - jnp.einsum("cij,ci->j", p.jac, p.inv_r[:, None] * r.proj)
    return g - p.lim_jac.T @ (p.lim_inv_r * jnp.maximum(r.z, 0.0)), r


def _cost(v: Array, p: _Problem) -> Array:
    dv = v - p.v_free
    return 0.5 * dv @ (p.mass @ dv) + _penalty(_rows(v, p), p)


def _newton_step(v: Array, p: _Problem) -> tuple[Array, Array, Array, _Rows]:
    """The full Newton step at v, dv = −H⁻¹∇ℓ with
    H = M + Jᵀ (∂Π_K/R) J + J_Lᵀ diag([z > 0]/R_L) J_L, and the Hessian's (upper)
    Cholesky factor, ∇ℓ(v) and the residuals."""
    g, r = _gradient(v, p)
    curv = p.inv_r[:, None, None] * _cone_jacobian(r.y, p.mu)
    h = p.mass + jnp.einsum("cji,cjk,ckl->il", p.jac, curv, p.jac)
    h = h + p.lim_jac.T @ (jnp.where(r.z > 0, p.lim_inv_r, 0.0)[:, None] * p.lim_jac)
    factor = jax.scipy.linalg.cho_factor(h)[0]
    return -jax.scipy.linalg.cho_solve((factor, False), g), factor, g, r


_STEPS = 2.0 ** -np.arange(12)  # backtracking line-search step lengths


def _scale(p: _Problem) -> Array:
    return jnp.maximum(jnp.max(jnp.abs(p.v_free)), 1.0)


def _newton(p: _Problem, v0: Array, max_iterations: int, tol: float) -> tuple[Array, ...]:
    """Minimise ℓ by Newton's method with a backtracking (Armijo) line search, until the
    full Newton step at the iterate (its error) is below `tol` (relative). Returns the
    iterate after that full step, the Cholesky factor of the Hessian it was taken with,
    and whether the test was met. Along the step, ℓ(v + α dv) needs only the scalars
    aᵀMa, aᵀM dv, dvᵀM dv (a = v − v_free) and y − α J dv: one product with J for all
    trial lengths α (and with J_L for the limits)."""

    def cond(p, carry):
        _, _, it, done = carry
        return (~done) & (it < max_iterations)

    def body(p, carry):
        v, _, it, _ = carry
        alphas = jnp.asarray(_STEPS, v.dtype)
        dv, factor, g, r = _newton_step(v, p)
        a = v - p.v_free
        ma, md = p.mass @ a, p.mass @ dv
        f0 = 0.5 * a @ ma + _penalty(r, p)
        w = jnp.einsum("cij,j->ci", p.jac, dv)
        trial_proj = _cone_projection(r.y[None] - alphas[:, None, None] * w[None], p.mu[None])
        trial_z = jnp.maximum(r.z[None] - alphas[:, None] * (p.lim_jac @ dv)[None], 0.0)
        trial = (
            0.5 * a @ ma
            + alphas * (a @ md)
            + 0.5 * alphas**2 * (dv @ md)
            + 0.5 * jnp.sum(p.inv_r[None] * jnp.sum(trial_proj**2, axis=-1), axis=-1)
            + 0.5 * jnp.sum(p.lim_inv_r[None] * trial_z**2, axis=-1)
        )
        ok = trial <= f0 + 1e-4 * alphas * (g @ dv)
        done = jnp.max(jnp.abs(dv)) <= tol * _scale(p)
        # Converged: take the full step (the line search's test is round-off there).
        k = jnp.where(done, 0, jnp.where(jnp.any(ok), jnp.argmax(ok), jnp.argmin(trial)))
        return v + alphas[k] * dv, factor, it + 1, done

    nv = v0.shape[-1]
    init = (v0, jnp.zeros((nv, nv), v0.dtype), jnp.asarray(0), jnp.asarray(False))
    # Under vmap only worlds still iterating take Newton steps, a quarter of the batch
    # at a time, instead of the whole batch waiting for the slowest world.
    v, factor, _, done = compacting_while(cond, body, p, init)
    return v, factor, done


@functools.partial(jax.custom_jvp, nondiff_argnums=(2, 3))
def _solve(p: _Problem, v_start: Array, max_iterations: int, tol: float) -> tuple[Array, Array]:
    """The minimiser v* of ℓ and whether Newton converged, differentiated implicitly
    (the rule below). The iterations run on data without derivatives; the value ends
    with one more Newton step, taken with the last step's factor and the data live. It
    moves v by O(tol²), and its first derivative is the implicit one. That matters
    inside a `lax.scan` (a simulation): reverse mode's first pass computes the value by
    this body, not the rule, so reverse over reverse differentiates the body; without
    the step its second derivatives would be silently wrong (tested)."""
    sp = jax.lax.stop_gradient(p)
    v, factor, done = _newton(sp, v_start, max_iterations, tol)
    v = v - jax.scipy.linalg.cho_solve((factor, False), _gradient(v, p)[0])
    return v, done


@_solve.defjvp
def _solve_jvp(max_iterations, tol, primals, tangents):
    # At the minimiser ∇ℓ(v*; θ) = 0, so dv* = −H⁻¹ ∂θ∇ℓ · dθ (implicit function
    # theorem), with H factored afresh at v*. The rule calls `_solve` for v*, so
    # differentiating the rule again differentiates v* implicitly too.
    p, v_start = primals
    v, ok = _solve(p, v_start, max_iterations, tol)
    dg = jax.jvp(lambda q: _gradient(v, q)[0], (p,), (tangents[0],))[1]
    dv = -jax.scipy.linalg.cho_solve((_newton_step(v, p)[1], False), dg)
    return (v, ok), (dv, np.zeros(jnp.shape(ok), jax.dtypes.float0))


def solve_contacts(
    mass: Float[Array, "nv nv"],
    v_free: Float[Array, " nv"],
    v_start: Float[Array, " nv"],
    jac: Float[Array, "C 3 nv"],
    u_ref: Float[Array, "C 3"],
    inv_r: Float[Array, " C"],
    mu: Float[Array, " C"],
    model: ContactModel,
    limits: tuple[Float[Array, "L nv"], Float[Array, " L"], Float[Array, " L"]] | None = None,
) -> tuple[Float[Array, " nv"], Array]:
    """The post-contact velocity v⁺ (the minimiser of ℓ) and whether the solve
    converged. Newton starts from `v_start` or `v_free`, whichever costs less (warm
    start, as MuJoCo's: the previous step's solution is usually close). `limits`:
    the hard joint limits' rows J_L, references û_L and 1/R_L (see `limit_terms`)."""
    if limits is None:
        none = jnp.zeros(0, v_free.dtype)
        limits = (jnp.zeros((0,) + v_free.shape, v_free.dtype), none, none)
    p = _Problem(mass, v_free, jac, u_ref, inv_r, mu, *limits)
    v_start = jax.lax.stop_gradient(v_start)
    sp = jax.lax.stop_gradient(p)
    v_start = jnp.where(_cost(v_start, sp) < _cost(sp.v_free, sp), v_start, sp.v_free)
    tol = max(model.tolerance, 100 * float(jnp.finfo(v_free.dtype).eps))
    return _solve(p, v_start, model.max_iterations, tol)


def contact_terms(
    c: Contacts,
    jac: Float[Array, "C 3 nv"],
    minv_jt: Float[Array, "nv C"],
    v: Float[Array, " nv"],
    dt: RealScalarLike,
) -> tuple[Float[Array, "C 3"], Float[Array, " C"]]:
    """The reference velocities û (C, 3) and the inverse regularisations 1/R (C,)
    (zero for contacts that do not touch) for a step `dt`, with each contact's time
    constant (at least two steps) and softness. `minv_jt` is M⁻¹ J_nᵀ for the normal
    rows."""
    u_pre = jnp.einsum("cij,j->ci", jac, v)
    push = -c.dist / safe_time_constant(c.time_constant, dt)
    bounce = -c.restitution * u_pre[:, 0]
    slip, _ = _unit(u_pre[:, 1:], jnp.zeros_like(u_pre[:, 1:]))
    # De Saxcé's correction, with the slip before the step: the convex model would
    # otherwise lift a sliding contact at normal speed μ|u_t|.
    u_n = jnp.maximum(push, bounce) - c.friction * slip
    u_ref = jnp.stack([u_n, jnp.zeros_like(u_n), jnp.zeros_like(u_n)], axis=-1)
    return u_ref, _inverse_regularisation(c.dist < 0, jac[:, 0, :], minv_jt, c.softness, c.weight)


def _inverse_regularisation(
    active: Array, rows: Array, minv_rows_t: Array, softness: Array, weight: Array | float
) -> Array:
    """1/R = weight / (ε J M⁻¹ Jᵀ) per constraint row (rows (K, nv), M⁻¹ Jᵀ (nv, K);
    ε a scalar or per row), zero where it does not act. A row that does not act may
    be zero (a ball joint's limit at θ = 0): double where."""
    w = jnp.where(active, jnp.einsum("kv,vk->k", rows, minv_rows_t), 1.0)
    return jnp.where(active, weight / (softness * w), 0.0)


def limit_terms(
    dist: Float[Array, " L"],
    lim_jac: Float[Array, "L nv"],
    minv_jt: Float[Array, "nv L"],
    time_constant: Float[Array, " L"],
    softness: Float[Array, " L"],
    dt: RealScalarLike,
) -> tuple[Float[Array, " L"], Float[Array, " L"]]:
    """The hard joint limits' reference velocities û_L = −r/τ (τ per limit, at least
    two steps `dt`: `safe_time_constant`) and inverse regularisations
    1/R_L = 1/(ε J_L M⁻¹ J_Lᵀ) (ε per limit; zero for limits that hold, r ≥ 0): the
    contacts' normal rows without restitution or friction. `minv_jt` is M⁻¹ J_Lᵀ."""
    inv_r = _inverse_regularisation(dist < 0, lim_jac, minv_jt, softness, 1.0)
    return -dist / safe_time_constant(time_constant, dt), inv_r


def body_jacobians(
    anc: np.ndarray, dof_body: np.ndarray, subspace: Float[Array, "nv 6"]
) -> Float[Array, "n 6 nv"]:
    """d(body spatial velocity)/dv (n, 6, nv): dof k moves body i when body(k) is i
    or one of its ancestors."""
    mask = jnp.asarray(anc[:, dof_body], subspace.dtype)  # (n, nv)
    return mask[:, None, :] * subspace.T[None]

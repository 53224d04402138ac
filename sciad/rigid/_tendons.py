"""MuJoCo's tendons in a `MultiBody`: fixed tendons (a linear combination of joint
coordinates) and spatial tendons (a path of points fixed to bodies), their springs,
dampers, limits and friction losses.

Functions of a `MultiBody` `mb` (duck-typed, as in `_dynamics.py`)."""

import abc
from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float
import numpy as np

from .._core._types import Anything, FloatScalar
from .._core._validate import as_float_array, check_positive, check_scalar, is_concrete
from ._actuators import force_range_of, TendonActuator
from ._grouped import assemble, grouped, map_grouped, stacked
from ._impedance import Impedance, RowBlock
from ._tendon_wrap import path_points, pieces, point_jacobians, TendonPulley, TendonWrap, wrap_all
from ._types import RangeLike, ScalarLike, Vec3Like

V = Float[Array, " nv"]


def _name(owner: str, name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"{owner} name must be a non-empty str; got {name!r}.")
    return name


def _interval(x: Any, label: str, *, strict: bool) -> Array:
    """A (low, high) pair with low < high (`strict`) or low ≤ high; a scalar s is
    (s, s) when not strict."""
    if not strict and np.ndim(x) == 0 and not isinstance(x, (list, tuple)):
        check_scalar(x, label)
        x = jnp.stack([jnp.asarray(x, float)] * 2)
    x = as_float_array(x, label, (2,))
    if is_concrete(x):
        lo, hi = (float(v) for v in np.asarray(x))
        if not (lo < hi if strict else lo <= hi):
            raise ValueError(
                f"{label} must have lower {'<' if strict else '<='} upper; got ({lo}, {hi})."
            )
    return x


def _impedance(x: Any, label: str) -> Impedance | None:
    if x is not None and not isinstance(x, Impedance):
        raise TypeError(f"{label} must be a sciad.rigid.Impedance or None; got {x!r}.")
    return x


def _nonnegative(x: Any, label: str) -> Array:
    check_positive(x, label, zero_ok=True)
    return as_float_array(x, label)


class AbstractTendon(eqx.Module):
    """A tendon of a [`MultiBody`][sciad.rigid.MultiBody]: a scalar length ℓ(q) with
    Jacobian J = ∂ℓ̇/∂v, which carries a spring and a damper, an optional limit and
    friction loss (constraint rows), and [`TendonActuator`][sciad.rigid.TendonActuator]s.

    The spring has MuJoCo's dead band: with `springlength` (ℓ_lo, ℓ_hi) it pulls with
    −k (ℓ − ℓ_hi) above ℓ_hi, −k (ℓ − ℓ_lo) below ℓ_lo and not at all in between;
    the damper gives −b ℓ̇; both act on the dofs as Jᵀ f. A limited tendon
    (`range` (lo, hi)) keeps lo ≤ ℓ ≤ hi as a hard constraint of the model's
    constraint solve (engaging `margin` before either end), as MuJoCo's tendon
    limits; a `frictionloss` F adds a dry-friction row with force in [−F, F] along ℓ.
    Concrete tendons: [`FixedTendon`][sciad.rigid.FixedTendon] and
    [`SpatialTendon`][sciad.rigid.SpatialTendon].

    Which rows a tendon adds is static: two limit rows when `limited` (it has a
    `range`), one friction row when `has_friction` (its `frictionloss` was nonzero, or
    traced, when it was built; set it nonzero to differentiate with respect to it).

    **Example:**

    ```python
    tendon = sciad.rigid.FixedTendon("t", [("link1", 1.0), ("link2", -1.0)])
    assert isinstance(tendon, sciad.rigid.AbstractTendon)
    ```
    """

    name: eqx.AbstractVar[str]
    stiffness: eqx.AbstractVar[FloatScalar]
    springlength: eqx.AbstractVar[Float[Array, "2"]]
    damping: eqx.AbstractVar[FloatScalar]
    range: eqx.AbstractVar[Float[Array, "2"] | None]
    margin: eqx.AbstractVar[FloatScalar]
    limit_impedance: eqx.AbstractVar[Impedance | None]
    frictionloss: eqx.AbstractVar[FloatScalar]
    friction_impedance: eqx.AbstractVar[Impedance | None]
    has_friction: eqx.AbstractVar[bool]
    actuator_force_range: eqx.AbstractVar[Float[Array, "2"] | None]

    @abc.abstractmethod
    def check(self, bodies: Sequence[Anything], index: dict[str, int]) -> None:
        """Raise a `ValueError` if the tendon does not fit the model's bodies."""

    @classmethod
    @abc.abstractmethod
    def stacked_kinematics(
        cls, tendons: Sequence[Anything], mb: Anything, f: Anything, q: Array
    ) -> tuple[Array, Array]:
        """The lengths ℓ (k,) and Jacobians J (k, nv) of `tendons` (k of them, all of
        this class) at configuration `q` with frames `f`, in one vectorised pass."""

    def kinematics(self, mb: Anything, f: Anything, q: Array) -> tuple[FloatScalar, V]:
        """The length ℓ and its Jacobian J (nv,) at configuration `q` with frames `f`."""
        length, jac = type(self).stacked_kinematics((self,), mb, f, q)
        return length[0], jac[0]

    @property
    def limited(self) -> bool:
        """Whether the tendon has a limit (`range`)."""
        return self.range is not None


def _set_common(t: Any, owner: str, kw: dict[str, Any]) -> None:
    """Validate and set the fields every tendon shares (see `AbstractTendon`)."""
    label = f"{owner} {t.name!r}"
    t.stiffness = _nonnegative(kw["stiffness"], f"{label} stiffness")
    t.springlength = _interval(kw["springlength"], f"{label} springlength", strict=False)
    t.damping = _nonnegative(kw["damping"], f"{label} damping")
    rng = kw["range"]
    t.range = None if rng is None else _interval(rng, f"{label} range", strict=True)
    t.margin = _nonnegative(kw["margin"], f"{label} margin")
    t.limit_impedance = _impedance(kw["limit_impedance"], f"{label} limit_impedance")
    loss = kw["frictionloss"]
    t.frictionloss = _nonnegative(loss, f"{label} frictionloss")
    t.has_friction = not is_concrete(loss) or float(np.asarray(loss)) > 0
    t.friction_impedance = _impedance(kw["friction_impedance"], f"{label} friction_impedance")
    frc = kw["actuator_force_range"]
    t.actuator_force_range = (
        None if frc is None else force_range_of(frc, f"{label} actuator_force_range")
    )


class FixedTendon(AbstractTendon):
    """A fixed tendon: a linear combination of hinge and slider coordinates,
    ℓ = offset + Σ cᵢ qᵢ, with the constant Jacobian Σ cᵢ eᵢ (MuJoCo's fixed tendon;
    e.g. a coupling of two joints, or a differential drive).

    **Arguments:**

    - `name`: the tendon's name ([`TendonActuator`][sciad.rigid.TendonActuator]s
      refer to it).
    - `joints`: `[(body, coef), ...]`: the bodies whose hinge or slider joints the
      tendon couples, and their coefficients (length per radian or per length).
    - `offset`: a constant added to ℓ (length), default 0 (MuJoCo's Σ cᵢ refᵢ of
      joints with a reference position).
    - `stiffness` k ≥ 0 (force/length), `springlength` ℓ₀ (one value, or a
      dead band `(low, high)`), `damping` b ≥ 0 (force·time/length).
    - `range`: optional `(low, high)`, a hard limit on ℓ; `margin` ≥ 0 (length): how
      far inside the range the limit engages; `limit_impedance`: the limit's
      [`Impedance`][sciad.rigid.Impedance] (MuJoCo's `solreflimit`, `solimplimit`;
      `None`: the model's [`ContactModel`][sciad.rigid.ContactModel]'s).
    - `frictionloss` F ≥ 0 (force): dry friction along ℓ; `friction_impedance` its
      impedance (MuJoCo's `solreffriction`, `solimpfriction`; `None`: the model's).
    - `actuator_force_range`: optional `(lower, upper)`, lower ≤ upper (force): a
      clamp on the sum of the forces of the
      [`TendonActuator`][sciad.rigid.TendonActuator]s on the tendon; outside it,
      each of their forces is scaled by lower/sum or upper/sum, so that the sum
      lands on the bound (MuJoCo's tendon `actuatorfrcrange`; a zero sum is left
      alone).

    **Example:**

    ```python
    coupling = sciad.rigid.FixedTendon(
        "coupling", [("link1", 1.0), ("link2", -1.0)], stiffness=5.0, range=(-0.5, 0.5)
    )
    ```
    """

    name: str = eqx.field(static=True)
    joints: tuple[str, ...] = eqx.field(static=True)
    coef: Float[Array, " k"]
    offset: FloatScalar
    stiffness: FloatScalar
    springlength: Float[Array, "2"]
    damping: FloatScalar
    range: Float[Array, "2"] | None
    margin: FloatScalar
    limit_impedance: Impedance | None
    frictionloss: FloatScalar
    friction_impedance: Impedance | None
    has_friction: bool = eqx.field(static=True)
    actuator_force_range: Float[Array, "2"] | None

    def __init__(
        self,
        name: str,
        joints: Sequence[tuple[str, ScalarLike]],
        *,
        offset: ScalarLike = 0.0,
        stiffness: ScalarLike = 0.0,
        springlength: ScalarLike | RangeLike = 0.0,
        damping: ScalarLike = 0.0,
        range: RangeLike | None = None,
        margin: ScalarLike = 0.0,
        limit_impedance: Impedance | None = None,
        frictionloss: ScalarLike = 0.0,
        friction_impedance: Impedance | None = None,
        actuator_force_range: RangeLike | None = None,
    ):
        self.name = _name("FixedTendon", name)
        label = f"FixedTendon {name!r}"
        joints = list(joints) if isinstance(joints, (list, tuple)) else joints
        if not isinstance(joints, list) or not joints:
            raise ValueError(
                f"{label} joints must be a non-empty list of (body, coef); got {joints!r}."
            )
        for item in joints:
            if not (
                isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str)
            ):
                raise ValueError(
                    f"{label} joints items must be (body name, coef) pairs; got {item!r}."
                )
        self.joints = tuple(j for j, _ in joints)
        for j, c in joints:
            check_scalar(c, f"{label} coef of {j!r}")
        self.coef = as_float_array(
            jnp.stack([jnp.asarray(c, float) for _, c in joints]), f"{label} coef"
        )
        check_scalar(offset, f"{label} offset")
        self.offset = as_float_array(offset, f"{label} offset")
        _set_common(self, "FixedTendon", locals())

    def check(self, bodies: Sequence[Anything], index: dict[str, int]) -> None:
        """Every body exists and has a hinge or a slider."""
        for j in self.joints:
            if j not in index:
                raise ValueError(f"FixedTendon {self.name!r}: no body named {j!r}.")
            joint = bodies[index[j]].joint
            if not (type(joint).nq == type(joint).nv == 1):
                raise ValueError(
                    f"FixedTendon {self.name!r}: body {j!r} has a {type(joint).__name__}; "
                    "a fixed tendon couples hinges and sliders (one coordinate each)."
                )

    @classmethod
    def stacked_kinematics(
        cls, tendons: Sequence[Anything], mb: Anything, f: Anything, q: Array
    ) -> tuple[Array, Array]:
        """ℓ = offset + Σ cᵢ qᵢ, J = Σ cᵢ eᵢ: every tendon's terms at once, summed
        per tendon by a scatter with static indices."""
        del f
        topo = mb.topology
        owner = np.concatenate([np.full(len(t.joints), k) for k, t in enumerate(tendons)])
        bodies = np.asarray([mb.body_index(j) for t in tendons for j in t.joints], np.int64)
        coef = jnp.concatenate([t.coef for t in tendons]).astype(q.dtype)
        sums = jnp.zeros(len(tendons), q.dtype).at[owner].add(coef * q[topo.qadr[bodies]])
        jac = jnp.zeros((len(tendons), mb.nv), q.dtype).at[owner, topo.dadr[bodies]].add(coef)
        return stacked(tendons, "offset", q.dtype) + sums, jac


class SpatialTendon(AbstractTendon):
    """A spatial tendon: a path through points fixed to bodies (MuJoCo's spatial tendon
    through sites), straight between consecutive points or wrapped around a sphere or
    cylinder ([`TendonWrap`][sciad.rigid.TendonWrap]) between them, and split into
    branches by pulleys ([`TendonPulley`][sciad.rigid.TendonPulley]).

    Its length is ℓ = Σ_b (Σ over branch b's pieces of their lengths) / divisor_b
    (divisor 1 before the first pulley), and its Jacobian J = Σ eᵢ · (J_{x_{i+1}} −
    J_{x_i}) / divisor over the straight pieces (eᵢ the unit vector along piece i,
    J_x a point's translational Jacobian; a wrap's tangent points move with the wrap's
    body and its arc adds nothing), as MuJoCo's `mj_tendon` computes them.

    **Arguments:**

    - `name`: the tendon's name.
    - `path`: a list of points `(body, pos)` (a body name, `None` for the world, and a
      position in that body's frame (length), shape `(3,)`), `TendonWrap`s, each
      between two points, and `TendonPulley`s, each starting a new branch; every
      branch has at least two points.
    - `stiffness`, `springlength`, `damping`, `range`, `margin`, `limit_impedance`,
      `frictionloss`, `friction_impedance`, `actuator_force_range`: as for
      [`FixedTendon`][sciad.rigid.FixedTendon] (`springlength` default 0: a spring
      that always pulls).

    **Example:**

    ```python
    string = sciad.rigid.SpatialTendon(
        "string", [("cup", (0.0, 0.0, 0.0)), ("ball", (0.0, 0.0, 0.05))], range=(0.0, 0.3)
    )
    elbow = sciad.rigid.SpatialTendon(
        "biceps",
        [("upper", (0.0, 0.0, 0.1)),
         sciad.rigid.TendonWrap("forearm", (0.0, 0.0, 0.0), 0.04, cylinder=True),
         ("forearm", (0.1, 0.0, 0.0))],
    )
    ```
    """

    name: str = eqx.field(static=True)
    bodies: tuple[str | None, ...] = eqx.field(static=True)
    segments: tuple[tuple[int, int, int], ...] = eqx.field(static=True)
    points: Float[Array, "p 3"]
    wraps: tuple[TendonWrap, ...]
    divisors: Float[Array, " b"]
    stiffness: FloatScalar
    springlength: Float[Array, "2"]
    damping: FloatScalar
    range: Float[Array, "2"] | None
    margin: FloatScalar
    limit_impedance: Impedance | None
    frictionloss: FloatScalar
    friction_impedance: Impedance | None
    has_friction: bool = eqx.field(static=True)
    actuator_force_range: Float[Array, "2"] | None

    def __init__(
        self,
        name: str,
        path: Sequence[tuple[str | None, Vec3Like] | TendonWrap | TendonPulley],
        *,
        stiffness: ScalarLike = 0.0,
        springlength: ScalarLike | RangeLike = 0.0,
        damping: ScalarLike = 0.0,
        range: RangeLike | None = None,
        margin: ScalarLike = 0.0,
        limit_impedance: Impedance | None = None,
        frictionloss: ScalarLike = 0.0,
        friction_impedance: Impedance | None = None,
        actuator_force_range: RangeLike | None = None,
    ):
        self.name = _name("SpatialTendon", name)
        label = f"SpatialTendon {name!r}"
        path = list(path) if isinstance(path, (list, tuple)) else path
        if not isinstance(path, list) or len(path) < 2:
            raise ValueError(
                f"{label} path must be a list of at least two (body, pos) points; got {path!r}."
            )
        bodies, points, wraps = [], [], []
        # Each branch's divisor: 1 before the first pulley.
        divisors = [] if isinstance(path[0], TendonPulley) else [jnp.ones(())]
        # Segments (i, wrap, branch): from point i to point i + 1, around wrap (-1: none).
        segments: list[tuple[int, int, int]] = []
        branch_start, pending = 0, -1
        for k, item in enumerate(path):
            if isinstance(item, TendonPulley):
                if k == len(path) - 1 or isinstance(path[k - 1], (TendonPulley, TendonWrap)):
                    raise ValueError(
                        f"{label}: a pulley must not end the path nor follow a pulley or a "
                        f"wrap (item {k})."
                    )
                if k > 0 and len(points) - branch_start < 2:
                    raise ValueError(f"{label}: the branch before item {k} has under two points.")
                divisors.append(item.divisor)
                branch_start = len(points)
                continue
            if isinstance(item, TendonWrap):
                if len(points) == branch_start or pending >= 0 or k == len(path) - 1:
                    raise ValueError(f"{label}: the wrap at item {k} must lie between two points.")
                pending = len(wraps)
                wraps.append(item)
                continue
            if not (
                isinstance(item, (tuple, list))
                and len(item) == 2
                and (item[0] is None or isinstance(item[0], str))
            ):
                raise ValueError(
                    f"{label} path items must be (body name or None, pos) pairs, TendonWraps "
                    f"or TendonPulleys; got {item!r}."
                )
            if len(points) > branch_start:
                segments.append((len(points) - 1, pending, len(divisors) - 1))
            pending = -1
            bodies.append(item[0])
            points.append(as_float_array(item[1], f"{label} path point {k}", (3,)))
        if len(points) - branch_start < 2:
            raise ValueError(f"{label}: the last branch of the path has under two points.")
        self.bodies, self.segments = tuple(bodies), tuple(segments)
        self.points, self.wraps = jnp.stack(points), tuple(wraps)
        self.divisors = jnp.stack([jnp.asarray(d, float) for d in divisors])
        _set_common(self, "SpatialTendon", locals())

    def check(self, bodies: Sequence[Anything], index: dict[str, int]) -> None:
        """Every body of the path (points, wraps, side points) exists."""
        del bodies
        names = list(self.bodies) + [x for w in self.wraps for x in (w.body, w.side_body)]
        for b in names:
            if b is not None and b not in index:
                raise ValueError(f"SpatialTendon {self.name!r}: no body named {b!r}.")

    def wrap_points(
        self, model: Anything, q: Float[Array, " nq"]
    ) -> tuple[Float[Array, "w 2 3"], Bool[Array, " w"]]:
        """Where the tendon touches its wraps at configuration `q` of `model` (a
        [`MultiBody`][sciad.rigid.MultiBody] holding this tendon).

        **Arguments:**

        - `model`: the `MultiBody`.
        - `q`: its generalised coordinates, shape `(nq,)`.

        **Returns:**

        `(points, wrapped)`: for each `TendonWrap` of the path, in order, its two
        tangent points in the world frame (length), shape `(w, 2, 3)` (MuJoCo's
        `wrap_xpos`; the segment's ends where it does not wrap), and whether the
        tendon wraps around it, shape `(w,)`.

        **Example:**

        ```python
        points, wrapped = model.tendons[0].wrap_points(model, q)
        ```
        """
        f = model._frames(q)
        x, _ = path_points([self], model, f)
        first = np.asarray([s[0] for s in self.segments if s[1] >= 0], np.int64)
        pts, _, ok = wrap_all(self.wraps, model, f, x[first], x[first + 1])
        return pts, ok

    @classmethod
    def stacked_kinematics(
        cls, tendons: Sequence[Anything], mb: Anything, f: Anything, q: Array
    ) -> tuple[Array, Array]:
        """The paths' lengths and Jacobians (see the class): every point, segment and
        wrap of every path at once, summed per tendon by a scatter with static
        indices."""
        x, jp = path_points(tendons, mb, f)
        sizes = np.asarray([len(t.bodies) for t in tendons])
        starts = np.cumsum(sizes) - sizes
        n_wraps = np.asarray([len(t.wraps) for t in tendons])
        wrap_starts = np.cumsum(n_wraps) - n_wraps
        n_branches = np.asarray([t.divisors.shape[0] for t in tendons])
        branch_starts = np.cumsum(n_branches) - n_branches
        segs = np.asarray(
            [
                (starts[k] + i, -1 if w < 0 else wrap_starts[k] + w, k, branch_starts[k] + br)
                for k, t in enumerate(tendons)
                for i, w, br in t.segments
            ],
            np.int64,
        ).reshape(-1, 4)
        first, wrap_of, owner, branch = segs.T
        length, jac = pieces(x[first], x[first + 1], jp[first], jp[first + 1])
        wrapped = np.flatnonzero(wrap_of >= 0)
        if wrapped.size:
            wraps = [w for t in tendons for w in t.wraps]
            a, b = first[wrapped], first[wrapped] + 1
            pts, arc, ok = wrap_all([wraps[i] for i in wrap_of[wrapped]], mb, f, x[a], x[b])
            wb = np.asarray([-1 if w.body is None else mb.body_index(w.body) for w in wraps])
            jw = point_jacobians(mb, f, np.repeat(wb[wrap_of[wrapped]], 2), pts.reshape(-1, 3))
            jw = jw.reshape(len(wrapped), 2, mb.nv, 3)
            l0, j0 = pieces(x[a], pts[:, 0], jp[a], jw[:, 0])
            l1, j1 = pieces(pts[:, 1], x[b], jw[:, 1], jp[b])
            length = length.at[wrapped].set(jnp.where(ok, l0 + arc + l1, length[wrapped]))
            jac = jac.at[wrapped].set(jnp.where(ok[:, None], j0 + j1, jac[wrapped]))
        div = jnp.concatenate([t.divisors for t in tendons]).astype(q.dtype)[branch]
        zero = jnp.zeros(len(tendons), q.dtype)
        length = zero.at[owner].add(length / div)
        jac = jnp.zeros((len(tendons), mb.nv), q.dtype).at[owner].add(jac / div[:, None])
        return length, jac


# --------------------------------------------------------------------------- the model's


def check_tendons(
    tendons: Sequence[Anything],
    bodies: Sequence[Anything],
    index: dict[str, int],
    actuators: Sequence[Anything],
) -> tuple[AbstractTendon, ...]:
    """`MultiBody`'s `tendons` checked against its bodies, and its
    `TendonActuator`s against the tendons."""
    tendons = tuple(tendons)
    names: set[str] = set()
    for i, t in enumerate(tendons):
        if not isinstance(t, AbstractTendon):
            raise TypeError(
                "MultiBody tendons must be sciad.rigid.FixedTendon or SpatialTendon; "
                f"item {i} is {t!r}."
            )
        if t.name in names:
            raise ValueError(f"MultiBody: duplicate tendon name {t.name!r}.")
        names.add(t.name)
        t.check(bodies, index)
    for a in actuators:
        if isinstance(a, TendonActuator) and a.tendon not in names:
            raise ValueError(
                f"TendonActuator: no tendon named {a.tendon!r}; tendons: {sorted(names)}."
            )
    return tendons


def check_tendon_weights(mb: Anything) -> None:
    """A model with `inverse_weights` and tendon constraint rows must give the
    tendons' weights (shape (n_tendons,))."""
    w = mb.inverse_weights
    if w is None or not any(t.limited or t.has_friction for t in mb.tendons):
        return
    if jnp.shape(w.tendon) != (len(mb.tendons),):
        raise ValueError(
            f"MultiBody inverse_weights.tendon must have shape ({len(mb.tendons)},) (one "
            f"per tendon: its limit and friction rows use it); got {jnp.shape(w.tendon)}."
        )


def tendon_kinematics(mb: Anything, f: Anything, q: Array) -> tuple[Array, Array]:
    """The tendons' lengths (T,) and Jacobians (T, nv) (MuJoCo's `ten_length`,
    `ten_J`)."""
    ts = mb.tendons
    idx = grouped(ts, type)
    parts = [type(ts[g[0]]).stacked_kinematics([ts[i] for i in g], mb, f, q) for g in idx]
    return assemble(parts, idx)


def _stacked(mb: Anything, name: str, dtype: Anything) -> Array:
    return stacked(mb.tendons, name, dtype)


def _stretch(mb: Anything, length: Array) -> Array:
    """ℓ − ℓ_hi above the dead band, ℓ − ℓ_lo below it, 0 inside."""
    band = _stacked(mb, "springlength", length.dtype)
    lo, hi = band[:, 0], band[:, 1]
    return jnp.where(length > hi, length - hi, jnp.where(length < lo, length - lo, 0.0))


def tendon_passive_force(mb: Anything, f: Anything, v: V) -> V:
    """Σ Jᵀ (−k x − b ℓ̇) over the tendons' springs and dampers (MuJoCo's tendon
    part of `qfrc_spring` + `qfrc_damper`), shape (nv,)."""
    length, jac = f.tendons
    k = _stacked(mb, "stiffness", v.dtype)
    b = _stacked(mb, "damping", v.dtype)
    force = -k * _stretch(mb, length) - b * (jac @ v)
    return jac.T @ force


def tendon_damping_derivative(mb: Anything, f: Anything, dtype: Anything) -> Array:
    """∂/∂v of the tendons' damping forces, −Jᵀ diag(b) J, shape (nv, nv)."""
    _, jac = f.tendons
    return -jac.T @ (_stacked(mb, "damping", dtype)[:, None] * jac)


def tendon_energy(mb: Anything, f: Anything) -> FloatScalar:
    """The tendon springs' ½ k x² (x the stretch beyond the dead band)."""
    length, _ = f.tendons
    return 0.5 * jnp.sum(_stacked(mb, "stiffness", length.dtype) * _stretch(mb, length) ** 2)


def stacked_impedances(mb: Anything, own: list[Impedance | None], dtype: Anything) -> Array:
    """The stacked impedances (K, 7): each row's own, or the model's default."""
    out = jnp.broadcast_to(mb.contact.impedance.stacked().astype(dtype), (len(own), 7))
    given = np.asarray([i for i, x in enumerate(own) if x is not None], np.int64)
    if given.size:
        rows = map_grouped([own[i] for i in given], lambda x: x.stacked())
        out = out.at[given].set(rows.astype(dtype))
    return out


def tendon_rows(mb: Anything, f: Anything) -> list[RowBlock]:
    """The tendons' constraint rows (MuJoCo's `mj_instantiateLimit` and
    `mj_instantiateFriction` for tendons): per limited tendon two limit rows, the
    lower r = ℓ − lo − margin with Jacobian J and the upper r = hi − ℓ − margin with
    −J, active where r < 0; per tendon with friction loss F one friction row along J
    with force in [−F, F], always active. The diagonal is MuJoCo's
    `tendon_invweight0` when the model has `inverse_weights`, else `None`."""
    if not mb.tendons:
        return []
    length, jac = f.tendons
    dtype = length.dtype
    weights = None if mb.inverse_weights is None else mb.inverse_weights.tendon.astype(dtype)
    blocks = []
    lim = np.asarray([i for i, t in enumerate(mb.tendons) if t.limited], np.int64)
    if lim.size:
        ts = [mb.tendons[i] for i in lim]
        rng = stacked(ts, "range", dtype)
        margin = stacked(ts, "margin", dtype)
        imp = stacked_impedances(mb, [t.limit_impedance for t in ts], dtype)
        r = jnp.concatenate([length[lim] - rng[:, 0], rng[:, 1] - length[lim]]) - jnp.tile(
            margin, 2
        )
        zero = jnp.zeros(2 * lim.size, dtype)
        blocks.append(
            RowBlock(
                r,
                jnp.concatenate([jac[lim], -jac[lim]]),
                jnp.tile(imp, (2, 1)),
                None if weights is None else jnp.tile(weights[lim], 2),
                zero,
                zero + jnp.inf,
                r < 0,
                False,
            )
        )
    fr = np.asarray([i for i, t in enumerate(mb.tendons) if t.has_friction], np.int64)
    if fr.size:
        ts = [mb.tendons[i] for i in fr]
        loss = stacked(ts, "frictionloss", dtype)
        imp = stacked_impedances(mb, [t.friction_impedance for t in ts], dtype)
        blocks.append(
            RowBlock(
                jnp.zeros(fr.size, dtype),
                jac[fr],
                imp,
                None if weights is None else weights[fr],
                -loss,
                loss,
                jnp.ones(fr.size, bool),
                True,
            )
        )
    return blocks

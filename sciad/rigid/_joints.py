"""Joints: how a body moves relative to its parent, in generalised coordinates.

A joint with `nq` position and `nv` velocity coordinates maps q to the child body's
frame relative to its reference placement, gives the motion subspace S(q) (the body
velocity produced by unit joint velocities) and integrates q on its manifold. Joints
of one type are stacked and `vmap`ped together by `MultiBody` (DESIGN §4.6), so a new
joint type is one new subclass. Velocities of rotational joints are angular
velocities in the child body's frame, as in MuJoCo; positions are unit quaternions
(w, x, y, z).
"""

import abc
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float
import numpy as np

from .._core._geometry import (
    cross,
    quat_conjugate,
    quat_exp,
    quat_log,
    quat_multiply,
    quat_normalize,
    quat_rotate,
    quat_to_matrix,
    safe_norm,
    so3_dexpinv,
)
from .._core._types import Anything, FloatScalar
from .._core._validate import (
    as_float_array,
    check_in_range,
    check_positive,
    check_scalar,
    is_concrete,
)
from ._actuators import force_range_of
from ._impedance import Impedance
from ._spatial import cross_motion
from ._types import RangeLike, ScalarLike, Vec3Like

Q = Float[Array, " nq"]
V = Float[Array, " nv"]


def _vec3(x: Anything) -> Array:
    return jnp.asarray(x)


def _unit_axis(name: str, axis: Anything) -> Array:
    axis = as_float_array(axis, f"{name} axis", (3,))
    if is_concrete(axis):
        norm = float(np.linalg.norm(np.asarray(axis)))
        if not norm > 0:
            raise ValueError(f"{name} axis must be non-zero; got {np.asarray(axis)}.")
    return axis / jnp.linalg.norm(axis)


def _check_scalars(joint: eqx.Module, *names: str) -> None:
    for name in names:
        x = getattr(joint, name)
        if x is not None:
            check_positive(x, f"{type(joint).__name__}.{name}", zero_ok=True)


def _check_range(joint: eqx.Module, rng: Array | None) -> None:
    if rng is None:
        return
    as_float_array(rng, f"{type(joint).__name__}.range (lower, upper)", (2,))
    if is_concrete(rng) and not float(rng[0]) < float(rng[1]):
        raise ValueError(
            f"{type(joint).__name__}.range must have lower < upper; got {np.asarray(rng)}."
        )


def _set_actuation(joint: Anything, force_range: Anything, gravcomp: Anything) -> None:
    """Validate and set a one-dof joint's `actuator_force_range` and
    `actuator_gravcomp`."""
    name = type(joint).__name__
    if not isinstance(gravcomp, bool):
        raise TypeError(f"{name}.actuator_gravcomp must be a bool; got {gravcomp!r}.")
    joint.actuator_gravcomp = gravcomp
    joint.actuator_force_range = None
    if force_range is not None:
        joint.actuator_force_range = force_range_of(force_range, f"{name}.actuator_force_range")


def _check_limit_parameters(joint: Anything) -> None:
    imp = joint.limit_impedance
    if imp is not None and not isinstance(imp, Impedance):
        raise TypeError(
            f"{type(joint).__name__}.limit_impedance must be a sciad.rigid.Impedance or "
            f"None; got {imp!r}."
        )


_LIMITS = ("hard", "soft")


def _check_limit(joint: eqx.Module, limit: str) -> None:
    if limit not in _LIMITS:
        raise ValueError(
            f"{type(joint).__name__}.limit must be 'hard' (a constraint) or 'soft' (a "
            f"spring-damper); got {limit!r}."
        )


def _set_friction(joint: Anything, frictionloss: Anything, impedance: Anything) -> None:
    """A range joint's friction loss: the row exists when F is nonzero or traced."""
    check_scalar(frictionloss, f"{type(joint).__name__}.frictionloss")
    joint.frictionloss = jnp.asarray(frictionloss)
    joint.friction_impedance = impedance
    joint.has_friction = not is_concrete(frictionloss) or float(np.asarray(frictionloss)) != 0


def _check_friction(joint: Anything) -> None:
    check_positive(joint.frictionloss, f"{type(joint).__name__}.frictionloss", zero_ok=True)
    imp = joint.friction_impedance
    if imp is not None and not isinstance(imp, Impedance):
        raise TypeError(
            f"{type(joint).__name__}.friction_impedance must be a sciad.rigid.Impedance or "
            f"None; got {imp!r}."
        )


def _nearer_bound(x: FloatScalar, lo: FloatScalar, hi: FloatScalar) -> tuple[Array, Array]:
    """The constraint of the nearer side of [lo, hi]: its value r (x − lo or hi − x,
    negative when violated) and dr/dx (±1). Both sides cannot be violated at once."""
    lower = x - lo <= hi - x
    return jnp.where(lower, x - lo, hi - x), jnp.where(lower, 1.0, -1.0).astype(x.dtype)


def _own_or(own: Impedance | None, default: Impedance) -> Impedance:
    return default if own is None else own


def _limit_force(
    x: FloatScalar,
    xdot: FloatScalar,
    lo: FloatScalar,
    hi: FloatScalar,
    k: FloatScalar,
    d: FloatScalar,
) -> FloatScalar:
    """The penalty force of a one-sided spring-damper outside [lo, hi]."""
    over = jnp.maximum(x - hi, 0.0) - jnp.maximum(lo - x, 0.0)
    return -k * over - jnp.where(over != 0, d * xdot, 0.0)


class AbstractJoint(eqx.Module):
    """A joint between a body and its parent, with `nq` positions and `nv` velocities.

    Subclasses set the class variables `nq` and `nv` and implement `neutral`,
    `transform` and `motion_subspace`. Joints whose position space is not a vector
    space (quaternions) also override `integrate`, `position_derivative`,
    `tangent_correction`, `difference` and `normalize`. A `damping` and an `armature`
    field (added to the mass matrix diagonal) apply to every dof; joints without them
    have neither. Joints of one type are stacked and `vmap`ped by `MultiBody`, so the
    methods see one joint's coordinates.

    **Example** (a new joint type: a hinge about the body's z axis through its origin):

    ```python
    class ZHinge(sciad.rigid.AbstractJoint):
        nq = 1
        nv = 1

        def neutral(self):
            return jnp.zeros(1)

        def transform(self, q):  # (quaternion w, x, y, z; translation)
            c, s = jnp.cos(q / 2), jnp.sin(q / 2)
            return jnp.concatenate([c, jnp.zeros(2), s]), jnp.zeros(3)

        def motion_subspace(self, q):
            return jnp.array([[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]])
    ```
    """

    #: Number of position coordinates.
    nq: ClassVar[int]
    #: Number of velocity coordinates (degrees of freedom).
    nv: ClassVar[int]
    #: True if `transform` gives the body pose in the parent frame directly, replacing
    #: the body's `pos`/`quat` placement (the free joint).
    absolute: ClassVar[bool] = False

    @abc.abstractmethod
    def neutral(self) -> Q:
        """The reference configuration q₀, shape `(nq,)` (the body at its placement)."""

    @abc.abstractmethod
    def transform(self, q: Q) -> tuple[Float[Array, "4"], Float[Array, "3"]]:
        """The body frame relative to its reference placement at configuration `q`.

        **Returns:** `(quat, translation)`: x_parent = R(quat) x_body + translation,
        composed after the body's placement (`pos`, `quat`) in its parent.
        """

    @abc.abstractmethod
    def motion_subspace(self, q: Q) -> Float[Array, "nv 6"]:
        """S(q): row k is the body's spatial velocity (ω, v at the body origin), in the
        body frame, per unit of velocity coordinate k."""

    def integrate(self, q: Q, dq: V) -> Q:
        """q ⊕ dq: move `q` along the tangent vector `dq` (e.g. velocity × dt)."""
        return q + dq

    def position_derivative(self, q: Q, v: V) -> Q:
        """dq/dt for velocity `v`."""
        return v

    def tangent_correction(self, dq: V, v: V) -> V:
        """d(dq)/dt when q(t) = q₀ ⊕ dq(t) moves with velocity `v` (dexp⁻¹; identity on
        vector spaces). Used by Runge–Kutta–Munthe-Kaas integrators."""
        return v

    def difference(self, q1: Q, q0: Q) -> V:
        """The tangent vector dq with q0 ⊕ dq = q1."""
        return q1 - q0

    def normalize(self, q: Q) -> Q:
        """Project `q` back onto its manifold (unit quaternions); identity otherwise."""
        return q

    def passive_force(self, q: Q, v: V) -> V:
        """Joint forces other than damping: springs and soft limits. Zero by default."""
        return jnp.zeros_like(v)

    def spring_energy(self, q: Q) -> FloatScalar:
        """The potential energy of the joint's spring (`stiffness`), zero by default.
        Soft limits are not included (they dissipate)."""
        return jnp.zeros((), q.dtype)

    @property
    def hard_limited(self) -> bool:
        """Whether the joint has a hard limit (a constraint row in the contact solve).
        False by default."""
        return False

    def limit_constraint(self, q: Q) -> tuple[FloatScalar, V]:
        """The hard limit as a unilateral constraint r(q) ≥ 0.

        **Returns:** `(r, dr/dv)`: the constraint's value (zero on the limit, negative
        when violated; the joint's position units) and its derivative along the joint's
        velocity coordinates, shape `(nv,)`. Only called when `hard_limited`; the
        default (no limit) is `(0, 0)`.
        """
        return jnp.zeros((), q.dtype), jnp.zeros(self.nv, q.dtype)

    def limit_parameters(self, default: Impedance) -> Impedance:
        """The hard limit's [`Impedance`][sciad.rigid.Impedance]: the joint's own
        `limit_impedance` where it sets one, else `default` (the model's
        [`ContactModel`][sciad.rigid.ContactModel]'s)."""
        return default

    def friction_loss(self, default: Impedance) -> tuple[FloatScalar, Impedance] | None:
        """The joint's dry friction (MuJoCo's `frictionloss`): its friction loss F
        (force or torque) and the [`Impedance`][sciad.rigid.Impedance] of its rows
        (the joint's own `friction_impedance`, else `default`), or `None` (the
        default) when the joint has none. Each dof then gets one constraint row with
        force in [−F, F]."""
        return None

    def actuator_limits(self) -> Float[Array, "2"] | None:
        """The clamp of the total actuator force on the joint's (first) dof (MuJoCo's
        joint `actuatorfrcrange`).

        **Returns:** `(lower, upper)`, shape `(2,)` (the dof's force units), or `None`
        (the default): no clamp.

        **Example:** `sciad.rigid.HingeJoint(actuator_force_range=(-1.0, 1.0)).actuator_limits()`
        """
        return None

    @property
    def gravcomp_by_actuators(self) -> bool:
        """Whether the gravity compensation of the bodies it carries reaches this
        joint as actuator force (clamped by `actuator_limits`; MuJoCo's
        `actuatorgravcomp`) rather than as passive force. False by default."""
        return False

    def bias_acceleration(self, s: Float[Array, "nv 6"], v: V) -> Float[Array, "6"]:
        """The part of Ṡ v not given by v_parent ×ₘ (S v) (world frame; `s` is S in the
        world frame). Zero for joints whose subspace is fixed in the child body."""
        return jnp.zeros(6, dtype=v.dtype)

    def damping_vector(self) -> V:
        """Viscous damping per degree of freedom (force·time per unit velocity): the
        joint's `damping` field on every dof, zero if it has none."""
        return jnp.broadcast_to(jnp.asarray(getattr(self, "damping", 0.0)), (self.nv,))

    def armature_vector(self) -> V:
        """Armature (rotor inertia) per degree of freedom, added to the mass matrix: the
        joint's `armature` field on every dof, zero if it has none."""
        return jnp.broadcast_to(jnp.asarray(getattr(self, "armature", 0.0)), (self.nv,))


class FixedJoint(AbstractJoint):
    """No motion: the body is welded to its parent at its placement (nq = nv = 0).

    **Example:** `sciad.rigid.Body("sensor", parent="torso", joint=sciad.rigid.FixedJoint(), mass=0.1, inertia=jnp.full(3, 1e-4))`
    """

    nq: ClassVar[int] = 0
    nv: ClassVar[int] = 0

    def neutral(self) -> Q:
        """An empty vector."""
        return jnp.zeros(0)

    def transform(self, q: Q) -> tuple[Float[Array, "4"], Float[Array, "3"]]:
        """The identity."""
        one = jnp.ones(1, dtype=q.dtype)
        return jnp.concatenate([one, jnp.zeros(3, dtype=q.dtype)]), jnp.zeros(3, dtype=q.dtype)

    def motion_subspace(self, q: Q) -> Float[Array, "nv 6"]:
        """An empty (0, 6) matrix."""
        return jnp.zeros((0, 6), dtype=q.dtype)

    def damping_vector(self) -> V:
        """Empty."""
        return jnp.zeros(0)

    def armature_vector(self) -> V:
        """Empty."""
        return jnp.zeros(0)


class _AbstractRangeJoint(AbstractJoint):
    """A one-dof joint with a linear spring −k (q − springref) and an optional `range`
    (lower, upper) that is a hard or a soft limit."""

    stiffness: eqx.AbstractVar[FloatScalar]
    springref: eqx.AbstractVar[FloatScalar]
    range: eqx.AbstractVar[Float[Array, "2"] | None]
    limit_stiffness: eqx.AbstractVar[FloatScalar]
    limit_damping: eqx.AbstractVar[FloatScalar]
    limit: eqx.AbstractVar[str]
    limit_impedance: eqx.AbstractVar[Impedance | None]
    frictionloss: eqx.AbstractVar[FloatScalar]
    friction_impedance: eqx.AbstractVar[Impedance | None]
    has_friction: eqx.AbstractVar[bool]
    actuator_force_range: eqx.AbstractVar[Float[Array, "2"] | None]
    actuator_gravcomp: eqx.AbstractVar[bool]

    def limit_parameters(self, default: Impedance) -> Impedance:
        """`limit_impedance`, or `default`."""
        return _own_or(self.limit_impedance, default)

    def actuator_limits(self) -> Float[Array, "2"] | None:
        """`actuator_force_range`."""
        return self.actuator_force_range

    @property
    def gravcomp_by_actuators(self) -> bool:
        """`actuator_gravcomp`."""
        return self.actuator_gravcomp

    def friction_loss(self, default: Impedance) -> tuple[FloatScalar, Impedance] | None:
        """(`frictionloss`, `friction_impedance` or `default`) when `has_friction`."""
        if not self.has_friction:
            return None
        return self.frictionloss, _own_or(self.friction_impedance, default)

    def passive_force(self, q: Q, v: V) -> V:
        """The spring −k (q − springref) plus the soft limit force (zero without
        `range`, or with a hard limit)."""
        f = -self.stiffness * (q[0] - self.springref)
        if self.range is not None and self.limit == "soft":
            f = f + _limit_force(
                q[0], v[0], self.range[0], self.range[1], self.limit_stiffness, self.limit_damping
            )
        return f[None]

    def spring_energy(self, q: Q) -> FloatScalar:
        """½ k (q − springref)²."""
        return 0.5 * self.stiffness * (q[0] - self.springref) ** 2

    @property
    def hard_limited(self) -> bool:
        """A `range` with `limit="hard"`."""
        return self.range is not None and self.limit == "hard"

    def limit_constraint(self, q: Q) -> tuple[FloatScalar, V]:
        """The nearer bound: (q − lower, +1) or (upper − q, −1)."""
        assert self.range is not None
        r, drdq = _nearer_bound(q[0], self.range[0], self.range[1])
        return r, drdq[None]


class HingeJoint(_AbstractRangeJoint):
    """A revolute joint: rotation by angle q about `axis` through `pos` (body frame).

    nq = nv = 1 (radians, rad/s). The optional `range` [lower, upper] is a limit, hard by
    default: a unilateral constraint solved with the contacts by
    [`SemiImplicitEuler`][sciad.rigid.SemiImplicitEuler], as MuJoCo's limits are,
    with the model's [`ContactModel`][sciad.rigid.ContactModel]'s
    [`Impedance`][sciad.rigid.Impedance] (or the joint's own `limit_impedance`; a
    violated limit is pushed back as MuJoCo's is, and no impulse acts while it
    holds). With `limit="soft"` it is a stiff
    spring-damper instead: outside the range a torque −k (q − bound) − d q̇ acts,
    which every integrator can run.

    **Arguments:**

    - `axis`: shape `(3,)`, in the body frame (normalised).
    - `pos`: shape `(3,)`, a point on the axis, in the body frame (length).
    - `damping`: viscous damping (N·m·s/rad), ≥ 0.
    - `armature`: rotor inertia added to the mass matrix (kg·m²), ≥ 0.
    - `range`: optional `(lower, upper)` angles (rad).
    - `limit`: `"hard"` (default) or `"soft"`.
    - `limit_stiffness`, `limit_damping`: the soft limit's k (N·m/rad) and d (N·m·s/rad).
    - `limit_impedance`: the hard limit's own [`Impedance`][sciad.rigid.Impedance]
      (MuJoCo's `solreflimit`, `solimplimit`; default `None`: the model's
      [`ContactModel`][sciad.rigid.ContactModel]'s).
    - `stiffness` (N·m/rad, ≥ 0), `springref` (rad): a torsion spring
      −stiffness·(q − springref) (MuJoCo's joint `stiffness` and `springref`).
    - `frictionloss` F ≥ 0 (N·m): dry friction (MuJoCo's joint `frictionloss`): a
      constraint row on the joint's velocity with force in [−F, F], solved with the
      contacts and limits (it holds the joint until the other forces on it exceed F,
      then opposes its motion with F), so the model needs time stepping;
      `friction_impedance` its own [`Impedance`][sciad.rigid.Impedance] (MuJoCo's
      `solreffriction`, `solimpfriction`; `None`: the model's). Whether the row
      exists is decided when the joint is built (`has_friction`: F nonzero or traced).
    - `actuator_force_range`: optional `(lower, upper)`, lower ≤ upper (N·m): the
      total actuator force on the dof (every actuator's Jᵀ force, plus the gravity
      compensation routed through the actuators) is clipped to it (MuJoCo's joint
      `actuatorfrcrange`).
    - `actuator_gravcomp`: whether the gravity compensation
      ([`Body`][sciad.rigid.Body]'s `gravcomp`) on this dof counts as actuator force
      (subject to `actuator_force_range`, and absent from a model without actuators)
      rather than passive force (MuJoCo's `actuatorgravcomp`).

    **Example:** `sciad.rigid.HingeJoint(axis=jnp.array([0.0, 1.0, 0.0]), range=(-1.0, 1.0))`
    """

    axis: Float[Array, "3"]
    pos: Float[Array, "3"]
    damping: FloatScalar
    armature: FloatScalar
    stiffness: FloatScalar
    springref: FloatScalar
    range: Float[Array, "2"] | None
    limit_stiffness: FloatScalar
    limit_damping: FloatScalar
    limit: str = eqx.field(static=True)
    limit_impedance: Impedance | None
    frictionloss: FloatScalar
    friction_impedance: Impedance | None
    has_friction: bool = eqx.field(static=True)
    actuator_force_range: Float[Array, "2"] | None
    actuator_gravcomp: bool = eqx.field(static=True)
    nq: ClassVar[int] = 1
    nv: ClassVar[int] = 1

    def __init__(
        self,
        axis: Vec3Like = (0.0, 0.0, 1.0),
        pos: Vec3Like = (0.0, 0.0, 0.0),
        damping: ScalarLike = 0.0,
        armature: ScalarLike = 0.0,
        range: RangeLike | None = None,
        limit_stiffness: ScalarLike = 1e4,
        limit_damping: ScalarLike = 1e2,
        limit: str = "hard",
        limit_impedance: Impedance | None = None,
        stiffness: ScalarLike = 0.0,
        springref: ScalarLike = 0.0,
        frictionloss: ScalarLike = 0.0,
        friction_impedance: Impedance | None = None,
        actuator_force_range: RangeLike | None = None,
        actuator_gravcomp: bool = False,
    ):
        self.axis = _unit_axis("HingeJoint", axis)
        self.pos = _vec3(pos)
        self.damping = jnp.asarray(damping)
        self.armature = jnp.asarray(armature)
        self.stiffness = jnp.asarray(stiffness)
        self.springref = jnp.asarray(springref)
        self.range = None if range is None else jnp.asarray(range)
        self.limit_stiffness = jnp.asarray(limit_stiffness)
        self.limit_damping = jnp.asarray(limit_damping)
        self.limit = limit
        self.limit_impedance = limit_impedance
        _set_friction(self, frictionloss, friction_impedance)
        _set_actuation(self, actuator_force_range, actuator_gravcomp)

    def __check_init__(self):
        if np.shape(self.pos) != (3,):
            raise ValueError(f"HingeJoint pos must have shape (3,); got {np.shape(self.pos)}.")
        _check_scalars(self, "damping", "armature", "stiffness", "limit_stiffness", "limit_damping")
        check_scalar(self.springref, f"{type(self).__name__}.springref")
        _check_range(self, self.range)
        _check_limit(self, self.limit)
        _check_limit_parameters(self)
        _check_friction(self)

    def neutral(self) -> Q:
        """q = 0."""
        return jnp.zeros(1, dtype=self.axis.dtype)

    def transform(self, q: Q) -> tuple[Float[Array, "4"], Float[Array, "3"]]:
        """Rotation exp(q·axis) about the line through `pos`."""
        quat = quat_exp(q[0] * self.axis)
        return quat, self.pos - quat_rotate(quat, self.pos)

    def motion_subspace(self, q: Q) -> Float[Array, "nv 6"]:
        """(axis, pos × axis)."""
        return jnp.concatenate([self.axis, cross(self.pos, self.axis)])[None]


class SliderJoint(_AbstractRangeJoint):
    """A prismatic joint: translation by q along `axis` (body frame).

    nq = nv = 1 (length, length/time). `range` is a limit, hard or soft (`limit`), as
    for [`HingeJoint`][sciad.rigid.HingeJoint].

    **Arguments:**

    - `axis`: shape `(3,)`, in the body frame (normalised).
    - `damping` (N·s/m), `armature` (kg), both ≥ 0.
    - `range`: optional `(lower, upper)` (length).
    - `limit`: `"hard"` (default) or `"soft"`.
    - `limit_stiffness` (N/m), `limit_damping` (N·s/m), for a soft limit.
    - `limit_impedance`: the hard limit's own [`Impedance`][sciad.rigid.Impedance]
      (`None`: the model's), as for [`HingeJoint`][sciad.rigid.HingeJoint].
    - `stiffness` (N/m, ≥ 0), `springref` (length): a spring −stiffness·(q − springref)
      (MuJoCo's joint `stiffness` and `springref`).
    - `frictionloss` F ≥ 0 (N): dry friction (MuJoCo's joint `frictionloss`): a
      constraint row on the joint's velocity with force in [−F, F], solved with the
      contacts and limits (it holds the joint until the other forces on it exceed F,
      then opposes its motion with F), so the model needs time stepping;
      `friction_impedance` its own [`Impedance`][sciad.rigid.Impedance] (MuJoCo's
      `solreffriction`, `solimpfriction`; `None`: the model's). Whether the row
      exists is decided when the joint is built (`has_friction`: F nonzero or traced).
    - `actuator_force_range` (N), `actuator_gravcomp`: the clamp of the total
      actuator force on the dof, and whether gravity compensation counts as actuator
      force, as for [`HingeJoint`][sciad.rigid.HingeJoint].

    **Example:** `sciad.rigid.SliderJoint(axis=jnp.array([1.0, 0.0, 0.0]))`
    """

    axis: Float[Array, "3"]
    damping: FloatScalar
    armature: FloatScalar
    stiffness: FloatScalar
    springref: FloatScalar
    range: Float[Array, "2"] | None
    limit_stiffness: FloatScalar
    limit_damping: FloatScalar
    limit: str = eqx.field(static=True)
    limit_impedance: Impedance | None
    frictionloss: FloatScalar
    friction_impedance: Impedance | None
    has_friction: bool = eqx.field(static=True)
    actuator_force_range: Float[Array, "2"] | None
    actuator_gravcomp: bool = eqx.field(static=True)
    nq: ClassVar[int] = 1
    nv: ClassVar[int] = 1

    def __init__(
        self,
        axis: Vec3Like = (0.0, 0.0, 1.0),
        damping: ScalarLike = 0.0,
        armature: ScalarLike = 0.0,
        range: RangeLike | None = None,
        limit_stiffness: ScalarLike = 1e4,
        limit_damping: ScalarLike = 1e2,
        limit: str = "hard",
        limit_impedance: Impedance | None = None,
        stiffness: ScalarLike = 0.0,
        springref: ScalarLike = 0.0,
        frictionloss: ScalarLike = 0.0,
        friction_impedance: Impedance | None = None,
        actuator_force_range: RangeLike | None = None,
        actuator_gravcomp: bool = False,
    ):
        self.axis = _unit_axis("SliderJoint", axis)
        self.damping = jnp.asarray(damping)
        self.armature = jnp.asarray(armature)
        self.stiffness = jnp.asarray(stiffness)
        self.springref = jnp.asarray(springref)
        self.range = None if range is None else jnp.asarray(range)
        self.limit_stiffness = jnp.asarray(limit_stiffness)
        self.limit_damping = jnp.asarray(limit_damping)
        self.limit = limit
        self.limit_impedance = limit_impedance
        _set_friction(self, frictionloss, friction_impedance)
        _set_actuation(self, actuator_force_range, actuator_gravcomp)

    def __check_init__(self):
        _check_scalars(self, "damping", "armature", "stiffness", "limit_stiffness", "limit_damping")
        check_scalar(self.springref, f"{type(self).__name__}.springref")
        _check_range(self, self.range)
        _check_limit(self, self.limit)
        _check_limit_parameters(self)
        _check_friction(self)

    def neutral(self) -> Q:
        """q = 0."""
        return jnp.zeros(1, dtype=self.axis.dtype)

    def transform(self, q: Q) -> tuple[Float[Array, "4"], Float[Array, "3"]]:
        """Translation q·axis."""
        one = jnp.ones(1, dtype=q.dtype)
        return jnp.concatenate([one, jnp.zeros(3, dtype=q.dtype)]), q[0] * self.axis

    def motion_subspace(self, q: Q) -> Float[Array, "nv 6"]:
        """(0, axis)."""
        return jnp.concatenate([jnp.zeros_like(self.axis), self.axis])[None]


def _quat_derivative(quat: Float[Array, "4"], w: Float[Array, "3"]) -> Float[Array, "4"]:
    """dq/dt = ½ q ⊗ (0, ω) for body angular velocity ω."""
    return 0.5 * quat_multiply(quat, jnp.concatenate([jnp.zeros(1, dtype=w.dtype), w]))


class BallJoint(AbstractJoint):
    """A spherical joint about `pos` (body frame): q is a unit quaternion (w, x, y, z),
    v the body's angular velocity relative to its parent, in the body frame.

    nq = 4, nv = 3. The optional `max_angle` limits the total rotation angle
    θ = |log q| (MuJoCo's ball-joint limit): hard by default, the constraint
    max_angle − θ ≥ 0 with dθ/dt = n·ω about the rotation axis n, solved with the
    contacts as for [`HingeJoint`][sciad.rigid.HingeJoint]; with `limit="soft"`,
    beyond it a torque −k (θ − max_angle) n − d (ω·n) n acts.

    **Arguments:**

    - `pos`: shape `(3,)`, the pivot in the body frame (length).
    - `damping` (N·m·s/rad), `armature` (kg·m²), both ≥ 0, the same on all three dofs.
    - `max_angle`: optional limit angle (rad), in (0, π].
    - `limit`: `"hard"` (default) or `"soft"`.
    - `limit_stiffness` (N·m/rad), `limit_damping` (N·m·s/rad), for a soft limit.
    - `limit_impedance`: the hard limit's own [`Impedance`][sciad.rigid.Impedance]
      (`None`: the model's), as for [`HingeJoint`][sciad.rigid.HingeJoint].

    **Example:** `sciad.rigid.BallJoint(pos=jnp.array([0.0, 0.0, 0.5]), damping=0.01)`
    """

    pos: Float[Array, "3"]
    damping: FloatScalar
    armature: FloatScalar
    max_angle: FloatScalar | None
    limit_stiffness: FloatScalar
    limit_damping: FloatScalar
    limit: str = eqx.field(static=True)
    limit_impedance: Impedance | None
    nq: ClassVar[int] = 4
    nv: ClassVar[int] = 3

    def __init__(
        self,
        pos: Vec3Like = (0.0, 0.0, 0.0),
        damping: ScalarLike = 0.0,
        armature: ScalarLike = 0.0,
        max_angle: ScalarLike | None = None,
        limit_stiffness: ScalarLike = 1e4,
        limit_damping: ScalarLike = 1e2,
        limit: str = "hard",
        limit_impedance: Impedance | None = None,
    ):
        self.pos = _vec3(pos)
        self.damping = jnp.asarray(damping)
        self.armature = jnp.asarray(armature)
        self.max_angle = None if max_angle is None else jnp.asarray(max_angle)
        self.limit_stiffness = jnp.asarray(limit_stiffness)
        self.limit_damping = jnp.asarray(limit_damping)
        self.limit = limit
        self.limit_impedance = limit_impedance

    def __check_init__(self):
        if np.shape(self.pos) != (3,):
            raise ValueError(f"BallJoint pos must have shape (3,); got {np.shape(self.pos)}.")
        _check_scalars(self, "damping", "armature", "limit_stiffness", "limit_damping")
        if self.max_angle is not None:
            check_scalar(self.max_angle, "BallJoint.max_angle")
            check_in_range(self.max_angle, "BallJoint.max_angle", 0.0, np.pi, closed=(False, True))
        _check_limit(self, self.limit)
        _check_limit_parameters(self)

    def neutral(self) -> Q:
        """The identity quaternion."""
        return jnp.asarray([1.0, 0.0, 0.0, 0.0], dtype=self.pos.dtype)

    def transform(self, q: Q) -> tuple[Float[Array, "4"], Float[Array, "3"]]:
        """Rotation by q about `pos`."""
        quat = quat_normalize(q)
        return quat, self.pos - quat_rotate(quat, self.pos)

    def motion_subspace(self, q: Q) -> Float[Array, "nv 6"]:
        """Rows (e_k, pos × e_k), k = x, y, z."""
        eye = jnp.eye(3, dtype=q.dtype)
        return jnp.concatenate([eye, cross(self.pos[None, :], eye)], axis=1)

    def integrate(self, q: Q, dq: V) -> Q:
        """q ⊗ exp(dq)."""
        return quat_multiply(q, quat_exp(dq))

    def position_derivative(self, q: Q, v: V) -> Q:
        """½ q ⊗ (0, ω)."""
        return _quat_derivative(q, v)

    def tangent_correction(self, dq: V, v: V) -> V:
        """dexp⁻¹ of SO(3) (truncated, see `so3_dexpinv`)."""
        return so3_dexpinv(dq, v)

    def difference(self, q1: Q, q0: Q) -> V:
        """log(q0* ⊗ q1)."""
        return quat_log(quat_multiply(quat_conjugate(q0), q1))

    def normalize(self, q: Q) -> Q:
        """q / |q|."""
        return quat_normalize(q)

    def _angle_axis(self, q: Q) -> tuple[Array, Array, Array]:
        """θ = |log q|, the unit rotation axis n (zero at θ = 0) and whether θ > 0."""
        r = quat_log(quat_normalize(q))
        nonzero = jnp.sum(r * r) > 0
        theta = safe_norm(r, nonzero)  # 1 at θ = 0 (finite gradients): masked below
        return jnp.where(nonzero, theta, 0.0), jnp.where(nonzero, r / theta, 0.0), nonzero

    def passive_force(self, q: Q, v: V) -> V:
        """The soft cone limit torque (zero without `max_angle`, or with a hard limit)."""
        if self.max_angle is None or self.limit == "hard":
            return jnp.zeros_like(v)
        theta, n, nonzero = self._angle_axis(q)
        over = jnp.maximum(theta - self.max_angle, 0.0)
        violated = nonzero & (over > 0)
        torque = -(self.limit_stiffness * over + self.limit_damping * jnp.dot(v, n)) * n
        return jnp.where(violated, torque, 0.0)

    def limit_parameters(self, default: Impedance) -> Impedance:
        """`limit_impedance`, or `default`."""
        return _own_or(self.limit_impedance, default)

    @property
    def hard_limited(self) -> bool:
        """A `max_angle` with `limit="hard"`."""
        return self.max_angle is not None and self.limit == "hard"

    def limit_constraint(self, q: Q) -> tuple[FloatScalar, V]:
        """(max_angle − θ, −n)."""
        assert self.max_angle is not None
        theta, n, _ = self._angle_axis(q)
        return self.max_angle - theta, -n


class FreeJoint(AbstractJoint):
    """Six degrees of freedom: q = (position (3), unit quaternion (4)) of the body
    frame in its parent (the world), v = (linear velocity of the body origin in the
    world frame, angular velocity in the body frame) — MuJoCo's layout.

    nq = 7, nv = 6. The body's `pos` and `quat` give the default initial state. A free
    joint's parent must be the world. No limits.

    **Arguments:** `damping` and `armature` (≥ 0), the same on all six dofs.

    **Example:** `sciad.rigid.Body("ball", joint=sciad.rigid.FreeJoint(), shape=sciad.rigid.Sphere(0.1), density=1000.0)`
    """

    damping: FloatScalar
    armature: FloatScalar
    nq: ClassVar[int] = 7
    nv: ClassVar[int] = 6
    absolute: ClassVar[bool] = True

    def __init__(self, damping: ScalarLike = 0.0, armature: ScalarLike = 0.0):
        self.damping = jnp.asarray(damping)
        self.armature = jnp.asarray(armature)

    def __check_init__(self):
        _check_scalars(self, "damping", "armature")

    def neutral(self) -> Q:
        """Origin and the identity quaternion."""
        return jnp.asarray([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0], dtype=self.damping.dtype)

    def transform(self, q: Q) -> tuple[Float[Array, "4"], Float[Array, "3"]]:
        """The pose (quat, pos) stored in q."""
        return quat_normalize(q[3:]), q[:3]

    def motion_subspace(self, q: Q) -> Float[Array, "nv 6"]:
        """World translations (0, Rᵀ e_k), then body rotations (e_k, 0), in the body frame."""
        eye = jnp.eye(3, dtype=q.dtype)
        rt = quat_to_matrix(quat_normalize(q[3:]))  # row k is (Rᵀ e_k)ᵀ
        zero = jnp.zeros((3, 3), dtype=q.dtype)
        return jnp.concatenate(
            [jnp.concatenate([zero, rt], axis=1), jnp.concatenate([eye, zero], axis=1)]
        )

    def integrate(self, q: Q, dq: V) -> Q:
        """(pos + dq[:3], quat ⊗ exp(dq[3:]))."""
        return jnp.concatenate([q[:3] + dq[:3], quat_multiply(q[3:], quat_exp(dq[3:]))])

    def position_derivative(self, q: Q, v: V) -> Q:
        """(v_lin, ½ quat ⊗ (0, ω))."""
        return jnp.concatenate([v[:3], _quat_derivative(q[3:], v[3:])])

    def tangent_correction(self, dq: V, v: V) -> V:
        """Identity on the translation, dexp⁻¹ of SO(3) on the rotation."""
        return jnp.concatenate([v[:3], so3_dexpinv(dq[3:], v[3:])])

    def difference(self, q1: Q, q0: Q) -> V:
        """(Δpos, log(quat0* ⊗ quat1))."""
        return jnp.concatenate(
            [q1[:3] - q0[:3], quat_log(quat_multiply(quat_conjugate(q0[3:]), q1[3:]))]
        )

    def normalize(self, q: Q) -> Q:
        """Normalise the quaternion part."""
        return jnp.concatenate([q[:3], quat_normalize(q[3:])])

    def bias_acceleration(self, s: Float[Array, "nv 6"], v: V) -> Float[Array, "6"]:
        """(S_t v_t) ×ₘ (S_r v_r): the rotation axes move with the translating body."""
        return cross_motion(v[:3] @ s[:3], v[3:] @ s[3:])

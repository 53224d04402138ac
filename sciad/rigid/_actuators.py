"""Inputs to a multibody: control signals, joint actuators, applied wrenches."""

import abc
from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float
import numpy as np

from .._core._types import Anything, FloatScalar, RealScalarLike
from .._core._validate import (
    as_float_array,
    check_int,
    check_positive,
    check_scalar,
    is_concrete,
)
from ._activation import (
    AbstractActivation,
    activation_rate,
    check_activation,
    next_activation,
    stateful,
)
from ._grouped import assemble, grouped, stacked
from ._types import RangeLike, ScalarLike


class AbstractControl(eqx.Module):
    """A time- and state-dependent input u(t, q, v): the actuators' control signal, or
    the applied wrenches of a [`MultiBody`][sciad.rigid.MultiBody].

    Its array fields are parameters, so gradients and fits reach them like any other
    model parameter. Write a feedback policy (a neural network, a PD law) as a subclass.

    **Example:**

    ```python
    class PD(sciad.rigid.AbstractControl):
        target: jax.Array

        def __call__(self, t, q, v):
            return 10.0 * (self.target - q) - 1.0 * v
    ```
    """

    @abc.abstractmethod
    def __call__(
        self, t: RealScalarLike, q: Float[Array, " nq"], v: Float[Array, " nv"]
    ) -> Float[Array, "..."]:
        """The input at time `t` and state (q, v)."""


class ConstantControl(AbstractControl):
    """A constant input.

    **Arguments:** `value`: any shape (e.g. `(n_actuators,)`, or `(n_bodies, 6)` for
    wrenches).

    **Example:** `sciad.rigid.ConstantControl(jnp.array([0.5, -0.5]))`
    """

    value: Float[Array, "..."]

    def __init__(self, value: Float[ArrayLike, "..."]):
        self.value = as_float_array(value, "ConstantControl.value")

    def __call__(
        self, t: RealScalarLike, q: Float[Array, " nq"], v: Float[Array, " nv"]
    ) -> Float[Array, "..."]:
        """`value`."""
        return self.value


class InterpolatedControl(AbstractControl):
    """A control signal given at knots and interpolated linearly in time (held constant
    before the first and after the last knot). Continuous in t, so every stage of a
    Runge–Kutta step sees a consistent input; differentiable w.r.t. `values`.

    **Arguments:**

    - `ts`: shape `(m,)`, strictly increasing knot times, m ≥ 2.
    - `values`: shape `(m, ...)`, the input at each knot.

    **Example:**

    ```python
    ts = jnp.linspace(0.0, 1.0, 11)
    u = sciad.rigid.InterpolatedControl(ts, jnp.sin(2 * jnp.pi * ts)[:, None])
    ```
    """

    ts: Float[Array, " m"]
    values: Float[Array, "m ..."]

    def __init__(self, ts: Float[ArrayLike, " m"], values: Float[ArrayLike, "m ..."]):
        self.ts = as_float_array(ts, "InterpolatedControl.ts")
        self.values = as_float_array(values, "InterpolatedControl.values")

    def __check_init__(self):
        if np.ndim(self.ts) != 1 or np.shape(self.ts)[0] < 2:
            raise ValueError(
                f"InterpolatedControl ts must have shape (m,) with m >= 2; got {np.shape(self.ts)}."
            )
        if np.ndim(self.values) < 1 or np.shape(self.values)[0] != np.shape(self.ts)[0]:
            raise ValueError(
                f"InterpolatedControl values must have shape (m, ...) with m = "
                f"{np.shape(self.ts)[0]} knots; got {np.shape(self.values)}."
            )
        if is_concrete(self.ts) and not np.all(np.diff(np.asarray(self.ts)) > 0):
            raise ValueError(
                f"InterpolatedControl ts must be strictly increasing; got {np.asarray(self.ts)}."
            )

    def __call__(
        self, t: RealScalarLike, q: Float[Array, " nq"], v: Float[Array, " nv"]
    ) -> Float[Array, "..."]:
        """Linear interpolation of `values` at t."""
        m = self.ts.shape[0]
        t = jnp.asarray(t, dtype=self.ts.dtype)
        i = jnp.clip(jnp.searchsorted(self.ts, t, side="right") - 1, 0, m - 2)
        t0, t1 = self.ts[i], self.ts[i + 1]
        w = jnp.clip((t - t0) / (t1 - t0), 0.0, 1.0)
        return (1 - w) * self.values[i] + w * self.values[i + 1]


class AbstractActuator(eqx.Module):
    """A scalar actuator of a [`MultiBody`][sciad.rigid.MultiBody] (MuJoCo's affine
    general actuator, gear folded in): with ℓ and ℓ̇ its transmission's length and
    rate (a joint's q and q̇, or a tendon's length and its rate),

        force = gain · x + bias_constant + bias_position · ℓ + bias_velocity · ℓ̇

    acting on the dofs along the transmission (Jᵀ force), where x is the control u
    (clipped to `ctrl_range` if given), or, with an `activation`, the actuator's
    activation state act, driven by u (MuJoCo's `dyntype`; see
    [`AbstractActivation`][sciad.rigid.AbstractActivation]). With a `force_range`
    the force is then clipped to it (MuJoCo's `forcerange`), after the tendons'
    `actuator_force_range` scaling and before the joints' `actuator_force_range`
    clip, in the order of MuJoCo's `mj_fwdActuation`.

    Concrete: [`JointActuator`][sciad.rigid.JointActuator] and
    [`TendonActuator`][sciad.rigid.TendonActuator], which have the constructors
    `motor`, `position` and `velocity`, and
    [`SiteActuator`][sciad.rigid.SiteActuator] (built directly: its `gear` is a
    wrench).

    **Example:** `assert isinstance(sciad.rigid.JointActuator.motor("hip"), sciad.rigid.AbstractActuator)`
    """

    gain: eqx.AbstractVar[FloatScalar]
    bias_constant: eqx.AbstractVar[FloatScalar]
    bias_position: eqx.AbstractVar[FloatScalar]
    bias_velocity: eqx.AbstractVar[FloatScalar]
    ctrl_range: eqx.AbstractVar[Float[Array, "2"] | None]
    force_range: eqx.AbstractVar[Float[Array, "2"] | None]
    activation: eqx.AbstractVar[AbstractActivation | None]

    @property
    @abc.abstractmethod
    def target(self) -> str:
        """The name of what it drives: a body (its joint) or a tendon."""

    @classmethod
    @abc.abstractmethod
    def transmissions(
        cls, actuators: Sequence[Anything], mb: Anything, q: Array, f: Anything
    ) -> tuple[Array, Array]:
        """The lengths ℓ (k,) and their Jacobians (k, nv) of `actuators` (k of them, all
        of this class) in the `MultiBody` `mb` at configuration `q` with frames `f`
        (MuJoCo's `actuator_length` and `actuator_moment`), in one vectorised pass."""

    def transmission(self, mb: Anything, q: Array, f: Anything) -> tuple[FloatScalar, Array]:
        """The length ℓ and its Jacobian (nv,) of this actuator (see `transmissions`)."""
        length, moment = type(self).transmissions((self,), mb, q, f)
        return length[0], moment[0]

    def force(self, x: FloatScalar, length: FloatScalar, rate: FloatScalar) -> FloatScalar:
        """gain · x + bias_constant + bias_position · ℓ + bias_velocity · ℓ̇."""
        return _affine([self], x, length, rate)[0]

    @classmethod
    def motor(
        cls,
        target: str,
        gear: ScalarLike = 1.0,
        *,
        ctrl_range: RangeLike | None = None,
        force_range: RangeLike | None = None,
        activation: AbstractActivation | None = None,
        **where: int,
    ) -> "AbstractActuator":
        """A motor: force = gear · u (gear ≠ 0). `where`: `dof=` for a `JointActuator`.

        **Example:** `sciad.rigid.JointActuator.motor("hip", gear=10.0)`
        """
        check_scalar(gear, f"{cls.__name__}.motor gear")
        if is_concrete(gear) and float(np.asarray(gear)) == 0:
            raise ValueError(f"{cls.__name__}.motor gear must be non-zero; got 0.")
        return _make(
            cls,
            target,
            gain=gear,
            ctrl_range=ctrl_range,
            force_range=force_range,
            activation=activation,
            **where,
        )

    @classmethod
    def position(
        cls,
        target: str,
        kp: ScalarLike,
        kv: ScalarLike = 0.0,
        *,
        ctrl_range: RangeLike | None = None,
        force_range: RangeLike | None = None,
        activation: AbstractActivation | None = None,
        **where: int,
    ) -> "AbstractActuator":
        """A position servo: force = kp (u − ℓ) − kv ℓ̇, u the target position (kp > 0,
        kv ≥ 0).

        **Example:** `sciad.rigid.JointActuator.position("knee", kp=50.0, kv=1.0)`
        """
        check_positive(kp, f"{cls.__name__}.position kp")
        check_positive(kv, f"{cls.__name__}.position kv", zero_ok=True)
        kp = as_float_array(kp, f"{cls.__name__}.position kp")
        kv = as_float_array(kv, f"{cls.__name__}.position kv")
        return _make(
            cls,
            target,
            gain=kp,
            bias_position=-kp,
            bias_velocity=-kv,
            ctrl_range=ctrl_range,
            force_range=force_range,
            activation=activation,
            **where,
        )

    @classmethod
    def velocity(
        cls,
        target: str,
        kv: ScalarLike,
        *,
        ctrl_range: RangeLike | None = None,
        force_range: RangeLike | None = None,
        activation: AbstractActivation | None = None,
        **where: int,
    ) -> "AbstractActuator":
        """A velocity servo: force = kv (u − ℓ̇), u the target velocity (kv > 0).

        **Example:** `sciad.rigid.JointActuator.velocity("wheel", kv=2.0)`
        """
        check_positive(kv, f"{cls.__name__}.velocity kv")
        kv = as_float_array(kv, f"{cls.__name__}.velocity kv")
        return _make(
            cls,
            target,
            gain=kv,
            bias_velocity=-kv,
            ctrl_range=ctrl_range,
            force_range=force_range,
            activation=activation,
            **where,
        )


def _affine(actuators: Sequence[Anything], x: Array, length: Array, rate: Array) -> Array:
    """The actuators' forces gain · x + bias_constant + bias_position · ℓ +
    bias_velocity · ℓ̇, with their parameters stacked (k,)."""
    dtype = length.dtype
    gain, constant, position, velocity = (
        stacked(actuators, name, dtype)
        for name in ("gain", "bias_constant", "bias_position", "bias_velocity")
    )
    return gain * x + constant + position * length + velocity * rate


def _make(cls: Any, target: str, **kw: Any) -> Any:
    """`cls(target, **kw)` for the constructors of `AbstractActuator`."""
    return cls(target, **kw)


def _set_affine(a: Any, label: str, kw: dict[str, Any]) -> None:
    """Validate and set the fields every `AbstractActuator` shares."""
    for field in ("gain", "bias_constant", "bias_position", "bias_velocity"):
        check_scalar(kw[field], f"{label} {field}")
        setattr(a, field, as_float_array(kw[field], f"{label} {field}"))
    a.ctrl_range = None
    if kw["ctrl_range"] is not None:
        r = as_float_array(kw["ctrl_range"], f"{label} ctrl_range", (2,))
        if is_concrete(r) and not float(r[0]) < float(r[1]):
            raise ValueError(f"{label} ctrl_range must have lower < upper; got {np.asarray(r)}.")
        a.ctrl_range = r
    a.force_range = None
    if kw["force_range"] is not None:
        a.force_range = force_range_of(kw["force_range"], f"{label} force_range")
    a.activation = check_activation(kw["activation"], label)


def force_range_of(x: Anything, label: str) -> Array:
    """A force clamp `(lower, upper)` (force units) as a float array of shape (2,),
    with lower ≤ upper when concrete (`ValueError` otherwise)."""
    r = as_float_array(x, label, (2,))
    if is_concrete(r) and not float(r[0]) <= float(r[1]):
        raise ValueError(f"{label} must have lower <= upper; got {np.asarray(r)}.")
    return r


class JointActuator(AbstractActuator):
    """An [`AbstractActuator`][sciad.rigid.AbstractActuator] on one degree of freedom
    of a joint (MuJoCo's joint transmission): ℓ = q and ℓ̇ = q̇ of the dof
    (`bias_position` needs a hinge or slider), the force acting on the dof.

    **Arguments:**

    - `joint`: the name of the body whose joint is driven.
    - `dof`: which of the joint's degrees of freedom (0 for hinges and sliders).
    - `gain`, `bias_constant`, `bias_position`, `bias_velocity`: scalars.
    - `ctrl_range`: optional `(lower, upper)` clip for u.
    - `force_range`: optional `(lower, upper)` clip for the force (force units along
      ℓ, gear folded in; lower ≤ upper; MuJoCo's `forcerange`).
    - `activation`: optional [`AbstractActivation`][sciad.rigid.AbstractActivation]
      (MuJoCo's `dyntype`): the force then follows the activation state.

    **Example:** `sciad.rigid.JointActuator.motor("link1", gear=2.0, ctrl_range=jnp.array([-1.0, 1.0]))`
    """

    joint: str = eqx.field(static=True)
    dof: int = eqx.field(static=True)
    gain: FloatScalar
    bias_constant: FloatScalar
    bias_position: FloatScalar
    bias_velocity: FloatScalar
    ctrl_range: Float[Array, "2"] | None
    force_range: Float[Array, "2"] | None
    activation: AbstractActivation | None

    def __init__(
        self,
        joint: str,
        *,
        dof: int = 0,
        gain: ScalarLike = 1.0,
        bias_constant: ScalarLike = 0.0,
        bias_position: ScalarLike = 0.0,
        bias_velocity: ScalarLike = 0.0,
        ctrl_range: RangeLike | None = None,
        force_range: RangeLike | None = None,
        activation: AbstractActivation | None = None,
    ):
        if not isinstance(joint, str) or not joint:
            raise TypeError(f"JointActuator joint must be a body name (str); got {joint!r}.")
        self.joint = joint
        self.dof = check_int(dof, "JointActuator dof", minimum=0)
        _set_affine(self, f"JointActuator {joint!r}", locals())

    @property
    def target(self) -> str:
        """`joint`."""
        return self.joint

    @classmethod
    def transmissions(
        cls, actuators: Sequence[Anything], mb: Anything, q: Array, f: Anything
    ) -> tuple[Array, Array]:
        """q and eᵢ of each actuator's dof (ℓ = 0 on a joint with more than one
        coordinate): a gather and a constant Jacobian."""
        del f
        topo = mb.topology
        b = np.asarray([mb.body_index(a.joint) for a in actuators], np.int64)
        one_dof = np.asarray([type(mb.joints[i]).nq == 1 for i in b])
        length = jnp.where(one_dof, q[topo.qadr[b]], jnp.zeros((), q.dtype))
        moment = np.zeros((len(b), mb.nv))
        moment[np.arange(len(b)), topo.dadr[b] + np.asarray([a.dof for a in actuators])] = 1.0
        return length, jnp.asarray(moment, q.dtype)


class TendonActuator(AbstractActuator):
    """An [`AbstractActuator`][sciad.rigid.AbstractActuator] pulling on a tendon
    (MuJoCo's tendon transmission): ℓ the tendon's length, ℓ̇ = J v, the force acting
    on the dofs as Jᵀ force (J the tendon's Jacobian).

    **Arguments:**

    - `tendon`: the tendon's name.
    - `gain`, `bias_constant`, `bias_position`, `bias_velocity`: scalars.
    - `ctrl_range`: optional `(lower, upper)` clip for u.
    - `force_range`: optional `(lower, upper)` clip for the force (force units along
      ℓ, gear folded in; lower ≤ upper; MuJoCo's `forcerange`).
    - `activation`: optional [`AbstractActivation`][sciad.rigid.AbstractActivation].

    **Example:** `sciad.rigid.TendonActuator.position("coupling", kp=10.0)`
    """

    tendon: str = eqx.field(static=True)
    gain: FloatScalar
    bias_constant: FloatScalar
    bias_position: FloatScalar
    bias_velocity: FloatScalar
    ctrl_range: Float[Array, "2"] | None
    force_range: Float[Array, "2"] | None
    activation: AbstractActivation | None

    def __init__(
        self,
        tendon: str,
        *,
        gain: ScalarLike = 1.0,
        bias_constant: ScalarLike = 0.0,
        bias_position: ScalarLike = 0.0,
        bias_velocity: ScalarLike = 0.0,
        ctrl_range: RangeLike | None = None,
        force_range: RangeLike | None = None,
        activation: AbstractActivation | None = None,
    ):
        if not isinstance(tendon, str) or not tendon:
            raise TypeError(f"TendonActuator tendon name must be a non-empty str; got {tendon!r}.")
        self.tendon = tendon
        _set_affine(self, f"TendonActuator {tendon!r}", locals())

    @property
    def target(self) -> str:
        """`tendon`."""
        return self.tendon

    @classmethod
    def transmissions(
        cls, actuators: Sequence[Anything], mb: Anything, q: Array, f: Anything
    ) -> tuple[Array, Array]:
        """The tendons' lengths and Jacobians (from the frames `f`)."""
        del q
        length, jac = f.tendons
        names = [t.name for t in mb.tendons]
        k = np.asarray([names.index(a.tendon) for a in actuators], np.int64)
        return length[k], jac[k]


# --------------------------------------------------------------------------- the model's


def controls(mb: Anything, t: RealScalarLike, q: Array, v: Array) -> Array:
    """The actuators' controls u(t, q, v) (zero without `control`), clipped to their
    `ctrl_range`s, shape (n_actuators,)."""
    acts = mb.actuators
    u = jnp.zeros(len(acts), v.dtype) if mb.control is None else mb.control(t, q, v)
    ranged = np.asarray([i for i, a in enumerate(acts) if a.ctrl_range is not None], np.int64)
    lo, hi = _bounds(len(acts), [acts[i].ctrl_range for i in ranged], ranged, v.dtype)
    return jnp.clip(u, lo, hi)


def transmissions(mb: Anything, q: Array, f: Anything) -> tuple[Array, Array]:
    """Every actuator's length (n_actuators,) and Jacobian (n_actuators, nv): one
    vectorised call per actuator class."""
    acts = mb.actuators
    idx = grouped(acts, type)
    parts = [type(acts[g[0]]).transmissions([acts[i] for i in g], mb, q, f) for g in idx]
    return assemble(parts, idx)


def _actuator_forces(
    mb: Anything,
    t: RealScalarLike,
    q: Array,
    v: Array,
    f: Anything,
    act: Array | None,
    dt: RealScalarLike | None,
) -> tuple[Array, Array]:
    """Each actuator's force after MuJoCo's tendon scaling and `forcerange` clip
    (MuJoCo's `actuator_force`), shape (k,), and the actuators' Jacobians (k, nv)."""
    acts = mb.actuators
    u = controls(mb, t, q, v)
    x = u
    idx = np.asarray(stateful(mb), np.int64)
    if idx.size:
        if act is None:
            raise ValueError(
                "this MultiBody's actuators have activation states: pass act (the state "
                "is y = (q, v, act))."
            )
        early = np.asarray([acts[i].activation.early for i in idx])
        state = act
        if early.any():
            if dt is None:
                raise ValueError(
                    "an actuator with early activation (actearly) needs the step: run "
                    "the model with SemiImplicitEuler or RKMK4."
                )
            nxt = next_activation(mb, act, activation_rate(mb, u, act), dt)
            state = jnp.where(early, nxt, act)
        x = u.at[idx].set(state)
    length, moment = transmissions(mb, q, f)
    force = _affine(acts, x, length, moment @ v)
    return _clip_forces(acts, _scale_tendon_forces(mb, force)), moment


def actuator_force(
    mb: Anything,
    t: RealScalarLike,
    q: Array,
    v: Array,
    f: Anything,
    act: Array | None = None,
    dt: RealScalarLike | None = None,
    gravcomp: Array | None = None,
) -> Array:
    """Σ Jᵀ force over the actuators (MuJoCo's `qfrc_actuator`), shape (nv,): each
    actuator's input is its clipped control, or its activation `act` (with `early`,
    the activation after a step `dt`, MuJoCo's `actearly`). The forces are clamped as
    MuJoCo's `mj_fwdActuation` clamps them: scaled per tendon to its
    `actuator_force_range`, clipped per actuator to its `force_range`, mapped to the
    dofs, the gravity compensation `gravcomp` (nv,) of the joints that route it
    through their actuators added, and clipped per joint to its
    `actuator_force_range`. Without actuators it is zero (MuJoCo skips the whole
    stage, that gravity compensation included)."""
    if not mb.actuators:
        return jnp.zeros_like(v)
    force, moment = _actuator_forces(mb, t, q, v, f, act, dt)
    qfrc = moment.T @ force
    if gravcomp is not None:
        qfrc = qfrc + gravcomp
    return _clip_joint_forces(mb, qfrc)


def actuator_velocity_derivative(
    mb: Anything,
    t: RealScalarLike,
    q: Array,
    v: Array,
    f: Anything,
    act: Array | None = None,
    dt: RealScalarLike | None = None,
) -> Array:
    """MuJoCo's `mjd_actuator_vel`: Σ Jᵀ (∂force/∂ℓ̇) J over the actuators whose
    force is not at a bound of its `force_range`, shape (nv, nv). The gains being
    fixed, ∂force/∂ℓ̇ is each actuator's `bias_velocity`; as in MuJoCo, the tendon
    and joint `actuator_force_range` clamps are not differentiated."""
    if not mb.actuators:
        return jnp.zeros((mb.nv, mb.nv), v.dtype)
    acts = mb.actuators
    force, moment = _actuator_forces(mb, t, q, v, f, act, dt)
    slope = stacked(acts, "bias_velocity", v.dtype)
    bounds = _force_bounds(acts, v.dtype)
    if bounds is not None:
        lo, hi = bounds
        slope = jnp.where((force <= lo) | (force >= hi), jnp.zeros_like(slope), slope)
    return moment.T @ (slope[:, None] * moment)


def _bounds(n: int, ranges: Sequence[Array], idx: np.ndarray, dtype: Any) -> tuple[Array, Array]:
    """Lower and upper bounds (n,) each: `ranges` (lower, upper) at the static
    indices `idx`, unbounded elsewhere."""
    lo = jnp.full(n, -jnp.inf, dtype)
    hi = jnp.full(n, jnp.inf, dtype)
    if idx.size:
        r = jnp.stack([jnp.asarray(x) for x in ranges]).astype(dtype)
        lo, hi = lo.at[idx].set(r[:, 0]), hi.at[idx].set(r[:, 1])
    return lo, hi


def _force_bounds(acts: Sequence[Anything], dtype: Any) -> tuple[Array, Array] | None:
    """The actuators' `force_range` bounds (k,) each (unbounded where it is `None`);
    `None` when no actuator has one."""
    idx = np.asarray([i for i, a in enumerate(acts) if a.force_range is not None], np.int64)
    if not idx.size:
        return None
    return _bounds(len(acts), [acts[i].force_range for i in idx], idx, dtype)


def _clip_forces(acts: Sequence[Anything], force: Array) -> Array:
    """Each actuator's force clipped to its `force_range` (MuJoCo's `forcerange`)."""
    bounds = _force_bounds(acts, force.dtype)
    return force if bounds is None else jnp.clip(force, *bounds)


def _scale_tendon_forces(mb: Anything, force: Array) -> Array:
    """The forces of the `TendonActuator`s on a tendon with an `actuator_force_range`
    scaled by one factor per tendon so that their sum lies in that range (MuJoCo's
    tendon `actuatorfrcrange`): lower/total below it, upper/total above it, 1 inside
    it or when the sum is exactly zero. Gradient-safe: the division sees 1 wherever
    its result is not used."""
    limited = [k for k, t in enumerate(mb.tendons) if t.actuator_force_range is not None]
    if not limited:
        return force
    names = {mb.tendons[k].name: row for row, k in enumerate(limited)}
    on = [(i, names[a.target]) for i, a in enumerate(mb.actuators) if _on_tendon(a, names)]
    if not on:
        return force
    acts = np.asarray([i for i, _ in on], np.int64)
    rows = np.asarray([r for _, r in on], np.int64)
    r = jnp.stack([mb.tendons[k].actuator_force_range for k in limited]).astype(force.dtype)
    total = jnp.zeros(len(limited), force.dtype).at[rows].add(force[acts])
    below, above = total < r[:, 0], total > r[:, 1]
    outside = (below | above) & (total != 0)
    safe = jnp.where(outside, total, jnp.ones_like(total))
    scale = jnp.where(outside, jnp.where(below, r[:, 0], r[:, 1]) / safe, jnp.ones_like(total))
    return force * jnp.ones_like(force).at[acts].set(scale[rows])


def _on_tendon(a: Anything, names: dict[str, int]) -> bool:
    """Whether actuator `a` pulls on one of the tendons `names`."""
    return isinstance(a, TendonActuator) and a.tendon in names


def _clip_joint_forces(mb: Anything, qfrc: Array) -> Array:
    """`qfrc` (nv,) clipped at each joint with an `actuator_force_range` (a hinge's
    or slider's dof; MuJoCo's joint `actuatorfrcrange`)."""
    ranges = [(b, j.actuator_limits()) for b, j in enumerate(mb.joints)]
    ranges = [(b, r) for b, r in ranges if r is not None]
    if not ranges:
        return qfrc
    dofs = np.asarray([mb.topology.dadr[b] for b, _ in ranges], np.int64)
    lo, hi = _bounds(len(qfrc), [r for _, r in ranges], dofs, qfrc.dtype)
    return jnp.clip(qfrc, lo, hi)

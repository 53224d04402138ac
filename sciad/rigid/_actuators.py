"""Inputs to a multibody: control signals, joint actuators, applied wrenches."""

import abc

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
from ._types import RangeLike, ScalarLike


def _scalar(x: Anything, name: str) -> Array:
    check_scalar(x, name)
    return jnp.asarray(x)


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


class JointActuator(eqx.Module):
    """A scalar actuator on one degree of freedom of a joint (MuJoCo's affine
    general actuator with a joint transmission and gear 1):

        force = gain · u + bias_constant + bias_position · q + bias_velocity · q̇

    with u the actuator's control (clipped to `ctrl_range` if given) and q, q̇ the
    dof's position and velocity (`bias_position` needs a hinge or slider). Use the
    constructors [`motor`][sciad.rigid.JointActuator.motor],
    [`position`][sciad.rigid.JointActuator.position] and
    [`velocity`][sciad.rigid.JointActuator.velocity] for the common cases.

    **Arguments:**

    - `joint`: the name of the body whose joint is driven.
    - `dof`: which of the joint's degrees of freedom (0 for hinges and sliders).
    - `gain`, `bias_constant`, `bias_position`, `bias_velocity`: scalars.
    - `ctrl_range`: optional `(lower, upper)` clip for u.

    **Example:** `sciad.rigid.JointActuator.motor("link1", gear=2.0, ctrl_range=jnp.array([-1.0, 1.0]))`
    """

    joint: str = eqx.field(static=True)
    dof: int = eqx.field(static=True)
    gain: FloatScalar
    bias_constant: FloatScalar
    bias_position: FloatScalar
    bias_velocity: FloatScalar
    ctrl_range: Float[Array, "2"] | None

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
    ):
        if not isinstance(joint, str) or not joint:
            raise TypeError(f"JointActuator joint must be a body name (str); got {joint!r}.")
        self.joint = joint
        self.dof = check_int(dof, "JointActuator dof", minimum=0)
        self.gain = _scalar(gain, f"JointActuator {joint!r} gain")
        self.bias_constant = _scalar(bias_constant, f"JointActuator {joint!r} bias_constant")
        self.bias_position = _scalar(bias_position, f"JointActuator {joint!r} bias_position")
        self.bias_velocity = _scalar(bias_velocity, f"JointActuator {joint!r} bias_velocity")
        self.ctrl_range = None
        if ctrl_range is not None:
            r = as_float_array(ctrl_range, f"JointActuator {joint!r} ctrl_range", (2,))
            if is_concrete(r) and not float(r[0]) < float(r[1]):
                raise ValueError(
                    f"JointActuator {joint!r} ctrl_range must have lower < upper; "
                    f"got {np.asarray(r)}."
                )
            self.ctrl_range = r

    @classmethod
    def motor(
        cls,
        joint: str,
        gear: ScalarLike = 1.0,
        *,
        dof: int = 0,
        ctrl_range: RangeLike | None = None,
    ) -> "JointActuator":
        """A torque/force motor: force = gear · u.

        **Example:** `sciad.rigid.JointActuator.motor("hip", gear=10.0)`
        """
        check_scalar(gear, "JointActuator.motor gear")
        if is_concrete(gear) and float(np.asarray(gear)) == 0:
            raise ValueError("JointActuator.motor gear must be non-zero; got 0.")
        return cls(joint, dof=dof, gain=gear, ctrl_range=ctrl_range)

    @classmethod
    def position(
        cls,
        joint: str,
        kp: ScalarLike,
        kv: ScalarLike = 0.0,
        *,
        ctrl_range: RangeLike | None = None,
    ) -> "JointActuator":
        """A position servo: force = kp (u − q) − kv q̇, u the target position.

        **Example:** `sciad.rigid.JointActuator.position("knee", kp=50.0, kv=1.0)`
        """
        check_positive(kp, "JointActuator.position kp")
        check_positive(kv, "JointActuator.position kv", zero_ok=True)
        kp = jnp.asarray(kp)
        return cls(
            joint, gain=kp, bias_position=-kp, bias_velocity=-jnp.asarray(kv), ctrl_range=ctrl_range
        )

    @classmethod
    def velocity(
        cls,
        joint: str,
        kv: ScalarLike,
        *,
        dof: int = 0,
        ctrl_range: RangeLike | None = None,
    ) -> "JointActuator":
        """A velocity servo: force = kv (u − q̇), u the target velocity.

        **Example:** `sciad.rigid.JointActuator.velocity("wheel", kv=2.0)`
        """
        check_positive(kv, "JointActuator.velocity kv")
        kv = jnp.asarray(kv)
        return cls(joint, dof=dof, gain=kv, bias_velocity=-kv, ctrl_range=ctrl_range)

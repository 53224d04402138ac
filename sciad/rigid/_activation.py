"""Actuator activation dynamics as MuJoCo defines them (`mj_fwdActuation`,
`mj_nextActivation`): a state `act` per stateful actuator, its rate `act_dot` from the
control, and its advance over a step (Euler, or the exact exponential of a filter),
clamped to the activation range."""

import abc

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float
import numpy as np

from .._core._types import Anything, FloatScalar, RealScalarLike
from .._core._validate import as_float_array, check_positive, is_concrete
from ._grouped import map_grouped
from ._types import MINVAL, RangeLike, ScalarLike


def _act_range(x: RangeLike | None, owner: str) -> Array | None:
    if x is None:
        return None
    r = as_float_array(x, f"{owner}.act_range", (2,))
    if is_concrete(r) and not float(r[0]) < float(r[1]):
        raise ValueError(f"{owner}.act_range must have lower < upper; got {np.asarray(r)}.")
    return r


def _early(x: Anything, owner: str) -> bool:
    if not isinstance(x, bool):
        raise TypeError(f"{owner}.early must be True or False; got {x!r}.")
    return x


class AbstractActivation(eqx.Module):
    """The activation dynamics of an actuator (MuJoCo's `dyntype`): the actuator
    carries a state `act` in the model's state y = (q, v, act), whose rate
    act_dot = `rate(u, act)` depends on the actuator's (clipped) control u, and its
    force is gain · act + bias instead of gain · u + bias.

    A step of length h advances it as MuJoCo's `mj_nextActivation` does: by `advance`
    (Euler, act + h·act_dot, or a filter's exact exponential), then clamped to
    `act_range` if given (MuJoCo's `actlimited`/`actrange`). With `early` (MuJoCo's
    `actearly`) the force uses the activation at the end of the step, so a control
    acts without a step's delay.

    Concrete: [`FilterActivation`][sciad.rigid.FilterActivation],
    [`IntegratorActivation`][sciad.rigid.IntegratorActivation].

    **Example:** `assert isinstance(sciad.rigid.FilterActivation(0.1), sciad.rigid.AbstractActivation)`
    """

    act_range: eqx.AbstractVar[Float[Array, "2"] | None]
    early: eqx.AbstractVar[bool]

    @abc.abstractmethod
    def rate(self, u: FloatScalar, act: FloatScalar) -> FloatScalar:
        """act_dot for the control `u` and activation `act` (MuJoCo's `act_dot`)."""

    @abc.abstractmethod
    def advance(self, act: FloatScalar, act_dot: FloatScalar, dt: RealScalarLike) -> FloatScalar:
        """The activation after a step `dt` at rate `act_dot`, before the clamp."""

    def next(self, act: FloatScalar, act_dot: FloatScalar, dt: RealScalarLike) -> FloatScalar:
        """`advance`, clamped to `act_range` (MuJoCo's `mj_nextActivation`)."""
        out = self.advance(act, act_dot, dt)
        if self.act_range is None:
            return out
        r = self.act_range.astype(out.dtype)
        return jnp.clip(out, r[0], r[1])


class FilterActivation(AbstractActivation):
    """A first-order low-pass filter of the control (MuJoCo's `dyntype="filter"`, or
    `"filterexact"` with `exact=True`):

        act_dot = (u − act) / τ

    advanced by Euler, act + h·act_dot, or, with `exact`, by the filter's exact
    solution for a constant u, act + h·act_dot · (τ/h)(1 − e^(−h/τ)).
    Reference: MuJoCo documentation, "Actuation model"; `mj_nextActivation`.

    **Arguments:**

    - `tau`: the time constant τ > 0 (time; MuJoCo's `dynprm[0]`, floored at 1e-15).
    - `exact`: the exact exponential instead of Euler (default False).
    - `act_range`: optional `(lower, upper)` clamp of act (MuJoCo's `actrange`).
    - `early`: use the next step's activation for the force (MuJoCo's `actearly`).

    **Example:** `sciad.rigid.JointActuator("knee", gain=10.0, activation=sciad.rigid.FilterActivation(0.05))`
    """

    tau: FloatScalar
    exact: bool = eqx.field(static=True)
    act_range: Float[Array, "2"] | None
    early: bool = eqx.field(static=True)

    def __init__(
        self,
        tau: ScalarLike,
        *,
        exact: bool = False,
        act_range: RangeLike | None = None,
        early: bool = False,
    ):
        check_positive(tau, "FilterActivation.tau")
        self.tau = as_float_array(tau, "FilterActivation.tau")
        if not isinstance(exact, bool):
            raise TypeError(f"FilterActivation.exact must be True or False; got {exact!r}.")
        self.exact = exact
        self.act_range = _act_range(act_range, "FilterActivation")
        self.early = _early(early, "FilterActivation")

    def rate(self, u: FloatScalar, act: FloatScalar) -> FloatScalar:
        """(u − act) / max(τ, 1e-15)."""
        return (u - act) / jnp.maximum(self.tau.astype(act.dtype), MINVAL)

    def advance(self, act: FloatScalar, act_dot: FloatScalar, dt: RealScalarLike) -> FloatScalar:
        """act + h·act_dot, or with `exact` act + act_dot · τ (1 − e^(−h/τ))."""
        if not self.exact:
            return act + dt * act_dot
        tau = jnp.maximum(self.tau.astype(act.dtype), MINVAL)
        return act + act_dot * tau * (1 - jnp.exp(-jnp.asarray(dt, act.dtype) / tau))


class IntegratorActivation(AbstractActivation):
    """An integrator of the control (MuJoCo's `dyntype="integrator"`): act_dot = u,
    advanced by Euler, act + h·u; the force gain · act + bias follows the integral
    of the control (with `act_range`, a clamped one: MuJoCo's `intvelocity`).
    Reference: MuJoCo documentation, "Actuation model".

    **Arguments:**

    - `act_range`: optional `(lower, upper)` clamp of act (MuJoCo's `actrange`).
    - `early`: use the next step's activation for the force (MuJoCo's `actearly`).

    **Example:** `sciad.rigid.IntegratorActivation(act_range=(-1.0, 1.0))`
    """

    act_range: Float[Array, "2"] | None
    early: bool = eqx.field(static=True)

    def __init__(self, *, act_range: RangeLike | None = None, early: bool = False):
        self.act_range = _act_range(act_range, "IntegratorActivation")
        self.early = _early(early, "IntegratorActivation")

    def rate(self, u: FloatScalar, act: FloatScalar) -> FloatScalar:
        """u."""
        return u + jnp.zeros_like(act)

    def advance(self, act: FloatScalar, act_dot: FloatScalar, dt: RealScalarLike) -> FloatScalar:
        """act + h·act_dot."""
        return act + dt * act_dot


def check_activation(x: Anything, owner: str) -> AbstractActivation | None:
    """An actuator's `activation` argument: `None` or an `AbstractActivation`."""
    if x is not None and not isinstance(x, AbstractActivation):
        raise TypeError(
            f"{owner} activation must be a sciad.rigid.FilterActivation, "
            f"IntegratorActivation or None; got {x!r}."
        )
    return x


# --------------------------------------------------------------------------- the model's


def stateful(mb: Anything) -> list[int]:
    """The indices of the model's actuators with an activation (static), in order:
    act[k] belongs to actuator `stateful(mb)[k]`."""
    return [i for i, a in enumerate(mb.actuators) if a.activation is not None]


def activation_rate(mb: Anything, u: Array, act: Array) -> Array:
    """act_dot (na,) for the clipped controls `u` (n_actuators,) of all actuators (one
    vectorised call per kind of activation)."""
    idx = np.asarray(stateful(mb), np.int64)
    return map_grouped(
        [mb.actuators[i].activation for i in idx], lambda a, ui, x: a.rate(ui, x), u[idx], act
    )


def next_activation(mb: Anything, act: Array, act_dot: Array, dt: RealScalarLike) -> Array:
    """MuJoCo's `mj_nextActivation` for every state: advanced over `dt`, clamped."""
    activations = [mb.actuators[i].activation for i in stateful(mb)]
    return map_grouped(activations, lambda a, x, rate: a.next(x, rate, dt), act, act_dot)

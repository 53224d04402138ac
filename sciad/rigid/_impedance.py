"""How soft a constraint is: MuJoCo's `solref` and `solimp` (`Impedance`), and the
reference velocity and regularisation they give each constraint row of a step."""

from typing import NamedTuple

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float
import numpy as np

from .._core._types import FloatScalar, RealScalarLike
from .._core._validate import check_in_range, check_positive, check_scalar, is_concrete
from ._types import MINVAL

_MIN_IMP, _MAX_IMP = 1e-4, 0.9999  # MuJoCo's mjMINIMP, mjMAXIMP


class Impedance(eqx.Module):
    """How soft a constraint is (a contact, a joint or tendon limit, a friction loss, an
    equality): MuJoCo's `solref` (τ, ζ) and `solimp` (d₀, d_max, width, midpoint,
    power), with MuJoCo's meaning, so that a MuJoCo model converts one to one.

    A constraint row with violation r (a contact's signed distance less its margin, a
    limit's distance into its range) and velocity u = J v is driven towards the
    reference acceleration a_ref = −b u − k d(r) r, with b = 2/(d_max τ) and
    k = 1/(d_max² τ² ζ²): a damped oscillator of time constant τ and damping ratio ζ.
    MuJoCo's *direct* format gives the stiffness and damping themselves, as negative
    `solref` values (−k', −b'): then k = k'/d_max² and b = b'/d_max (build it with
    [`Impedance.direct`][sciad.rigid.Impedance.direct]).
    Its force is regularised by R = (1 − d)/d · A, where A is the row's inverse
    inertia (`MultiBody`'s `diagonal`): d → 1 is a hard constraint, smaller d a softer
    one. The impedance d(r) rises from d₀ at r = 0 to d_max at |r| ≥ width along
    MuJoCo's sigmoid of the given midpoint and power (flat when d₀ = d_max). A step h
    uses τ = max(τ, 2h) in the standard format (MuJoCo's `refsafe`): a shorter time
    constant would make the recovery overshoot and launch bodies. Friction rows (a
    contact's tangents, a friction loss) use only the damping b.

    **Arguments:**

    - `time_constant`: τ > 0 (time), default 0.02; or ≤ 0: −k', MuJoCo's direct
      stiffness (force per length per mass, the row's acceleration per violation).
    - `damping_ratio`: ζ > 0 (dimensionless), default 1 (critical damping); or ≤ 0:
      −b', MuJoCo's direct damping (per time). The two are both positive (standard)
      or both ≤ 0 (direct), as MuJoCo requires.
    - `d0`, `dmax`: the impedance at zero and at full violation, in [1e-4, 0.9999]
      (MuJoCo clamps to that interval); defaults 0.9 and 0.95.
    - `width` (length or angle, ≥ 0): the violation over which d goes from d₀ to
      d_max; default 0.001.
    - `midpoint` in [1e-4, 0.9999] and `power` ≥ 1: the sigmoid's shape; defaults 0.5
      and 2.

    The defaults are MuJoCo's. Reference: MuJoCo documentation, Computation, "Solver
    parameters"; MuJoCo's `mj_makeImpedance` (engine_core_constraint.c).

    **Example:**

    ```python
    stiff = sciad.rigid.Impedance(time_constant=0.005, d0=0.99, dmax=0.99)
    floor = sciad.rigid.Geom(sciad.rigid.Plane(), impedance=stiff)
    springy = sciad.rigid.Impedance.direct(stiffness=1e4, damping=30.0)
    ```
    """

    time_constant: FloatScalar = eqx.field(default=0.02, converter=jnp.asarray)
    damping_ratio: FloatScalar = eqx.field(default=1.0, converter=jnp.asarray)
    d0: FloatScalar = eqx.field(default=0.9, converter=jnp.asarray)
    dmax: FloatScalar = eqx.field(default=0.95, converter=jnp.asarray)
    width: FloatScalar = eqx.field(default=0.001, converter=jnp.asarray)
    midpoint: FloatScalar = eqx.field(default=0.5, converter=jnp.asarray)
    power: FloatScalar = eqx.field(default=2.0, converter=jnp.asarray)

    def __check_init__(self):
        check_scalar(self.time_constant, "Impedance.time_constant")
        check_scalar(self.damping_ratio, "Impedance.damping_ratio")
        if all(is_concrete(x) for x in (self.time_constant, self.damping_ratio)):
            tau, zeta = float(self.time_constant), float(self.damping_ratio)
            if (tau > 0) != (zeta > 0):
                raise ValueError(
                    "Impedance.time_constant and Impedance.damping_ratio must both be > 0 "
                    "(time constant and damping ratio) or both <= 0 (MuJoCo's direct "
                    f"format: -stiffness and -damping); got ({tau!r}, {zeta!r})."
                )
        for name in ("d0", "dmax", "midpoint"):
            x = getattr(self, name)
            check_scalar(x, f"Impedance.{name}")
            # the bounds as the field's dtype rounds them (float32 rounds 1e-4 down)
            dtype = np.dtype(jnp.result_type(x))
            lo, hi = (float(np.asarray(b, dtype)) for b in (_MIN_IMP, _MAX_IMP))
            check_in_range(x, f"Impedance.{name}", lo, hi)
        check_positive(self.width, "Impedance.width", zero_ok=True)
        check_scalar(self.power, "Impedance.power")
        check_in_range(self.power, "Impedance.power", 1.0, float("inf"))

    @classmethod
    def direct(
        cls,
        stiffness: RealScalarLike,
        damping: RealScalarLike,
        d0: RealScalarLike = 0.9,
        dmax: RealScalarLike = 0.95,
        width: RealScalarLike = 0.001,
        midpoint: RealScalarLike = 0.5,
        power: RealScalarLike = 2.0,
    ) -> "Impedance":
        """MuJoCo's direct format: the reference acceleration
        a_ref = −(b'/d_max) u − (k'/d_max²) d(r) r of stiffness k' = `stiffness` ≥ 0
        (1/time²) and damping b' = `damping` ≥ 0 (1/time), stored as MuJoCo stores
        them, `solref` = (−k', −b'). The other arguments are as for `Impedance`.

        **Example:** `Impedance.direct(stiffness=1e4, damping=30.0)` is MuJoCo's
        `solref="-10000 -30"`.
        """
        check_positive(stiffness, "Impedance.direct stiffness", zero_ok=True)
        check_positive(damping, "Impedance.direct damping", zero_ok=True)
        return cls(-jnp.asarray(stiffness), -jnp.asarray(damping), d0, dmax, width, midpoint, power)

    @classmethod
    def from_mujoco(
        cls, solref: Float[ArrayLike, "2"], solimp: Float[ArrayLike, "5"]
    ) -> "Impedance":
        """The impedance of MuJoCo's `solref` (τ, ζ) (positive: the standard format;
        both ≤ 0: the direct format, −stiffness and −damping) and `solimp` (d₀, d_max,
        width, midpoint, power), clamped as MuJoCo clamps them.

        **Example:** `Impedance.from_mujoco((0.02, 1.0), (0.9, 0.95, 0.001, 0.5, 2))`
        """
        tau, zeta = (float(x) for x in np.asarray(solref, float).reshape(2))
        d0, dmax, width, mid, power = (float(x) for x in np.asarray(solimp, float).reshape(5))
        if (tau > 0) != (zeta > 0):
            raise ValueError(
                f"solref {(tau, zeta)} mixes the standard format (positive: time constant "
                "and damping ratio) and the direct one (<= 0: -stiffness and -damping); "
                "MuJoCo replaces it by its default with a warning."
            )

        def clamp(x: float) -> float:
            return min(_MAX_IMP, max(_MIN_IMP, x))

        return cls(tau, zeta, clamp(d0), clamp(dmax), max(0.0, width), clamp(mid), max(1.0, power))

    def stacked(self) -> Float[Array, "7"]:
        """(τ, ζ, d₀, d_max, width, midpoint, power) as one array: the per-row form
        the constraint rows carry (`stack` several, `mix` two)."""
        return jnp.stack([jnp.asarray(x, float) for x in self._values()])

    def _values(self) -> tuple:
        return (
            self.time_constant,
            self.damping_ratio,
            self.d0,
            self.dmax,
            self.width,
            self.midpoint,
            self.power,
        )


def mix(a: Float[Array, "... 7"], b: Float[Array, "... 7"]) -> Float[Array, "... 7"]:
    """Two stacked impedances mixed as MuJoCo mixes a contact pair's geoms of equal
    priority and equal `solmix` (`mj_contactParam`): the mean of every `solimp`
    parameter; the mean of `solref` when both are standard (τ > 0), else the
    smaller of each of its two values (the direct format: the stiffer, more damped)."""
    standard = (a[..., :1] > 0) & (b[..., :1] > 0)
    ref = jnp.where(standard, 0.5 * (a[..., :2] + b[..., :2]), jnp.minimum(a[..., :2], b[..., :2]))
    return jnp.concatenate([ref, 0.5 * (a[..., 2:] + b[..., 2:])], axis=-1)


def impedance(p: Float[Array, "... 7"], violation: Array) -> Array:
    """d(r): MuJoCo's impedance of the violation r (the distance less the margin), per
    row: d₀ + y(|r|/width)(d_max − d₀) with y MuJoCo's sigmoid (flat when d₀ = d_max or
    width ≈ 0)."""
    d0, dmax, width, mid, power = (p[..., i] for i in range(2, 7))
    flat = (d0 == dmax) | (width <= MINVAL)
    x = jnp.abs(violation) / jnp.where(flat, 1.0, width)
    inner = (x > 0) & (x < 1) & ~flat
    xs = jnp.where(inner, x, 0.5)  # keep the unused branches finite (double where)
    low = xs**power / mid ** (power - 1)
    high = 1 - (1 - xs) ** power / (1 - mid) ** (power - 1)
    y = jnp.where(xs <= mid, low, high)
    y = jnp.where(inner, y, jnp.where(x >= 1, 1.0, 0.0))
    return jnp.where(flat, 0.5 * (d0 + dmax), d0 + y * (dmax - d0))


def row_terms(
    p: Float[Array, "K 7"],
    violation: Float[Array, " K"],
    velocity: Float[Array, " K"],
    diagonal: Float[Array, " K"],
    dt: RealScalarLike,
    *,
    friction: bool = False,
    at: Float[Array, " K"] | None = None,
) -> tuple[Float[Array, " K"], Float[Array, " K"]]:
    """Per constraint row, the reference velocity û = u + h a_ref for a step h = `dt`
    and the regularisation R = max((1 − d)/d · A, 1e-15), MuJoCo's (`Impedance`,
    `mj_makeImpedance`): a_ref = −b u − k d r, with b = 2/(d_max τ) and
    k = 1/(d_max τ ζ)² (τ clamped to 2h), or, in the direct format (τ ≤ 0),
    b = −ζ/d_max and k = −τ/d_max²; friction rows (`friction=True`) take k = 0 and the
    impedance at r = 0; `at`, when given, is the distance the impedance d is evaluated
    at instead of r (a connect's or weld's rows: the norm of all its rows, MuJoCo's
    `getposdim`). `violation` r, `velocity` u = J v and `diagonal` A (the row's
    inverse inertia) per row."""
    dt = jnp.asarray(dt, violation.dtype)
    ref0, ref1, dmax = p[:, 0], p[:, 1], p[:, 3]
    standard = ref0 > 0
    tau = jnp.where(standard, jnp.maximum(ref0, 2 * dt), 1.0)  # 1: the unused branch
    zeta = jnp.where(standard, ref1, 1.0)
    d = impedance(p, jnp.zeros_like(violation) if friction else violation if at is None else at)
    b = jnp.where(standard, 2 / jnp.maximum(dmax * tau, MINVAL), -ref1 / jnp.maximum(dmax, MINVAL))
    k_std = 1 / jnp.maximum((dmax * tau * zeta) ** 2, MINVAL)
    k = 0.0 if friction else jnp.where(standard, k_std, -ref0 / jnp.maximum(dmax**2, MINVAL))
    a_ref = -b * velocity - k * d * violation
    return velocity + dt * a_ref, jnp.maximum((1 - d) / d * diagonal, MINVAL)


class RowBlock(NamedTuple):
    """K scalar constraint rows of one kind, as a step's constraint solve takes them
    (everything but contacts' friction cones: limits, friction losses, equalities,
    pyramidal contact edges).

    - `violation` r (K,): distance less margin (negative: violated); 0 for friction
      rows.
    - `jac` (K, nv): dr/dv.
    - `impedance` (K, 7): each row's stacked `Impedance`.
    - `diagonal` (K,) or None: the rows' inverse inertia A for R (MuJoCo's
      `invweight0` approximation), or None for the exact J M⁻¹ Jᵀ.
    - `lower`, `upper` (K,): bounds of the row's force (0, inf for a limit; −F, F for
      a friction loss F; −inf, inf for an equality).
    - `active` (K,): which rows act this step (a limit within its margin).
    - `friction`: friction rows (no stiffness, impedance at r = 0).
    - `at` (K,) or None: the distance each row's impedance is evaluated at, when not
      its own r (a connect's or weld's rows share the norm of their 3 or 6 r's).
    - `bias` (K,) or None: J̇v, subtracted from the rows' reference acceleration
      (MuJoCo 4's `mj_Jdotv` for connect and weld rows).
    """

    violation: Float[Array, " K"]
    jac: Float[Array, "K nv"]
    impedance: Float[Array, "K 7"]
    diagonal: Float[Array, " K"] | None
    lower: Float[Array, " K"]
    upper: Float[Array, " K"]
    active: Bool[Array, " K"]
    friction: bool
    at: Float[Array, " K"] | None = None
    bias: Float[Array, " K"] | None = None


class InverseWeights(eqx.Module):
    """MuJoCo's constant inverse inertias (`invweight0`, computed at the reference
    configuration `qpos0`), which MuJoCo uses as the constraint rows' inverse inertia A
    in R = (1 − d)/d · A (its `diagApprox`). A `MultiBody` without them uses the exact
    J M⁻¹ Jᵀ of the current configuration (MuJoCo's `diagexact`). `load_mjcf` sets
    them from MuJoCo so that its models' constraints are as soft as MuJoCo's.

    **Arguments:**

    - `body_translation`, `body_rotation`: shape `(n,)` per body (1/mass and
      1/(mass·length²)); a contact's rows use the sum of its two bodies'
      translational weights (the world's is 0).
    - `dof`: shape `(nv,)` per degree of freedom: a joint limit's or friction loss's.
    - `tendon`: shape `(n_tendons,)`, the tendons' (empty without tendons).

    **Example:** `InverseWeights(jnp.ones(2), jnp.ones(2), jnp.ones(2))`
    """

    body_translation: Float[Array, " n"] = eqx.field(converter=jnp.asarray)
    body_rotation: Float[Array, " n"] = eqx.field(converter=jnp.asarray)
    dof: Float[Array, " nv"] = eqx.field(converter=jnp.asarray)
    tendon: Float[Array, " nt"] = eqx.field(
        default_factory=lambda: jnp.zeros(0), converter=jnp.asarray
    )

    def __check_init__(self):
        for name in ("body_translation", "body_rotation", "dof", "tendon"):
            x = getattr(self, name)
            if jnp.ndim(x) != 1:
                raise ValueError(
                    f"InverseWeights.{name} must be one-dimensional; got shape {jnp.shape(x)}."
                )
            check_positive(x, f"InverseWeights.{name}", zero_ok=True, shape=jnp.shape(x))

"""Collision geometry and contact materials (`Geom`) and how contacts are resolved
(`ContactModel`): the inputs of the contact pipeline (geometry → pairs and points →
constraint rows → the solve)."""

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float
import numpy as np

from .._core._types import FloatScalar, RealScalarLike
from .._core._validate import (
    as_float_array,
    check_in_range,
    check_int,
    check_positive,
    check_scalar,
    is_concrete,
)
from ._body import _unit_quat
from ._impedance import Impedance
from ._shapes import AbstractShape
from ._types import Friction5Like, QuatLike, RangeLike, ScalarLike, Vec3Like


class Geom(eqx.Module):
    """Collision geometry: a shape fixed to a body (or to the world), with its
    contact material.

    A geom does not add mass (give the body's inertial parameters, or compute them
    from a shape, in [`Body`][sciad.rigid.Body]). Geoms are listed in
    `MultiBody(..., geoms=[...])`; which pairs can touch follows MuJoCo: geoms of one
    body, or of bodies welded together by [`FixedJoint`][sciad.rigid.FixedJoint]s,
    never collide, nor a body with its parent (unless the parent is the world);
    otherwise a pair collides when `(contype₁ & conaffinity₂) | (contype₂ &
    conaffinity₁)` is nonzero, and it is not excluded by `MultiBody(exclude=...)`. A
    [`ContactPair`][sciad.rigid.ContactPair] collides two named geoms regardless, with
    its own parameters.

    **Arguments:**

    - `shape`: a [`Sphere`][sciad.rigid.Sphere], [`Capsule`][sciad.rigid.Capsule],
      [`Box`][sciad.rigid.Box], [`Cylinder`][sciad.rigid.Cylinder] or
      [`Plane`][sciad.rigid.Plane] (its local z axis is the symmetry axis, for
      capsules and cylinders, and the outward normal, for planes).
    - `body`: the name of the body it is fixed to; `None` for the world.
    - `pos`, `quat`: placement in the body frame, shapes `(3,)` (length) and `(4,)`
      (w, x, y, z).
    - `friction`: the sliding (Coulomb) coefficient μ ≥ 0 (a pair uses the larger of
      its two, as MuJoCo does).
    - `torsional_friction` (length, ≥ 0; default MuJoCo's 0.005) and
      `rolling_friction` (length, ≥ 0; default MuJoCo's 0.0001): MuJoCo's second and
      third `friction` coefficients, the torque per normal force that resists
      spinning about the normal (condim 4 and 6) and rolling (condim 6).
    - `condim`: MuJoCo's contact dimensionality: 3 (default: sliding friction), 1
      (frictionless), 4 (sliding and torsional friction) or 6 (sliding, torsional
      and rolling friction). A pair takes the larger of its two, so two condim-1 geoms
      touch without friction and a condim-1 geom against a condim-3 one with the
      larger coefficient.
    - `priority` (integer, default 0): MuJoCo's contact priority: a pair of geoms of
      different priorities takes the higher one's condim, friction coefficients and
      impedance, instead of the maxima and the mix (`mj_contactParam`).
    - `restitution`: Newton's coefficient e in [0, 1] (a pair uses the larger): the
      normal velocity after an impact is −e times the one before, for a hard contact.
    - `contype`, `conaffinity`: MuJoCo's collision bitmasks (integers).
    - `name`: an optional name, used in error messages.
    - `impedance`: this geom's own [`Impedance`][sciad.rigid.Impedance] (MuJoCo's
      `solref` and `solimp`) for its contacts; `None` (default): the model's
      [`ContactModel`][sciad.rigid.ContactModel]'s. A pair mixes its two geoms'
      impedances as MuJoCo mixes `solref` and `solimp` (equal `solmix`): the mean of
      each parameter (the smaller of each `solref` value when either is in the direct
      format), or the higher-priority geom's.
    - `margin` (length, ≥ 0): a pair acts when its distance is below the sum of its
      geoms' margins, as MuJoCo's `margin` (MuJoCo 4 sums a pair's margins): a body
      rests about that far from what it stands on. Only for pairs whose separated
      distance is exact: planes, spheres and capsules with each other, and boxes
      against planes.
    - `gap` (length, ≥ 0): MuJoCo's `gap`: a pair also generates contacts up to the
      sum of its geoms' margins plus the sum of their gaps, but those beyond the
      margins are inactive (`Contacts.gap`; no force, as MuJoCo excludes them from the
      constraints). It changes which contacts are listed, never the dynamics. Only for
      the pairs a margin allows.

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
    impedance: Impedance | None
    margin: FloatScalar
    torsional_friction: FloatScalar
    rolling_friction: FloatScalar
    priority: int = eqx.field(static=True)
    gap: FloatScalar

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
        impedance: Impedance | None = None,
        margin: ScalarLike = 0.0,
        condim: int = 3,
        torsional_friction: ScalarLike = 0.005,
        rolling_friction: ScalarLike = 0.0001,
        priority: int = 0,
        gap: ScalarLike = 0.0,
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
        self.condim = check_int(condim, f"{label} condim", allowed=(1, 3, 4, 6))
        if impedance is not None and not isinstance(impedance, Impedance):
            raise TypeError(
                f"{label} impedance must be a sciad.rigid.Impedance or None; got {impedance!r}."
            )
        self.impedance = impedance
        check_positive(margin, f"{label} margin", zero_ok=True)
        self.margin = jnp.asarray(margin)
        check_positive(torsional_friction, f"{label} torsional_friction", zero_ok=True)
        self.torsional_friction = jnp.asarray(torsional_friction)
        check_positive(rolling_friction, f"{label} rolling_friction", zero_ok=True)
        self.rolling_friction = jnp.asarray(rolling_friction)
        self.priority = check_int(priority, f"{label} priority", minimum=None)
        check_positive(gap, f"{label} gap", zero_ok=True)
        self.gap = jnp.asarray(gap)


class ContactPair(eqx.Module):
    """An explicit contact pair (MuJoCo's `<contact><pair>`): two named geoms that
    collide with this pair's own parameters, whatever their `contype`/`conaffinity`,
    even a body and its parent, and despite `MultiBody(exclude=...)`.

    The two geoms' own materials are not used (no maximum, no mix, no priority): the
    pair's `condim`, `friction`, `impedance`, `margin` and `gap` are its contacts'. If
    the dynamic filter would also collide the two geoms, that dynamic pair is dropped
    (MuJoCo's `mj_collision` skips a dynamic geom pair that an explicit pair names).
    The same two geoms may be paired more than once: each pair makes its own contacts
    with its own parameters, as in MuJoCo. List them in `MultiBody(..., contact_pairs=[...])`.

    **Arguments:**

    - `geom1`, `geom2`: the [`Geom`][sciad.rigid.Geom]s' `name`s (two different geoms,
      not both fixed to the world).
    - `condim`: MuJoCo's contact dimensionality, 1, 3 (default), 4 or 6 (see `Geom`).
    - `friction`: shape `(5,)`, MuJoCo's five coefficients (sliding along the first and
      the second tangent, dimensionless; torsional, and rolling about the two tangents,
      length); default MuJoCo's (1, 1, 0.005, 0.0001, 0.0001). Each ≥ 0.
    - `impedance`: its contacts' [`Impedance`][sciad.rigid.Impedance] (MuJoCo's
      `solref`, `solimp`); `None` (default): the model's `ContactModel`'s.
    - `friction_reference`: shape `(2,)`, MuJoCo's `solreffriction`: the reference of
      the friction rows of an elliptic cone, (τ, ζ) (time, dimensionless; both > 0)
      or the direct (−stiffness, −damping) (both ≤ 0); the friction rows are damped
      with b = 2/(d_max τ) (τ ≥ 2 steps) or b' / d_max, d_max the impedance's. Default
      (0, 0): the normal's reference (`impedance`). A pyramidal cone ignores it, as
      MuJoCo does.
    - `margin` (length, ≥ 0): the pair acts when its distance is below it (MuJoCo's
      pair `margin`, replacing the geoms' sum).
    - `gap` (length, ≥ 0): contacts up to `margin + gap` are generated but inactive
      (see `Geom`).
    - `restitution`: Newton's coefficient in [0, 1] (sciad's; MuJoCo has none),
      default 0.
    - `name`: an optional name, used in error messages.

    Reference: MuJoCo documentation, XML reference, `contact/pair`; `mj_collision` and
    `mj_makeImpedance` (MuJoCo's engine_collision_driver.c, engine_core_constraint.c).

    **Example:**

    ```python
    rigid = sciad.rigid
    finger = rigid.ContactPair("fingertip", "object", condim=4,
                               friction=(1.2, 1.2, 0.01, 1e-4, 1e-4),
                               impedance=rigid.Impedance(time_constant=0.005))
    model = rigid.MultiBody(bodies, geoms=geoms, contact_pairs=[finger])
    ```
    """

    geom1: str = eqx.field(static=True)
    geom2: str = eqx.field(static=True)
    condim: int = eqx.field(static=True)
    friction: Float[Array, "5"]
    impedance: Impedance | None
    friction_reference: Float[Array, "2"]
    margin: FloatScalar
    gap: FloatScalar
    restitution: FloatScalar
    name: str | None = eqx.field(static=True)

    def __init__(
        self,
        geom1: str,
        geom2: str,
        *,
        condim: int = 3,
        friction: Friction5Like = (1.0, 1.0, 0.005, 0.0001, 0.0001),
        impedance: Impedance | None = None,
        friction_reference: RangeLike = (0.0, 0.0),
        margin: ScalarLike = 0.0,
        gap: ScalarLike = 0.0,
        restitution: ScalarLike = 0.0,
        name: str | None = None,
    ):
        for which, g in (("geom1", geom1), ("geom2", geom2)):
            if not isinstance(g, str):
                raise TypeError(f"ContactPair {which} must be a geom name (str); got {g!r}.")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"ContactPair name must be a string or None; got {name!r}.")
        label = f"ContactPair {name or (geom1, geom2)!r}"
        if geom1 == geom2:
            raise ValueError(f"{label}: geom1 and geom2 must be two different geoms.")
        self.geom1, self.geom2, self.name = geom1, geom2, name
        self.condim = check_int(condim, f"{label} condim", allowed=(1, 3, 4, 6))
        self.friction = as_float_array(friction, f"{label} friction", (5,))
        check_positive(self.friction, f"{label} friction", zero_ok=True, shape=(5,))
        if impedance is not None and not isinstance(impedance, Impedance):
            raise TypeError(
                f"{label} impedance must be a sciad.rigid.Impedance or None; got {impedance!r}."
            )
        self.impedance = impedance
        ref = as_float_array(friction_reference, f"{label} friction_reference", (2,))
        if is_concrete(ref):
            tau, zeta = (float(x) for x in np.asarray(ref))
            if (tau > 0) != (zeta > 0):
                raise ValueError(
                    f"{label} friction_reference must be both > 0 (time constant, damping "
                    "ratio) or both <= 0 (-stiffness, -damping; (0, 0): the normal's); got "
                    f"({tau!r}, {zeta!r})."
                )
        self.friction_reference = ref
        for what, x in (("margin", margin), ("gap", gap)):
            check_positive(x, f"{label} {what}", zero_ok=True)
        self.margin, self.gap = jnp.asarray(margin), jnp.asarray(gap)
        check_scalar(restitution, f"{label} restitution")
        check_in_range(restitution, f"{label} restitution", 0.0, 1.0)
        self.restitution = jnp.asarray(restitution)


class ContactModel(eqx.Module):
    """How contacts are resolved: MuJoCo's soft contact model, solved to convergence
    each step and differentiated implicitly.

    Each step of [`SemiImplicitEuler`][sciad.rigid.SemiImplicitEuler] (and each stage
    of [`RKMK4`][sciad.rigid.RKMK4]) finds the new velocity v⁺ as the minimiser of the
    convex function

    ℓ(v) = ½ (v − v_free)ᵀ M (v − v_free) + Σ_c (1/(2R_c)) ‖Π_K(û_c − J_c v)‖² + Σ_l φ_l(û_l − J_l v),

    where v_free is the velocity without constraints, J_c maps v to contact c's
    relative velocity in its frame (normal, two tangents), Π_K projects on the
    friction cone K = {‖γ_t‖ ≤ μ γ_n}, and the impulse is γ_c = Π_K(û_c − J_c v⁺)/R_c ∈ K;
    the scalar rows l (joint and tendon limits, friction losses, and the edges of a
    pyramidal cone) have forces γ_l = clip((û_l − J_l v⁺)/R_l, lower, upper) and
    penalties φ_l, the Moreau envelope of their bounds. This is MuJoCo's convex
    formulation (Todorov 2014) with MuJoCo's `solref`/`solimp` ([`Impedance`][sciad.rigid.Impedance]),
    written for velocities: MuJoCo's reference acceleration a_ref = −b u − k d(r) r is
    the reference velocity û = u + h a_ref of a step h, and its regularisation
    R = (1 − d)/d · A (A the row's inverse inertia) is the same. Only rows within
    their margin act. Newton's method with a backtracking line search converges in a
    few iterations (ℓ is piecewise quadratic and strongly convex). The iterations are
    not differentiated: the solution is differentiated implicitly,
    dv⁺ = −H⁻¹ ∂θ∇ℓ · dθ at the minimiser (∇ℓ = 0 there; H the Hessian of ℓ), by a
    custom JVP rule that is itself differentiable. So reverse mode, forward mode and
    every second-order combination (Hessians, Hessian-vector products, `grad` of
    `grad`) are exact for the converged solve, and a gradient costs one extra
    Hessian factorisation per step, whatever the number of iterations.

    Contacts of condim 4 and 6 add rows for the relative angular velocity (about the
    normal; about the tangents), and every contact's rows are weighted as MuJoCo's
    elliptic cone weights them (R_j = R_n f_s²/(impratio f_j²) for friction
    coefficient f_j; the cone's slope f_s/√impratio), so the cone constrains
    ‖(f_j γ_j)‖ ≤ γ_n (`contact_terms`).

    A geom with restitution e > 0 adds Newton's law: the normal reference is at least
    −e times the approach velocity.

    **Arguments:**

    - `impedance`: the default [`Impedance`][sciad.rigid.Impedance] of every contact
      (a [`Geom`][sciad.rigid.Geom] may set its own) and of every hard limit (a joint
      may set its own); default MuJoCo's (`solref` (0.02, 1), `solimp` (0.9, 0.95,
      0.001, 0.5, 2)). A step h uses the time constant max(τ, 2h)
      ([`effective_time_constant`][sciad.rigid.ContactModel.effective_time_constant]),
      as MuJoCo's `refsafe` does: a shorter τ would launch a body from the ground (a box
      dropped from 0.2 m with τ = h/2 rose to 1.28 m).
    - `cone`: `"elliptic"` (default; MuJoCo's `cone="elliptic"`) or `"pyramidal"`
      (MuJoCo's default: each frictional contact is four rows J_n ± μ J_t, each with a
      non-negative force).
    - `impratio` (> 0, default 1): MuJoCo's ratio of frictional to normal impedance:
      the friction rows' regularisation is the normal's divided by it (elliptic cone:
      R_j = R_n f_s²/(impratio f_j²) for a row of friction coefficient f_j, the cone's
      slope f_s/√impratio in those weighted coordinates; pyramidal: the edges' R is
      2 f_s² R_n/impratio), as MuJoCo's `mj_makeImpedance`.
    - `max_iterations`: Newton iterations before the solve is reported as failed
      (`RESULTS.solver_failed`); default 50.
    - `tolerance`: relative velocity tolerance of the solve, default 1e-10 (raised to
      100 × the machine epsilon in float32): the solve has converged when the full
      Newton step at the current iterate (its error) is below `tolerance` ×
      max(|v_free|, 1); that step is then taken.
    - `noslip_iterations`: MuJoCo's noslip post-solve (default 0: off). After the
      solve, at most this many Gauss–Seidel sweeps over the friction rows (joint and
      tendon friction losses, the pyramid's edge pairs) with the regularisation
      removed, in MuJoCo's order, so that static friction holds without the soft
      solve's creep (MuJoCo's `solNoSlip`; pyramidal cone only). The sweeps are
      differentiated as they run.
    - `noslip_tolerance`: the sweeps of a constraint island (the bodies its active
      rows connect) stop after the first whose improvement (the cost's decrease, in
      MuJoCo's units), divided by the island's summed mass-matrix diagonal, is below
      it; default 1e-6 (MuJoCo's).

    References: Todorov, ICRA 2014, "Convex and analytically-invertible dynamics with
    contacts and constraints"; MuJoCo documentation, Computation; Castro, Permenter &
    Han, IEEE T-RO 39 (2023), "An unconstrained convex formulation of compliant
    contact".

    **Example:** `sciad.rigid.MultiBody(bodies, geoms=geoms, contact=sciad.rigid.ContactModel(cone="pyramidal"))`
    """

    impedance: Impedance = Impedance()
    cone: str = eqx.field(default="elliptic", static=True)
    impratio: float = eqx.field(default=1.0, static=True)
    max_iterations: int = eqx.field(default=50, static=True)
    tolerance: float = eqx.field(default=1e-10, static=True)
    noslip_iterations: int = eqx.field(default=0, static=True)
    noslip_tolerance: float = eqx.field(default=1e-6, static=True)

    def __check_init__(self):
        if not isinstance(self.impedance, Impedance):
            raise TypeError(
                f"ContactModel.impedance must be a sciad.rigid.Impedance; got {self.impedance!r}."
            )
        if self.cone not in ("elliptic", "pyramidal"):
            raise ValueError(
                f"ContactModel.cone must be 'elliptic' or 'pyramidal'; got {self.cone!r}."
            )
        check_positive(self.impratio, "ContactModel.impratio")
        check_int(self.max_iterations, "ContactModel.max_iterations")
        check_int(self.noslip_iterations, "ContactModel.noslip_iterations", minimum=0)
        for name in ("tolerance", "noslip_tolerance"):
            x = getattr(self, name)
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                raise TypeError(f"ContactModel.{name} must be a float; got {x!r}.")
            check_positive(x, f"ContactModel.{name}")
        if self.noslip_iterations and self.cone != "pyramidal":
            raise ValueError(
                "ContactModel(noslip_iterations > 0) needs cone='pyramidal': MuJoCo's noslip "
                "for the elliptic cone (its QCQP on each contact's friction) is not supported."
            )

    def effective_time_constant(self, dt: RealScalarLike) -> FloatScalar:
        """The contact time constant a step of length `dt` uses: max(τ, 2·dt) (MuJoCo's
        `refsafe`; see the class docstring); an impedance in the direct format
        (τ ≤ 0: −stiffness) is used as it is, and returned unchanged.

        **Example:** `ContactModel(Impedance(time_constant=1e-3)).effective_time_constant(1e-3)` is 2e-3.
        """
        tau = self.impedance.time_constant
        return jnp.where(tau > 0, jnp.maximum(tau, 2 * jnp.asarray(dt)), tau)

"""Integrators for multibodies: on the configuration manifold (unit quaternions)."""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp

from .._core._geometry import cross, quat_conjugate, quat_exp, quat_multiply, quat_rotate
from .._core._integrator import AbstractIntegrator, RK4
from .._core._model import AbstractModel
from .._core._results import RESULTS
from .._core._types import BoolScalar, RealScalarLike, State
from ._implicit import check_implicit
from ._joints import FreeJoint
from ._multibody import MultiBody


def _multibody(integrator: AbstractIntegrator, model: AbstractModel) -> MultiBody:
    if not isinstance(model, MultiBody):
        raise TypeError(
            f"{type(integrator).__name__} integrates a sciad.rigid.MultiBody; got "
            f"{type(model).__name__}."
        )
    return model


def _no_contacts(integrator: AbstractIntegrator, model: AbstractModel) -> MultiBody:
    mb = _multibody(integrator, model)
    if mb.constrained:
        raise ValueError(
            f"{type(integrator).__name__} cannot run a MultiBody with "
            f"{mb.constraint_names()} (they need time stepping): use "
            "sciad.rigid.SemiImplicitEuler()."
        )
    return mb


def _next_activation(mb: MultiBody, t: RealScalarLike, dt: RealScalarLike, y: State) -> tuple:
    """`()` for y = (q, v); `(act⁺,)` for y = (q, v, act): the activations after the
    step from the rates at the start (MuJoCo's `mj_advance` after Euler)."""
    if len(y) == 2:
        return ()
    q, v, act = y
    return (mb.next_activation(act, mb.activation_rate(t, q, v, act), dt),)


class ConstraintSolveState(eqx.Module):
    """The state of [`SemiImplicitEuler`][sciad.rigid.SemiImplicitEuler] and
    [`RKMK4`][sciad.rigid.RKMK4].

    **Fields:** `solve_failed`: with contacts or hard limits, whether a constraint solve
    has failed to converge (sticky); `None` for a `MultiBody` without constraints.

    **Example:** `traj.integrator_state.solve_failed`
    """

    solve_failed: BoolScalar | None


def _init_state(integrator: AbstractIntegrator, model: AbstractModel) -> ConstraintSolveState:
    return ConstraintSolveState(
        jnp.asarray(False) if _multibody(integrator, model).constrained else None
    )


def _solve_status(state: ConstraintSolveState) -> RESULTS:
    """`solver_failed` once a constraint solve failed."""
    if state.solve_failed is None:
        return RESULTS.successful
    return RESULTS.where(state.solve_failed, RESULTS.solver_failed, RESULTS.successful)


def _failed(state: ConstraintSolveState, ok: BoolScalar) -> ConstraintSolveState:
    """`state` after a solve that converged if `ok`."""
    failed = state.solve_failed
    return ConstraintSolveState(None if failed is None else failed | ~ok)


class SemiImplicitEuler(AbstractIntegrator):
    """Semi-implicit (symplectic) Euler on the configuration manifold, with contacts.
    Order 1.

    v ← v + h v̇(t, q, v), then q ← q ⊕ h v (quaternions: q ⊗ exp(h ω), normalised).
    With contacts or hard joint limits the velocity update is the converged solve of
    the model's [`ContactModel`][sciad.rigid.ContactModel] (impulses that keep the
    contacts from penetrating, with Coulomb friction and restitution, and the joints
    within their limits), differentiated implicitly; a solve that does not converge
    is reported as `RESULTS.solver_failed`.

    `implicit` names the velocity derivatives D of the forces that the velocity
    update takes implicitly, (M − h D) v̇ = τ − b (with constraints: the constraint
    forces from the solve with M, then this matrix), as MuJoCo's integrators do:

    - `"damping"` (default): the joint damping, MuJoCo's `Euler` (exactly).
    - `"fast"`: MuJoCo's `implicitfast` (exactly): also the actuators' velocity gains
      (a position servo's kv, except where its force is at its `force_range`), the
      tendons' damping and the symmetric part of the fluid forces' derivative; a free
      body alone in its tree takes its gyroscopic and fluid derivatives whole. Stable
      with the stiff velocity gains of robot models, which explicit Euler is not.
    - `"full"`: MuJoCo's `implicit` (exactly): all of these and the Coriolis and
      gyroscopic forces' derivative, by an LU solve.
    - `"none"`: explicit.

    As in MuJoCo, D keeps only the couplings of dofs on one branch of the tree (see
    docs/rigid.md, "Integrators"). One dynamics evaluation per step; `"full"` and
    fluids add one forward-mode Jacobian. With `"none"` or `"damping"` it does not
    conserve energy for spinning bodies: the gyroscopic term is explicit (a
    torque-free diag(1, 2, 3) body gains energy; see docs/rigid.md).
    Reference: Hairer, Lubich & Wanner, *Geometric Numerical Integration* (2006),
    §VI.3; MuJoCo documentation, "Numerical integration".

    **Arguments:** `implicit`: `"damping"` (default), `"fast"`, `"full"` or `"none"`.

    **Example:** `sciad.simulate(model, y0, dt=1e-3, n_steps=1000, integrator=sciad.rigid.SemiImplicitEuler(implicit="fast"))`
    """

    implicit: str = eqx.field(default="damping", static=True)
    requires_separable: ClassVar[bool] = False

    def __check_init__(self):
        check_implicit(self.implicit, "SemiImplicitEuler")

    def order(self) -> int:
        """1."""
        return 1

    def check_every_step(self, model: AbstractModel) -> bool:
        """With contacts or hard limits: a step is a Newton solve, so a finiteness
        reduction after each costs little and saves compiling the step a second time
        for the replay that would find the first bad step."""
        return _multibody(self, model).constrained

    def init(self, model: AbstractModel, t0: RealScalarLike, y0: State) -> ConstraintSolveState:
        """A [`ConstraintSolveState`][sciad.rigid.ConstraintSolveState]: with contacts or
        hard limits, a flag (has a solve failed); without, `None`."""
        return _init_state(self, model)

    def step(
        self,
        model: AbstractModel,
        t: RealScalarLike,
        dt: RealScalarLike,
        y: State,
        state: ConstraintSolveState,
    ) -> tuple[State, ConstraintSolveState]:
        """One step: kick the velocities (through the contact and limit solve, if
        any), then move the positions with the new ones."""
        mb = _multibody(self, model)
        q, v, *rest = y
        act = rest[0] if rest else None
        tail = _next_activation(mb, t, dt, y)
        if not mb.constrained:
            acc = mb.accelerations(t, q, v, dt, implicit=self.implicit, act=act, act_dt=dt)
            v = v + dt * acc
            return (mb.integrate_positions(q, dt * v), v, *tail), state
        v, ok = mb.constrained_velocity(t, dt, q, v, implicit=self.implicit, act=act)
        return (mb.integrate_positions(q, jnp.asarray(dt) * v), v, *tail), _failed(state, ok)

    def status(self, state: ConstraintSolveState) -> RESULTS:
        """`solver_failed` if a contact solve did not converge."""
        return _solve_status(state)


class RKMK4(AbstractIntegrator):
    """The classic 4th-order Runge–Kutta method on the configuration manifold
    (Runge–Kutta–Munthe-Kaas). Order 4, also for rotations.

    Stage positions are q ⊕ ξᵢ with tangent increments ξᵢ = h Σⱼ aᵢⱼ kⱼ, and the
    position slopes are kⱼ = dexp⁻¹_{ξⱼ}(vⱼ) (`MultiBody.tangent_correction`, the
    identity for hinges and sliders), so quaternions stay on the unit sphere by
    construction (they are renormalised only against round-off) and the method keeps
    its 4th order for ball and free joints. For trees of hinges and sliders it is the
    classic RK4. MuJoCo's RK4 combines the stage velocities without the dexp⁻¹
    correction; for a fast-spinning free body the two agree to ~1e-14 over 1,000 steps
    of 1 ms (tests/rigid/test_mujoco.py), the correction entering at higher order.
    Reference: Munthe-Kaas, BIT 38, 92 (1998); Iserles, Munthe-Kaas, Nørsett & Zanna,
    Acta Numerica 9, 215 (2000), §4.

    **With contacts or hard limits**, as MuJoCo's RK4 (which solves its constraints at
    every stage), each stage's acceleration is the constrained one over the step,
    (v⁺ − vᵢ)/h with v⁺ = `MultiBody.constrained_velocity` at the stage's state
    (explicit damping): where no constraint acts this is exactly the free acceleration,
    so the method is RKMK4 there, to round-off, and only the steps in contact pay for
    the solves (four per step, each differentiated implicitly); a solve that does not
    converge is reported as `RESULTS.solver_failed`. The constrained steps are first
    order, like every time-stepping scheme (the impulses are not smooth in time).

    **Example:** `sciad.simulate(model, y0, dt=1e-3, n_steps=1000, integrator=sciad.rigid.RKMK4())`
    """

    requires_separable: ClassVar[bool] = False

    def order(self) -> int:
        """4 (first order where constraints act)."""
        return 4

    def check_every_step(self, model: AbstractModel) -> bool:
        """With constraints, as `SemiImplicitEuler`: a step is four Newton solves."""
        return _multibody(self, model).constrained

    def init(self, model: AbstractModel, t0: RealScalarLike, y0: State) -> ConstraintSolveState:
        """A [`ConstraintSolveState`][sciad.rigid.ConstraintSolveState], as
        `SemiImplicitEuler`'s."""
        return _init_state(self, model)

    def status(self, state: ConstraintSolveState) -> RESULTS:
        """`solver_failed` if a constraint solve did not converge."""
        return _solve_status(state)

    def step(
        self,
        model: AbstractModel,
        t: RealScalarLike,
        dt: RealScalarLike,
        y: State,
        state: ConstraintSolveState,
    ) -> tuple[State, ConstraintSolveState]:
        """One RKMK4 step. The four stages run as one `lax.scan` over the tableau, so
        the dynamics is traced (and compiled) once, not four times."""
        mb = _multibody(self, model)
        q, v, *rest = y
        act = bool(rest)  # activation states (MuJoCo's act)
        act0 = rest[0] if rest else jnp.zeros(0, v.dtype)
        dt = jnp.asarray(dt)
        dtype = v.dtype
        # The classic RK4 tableau: stage i's increment factor is cᵢ (= aᵢ,ᵢ₋₁).
        a = jnp.asarray(RK4.tableau_c, dtype)
        b = jnp.asarray(RK4.tableau_b, dtype)

        def acceleration(ti, qi, vi, acti):
            acti = acti if act else None
            if not mb.constrained:
                return mb.accelerations(ti, qi, vi, act=acti, act_dt=dt), jnp.asarray(True)
            v_plus, ok = mb.constrained_velocity(ti, dt, qi, vi, implicit="none", act=acti)
            return (v_plus - vi) / dt, ok

        def stage(carry, ab):
            kq, kv, ka, sum_q, sum_v, sum_a, ok = carry
            ai, bi = ab
            xi, vi, acti = (ai * dt) * kq, v + (ai * dt) * kv, act0 + (ai * dt) * ka
            kq = mb.tangent_correction(xi, vi)
            qi = mb.integrate_positions(q, xi)
            kv, ok_i = acceleration(t + ai * dt, qi, vi, acti)
            ka = mb.activation_rate(t + ai * dt, qi, vi, acti) if act else ka
            carry = (kq, kv, ka, sum_q + bi * kq, sum_v + bi * kv, sum_a + bi * ka, ok & ok_i)
            return carry, None

        zero, zero_a = jnp.zeros_like(v), jnp.zeros_like(act0)
        init = (zero, zero, zero_a, zero, zero, zero_a, jnp.asarray(True))
        (_, _, _, sum_q, sum_v, sum_a, ok), _ = jax.lax.scan(stage, init, (a, b))
        y1 = (mb.integrate_positions(q, dt * sum_q), v + dt * sum_v)
        if act:  # MuJoCo's mj_advance with the weighted rates: Euler or exact, clamped
            y1 = y1 + (mb.next_activation(act0, sum_a, dt),)
        return y1, _failed(state, ok)


# The symmetric composition of the three exactly solvable rotations about the
# principal axes: R₁(h/2) R₂(h/2) R₃(h) R₂(h/2) R₁(h/2).
_ROTATIONS = ((0, 0.5), (1, 0.5), (2, 1.0), (1, 0.5), (0, 0.5))


class FreeBodySplitting(AbstractIntegrator):
    """A geometric integrator for free rigid bodies: Strang splitting of forces and
    free motion, with the free rotation split into exact rotations about the
    principal axes. Order 2.

    One step is a half kick by the forces (gravity, wrenches, actuators, damping) on
    the momenta, the free flight — the centre of mass moves in a straight line, and
    the rotation T = Σₖ Lₖ²/(2Iₖ) is composed symmetrically from its three pieces,
    each an exact rotation of the body about principal axis k by the angle h Lₖ/Iₖ —
    and a second half kick. Every piece is the exact flow of a Hamiltonian, so the
    method is symplectic and time-reversible; each preserves the world-frame angular
    momentum, so without torques L (and |L|) is conserved to round-off, and the energy
    error stays bounded (no drift). The gyroscopic dynamics is kept, so the
    Dzhanibekov flip of a body spinning about its intermediate axis is reproduced.
    References: McLachlan, Phys. Rev. Lett. 71, 3043 (1993); Touma & Wisdom, Astron.
    J. 107, 1189 (1994); Dullweber, Leimkuhler & McLachlan, J. Chem. Phys. 107, 5840
    (1997); Fassò, J. Comput. Phys. 189, 527 (2003).

    The model must be a `MultiBody` whose every body has a `FreeJoint` (any number of
    independent free bodies). Forces that depend on velocity (damping, velocity
    servos) are evaluated explicitly at the kicks.

    **Example:**

    ```python
    top = sciad.rigid.MultiBody([sciad.rigid.Body("top", joint=sciad.rigid.FreeJoint(), mass=1.0,
                                                  inertia=jnp.array([1.0, 2.0, 3.0]))],
                                gravity=jnp.zeros(3))
    q0, _ = top.default_state()
    traj = sciad.simulate(top, (q0, jnp.array([0.0, 0, 0, 0.01, 5.0, 0.01])), dt=1e-3,
                          n_steps=10_000, integrator=sciad.rigid.FreeBodySplitting())
    ```
    """

    requires_separable: ClassVar[bool] = False

    def order(self) -> int:
        """2."""
        return 2

    def check(self, model: AbstractModel) -> None:
        """A `MultiBody` of free bodies without contacts."""
        self.init(model, 0.0, None)

    def init(self, model: AbstractModel, t0: RealScalarLike, y0: State) -> None:
        """No state (checks that every body of `model` is free)."""
        mb = _no_contacts(self, model)
        if mb.na:
            raise ValueError(
                "FreeBodySplitting cannot run actuators with activation states; use "
                "RKMK4 or SemiImplicitEuler."
            )
        if not all(isinstance(j, FreeJoint) for j in mb.joints):
            others = sorted({type(j).__name__ for j in mb.joints if not isinstance(j, FreeJoint)})
            raise ValueError(
                "FreeBodySplitting integrates free bodies only (every joint a FreeJoint); "
                f"this MultiBody also has {', '.join(others)}. Use RKMK4 or SemiImplicitEuler."
            )
        return None

    def step(
        self, model: AbstractModel, t: RealScalarLike, dt: RealScalarLike, y: State, state: None
    ) -> tuple[State, None]:
        """Half kick, free flight (translation + five axis rotations), half kick."""
        mb = _no_contacts(self, model)
        q, v = y
        dt = jnp.asarray(dt)
        n = len(mb.names)
        c, iq, inertia, m = mb.com, mb.inertia_quat, mb.inertia, mb.mass[:, None]

        def to_momenta(q, v):
            x, w = q.reshape(n, 7), v.reshape(n, 6)
            quat, omega = x[:, 3:], w[:, 3:]
            xcom = x[:, :3] + quat_rotate(quat, c)
            p = m * (w[:, :3] + quat_rotate(quat, cross(omega, c)))
            lp = inertia * quat_rotate(quat_conjugate(iq), omega)
            return xcom, quat_multiply(quat, iq), p, lp

        def from_momenta(xcom, qp, p, lp):
            quat = quat_multiply(qp, quat_conjugate(iq))
            omega = quat_rotate(iq, lp / inertia)
            pos = xcom - quat_rotate(quat, c)
            vlin = p / m - quat_rotate(quat, cross(omega, c))
            q = jnp.concatenate([pos, quat], axis=1).reshape(-1)
            return q, jnp.concatenate([vlin, omega], axis=1).reshape(-1)

        def kick(tk, q, v, h):
            xcom, qp, p, lp = to_momenta(q, v)
            terms = mb._terms(tk, q, v, inertial=False)
            tau = (terms.applied + terms.gravity).reshape(n, 6)
            force = tau[:, :3]
            quat = q.reshape(n, 7)[:, 3:]
            torque = tau[:, 3:] - cross(c, quat_rotate(quat_conjugate(quat), force))
            p = p + h * force
            lp = lp + h * quat_rotate(quat_conjugate(iq), torque)
            return xcom, qp, p, lp

        xcom, qp, p, lp = kick(t, q, v, 0.5 * dt)
        xcom = xcom + dt * p / m
        for axis, weight in _ROTATIONS:
            e = jnp.zeros(3, dtype=lp.dtype).at[axis].set(1.0)
            angle = (weight * dt) * lp[:, axis : axis + 1] / inertia[:, axis : axis + 1]
            qp = quat_multiply(qp, quat_exp(angle * e[None, :]))
            lp = quat_rotate(quat_exp(-angle * e[None, :]), lp)
        q, v = from_momenta(xcom, qp, p, lp)
        q, v = from_momenta(*kick(t + dt, q, v, 0.5 * dt))
        return (mb.normalize(q), v), None

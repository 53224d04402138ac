"""Fixed-step integrators, written as coefficient data read by generic steppers."""

import abc
import dataclasses
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._model import _shape_key, AbstractModel, AbstractSeparableModel
from ._results import RESULTS
from ._types import Anything, RealScalarLike, State
from ._validate import is_concrete


def _axpy(y: State, a: Anything, x: State) -> State:
    """y + a * x on PyTrees."""
    return jax.tree.map(lambda yi, xi: yi + a * xi, y, x)


class AbstractIntegrator(eqx.Module):
    """A fixed-step integrator: `init` builds its state, `step` advances one step.

    The integrator state carries what one step hands to the next (a cached force,
    a random key); it is part of a run's `Trajectory`, so that a run can be resumed
    bit for bit.

    **Example:**

    ```python
    integ = sciad.Yoshida4()
    state = integ.init(model, 0.0, y0)
    y1, state = integ.step(model, 0.0, 0.01, y0, state)
    ```
    """

    #: Whether the integrator needs a `sciad.AbstractSeparableModel`.
    requires_separable: ClassVar[bool]
    #: Whether the state caches values computed from (model, t, y) that `refresh`
    #: recomputes (a force): a resumed state is then compared with a fresh one.
    caches: ClassVar[bool] = False

    @abc.abstractmethod
    def order(self) -> int:
        """The global order of accuracy p: the error after a fixed time is O(dt^p)."""

    @abc.abstractmethod
    def init(self, model: AbstractModel, t0: RealScalarLike, y0: State) -> Anything:
        """The integrator state at time `t0` and state `y0`."""

    @abc.abstractmethod
    def step(
        self,
        model: AbstractModel,
        t: RealScalarLike,
        dt: RealScalarLike,
        y: State,
        state: Anything,
    ) -> tuple[State, Anything]:
        """Advance `y` from `t` to `t + dt`; returns the new state and integrator state."""

    def refresh(
        self, model: AbstractModel, t: RealScalarLike, y: State, state: Anything
    ) -> Anything:
        """The state with what it caches from the model recomputed (after the model
        changed, e.g. a new neighbour list), keeping the rest (a random key, say).
        Default: a fresh `init`."""
        return self.init(model, t, y)

    def check(self, model: AbstractModel) -> None:
        """Raise a precise error, before tracing, if this integrator cannot run `model`
        (beyond `requires_separable`). Default: nothing to check."""

    def check_resume(
        self, model: AbstractModel, t0: RealScalarLike, y0: State, state: Anything
    ) -> Anything:
        """Check that `state`, passed to `simulate(..., integrator_state=state)`, belongs
        to `(model, t0, y0)`; returns `state` (with a run-time check attached when it is
        traced).

        The default checks that `state` has the structure, shapes and dtypes of
        `init(model, t0, y0)` (`ValueError` otherwise). Integrators whose state caches
        something computed from `(model, t, y)` also compare the cache with a fresh one
        ([`check_cache`][sciad.AbstractIntegrator.check_cache]), as the splitting
        integrators do for their force: a state from another point, or from a model with
        other parameters, would silently step with a stale force.

        **Arguments:** `model`, `t0`, `y0`: the run about to start; `state`: the state.

        **Returns:** `state`.
        """
        check_state_structure(self, model, t0, y0, state)
        return self.check_cache(model, t0, y0, state) if self.caches else state

    def check_cache(
        self, model: AbstractModel, t0: RealScalarLike, y0: State, state: Anything
    ) -> Anything:
        """`state` after comparing its float leaves with those of
        `refresh(model, t0, y0, state)` to within round-off (√ε relative to the largest
        entry, and at least √ε in the model's units): a `ValueError` when everything is concrete, an `eqx.error_if` when traced.
        For integrators whose `refresh` recomputes the cache and keeps the rest.

        **Arguments:** as [`check_resume`][sciad.AbstractIntegrator.check_resume].

        **Returns:** `state`.
        """
        fresh = _refreshed(self, model, t0, y0, state)
        pairs = [
            (a, b)
            for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(fresh), strict=True)
            if eqx.is_inexact_array(a)
        ]
        if not pairs:
            return state
        diff = jnp.max(jnp.stack([jnp.max(jnp.abs(a - b)) for a, b in pairs]))
        size = jnp.max(jnp.stack([jnp.max(jnp.maximum(jnp.abs(a), jnp.abs(b))) for a, b in pairs]))
        tol = float(np.sqrt(jnp.finfo(pairs[0][0].dtype).eps))
        # Relative to the larger entry, with an absolute floor of √ε (model units): a
        # cache at round-off level (the forces of a perfect lattice) is not stale.
        stale = ~(diff <= tol * jnp.maximum(size, 1.0))
        name = type(self).__name__
        if not is_concrete(stale):
            floats, rest = eqx.partition(state, eqx.is_inexact_array)
            floats = eqx.error_if(
                floats,
                stale,
                f"integrator_state does not belong to this model, t0 and y0 (its cache "
                f"differs from {name}.refresh(model, t0, y0, state)); resume from the state "
                "of the run that ended there, or pass integrator.refresh(model, t0, y0, state).",
            )
            return eqx.combine(floats, rest)
        if bool(stale):
            raise ValueError(
                f"integrator_state does not belong to this model, t0 and y0: its cached "
                f"values differ from {name}.refresh(model, t0, y0, state) by "
                f"{float(diff):.3g} (largest entry {float(size):.3g}), beyond round-off. "
                "Resuming with it would step with a stale cache (a force from another "
                "point or other parameters). Pass the integrator_state of the run that "
                "ended at (t0, y0), or integrator.refresh(model, t0, y0, state) to "
                "recompute it (e.g. after changing parameters)."
            )
        return state

    def check_every_step(self, model: AbstractModel) -> bool:
        """Whether `simulate` checks the state for non-finite values after every step.
        Default `False`: once per block of about 32 steps, replaying the block on
        failure to find the first bad step, because the reduction costs as much as a
        cheap step. Integrators whose step costs far more than that reduction (a
        contact solve) return `True`: the first bad step is then known without a
        replay, so the compiled program holds one copy of the step, not two.
        """
        return False

    def model_at(self, model: AbstractModel, state: Anything) -> AbstractModel:
        """The model as the integrator currently sees it; default: `model` unchanged.

        Integrators that carry part of the model in their state (a neighbour list, a
        barostat's box) return the model with it filled in. `SaveAt.fn` receives this
        model, so saved observables use the current neighbour list and box.
        """
        return model

    def drift_fractions(self) -> tuple[float, ...]:
        """The position drifts of one step, as fractions aᵢ of dt, in order.

        A neighbour list bounds how far positions travel within a step from them
        (Σ|aᵢ|·dt·|v|, with slack Σ|aᵢ| − |Σaᵢ| off the straight path). Default `(1.0,)`:
        one drift over the whole step (Verlet, BAOAB, a Runge–Kutta step); the
        splitting integrators return their `drifts`, wrappers their inner integrator's.
        """
        return (1.0,)

    def status(self, state: Anything) -> RESULTS:
        """A result code read from the final integrator state; `successful` by default.

        Integrators that carry failure flags (a neighbour-list overflow, say) report
        them here; `simulate` folds the code into `Trajectory.result` (after the
        non-finite check) and raises it with `throw=True`.
        """
        return RESULTS.successful

    def conserves_momentum(self) -> bool:
        """Whether a step conserves the total momentum Σp of a model whose forces sum
        to zero (a translation-invariant potential). It fixes the degrees of freedom a
        kinetic temperature counts (`sciad.md.MDSystem.temperature`).

        Default: `True` if every integrator this one is composed of (its fields) says
        so: every Runge–Kutta and splitting method conserves linear invariants, and a
        wrapper (a neighbour list, a barostat, a Nosé–Hoover chain) keeps its inner
        integrator's answer. Stochastic thermostats, which kick each particle
        independently (Langevin, Brownian), return `False`.
        """
        fields = [getattr(self, f.name) for f in dataclasses.fields(self)]
        return all(
            x.conserves_momentum()
            for x in jax.tree.leaves(fields, is_leaf=_is_integrator)
            if isinstance(x, AbstractIntegrator)
        )


def _is_integrator(x: Anything) -> bool:
    return isinstance(x, AbstractIntegrator)


@eqx.filter_jit
def _refreshed(
    integrator: Anything, model: Anything, t: Anything, y: Anything, state: Anything
) -> Anything:
    return integrator.refresh(model, t, y, state)


# The expected state structure per (integrator, model, y0, t0) structure: `eval_shape` of
# `init` traces the model, as costly as a small run.
_STRUCTURES: dict = {}


def check_state_structure(
    integrator: AbstractIntegrator, model: AbstractModel, t0: Anything, y0: State, state: Anything
) -> None:
    """`ValueError` unless `state` has the structure, shapes and dtypes of
    `integrator.init(model, t0, y0)`."""
    key = _shape_key((integrator, model, t0, y0))
    want = None if key is None else _STRUCTURES.get(key)
    if want is None:
        want = jax.eval_shape(integrator.init, model, t0, y0)
        if key is not None:
            if len(_STRUCTURES) > 1024:
                _STRUCTURES.clear()
            _STRUCTURES[key] = want
    name = type(integrator).__name__
    got_def, want_def = jax.tree.structure(state), jax.tree.structure(want)
    if got_def != want_def:
        raise ValueError(
            f"integrator_state has structure {got_def}, but {name}.init(model, t0, y0) "
            f"has structure {want_def}: it is the state of another integrator or model."
        )
    for (path, a), b in zip(
        jax.tree_util.tree_flatten_with_path(state)[0], jax.tree.leaves(want), strict=True
    ):
        if jnp.shape(a) != b.shape or jnp.result_type(a) != b.dtype:
            raise ValueError(
                f"integrator_state{jax.tree_util.keystr(path)} has shape {jnp.shape(a)} and "
                f"dtype {jnp.result_type(a)}, but {name}.init(model, t0, y0) gives shape "
                f"{b.shape} and dtype {b.dtype}: it is the state of another integrator, "
                "model or state size."
            )


class AbstractWrappedState(eqx.Module):
    """The state of a [`sciad.AbstractWrappedIntegrator`][sciad.AbstractWrappedIntegrator]:
    concrete states add their own fields to `inner`, the wrapped integrator's state.

    **Fields:** `inner`: the state of the wrapped integrator.

    **Example:** `traj.integrator_state.inner.force` (velocity Verlet's cached force,
    under a `sciad.md.NoseHooverChain`).
    """

    inner: eqx.AbstractVar[Anything]


class AbstractWrappedIntegrator(AbstractIntegrator):
    """An integrator that wraps another, `integrator`, and keeps its state in
    `state.inner` (an [`AbstractWrappedState`][sciad.AbstractWrappedState]).

    The delegation is written here once: the order is the inner integrator's, capped
    by `wrapper_order` (the wrapper's own splitting); `check`, `refresh`, `model_at`,
    `drift_fractions` and `status` pass through to the inner integrator, which sees the
    model as [`inner_model`][sciad.AbstractWrappedIntegrator.inner_model] gives it (a
    neighbour list, a box filled in). A concrete wrapper writes `init`, `step`,
    `inner_model` and, if it has failure flags, `wrapper_status`. Examples:
    `sciad.md.NoseHooverChain`, `sciad.md.CellRescaling`,
    `sciad.md.NeighborListIntegrator` (as diffrax's `AbstractWrappedSolver`).

    **Example:**

    ```python
    integ = sciad.md.NeighborListIntegrator(sciad.Yoshida4(), builder)
    integ.order()  # 4, the inner integrator's
    ```
    """

    integrator: eqx.AbstractVar[AbstractIntegrator]
    #: The order of the wrapper's own splitting (`None`: it does not limit the order).
    wrapper_order: ClassVar[int | None] = None

    def order(self) -> int:
        """The inner integrator's order, capped by `wrapper_order`."""
        inner = self.integrator.order()
        return inner if self.wrapper_order is None else min(self.wrapper_order, inner)

    def inner_model(self, model: AbstractModel, state: Anything) -> AbstractModel:
        """The model as the inner integrator sees it, given this wrapper's `state`
        (default: `model` unchanged).

        **Arguments:** `model`: the model of the run; `state`: this integrator's state.

        **Returns:** a model.
        """
        return model

    def check(self, model: AbstractModel) -> None:
        """The inner integrator's checks."""
        self.integrator.check(model)

    def refresh(
        self, model: AbstractModel, t: RealScalarLike, y: State, state: Anything
    ) -> Anything:
        """The inner integrator's cache refreshed (in its view of the model); the
        wrapper's own fields kept."""
        inner = self.integrator.refresh(self.inner_model(model, state), t, y, state.inner)
        return dataclasses.replace(state, inner=inner)

    def model_at(self, model: AbstractModel, state: Anything) -> AbstractModel:
        """The inner integrator's view of the model the wrapper shows it."""
        return self.integrator.model_at(self.inner_model(model, state), state.inner)

    def drift_fractions(self) -> tuple[float, ...]:
        """The inner integrator's drifts."""
        return self.integrator.drift_fractions()

    def wrapper_status(self, state: Anything) -> RESULTS:
        """The wrapper's own result code from its state; `successful` by default."""
        return RESULTS.successful

    def status(self, state: Anything) -> RESULTS:
        """The inner integrator's failure if any, else the wrapper's own
        ([`wrapper_status`][sciad.AbstractWrappedIntegrator.wrapper_status])."""
        inner = self.integrator.status(state.inner)
        return RESULTS.where(inner == RESULTS.successful, self.wrapper_status(state), inner)


class SplittingState(eqx.Module):
    """The state of a [`sciad.AbstractSplittingIntegrator`][sciad.AbstractSplittingIntegrator]:
    the force at the current point, cached because the force at the end of a step is
    the force at the start of the next.

    **Fields:** `force`: F(t, q), the shape of q (force units).

    **Example:** `sciad.simulate(model, y0, dt=0.01, n_steps=10).integrator_state.force`
    """

    force: State


class AbstractSplittingIntegrator(AbstractIntegrator):
    """A symmetric kick–drift splitting for separable systems, given as coefficients.

    One step with coefficients `kicks = (b_0, ..., b_s)` and `drifts = (a_1, ..., a_s)`:

        p += b_0 dt F(q);  then for i = 1..s:  q += a_i dt v(p);  p += b_i dt F(q).

    The force at the end of a step is the force at the start of the next, so it is
    cached in the integrator state: s force evaluations per step.
    Concrete integrators only fill in the three class variables.

    **Example** (a new composition is three lines of data):

    ```python
    class McLachlan2(sciad.AbstractSplittingIntegrator):
        # McLachlan's optimal 2-stage method, b = 0.1932
        kicks = (0.1932, 1 - 2 * 0.1932, 0.1932)
        drifts = (0.5, 0.5)
        method_order = 2
    ```
    """

    requires_separable: ClassVar[bool] = True
    caches: ClassVar[bool] = True  # the force F(t, q)
    kicks: ClassVar[tuple[float, ...]]
    drifts: ClassVar[tuple[float, ...]]
    method_order: ClassVar[int]

    def order(self) -> int:
        """The global order of accuracy."""
        return self.method_order

    def drift_fractions(self) -> tuple[float, ...]:
        """The drift coefficients `drifts`."""
        return self.drifts

    def init(self, model: AbstractModel, t0: RealScalarLike, y0: State) -> SplittingState:
        """The cached force F(t0, q0)."""
        assert isinstance(model, AbstractSeparableModel)
        return SplittingState(model.force(t0, y0[0]))

    def step(
        self,
        model: AbstractModel,
        t: RealScalarLike,
        dt: RealScalarLike,
        y: State,
        state: SplittingState,
    ) -> tuple[State, SplittingState]:
        """One composed kick–drift step (see the class docstring)."""
        assert isinstance(model, AbstractSeparableModel)
        q, p = y
        force = state.force
        p = _axpy(p, self.kicks[0] * dt, force)
        tau = t
        for a, b in zip(self.drifts, self.kicks[1:], strict=True):
            q = _axpy(q, a * dt, model.velocity(tau, p))
            tau = tau + a * dt
            force = model.force(tau, q)
            if b != 0:
                p = _axpy(p, b * dt, force)
        return (q, p), SplittingState(force)


_CBRT2 = 2.0 ** (1.0 / 3.0)
_W3 = 1.0 / (2.0 - _CBRT2)  # the triple jump (Forest & Ruth 1990; Yoshida 1990)
_W5 = 1.0 / (4.0 - 4.0 ** (1.0 / 3.0))  # Suzuki's fractal five-stage composition
_Y6 = (0.784513610477560, 0.235573213359357, -1.17767998417887)  # Yoshida (1990), 6A

#: Symmetric composition weights, by number of stages: a method of order 2 applied with
#: steps wᵢ·dt in turn is of order 2 (1 stage), 4 (3 and 5 stages) or 6 (7 stages).
#: The one definition of these numbers: `Yoshida4` and `Yoshida6` compose Verlet
#: with them, `sciad.md.NoseHooverChain` its chain propagator. References: Yoshida,
#: Phys. Lett. A 150, 262 (1990), Table 1 (solution A for 7 stages); Suzuki, Phys.
#: Lett. A 146, 319 (1990) (5 stages); Martyna et al., Mol. Phys. 87, 1117 (1996).
COMPOSITION_WEIGHTS: dict[int, tuple[float, ...]] = {
    1: (1.0,),
    3: (_W3, -_CBRT2 / (2.0 - _CBRT2), _W3),
    5: (_W5, _W5, 1.0 - 4.0 * _W5, _W5, _W5),
    7: _Y6 + (1.0 - 2.0 * sum(_Y6),) + _Y6[::-1],
}


def _compose_verlet(weights: tuple[float, ...]) -> tuple[tuple, tuple]:
    """Kicks and drifts of Verlet substeps of sizes `weights * dt`, merged at the seams."""
    kicks = [weights[0] / 2]
    for w0, w1 in zip(weights[:-1], weights[1:], strict=True):
        kicks.append((w0 + w1) / 2)
    kicks.append(weights[-1] / 2)
    return tuple(kicks), tuple(weights)


class SymplecticEuler(AbstractSplittingIntegrator):
    """Symplectic (semi-implicit) Euler: p ← p + dt F(q), then q ← q + dt v(p). Order 1.

    One force evaluation per step. Reference: Hairer, Lubich & Wanner,
    *Geometric Numerical Integration* (2006), §I.1.2.

    **Example:** `sciad.simulate(model, (q0, p0), dt=1e-3, n_steps=10, integrator=sciad.SymplecticEuler())`
    """

    kicks: ClassVar[tuple[float, ...]] = (1.0, 0.0)
    drifts: ClassVar[tuple[float, ...]] = (1.0,)
    method_order: ClassVar[int] = 1


class VelocityVerlet(AbstractSplittingIntegrator):
    """Velocity Verlet / leapfrog (Störmer–Verlet, kick–drift–kick). Order 2.

    Symplectic and time reversible; one force evaluation per step. Reference:
    Verlet, Phys. Rev. 159, 98 (1967); Hairer, Lubich & Wanner, Acta Numerica 12 (2003).

    **Example:** `sciad.simulate(model, (q0, p0), dt=1e-2, n_steps=10, integrator=sciad.VelocityVerlet())`
    """

    kicks: ClassVar[tuple[float, ...]] = (0.5, 0.5)
    drifts: ClassVar[tuple[float, ...]] = (1.0,)
    method_order: ClassVar[int] = 2


Leapfrog = VelocityVerlet


class Yoshida4(AbstractSplittingIntegrator):
    """The 4th-order Forest–Ruth / Yoshida triple-jump composition of Verlet. Order 4.

    Verlet substeps of sizes (w₁, w₀, w₁)·dt with w₁ = 1/(2 − 2^{1/3}),
    w₀ = 1 − 2w₁; three force evaluations per step. Symplectic and time
    reversible. References: Forest & Ruth, Physica D 43, 105 (1990);
    Yoshida, Phys. Lett. A 150, 262 (1990).

    **Example:** `sciad.simulate(model, (q0, p0), dt=1e-2, n_steps=10, integrator=sciad.Yoshida4())`
    """

    kicks, drifts = _compose_verlet(COMPOSITION_WEIGHTS[3])
    method_order: ClassVar[int] = 4


class Yoshida6(AbstractSplittingIntegrator):
    """Yoshida's 6th-order composition of seven Verlet substeps (solution A). Order 6.

    Substep weights (w₃, w₂, w₁, w₀, w₁, w₂, w₃) with w₁ = −1.17767998417887,
    w₂ = 0.235573213359357, w₃ = 0.784513610477560, w₀ = 1 − 2(w₁ + w₂ + w₃);
    seven force evaluations per step. Reference: Yoshida, Phys. Lett. A 150,
    262 (1990), Table 1.

    **Example:** `sciad.simulate(model, (q0, p0), dt=1e-2, n_steps=10, integrator=sciad.Yoshida6())`
    """

    kicks, drifts = _compose_verlet(COMPOSITION_WEIGHTS[7])
    method_order: ClassVar[int] = 6


class AbstractExplicitRK(AbstractIntegrator):
    """An explicit Runge–Kutta method given by its Butcher tableau (a, b, c).

    Works on any model (no separability needed). Concrete methods only fill in
    the tableau class variables.

    **Example** (Heun's method as data):

    ```python
    class Heun(sciad.AbstractExplicitRK):
        tableau_a = ((), (1.0,))
        tableau_b = (0.5, 0.5)
        tableau_c = (0.0, 1.0)
        method_order = 2
    ```
    """

    requires_separable: ClassVar[bool] = False
    tableau_a: ClassVar[tuple[tuple[float, ...], ...]]
    tableau_b: ClassVar[tuple[float, ...]]
    tableau_c: ClassVar[tuple[float, ...]]
    method_order: ClassVar[int]

    def order(self) -> int:
        """The global order of accuracy."""
        return self.method_order

    def init(self, model: AbstractModel, t0: RealScalarLike, y0: State) -> Anything:
        """Explicit RK methods carry no state between steps."""
        return None

    def step(
        self,
        model: AbstractModel,
        t: RealScalarLike,
        dt: RealScalarLike,
        y: State,
        state: Anything,
    ) -> tuple[State, Anything]:
        """One explicit Runge–Kutta step."""
        ks = []
        for row, c in zip(self.tableau_a, self.tableau_c, strict=True):
            yi = y
            for aij, kj in zip(row, ks, strict=True):
                if aij != 0:
                    yi = _axpy(yi, aij * dt, kj)
            ks.append(model.vector_field(t + c * dt, yi))
        for bi, ki in zip(self.tableau_b, ks, strict=True):
            if bi != 0:
                y = _axpy(y, bi * dt, ki)
        return y, None


class RK4(AbstractExplicitRK):
    """The classic 4th-order Runge–Kutta method. Order 4, four stages.

    For non-separable systems (damping, driving, general ODEs). Reference: Kutta,
    Z. Math. Phys. 46, 435 (1901); Hairer, Nørsett & Wanner, *Solving ODEs I*, §II.1.

    **Example:** `sciad.simulate(sciad.ode.Pendulum(1.0, 9.81, 0.1), y0, dt=1e-2, n_steps=10, integrator=sciad.RK4())`
    """

    tableau_a: ClassVar[tuple[tuple[float, ...], ...]] = (
        (),
        (0.5,),
        (0.0, 0.5),
        (0.0, 0.0, 1.0),
    )
    tableau_b: ClassVar[tuple[float, ...]] = (1 / 6, 1 / 3, 1 / 3, 1 / 6)
    tableau_c: ClassVar[tuple[float, ...]] = (0.0, 0.5, 0.5, 1.0)
    method_order: ClassVar[int] = 4

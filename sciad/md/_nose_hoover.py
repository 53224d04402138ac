"""The Nosé–Hoover chain thermostat (NVT), with the Martyna–Tuckerman–Klein propagator."""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float
import numpy as np

from .._core._integrator import (
    AbstractIntegrator,
    AbstractWrappedIntegrator,
    AbstractWrappedState,
    COMPOSITION_WEIGHTS,
    VelocityVerlet,
)
from .._core._model import AbstractModel
from .._core._types import Anything, FloatScalar, RealScalarLike, State
from .._core._validate import check_int, check_positive
from ._system import MDSystem
from ._thermostat import AbstractThermostat


def md_system(model: AbstractModel, owner: str) -> MDSystem:
    """`model` if it is an `MDSystem`, else a precise `TypeError`."""
    if not isinstance(model, MDSystem):
        raise TypeError(f"{owner} runs a sciad.md.MDSystem; got {type(model).__name__}.")
    return model


def _degrees_of_freedom(p: Array, owner: str) -> int:
    n, d = p.shape
    if n * d - d < 1:
        raise ValueError(
            f"{owner} needs at least 2 particles (n·d − d ≥ 1 degrees of freedom); got n={n}."
        )
    return n * d - d


class NoseHooverState(AbstractWrappedState):
    """The state of [`NoseHooverChain`][sciad.md.NoseHooverChain].

    **Fields:** `inner`: the inner integrator's state; `eta`: the chain positions ηⱼ,
    shape `(M,)`; `p_eta`: the chain momenta p_ηⱼ, shape `(M,)`.

    **Example:** `traj.integrator_state.p_eta`
    """

    inner: Anything
    eta: Float[Array, " M"]
    p_eta: Float[Array, " M"]


class NoseHooverChain(AbstractThermostat, AbstractWrappedIntegrator):
    """Canonical (NVT) dynamics with a Nosé–Hoover chain: the MTK propagator.

    A chain of M thermostats (ηⱼ, p_ηⱼ) with masses Q₁ = N_f kT τ², Qⱼ = kT τ² (j ≥ 2)
    couples to the particle momenta:

        dp/dt = F − (p_η₁/Q₁) p,
        dp_η₁/dt = 2K − N_f kT − (p_η₂/Q₂) p_η₁,
        dp_ηⱼ/dt = p_ηⱼ₋₁²/Qⱼ₋₁ − kT − (p_ηⱼ₊₁/Qⱼ₊₁) p_ηⱼ,  dηⱼ/dt = p_ηⱼ/Qⱼ.

    One step is the Trotter splitting e^{iL_NHC dt/2} · (inner step) · e^{iL_NHC dt/2}:
    each chain half-step is `n_substeps` × Suzuki–Yoshida sub-steps (weights of
    Yoshida 1990) of the exactly solvable chain pieces, and the inner step is
    `integrator` (velocity Verlet by default: one cached force evaluation per step).
    With a Hamiltonian inner integrator the extended energy
    [`conserved_energy`][sciad.md.NoseHooverChain.conserved_energy]
    H' = H(q, p) + Σⱼ p_ηⱼ²/(2Qⱼ) + N_f kT η₁ + kT Σⱼ≥₂ ηⱼ is conserved up to
    O(dt²) bounded fluctuations.

    Degrees of freedom: N_f = n·d − d, consistent with
    [`MDSystem.temperature`][sciad.md.MDSystem.temperature]: the thermostat scales all
    momenta by one factor and pair forces sum to zero, so the total momentum is
    conserved; start from zero total momentum (as
    [`maxwell_boltzmann`][sciad.md.maxwell_boltzmann] gives) and the n·d − d internal
    degrees of freedom are sampled canonically. A single thermostat (M = 1) is not
    ergodic for stiff or harmonic systems; chains (M ≥ 3) fix this.

    The chain variables live in the integrator state, so runs resume bit for bit from
    `Trajectory.integrator_state`. Deterministic: gradients are exact derivatives of
    the discrete trajectory.

    Reference: Martyna, Tuckerman, Tobias & Klein, Mol. Phys. 87, 1117 (1996);
    Martyna, Klein & Tuckerman, J. Chem. Phys. 97, 2635 (1992).

    **Arguments:**

    - `kT`: the target temperature kB·T (energy units), > 0.
    - `tau`: the thermostat time scale τ (time units), > 0; about 50–100 steps is typical.
    - `chain_length`: M ≥ 1, a Python int (static).
    - `n_substeps`: multiple-time-step sub-steps per chain half-step (static).
    - `yoshida_weights`: 1, 3, 5 or 7 Suzuki–Yoshida weights per sub-step (static).
    - `integrator`: the inner (NVE) integrator, velocity Verlet by default.

    **State:** a [`NoseHooverState`][sciad.md.NoseHooverState] (inner state, η and p_η).

    **Example:**

    ```python
    nvt = sciad.md.NoseHooverChain(kT=1.5, tau=0.5)
    traj = sciad.simulate(system, (q0, p0), dt=0.005, n_steps=10_000, integrator=nvt)
    h = nvt.conserved_energy(system, traj.y1, traj.integrator_state)
    ```
    """

    kT: FloatScalar = eqx.field(converter=jnp.asarray)
    tau: FloatScalar = eqx.field(converter=jnp.asarray)
    chain_length: int = eqx.field(static=True, default=3)
    n_substeps: int = eqx.field(static=True, default=2)
    yoshida_weights: int = eqx.field(static=True, default=3)
    integrator: AbstractIntegrator = eqx.field(default_factory=VelocityVerlet)
    requires_separable: ClassVar[bool] = True
    caches: ClassVar[bool] = True  # refresh recomputes the force and keeps the rest
    wrapper_order: ClassVar[int | None] = 2  # the symmetric Trotter splitting

    def __check_init__(self):
        owner = "NoseHooverChain"
        check_positive(self.kT, f"{owner}.kT")
        check_positive(self.tau, f"{owner}.tau")
        check_int(self.chain_length, f"{owner}.chain_length")
        check_int(self.n_substeps, f"{owner}.n_substeps")
        check_int(self.yoshida_weights, f"{owner}.yoshida_weights", allowed=(1, 3, 5, 7))
        if not isinstance(self.integrator, AbstractIntegrator):
            raise TypeError(
                f"{owner}: integrator must be a sciad.AbstractIntegrator instance such as "
                f"sciad.VelocityVerlet(); got {self.integrator!r}."
            )

    def init(self, model: AbstractModel, t0: RealScalarLike, y0: State) -> NoseHooverState:
        """A [`NoseHooverState`][sciad.md.NoseHooverState]: the inner state, η = 0, p_η = 0."""
        md_system(model, "NoseHooverChain")
        _degrees_of_freedom(y0[1], "NoseHooverChain")
        zeros = jnp.zeros((self.chain_length,), dtype=y0[1].dtype)
        return NoseHooverState(self.integrator.init(model, t0, y0), zeros, zeros)

    def chain_masses(self, n_dof: int) -> Float[Array, " M"]:
        """Q = (N_f kT τ², kT τ², …), shape `(chain_length,)` (energy·time²).

        **Arguments:** `n_dof`: N_f = n·d − d.

        **Returns:** the chain masses.
        """
        q = self.kT * self.tau**2
        return jnp.stack([n_dof * q] + [q] * (self.chain_length - 1))

    def _chain_half_step(
        self, two_k: Array, n_dof: int, eta: Array, p_eta: Array, half_dt: Anything
    ) -> tuple[Array, Array, Array]:
        """e^{iL_NHC half_dt}: the momentum scale factor and the new (η, p_η).

        Martyna et al. (1996), eqs. (29)–(32); all momenta are scaled once at the end.
        The `n_substeps` × `yoshida_weights` sub-steps run as one `lax.scan` (an
        unrolled loop made compile times of second derivatives explode).
        """
        m, kT = self.chain_length, self.kT
        qs = list(self.chain_masses(n_dof))
        weights = np.tile(np.asarray(COMPOSITION_WEIGHTS[self.yoshida_weights]), self.n_substeps)
        fractions = jnp.asarray(weights / self.n_substeps, dtype=two_k.dtype)

        def substep(carry, fraction):
            two_k, scale, eta, p_eta = carry
            h = fraction * half_dt
            ps, es = [p_eta[j] for j in range(m)], [eta[j] for j in range(m)]

            def kick(j):
                g = two_k - n_dof * kT if j == 0 else ps[j - 1] ** 2 / qs[j - 1] - kT
                if j == m - 1:
                    ps[j] = ps[j] + (h / 2) * g
                else:
                    a = jnp.exp(-(h / 4) * ps[j + 1] / qs[j + 1])
                    ps[j] = a * (a * ps[j] + (h / 2) * g)

            for j in reversed(range(m)):
                kick(j)
            s = jnp.exp(-h * ps[0] / qs[0])
            scale, two_k = scale * s, two_k * s**2
            es = [e + h * pj / qj for e, pj, qj in zip(es, ps, qs, strict=True)]
            for j in range(m):
                kick(j)
            return (two_k, scale, jnp.stack(es), jnp.stack(ps)), None

        carry = (two_k, jnp.ones_like(two_k), eta, p_eta)
        (_, scale, eta, p_eta), _ = jax.lax.scan(substep, carry, fractions)
        return scale, eta, p_eta

    def step(
        self,
        model: AbstractModel,
        t: RealScalarLike,
        dt: RealScalarLike,
        y: State,
        state: NoseHooverState,
    ) -> tuple[State, NoseHooverState]:
        """Chain half-step, inner step, chain half-step."""
        system = md_system(model, "NoseHooverChain")
        inner, eta, p_eta = state.inner, state.eta, state.p_eta
        q, p = y
        m = system.masses[:, None]
        n_dof = _degrees_of_freedom(p, "NoseHooverChain")
        s, eta, p_eta = self._chain_half_step(jnp.sum(p**2 / m), n_dof, eta, p_eta, dt / 2)
        (q, p), inner = self.integrator.step(model, t, dt, (q, s * p), inner)
        s, eta, p_eta = self._chain_half_step(jnp.sum(p**2 / m), n_dof, eta, p_eta, dt / 2)
        return (q, s * p), NoseHooverState(inner, eta, p_eta)

    def conserved_energy(
        self, model: AbstractModel, y: State, state: NoseHooverState
    ) -> FloatScalar:
        """The extended energy H' = H(q, p) + Σ p_ηⱼ²/(2Qⱼ) + N_f kT η₁ + kT Σⱼ≥₂ ηⱼ.

        Conserved by the exact chain dynamics; the integrator keeps it within bounded
        O(dt²) fluctuations (with a Hamiltonian inner integrator).

        **Arguments:** the `MDSystem`, a state `y = (q, p)` and this integrator's state
        at the same time (e.g. `traj.y1` and `traj.integrator_state`).

        **Returns:** a scalar (energy units).

        **Example:** `nvt.conserved_energy(system, traj.y1, traj.integrator_state)`
        """
        system = md_system(self.model_at(model, state), "NoseHooverChain")
        eta, p_eta = state.eta, state.p_eta
        n_dof = _degrees_of_freedom(y[1], "NoseHooverChain")
        qs = self.chain_masses(n_dof)
        chain = jnp.sum(p_eta**2 / (2 * qs)) + n_dof * self.kT * eta[0] + self.kT * jnp.sum(eta[1:])
        return system.energy(y) + chain

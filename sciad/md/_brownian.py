"""Brownian (overdamped Langevin) dynamics with the Leimkuhler–Matthews limit method."""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Key

from .._core._model import AbstractModel
from .._core._types import FloatScalar, RealScalarLike, State
from .._core._validate import check_key, check_positive
from ._nose_hoover import md_system
from ._thermostat import AbstractThermostat


class BrownianState(eqx.Module):
    """The state of [`BrownianDynamics`][sciad.md.BrownianDynamics].

    **Fields:** `force`: the cached force F(qₙ), shape `(n, d)`; `noise`: the Gaussian
    Rₙ of shape `(n, d)` that the next step reuses; `key`: the random key of the next
    step.

    **Example:** `traj.integrator_state.noise`
    """

    force: Float[Array, "n d"]
    noise: Float[Array, "n d"]
    key: Key[Array, ""]


class BrownianDynamics(AbstractThermostat):
    """Overdamped Langevin (Brownian) dynamics: dq = F/(γm) dt + √(2kT/(γm)) dW.

    Each particle diffuses with D = kT/(γm) (the high-friction limit of
    [`LangevinBAOAB`][sciad.md.LangevinBAOAB] with the same γ and m). One step is the
    Leimkuhler–Matthews "BAOAB limit" method

        qₙ₊₁ = qₙ + (dt/(γm)) F(qₙ) + √(kT dt/(2γm)) (Rₙ + Rₙ₊₁),  Rₙ ~ N(0, 1),

    which reuses each Gaussian in two consecutive steps. It has the cost of
    Euler–Maruyama (one cached force evaluation) but second-order accurate
    configurational averages at stationarity, and it samples a harmonic trap's
    Boltzmann distribution exactly for any stable step (Euler–Maruyama overestimates
    ⟨x²⟩ by the factor 1/(1 − k dt/(2γm))). For free diffusion the displacement after
    N steps has variance (2N − 1)·D·dt per component (2N for the exact process).

    The state stays `(q, p)` like every `MDSystem` run, but the overdamped limit has
    no momenta: p is ignored and returned as zeros. Kinetic observables (temperature,
    kinetic pressure) are therefore meaningless; the temperature is `kT`.
    The random key and Rₙ live in the integrator state, so a run is reproducible,
    resumes bit for bit from `Trajectory.integrator_state`, and is differentiable
    for a fixed key (reparametrised noise); `vmap` over keys for independent replicas.

    Reference: Leimkuhler & Matthews, Appl. Math. Res. Express 2013, 34 (2013);
    Leimkuhler, Matthews & Stoltz, IMA J. Numer. Anal. 36, 13 (2016).

    **Arguments:**

    - `friction` γ (1/time), > 0; the friction coefficient of particle i is γ mᵢ.
    - `kT`: the temperature kB·T (energy units), ≥ 0.
    - `key`: a `jax.random.key`.

    **State:** a [`BrownianState`][sciad.md.BrownianState] (cached force F(qₙ), Rₙ
    and the key).

    **Example:**

    ```python
    bd = sciad.md.BrownianDynamics(friction=10.0, kT=1.0, key=jax.random.key(0))
    traj = sciad.simulate(system, (q0, jnp.zeros_like(q0)), dt=1e-3, n_steps=1000, integrator=bd)
    ```
    """

    friction: FloatScalar = eqx.field(converter=jnp.asarray)
    kT: FloatScalar = eqx.field(converter=jnp.asarray)
    key: Key[Array, ""]
    requires_separable: ClassVar[bool] = True
    has_momenta: ClassVar[bool] = False  # overdamped: p is returned as zeros
    caches: ClassVar[bool] = True  # refresh recomputes the force and keeps the rest

    def __check_init__(self):
        check_positive(self.friction, "BrownianDynamics.friction")
        check_positive(self.kT, "BrownianDynamics.kT", zero_ok=True)
        check_key(self.key, "BrownianDynamics.key")

    def order(self) -> int:
        """2 (weak order of stationary configurational averages; 1 on finite times)."""
        return 2

    def conserves_momentum(self) -> bool:
        """`False`: every particle diffuses with its own noise (and p is zero)."""
        return False

    def init(self, model: AbstractModel, t0: RealScalarLike, y0: State) -> BrownianState:
        """A [`BrownianState`][sciad.md.BrownianState]: F(q₀), R₀ and the key."""
        system = md_system(model, "BrownianDynamics")
        q = y0[0]
        key, sub = jax.random.split(self.key)
        r = jax.random.normal(sub, q.shape, dtype=q.dtype)
        return BrownianState(system.force(t0, q), r, key)

    def refresh(
        self, model: AbstractModel, t: RealScalarLike, y: State, state: BrownianState
    ) -> BrownianState:
        """Recompute the cached force; keep Rₙ and the key."""
        system = md_system(model, "BrownianDynamics")
        return BrownianState(system.force(t, y[0]), state.noise, state.key)

    def step(
        self,
        model: AbstractModel,
        t: RealScalarLike,
        dt: RealScalarLike,
        y: State,
        state: BrownianState,
    ) -> tuple[State, BrownianState]:
        """One Leimkuhler–Matthews step; p is returned as zeros."""
        system = md_system(model, "BrownianDynamics")
        q, p = y
        force, r, key = state.force, state.noise, state.key
        key, sub = jax.random.split(key)
        r_next = jax.random.normal(sub, q.shape, dtype=q.dtype)
        mobility_dt = dt / (self.friction * system.masses[:, None])
        # √(kT/2)·√(dt/(γm)) rather than √(kT dt/(2γm)): finite γ-gradients at kT = 0.
        noise = jnp.sqrt(self.kT / 2) * jnp.sqrt(mobility_dt)
        q = q + mobility_dt * force + noise * (r + r_next)
        return (q, jnp.zeros_like(p)), BrownianState(system.force(t + dt, q), r_next, key)

"""Thermostatted integrators for MD systems."""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Key
import numpy as np

from .._core._integrator import AbstractIntegrator
from .._core._model import AbstractModel
from .._core._types import FloatScalar, RealScalarLike, State
from .._core._validate import check_key, check_positive, is_concrete
from ._system import MDSystem


def _masses(model: AbstractModel) -> Array:
    if not isinstance(model, MDSystem):
        raise TypeError(f"LangevinBAOAB runs a sciad.md.MDSystem; got {type(model).__name__}.")
    return model.masses[:, None]


class AbstractThermostat(AbstractIntegrator):
    """An NVT integrator: it samples the canonical ensemble of an `MDSystem` at the
    temperature `kT`.

    Composite integrators ask this interface, not a type: a barostat
    ([`CellRescaling`][sciad.md.CellRescaling]) reads the temperature from `kT` and
    refuses a thermostat without momenta (`has_momenta`). Implemented by
    [`LangevinBAOAB`][sciad.md.LangevinBAOAB],
    [`NoseHooverChain`][sciad.md.NoseHooverChain] and
    [`BrownianDynamics`][sciad.md.BrownianDynamics].

    **Attributes:**

    - `kT`: the target temperature kB·T (energy units), a scalar array.
    - `has_momenta`: whether the dynamics carries momenta (`False` for overdamped
      dynamics, whose kinetic observables are meaningless).

    **Example:**

    ```python
    nvt = sciad.md.LangevinBAOAB(friction=1.0, kT=1.5, key=jax.random.key(0))
    isinstance(nvt, sciad.md.AbstractThermostat), float(nvt.kT)  # (True, 1.5)
    ```
    """

    kT: eqx.AbstractVar[FloatScalar]
    has_momenta: ClassVar[bool] = True


class LangevinState(eqx.Module):
    """The state of [`LangevinBAOAB`][sciad.md.LangevinBAOAB].

    **Fields:** `force`: the cached force F(q), shape `(n, d)`; `key`: the random key
    of the next step.

    **Example:** `traj.integrator_state.key`
    """

    force: Float[Array, "n d"]
    key: Key[Array, ""]


class LangevinBAOAB(AbstractThermostat):
    """Langevin dynamics (NVT) with the BAOAB splitting of Leimkuhler & Matthews.

    dq = M⁻¹p dt,  dp = F(q) dt − γ p dt + √(2γ kB T M) dW.  One step is
    B (half kick) · A (half drift) · O (exact Ornstein–Uhlenbeck step:
    p ← c p + √((1 − c²) kB T M) ξ, c = e^{−γ dt}) · A · B; one force evaluation per
    step (cached). Configurational averages are second-order accurate in dt.
    The random key lives in the integrator state, so a run is reproducible, resumes
    bit for bit from `Trajectory.integrator_state`, and is differentiable for a fixed
    key (reparametrised noise). Reference: Leimkuhler & Matthews, Appl. Math. Res.
    Express 2013, 34 (2013).

    **Arguments:**

    - `friction` γ (1/time), ≥ 0 (0: no thermostat, plain velocity Verlet).
    - `kT`: the target temperature kB·T (energy units), ≥ 0.
    - `key`: a `jax.random.key`; `vmap` over keys for independent replicas.

    **Example:**

    ```python
    nvt = sciad.md.LangevinBAOAB(friction=1.0, kT=1.5, key=jax.random.key(0))
    traj = sciad.simulate(system, (q0, p0), dt=0.005, n_steps=10_000, integrator=nvt)
    ```
    """

    friction: FloatScalar = eqx.field(converter=jnp.asarray)
    kT: FloatScalar = eqx.field(converter=jnp.asarray)
    key: Key[Array, ""]
    requires_separable: ClassVar[bool] = True
    caches: ClassVar[bool] = True  # refresh recomputes the force and keeps the rest

    def __check_init__(self):
        check_positive(self.friction, "LangevinBAOAB.friction", zero_ok=True)
        check_positive(self.kT, "LangevinBAOAB.kT", zero_ok=True)
        check_key(self.key, "LangevinBAOAB.key")

    def order(self) -> int:
        """2 (weak order of configurational averages)."""
        return 2

    def conserves_momentum(self) -> bool:
        """`False` (n·d degrees of freedom): the O step kicks every particle with its
        own noise, so the total momentum diffuses. `True` only for a concrete zero
        friction (plain velocity Verlet)."""
        return is_concrete(self.friction) and not np.any(np.asarray(self.friction))

    def init(self, model: AbstractModel, t0: RealScalarLike, y0: State) -> LangevinState:
        """A [`LangevinState`][sciad.md.LangevinState]: the force F(q0) and the key."""
        _masses(model)
        assert isinstance(model, MDSystem)
        return LangevinState(model.force(t0, y0[0]), self.key)

    def refresh(
        self, model: AbstractModel, t: RealScalarLike, y: State, state: LangevinState
    ) -> LangevinState:
        """Recompute the cached force; keep the key."""
        assert isinstance(model, MDSystem)
        return LangevinState(model.force(t, y[0]), state.key)

    def step(
        self,
        model: AbstractModel,
        t: RealScalarLike,
        dt: RealScalarLike,
        y: State,
        state: LangevinState,
    ) -> tuple[State, LangevinState]:
        """One BAOAB step."""
        m = _masses(model)
        assert isinstance(model, MDSystem)
        (q, p), force, key = y, state.force, state.key
        key, noise_key = jax.random.split(key)
        p = p + (0.5 * dt) * force
        q = q + (0.5 * dt) * model.velocity(t, p)
        c = jnp.exp(-self.friction * dt)
        xi = jax.random.normal(noise_key, p.shape, dtype=p.dtype)
        p = c * p + jnp.sqrt((1 - c**2) * self.kT * m) * xi
        q = q + (0.5 * dt) * model.velocity(t, p)
        force = model.force(t + dt, q)
        p = p + (0.5 * dt) * force
        return (q, p), LangevinState(force, key)

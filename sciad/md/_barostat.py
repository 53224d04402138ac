"""NPT: stochastic cell rescaling (Bernetti & Bussi), composed with a thermostat."""

from collections.abc import Callable
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Key

from .._core._integrator import (
    AbstractIntegrator,
    AbstractWrappedIntegrator,
    AbstractWrappedState,
)
from .._core._model import AbstractModel
from .._core._results import RESULTS
from .._core._types import Anything, BoolScalar, FloatScalar, RealScalarLike, State
from .._core._validate import check_positive, check_scalar
from ._nose_hoover import md_system
from ._observables import pressure as instantaneous_pressure
from ._potential import concrete_range
from ._run import NeighborListIntegrator
from ._space import AbstractSpace
from ._system import MDSystem
from ._thermostat import AbstractThermostat

_OWNER = "CellRescaling"


def _too_small(system: MDSystem, space: AbstractSpace) -> Array:
    """Whether the box is narrower than twice the potential's range (minimum image fails)."""
    reach = concrete_range(system.potential)
    if reach is None:
        return jnp.asarray(False)
    return 2 * reach > space.min_width()


def _with_space(system: MDSystem, space: AbstractSpace) -> MDSystem:
    return eqx.tree_at(lambda m: m.space, system, space)


class CellRescalingState(AbstractWrappedState):
    """The state of [`CellRescaling`][sciad.md.CellRescaling].

    **Fields:** `inner`: the thermostat's state; `space`: the current (scaled) space,
    whose box is the current box; `key`: the barostat's random key; `too_small`: whether
    the box ever became narrower than twice the potential's range (sticky).

    **Example:** `traj.integrator_state.space.volume()`
    """

    inner: Anything
    space: AbstractSpace
    key: Key[Array, ""]
    too_small: BoolScalar


class CellRescaling(AbstractWrappedIntegrator):
    """Isothermal–isobaric (NPT) dynamics: stochastic cell rescaling around a thermostat.

    Composed from parts: each step is one step of `thermostat` (an NVT integrator such
    as [`LangevinBAOAB`][sciad.md.LangevinBAOAB] or
    [`NoseHooverChain`][sciad.md.NoseHooverChain]) at fixed box, then one
    Euler–Maruyama step of the isotropic stochastic cell-rescaling equation for
    ε = ln V (Bernetti & Bussi 2020):

        dε = −(β_T/τ_p)(P₀ − P_int − kT/V) dt + √(2 kT β_T/(V τ_p)) dW,

    after which positions are scaled by s = e^{dε/d}, the box by s and the momenta
    relative to the centre of mass by 1/s (the centre-of-mass momentum is left as
    it is), and the thermostat's cached force is recomputed (`refresh`).
    P_int = (2K_int + tr W)/(d V) is [`pressure`][sciad.md.pressure] evaluated with
    the centre-of-mass-free momenta, plus `pressure_correction(system)` if given.

    What it samples (derivation; checked on an ideal gas in the tests): in
    the variables (ε, s = q V^{-1/d}, π) with π the rescaled momenta, the density
    ρ(V, q, p) ∝ exp(−β(H(q, p) + P₀V)) with the plain measure dV dq dp picks up the
    Jacobian V·Vⁿ·V^{−(n−1)} = V² (the n − 1 internal momenta scale; the centre of
    mass does not). The Itô SDE above has exactly this stationary density for any
    thermostat that samples the canonical distribution at fixed V, whether it
    conserves the total momentum (Nosé–Hoover) or randomises it (Langevin). For an
    ideal gas of n particles the volume is Gamma distributed: ρ(V) ∝ Vⁿ e^{−βP₀V},
    ⟨V⟩ = (n + 1) kT/P₀, Var V = (n + 1)(kT/P₀)². The mean instantaneous pressure
    equals P₀: ⟨P_int⟩ + ⟨kT/V⟩ = P₀ exactly.

    The box (the system's space, scaled) and the key live in the integrator state:
    [`model_at`][sciad.AbstractWrappedIntegrator.model_at] returns the system with the current
    box, so `SaveAt(fn=...)` sees the current volume, and runs resume bit for bit.
    Differentiable for fixed keys. The barostat's part is first order in dt (its
    relaxation time τ_p/(β_T B) is long against dt, so the error is small).
    Cost per step: the thermostat's step, one virial and one extra force evaluation.

    Minimum image needs the interaction range at most half the box width: keep the
    box large enough as it fluctuates. With a neighbour list, compose it inside:
    `NeighborListIntegrator(CellRescaling(...), builder)` builds and checks lists in the
    current box (tested equal to all-pairs runs); a box that shrinks below the list's
    cell grid is reported as an overflow (`sciad.md.run_growing` regrows it).
    A box compressed until its smallest width is below twice the potential's range
    (the minimum image then misses or double-counts pairs) is reported as
    `RESULTS.box_too_small` (raised with `throw=True`); the flag is sticky.
    Isotropic only (a `TriclinicBox` keeps its shape); any periodic space works (it
    is scaled with its own [`scaled`][sciad.md.AbstractSpace.scaled]).

    Reference: Bernetti & Bussi, J. Chem. Phys. 153, 114107 (2020).

    **Arguments:**

    - `thermostat`: the NVT integrator; its `kT` is the barostat's temperature.
    - `pressure`: the target pressure P₀ (energy/length^d).
    - `compressibility`: β_T (length^d/energy), > 0; an estimate of the system's
      isothermal compressibility (only the relaxation time depends on it).
    - `tau_p`: the barostat relaxation time τ_p (time units), > 0.
    - `key`: a `jax.random.key` for the barostat noise.
    - `pressure_correction`: optional `f(system) -> scalar` added to P_int, e.g. a
      long-range tail correction that depends on the current volume.

    **State:** a [`CellRescalingState`][sciad.md.CellRescalingState] (thermostat state,
    the current space, key, box-too-small flag).

    **Example:**

    ```python
    npt = sciad.md.CellRescaling(
        sciad.md.LangevinBAOAB(friction=1.0, kT=1.5, key=jax.random.key(0)),
        pressure=1.0, compressibility=0.1, tau_p=1.0, key=jax.random.key(1))
    volume = sciad.SaveAt(steps=10, fn=lambda t, y, m: m.space.volume())
    traj = sciad.simulate(system, (q0, p0), dt=0.005, n_steps=10_000, integrator=npt, saveat=volume)
    ```
    """

    # Annotated as any integrator so that `__check_init__` refuses a wrong one with
    # its precise message.
    thermostat: AbstractIntegrator
    pressure: FloatScalar = eqx.field(converter=jnp.asarray)
    compressibility: FloatScalar = eqx.field(converter=jnp.asarray)
    tau_p: FloatScalar = eqx.field(converter=jnp.asarray)
    key: Key[Array, ""]
    pressure_correction: Callable[[MDSystem], FloatScalar] | None = eqx.field(
        static=True, default=None
    )
    requires_separable: ClassVar[bool] = True
    caches: ClassVar[bool] = True  # refresh recomputes the force and keeps the rest
    wrapper_order: ClassVar[int | None] = 1  # the volume move is an Euler–Maruyama step

    def __check_init__(self):
        t = self.thermostat
        if isinstance(t, NeighborListIntegrator):
            raise TypeError(
                f"{_OWNER} goes inside the neighbour list, not around it: use "
                "NeighborListIntegrator(CellRescaling(thermostat, ...), builder), which "
                "builds lists for the current box."
            )
        if not isinstance(t, AbstractThermostat):
            raise TypeError(
                f"{_OWNER}: thermostat must be an NVT integrator with a `kT` (a "
                "sciad.md.AbstractThermostat such as sciad.md.LangevinBAOAB or "
                f"sciad.md.NoseHooverChain); got {type(t).__name__}."
            )
        if not t.has_momenta:
            raise TypeError(
                f"{_OWNER} needs momenta for the kinetic pressure; {type(t).__name__} has "
                "none. Use LangevinBAOAB or NoseHooverChain."
            )
        check_positive(self.compressibility, f"{_OWNER}.compressibility")
        check_positive(self.tau_p, f"{_OWNER}.tau_p")
        check_scalar(self.pressure, f"{_OWNER}.pressure")
        if self.pressure_correction is not None and not callable(self.pressure_correction):
            raise TypeError(f"{_OWNER}: pressure_correction must be callable or None.")

    @property
    def integrator(self) -> AbstractIntegrator:
        """The wrapped integrator: `thermostat`."""
        return self.thermostat

    def _system(self, model: AbstractModel) -> MDSystem:
        return md_system(model, _OWNER)

    def check(self, model: AbstractModel) -> None:
        """An `MDSystem` in a periodic space (whose volume can change); the thermostat's checks."""
        system = self._system(model)
        if not system.space.periodic:
            raise TypeError(
                f"{_OWNER} needs a periodic space (sciad.md.PeriodicBox or "
                "sciad.md.TriclinicBox) whose volume can change; got "
                f"{type(system.space).__name__}."
            )
        self.thermostat.check(system)

    def init(self, model: AbstractModel, t0: RealScalarLike, y0: State) -> CellRescalingState:
        """A [`CellRescalingState`][sciad.md.CellRescalingState]: the thermostat state,
        the system's space, the key and the box-too-small flag."""
        system = self._system(model)
        space = system.space.scaled(jnp.ones((), dtype=y0[0].dtype))
        inner = self.thermostat.init(_with_space(system, space), t0, y0)
        return CellRescalingState(inner, space, self.key, _too_small(system, space))

    def inner_model(self, model: AbstractModel, state: CellRescalingState) -> AbstractModel:
        """The system with the current box."""
        return _with_space(md_system(model, _OWNER), state.space)

    def wrapper_status(self, state: CellRescalingState) -> RESULTS:
        """`box_too_small` if the box ever became narrower than twice the potential's
        range."""
        return RESULTS.where(state.too_small, RESULTS.box_too_small, RESULTS.successful)

    def internal_pressure(self, system: MDSystem, y: State) -> FloatScalar:
        """P_int: the virial pressure with centre-of-mass-free momenta, plus the correction.

        **Arguments:** `system` with the current box (`model_at`), `y = (q, p)`.

        **Returns:** a scalar (energy/length^d).
        """
        q, p = y
        m = system.masses[:, None]
        p_int = p - m * (jnp.sum(p, axis=0) / jnp.sum(system.masses))[None, :]
        p_inst = instantaneous_pressure(system, (q, p_int))
        if self.pressure_correction is not None:
            p_inst = p_inst + self.pressure_correction(system)
        return p_inst

    def step(
        self,
        model: AbstractModel,
        t: RealScalarLike,
        dt: RealScalarLike,
        y: State,
        state: CellRescalingState,
    ) -> tuple[State, CellRescalingState]:
        """A thermostat step at fixed box, then one stochastic volume move."""
        base = self._system(model)
        inner, space, key, too_small = state.inner, state.space, state.key, state.too_small
        system = _with_space(base, space)
        (q, p), inner = self.thermostat.step(system, t, dt, y, inner)
        thermostat = self.thermostat
        assert isinstance(thermostat, AbstractThermostat)  # checked in __check_init__
        kT = jnp.asarray(thermostat.kT)
        d = q.shape[1]
        volume = space.volume()
        key, sub = jax.random.split(key)
        xi = jax.random.normal(sub, (), dtype=q.dtype)
        rate = self.compressibility / self.tau_p
        drive = self.pressure - self.internal_pressure(system, (q, p)) - kT / volume
        # √(2kT)·√(rate dt/V): finite gradients in the other parameters at kT = 0.
        d_eps = -rate * drive * dt + jnp.sqrt(2 * kT) * jnp.sqrt(rate * dt / volume) * xi
        s = jnp.exp(d_eps / d)
        m = base.masses[:, None]
        p_com = m * (jnp.sum(p, axis=0) / jnp.sum(base.masses))[None, :]
        q, p = s * q, p_com + (p - p_com) / s
        space = space.scaled(s)
        inner = self.thermostat.refresh(_with_space(base, space), t + dt, (q, p), inner)
        too_small = too_small | _too_small(base, space)
        return (q, p), CellRescalingState(inner, space, key, too_small)

"""Classic first-order ODE models: decay, population, chaos, neuroscience, epidemics, chemistry."""

from typing import ClassVar

import jax.numpy as jnp

from .._core._model import AbstractModel, expect_shape
from .._core._types import FloatScalar, RealScalarLike, State
from ._param import check_params, param


class ExponentialDecay(AbstractModel):
    """Exponential decay dy/dt = −k·y, solved by y(t) = y₀·exp(−k t).

    **Parameters:** `rate` k (1/time; required): any finite real number (k < 0 is
    exponential growth), scalar or broadcastable against the state.
    **State:** `y`, any shape (e.g. a concentration or a count).

    **Example:**

    ```python
    traj = sciad.simulate(sciad.ode.ExponentialDecay(rate=0.5), jnp.array(1.0), t1=2.0, dt=0.01)
    ```
    """

    rate: FloatScalar = param()

    def __check_init__(self):
        check_params(self, real=("rate",))

    def vector_field(self, t: RealScalarLike, y: State) -> State:
        """dy/dt = −k y."""
        return -self.rate * y


class LotkaVolterra(AbstractModel):
    """Lotka–Volterra predator–prey dynamics.

    dx/dt = α x − β x y,   dy/dt = δ x y − γ y.

    **Parameters** (defaults in brackets): `alpha` α [1.5] (prey growth, 1/time),
    `beta` β [1] (predation,
    1/(population·time)), `gamma` γ (predator death, 1/time), `delta` δ (predator
    growth, 1/(population·time)); `gamma` [3], `delta` [1]. Each is a rate, so must
    be finite and >= 0 (0 switches its term off); a negative rate is refused.
    **State:** shape `(2,)`: (prey x, predator y). Conserves
    V = δx − γ ln x + βy − α ln y.

    **Example:**

    ```python
    model = sciad.ode.LotkaVolterra(alpha=1.5, beta=1.0, gamma=3.0, delta=1.0)
    traj = sciad.ode.solve(model, jnp.array([10.0, 1.0]), jnp.linspace(0, 10, 101))
    ```
    """

    alpha: FloatScalar = param(1.5)
    beta: FloatScalar = param(1.0)
    gamma: FloatScalar = param(3.0)
    delta: FloatScalar = param(1.0)

    def __check_init__(self):
        check_params(self, nonnegative=("alpha", "beta", "gamma", "delta"))

    def vector_field(self, t: RealScalarLike, y: State) -> State:
        """The Lotka–Volterra right-hand side."""
        x, z = y[0], y[1]
        return jnp.stack([self.alpha * x - self.beta * x * z, self.delta * x * z - self.gamma * z])

    def check_state(self, y: State) -> None:
        """The state is (prey, predator), shape (2,)."""
        expect_shape("y0", y, (2,), "prey, predator")

    def invariant(self, y: State) -> FloatScalar:
        """The conserved quantity δx − γ ln x + βy − α ln y."""
        x, z = y[0], y[1]
        return self.delta * x - self.gamma * jnp.log(x) + self.beta * z - self.alpha * jnp.log(z)


class Lorenz(AbstractModel):
    """The Lorenz (1963) system.

    dx/dt = σ(y − x),  dy/dt = x(ρ − z) − y,  dz/dt = xy − βz.

    **Parameters:** `sigma` σ, `rho` ρ, `beta` β (dimensionless; defaults are the
    chaotic classic 10, 28, 8/3). σ (the Prandtl number) and β (a geometric factor,
    4/(1 + a²)) must be finite and > 0; ρ (the reduced Rayleigh number) may be any
    finite real (ρ < 0 is a layer heated from above, which decays to rest).
    **State:** shape `(3,)`: (x, y, z).
    Reference: Lorenz, J. Atmos. Sci. 20, 130 (1963).

    **Example:** `sciad.ode.solve(sciad.ode.Lorenz(), jnp.array([1.0, 1.0, 1.0]), jnp.linspace(0, 1, 11))`
    """

    sigma: FloatScalar = param(10.0)
    rho: FloatScalar = param(28.0)
    beta: FloatScalar = param(8.0 / 3.0)

    def __check_init__(self):
        check_params(self, positive=("sigma", "beta"), real=("rho",))

    def vector_field(self, t: RealScalarLike, y: State) -> State:
        """The Lorenz right-hand side."""
        x, v, z = y[0], y[1], y[2]
        return jnp.stack([self.sigma * (v - x), x * (self.rho - z) - v, x * v - self.beta * z])

    def check_state(self, y: State) -> None:
        """The state is (x, y, z), shape (3,)."""
        expect_shape("y0", y, (3,), "x, y, z")


class VanDerPol(AbstractModel):
    """The Van der Pol oscillator: d²x/dt² − μ(1 − x²) dx/dt + x = 0.

    As a first-order system: dx/dt = v, dv/dt = μ(1 − x²)v − x.

    **Parameters:** `mu` μ [1] (dimensionless damping; stiff for μ ≳ 100, solve with
    `sciad.ode.solve(..., stiff=True)`); finite and >= 0 (μ = 0 is the harmonic
    oscillator; μ < 0, the time-reversed oscillator, is refused: integrate the μ > 0
    model instead). **State:** shape `(2,)`: (x, v).

    **Example:** `sciad.ode.solve(sciad.ode.VanDerPol(mu=1.0), jnp.array([2.0, 0.0]), jnp.linspace(0, 10, 11))`
    """

    mu: FloatScalar = param(1.0)

    def __check_init__(self):
        check_params(self, nonnegative=("mu",))

    def vector_field(self, t: RealScalarLike, y: State) -> State:
        """The Van der Pol right-hand side."""
        x, v = y[0], y[1]
        return jnp.stack([v, self.mu * (1 - x**2) * v - x])

    def check_state(self, y: State) -> None:
        """The state is (x, v), shape (2,)."""
        expect_shape("y0", y, (2,), "x, v")


class FitzHughNagumo(AbstractModel):
    """The FitzHugh–Nagumo neuron model.

    dv/dt = v − v³/3 − w + I,   dw/dt = (v + a − b w) / τ.

    **Parameters** (defaults in brackets): `a` [0.7], `b` [0.8] (dimensionless),
    `tau` τ [12.5] (recovery time scale),
    `current` I [0.5] (external stimulus). τ must be finite and > 0 and b finite and
    >= 0 (b is the recovery's self-damping); a and I may be any finite real (a
    hyperpolarising stimulus is I < 0). **State:** shape `(2,)`: (membrane potential
    v, recovery w). Reference: FitzHugh, Biophys. J. 1, 445 (1961).

    **Example:** `sciad.ode.solve(sciad.ode.FitzHughNagumo(), jnp.array([-1.0, 1.0]), jnp.linspace(0, 100, 101))`
    """

    a: FloatScalar = param(0.7)
    b: FloatScalar = param(0.8)
    tau: FloatScalar = param(12.5)
    current: FloatScalar = param(0.5)

    def __check_init__(self):
        check_params(self, positive=("tau",), nonnegative=("b",), real=("a", "current"))

    def vector_field(self, t: RealScalarLike, y: State) -> State:
        """The FitzHugh–Nagumo right-hand side."""
        v, w = y[0], y[1]
        return jnp.stack([v - v**3 / 3 - w + self.current, (v + self.a - self.b * w) / self.tau])

    def check_state(self, y: State) -> None:
        """The state is (v, w), shape (2,)."""
        expect_shape("y0", y, (2,), "v, w")


class SIR(AbstractModel):
    """The SIR epidemic model, in population fractions.

    ds/dt = −β s i,   di/dt = β s i − γ i,   dr/dt = γ i;  s + i + r is conserved.

    **Parameters:** `beta` β [0.3] (transmission rate, 1/time), `gamma` γ [0.1] (recovery
    rate, 1/time), each finite and >= 0. **State:** shape `(3,)`: (s, i, r).
    Reference: Kermack & McKendrick, Proc. R. Soc. A 115, 700 (1927).

    **Example:** `sciad.ode.solve(sciad.ode.SIR(beta=0.3, gamma=0.1), jnp.array([0.99, 0.01, 0.0]), jnp.linspace(0, 100, 101))`
    """

    beta: FloatScalar = param(0.3)
    gamma: FloatScalar = param(0.1)

    def __check_init__(self):
        check_params(self, nonnegative=("beta", "gamma"))

    def vector_field(self, t: RealScalarLike, y: State) -> State:
        """The SIR right-hand side."""
        s, i = y[0], y[1]
        infection = self.beta * s * i
        recovery = self.gamma * i
        return jnp.stack([-infection, infection - recovery, recovery])

    def check_state(self, y: State) -> None:
        """The state is (s, i, r), shape (3,)."""
        expect_shape("y0", y, (3,), "s, i, r")


class Robertson(AbstractModel):
    """Robertson's stiff chemical kinetics (three species).

    dy₁/dt = −k₁y₁ + k₃y₂y₃,  dy₂/dt = k₁y₁ − k₃y₂y₃ − k₂y₂²,  dy₃/dt = k₂y₂².

    Declared stiff: `sciad.ode.solve` picks an implicit solver (Kvaerno5).
    **Parameters:** `k1` = 0.04, `k2` = 3e7, `k3` = 1e4 (rate constants, 1/time),
    each finite and >= 0 (0 switches a reaction off).
    **State:** shape `(3,)`: concentrations, summing to a constant.
    Reference: Robertson (1966); Hairer & Wanner, *Solving ODEs II*, §IV.1.

    **Example:** `sciad.ode.solve(sciad.ode.Robertson(), jnp.array([1.0, 0.0, 0.0]), jnp.array([0.0, 40.0]))`
    """

    stiff: ClassVar[bool] = True
    k1: FloatScalar = param(0.04)
    k2: FloatScalar = param(3e7)
    k3: FloatScalar = param(1e4)

    def __check_init__(self):
        check_params(self, nonnegative=("k1", "k2", "k3"))

    def vector_field(self, t: RealScalarLike, y: State) -> State:
        """The Robertson right-hand side."""
        y1, y2, y3 = y[0], y[1], y[2]
        a = self.k1 * y1
        b = self.k3 * y2 * y3
        c = self.k2 * y2**2
        return jnp.stack([-a + b, a - b - c, c])

    def check_state(self, y: State) -> None:
        """The state is three concentrations, shape (3,)."""
        expect_shape("y0", y, (3,), "y1, y2, y3")

"""Mechanical models: oscillators, pendulums and gravitating bodies."""

import jax
import jax.numpy as jnp
import numpy as np

from .._core._geometry import safe_norm
from .._core._model import AbstractModel, AbstractSeparableModel, expect_shape
from .._core._types import (
    FloatScalar,
    FloatVector,
    Positions,
    RealScalarLike,
    State,
)
from .._core._validate import check_in_range, check_positive, check_scalar
from ._param import check_params, param


class HarmonicOscillator(AbstractModel):
    """A damped, driven harmonic oscillator.

    m d²x/dt² = −k x − c dx/dt + F cos(ω t).

    **Parameters** (defaults in brackets): `mass` m [1] (kg), `stiffness` k [1] (N/m),
    `damping` c [0] (N·s/m),
    `drive_amplitude` F [0] (N), `drive_frequency` ω [0] (rad/s). m must be finite
    and > 0, k and c finite and >= 0 (k = 0 is a free, possibly damped, particle); F
    and ω may be any finite real (a negative F is a drive shifted by half a period).
    **State:** shape `(2,)`: (position x in m, velocity v in m/s).

    **Example:**

    ```python
    osc = sciad.ode.HarmonicOscillator(mass=1.0, stiffness=4.0, damping=0.1)
    traj = sciad.simulate(osc, jnp.array([1.0, 0.0]), t1=10.0, dt=0.01)
    ```
    """

    mass: FloatScalar = param(1.0)
    stiffness: FloatScalar = param(1.0)
    damping: FloatScalar = param(0.0)
    drive_amplitude: FloatScalar = param(0.0)
    drive_frequency: FloatScalar = param(0.0)

    def __check_init__(self):
        check_params(
            self,
            positive=("mass",),
            nonnegative=("stiffness", "damping"),
            real=("drive_amplitude", "drive_frequency"),
        )

    def vector_field(self, t: RealScalarLike, y: State) -> State:
        """(dx/dt, dv/dt)."""
        x, v = y[0], y[1]
        drive = self.drive_amplitude * jnp.cos(self.drive_frequency * t)
        a = (-self.stiffness * x - self.damping * v + drive) / self.mass
        return jnp.stack([v, a])

    def check_state(self, y: State) -> None:
        """The state is (x, v), shape (2,)."""
        expect_shape("y0", y, (2,), "position, velocity")

    def energy(self, y: State) -> FloatScalar:
        """Mechanical energy ½ m v² + ½ k x² (J)."""
        return 0.5 * self.mass * y[1] ** 2 + 0.5 * self.stiffness * y[0] ** 2


class Pendulum(AbstractModel):
    """A damped simple pendulum (point mass on a massless rod).

    dθ/dt = ω,   dω/dt = −(g / L) sin θ − b ω.

    **Parameters** (defaults in brackets): `length` L [1] (m), `gravity` g [9.81]
    (m/s²), `damping` b [0] (1/s). L and g must be finite and > 0 (g defines the
    downward vertical), b finite and >= 0.
    **State:** shape `(2,)`: (angle θ from the downward vertical in rad, angular
    velocity ω in rad/s). The small-angle period is 2π √(L/g).

    **Example:**

    ```python
    pendulum = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
    traj = sciad.simulate(pendulum, jnp.array([1.0, 0.0]), t1=10.0, dt=0.01)
    ```
    """

    length: FloatScalar = param(1.0)
    gravity: FloatScalar = param(9.81)
    damping: FloatScalar = param(0.0)

    def __check_init__(self):
        check_params(self, positive=("length", "gravity"), nonnegative=("damping",))

    def vector_field(self, t: RealScalarLike, y: State) -> State:
        """(dθ/dt, dω/dt)."""
        theta, omega = y[0], y[1]
        return jnp.stack(
            [omega, -(self.gravity / self.length) * jnp.sin(theta) - self.damping * omega]
        )

    def check_state(self, y: State) -> None:
        """The state is (θ, ω), shape (2,)."""
        expect_shape("y0", y, (2,), "angle, angular velocity")

    def energy(self, y: State) -> FloatScalar:
        """Energy per unit mass ½ L² ω² + g L (1 − cos θ) (J/kg)."""
        return 0.5 * self.length**2 * y[1] ** 2 + self.gravity * self.length * (1 - jnp.cos(y[0]))


class DoublePendulum(AbstractModel):
    """A planar double pendulum of two point masses on massless rods.

    Angles θ₁, θ₂ from the downward vertical; with Δ = θ₁ − θ₂ and
    D = 2m₁ + m₂ − m₂ cos 2Δ:

    - dω₁/dt = [−g(2m₁+m₂) sin θ₁ − m₂ g sin(θ₁−2θ₂) − 2 sin Δ · m₂(ω₂² L₂ + ω₁² L₁ cos Δ)] / (L₁ D)
    - dω₂/dt = [2 sin Δ (ω₁² L₁ (m₁+m₂) + g(m₁+m₂) cos θ₁ + ω₂² L₂ m₂ cos Δ)] / (L₂ D)

    **Parameters** (defaults in brackets): `mass1`, `mass2` [1, 1] (kg), `length1`,
    `length2` [1, 1] (m), `gravity` [9.81] (m/s²), each finite and > 0.
    **State:** shape `(4,)`: (θ₁, θ₂ in rad, ω₁, ω₂ in rad/s).

    **Example:** `sciad.simulate(sciad.ode.DoublePendulum(), jnp.array([1.0, 0.5, 0.0, 0.0]), t1=1.0, dt=1e-3)`
    """

    mass1: FloatScalar = param(1.0)
    mass2: FloatScalar = param(1.0)
    length1: FloatScalar = param(1.0)
    length2: FloatScalar = param(1.0)
    gravity: FloatScalar = param(9.81)

    def __check_init__(self):
        check_params(self, positive=("mass1", "mass2", "length1", "length2", "gravity"))

    def vector_field(self, t: RealScalarLike, y: State) -> State:
        """(dθ₁/dt, dθ₂/dt, dω₁/dt, dω₂/dt)."""
        th1, th2, w1, w2 = y[0], y[1], y[2], y[3]
        m1, m2, l1, l2, g = self.mass1, self.mass2, self.length1, self.length2, self.gravity
        d = th1 - th2
        den = 2 * m1 + m2 - m2 * jnp.cos(2 * d)
        a1 = (
            -g * (2 * m1 + m2) * jnp.sin(th1)
            - m2 * g * jnp.sin(th1 - 2 * th2)
            - 2 * jnp.sin(d) * m2 * (w2**2 * l2 + w1**2 * l1 * jnp.cos(d))
        ) / (l1 * den)
        a2 = (
            2
            * jnp.sin(d)
            * (w1**2 * l1 * (m1 + m2) + g * (m1 + m2) * jnp.cos(th1) + w2**2 * l2 * m2 * jnp.cos(d))
        ) / (l2 * den)
        return jnp.stack([w1, w2, a1, a2])

    def check_state(self, y: State) -> None:
        """The state is (θ₁, θ₂, ω₁, ω₂), shape (4,)."""
        expect_shape("y0", y, (4,), "theta1, theta2, omega1, omega2")

    def energy(self, y: State) -> FloatScalar:
        """Total mechanical energy (J)."""
        th1, th2, w1, w2 = y[0], y[1], y[2], y[3]
        m1, m2, l1, l2, g = self.mass1, self.mass2, self.length1, self.length2, self.gravity
        kin = 0.5 * (m1 + m2) * l1**2 * w1**2 + 0.5 * m2 * l2**2 * w2**2
        kin = kin + m2 * l1 * l2 * w1 * w2 * jnp.cos(th1 - th2)
        pot = -(m1 + m2) * g * l1 * jnp.cos(th1) - m2 * g * l2 * jnp.cos(th2)
        return kin + pot


class NBody(AbstractSeparableModel):
    """Newtonian gravity of n point masses, optionally Plummer-softened.

    H = Σᵢ |pᵢ|² / (2mᵢ) − Σ_{i<j} G mᵢ mⱼ / √(|qᵢ − qⱼ|² + ε²).

    Separable, so the symplectic integrators apply. Forces are −∇V by autodiff.
    **Parameters** (defaults in brackets): `masses` shape `(n,)` (required), `G` [1]
    (gravitational constant),
    `softening` ε [0] (length). Masses and G must be finite and > 0, ε finite and
    >= 0. **State:** `(q, p)`, each shape `(n, d)`: positions
    and momenta. Kepler's problem is the two-body case.

    **Example:**

    ```python
    model = sciad.ode.NBody(masses=jnp.array([1.0, 1e-3]), G=1.0)
    traj = sciad.simulate(model, (q0, p0), dt=1e-3, n_steps=1000, integrator=sciad.Yoshida4())
    ```
    """

    masses: FloatVector = param()
    G: FloatScalar = param(1.0)
    softening: FloatScalar = param(0.0)

    def __check_init__(self):
        if np.ndim(self.masses) != 1 or np.shape(self.masses)[0] == 0:
            raise ValueError(
                f"NBody.masses must have shape (n,) with n >= 1; got shape {np.shape(self.masses)}."
            )
        check_params(self, positive=("masses", "G"), nonnegative=("softening",))

    def potential(self, q: Positions) -> FloatScalar:
        """Gravitational potential energy V(q)."""
        n = self.masses.shape[0]
        dr = q[:, None, :] - q[None, :, :]
        upper = jnp.triu(jnp.ones((n, n), dtype=bool), k=1)
        r = safe_norm(dr, upper)
        r = jnp.sqrt(r**2 + self.softening**2)
        pair = self.G * self.masses[:, None] * self.masses[None, :] / r
        return -jnp.sum(jnp.where(upper, pair, 0.0))

    def velocity(self, t: RealScalarLike, p: State) -> State:
        """dq/dt = p / m."""
        return p / self.masses[:, None]

    def force(self, t: RealScalarLike, q: State) -> State:
        """dp/dt = −∂V/∂q."""
        return -jax.grad(self.potential)(q)

    def energy(self, y: State) -> FloatScalar:
        """Total energy H(q, p)."""
        q, p = y
        return jnp.sum(p**2 / (2 * self.masses[:, None])) + self.potential(q)

    def check_state(self, y: State) -> None:
        """q and p have shape (n, d) with n = len(masses)."""
        n = self.masses.shape[0]
        if isinstance(y, tuple) and len(y) == 2 and (np.ndim(y[0]) != 2 or np.shape(y[0])[0] != n):
            raise ValueError(
                f"y0[0] (q) must have shape (n, d) with n = len(masses) = {n}; "
                f"got shape {np.shape(y[0])}."
            )
        super().check_state(y)


class Kepler(AbstractSeparableModel):
    """Kepler's problem: one body in the field of a fixed centre (the reduced two-body problem).

    H = |p|²/2 − μ/|q|.  Conserves energy, angular momentum and the
    Runge–Lenz vector; bound orbits are closed ellipses of period 2π√(a³/μ).

    **Parameters:** `mu` μ = G(m₁ + m₂) [1] (length³/time²), finite and > 0.
    **State:** `(q, p)`, each shape `(d,)` with d = 2 or 3 (p per unit reduced mass).

    **Example:**

    ```python
    model = sciad.ode.Kepler(mu=1.0)
    y0 = model.initial_state(eccentricity=0.5)
    traj = sciad.simulate(model, y0, dt=1e-3, n_steps=1000, integrator=sciad.Yoshida4())
    ```
    """

    mu: FloatScalar = param(1.0)

    def __check_init__(self):
        check_params(self, positive=("mu",))

    def velocity(self, t: RealScalarLike, p: State) -> State:
        """dq/dt = p."""
        return p

    def force(self, t: RealScalarLike, q: State) -> State:
        """dp/dt = −μ q / |q|³."""
        r = jnp.sqrt(jnp.sum(q**2))
        return -self.mu * q / r**3

    def energy(self, y: State) -> FloatScalar:
        """H = |p|²/2 − μ/|q|."""
        q, p = y
        return 0.5 * jnp.sum(p**2) - self.mu / jnp.sqrt(jnp.sum(q**2))

    def initial_state(
        self, eccentricity: RealScalarLike, semi_major_axis: RealScalarLike = 1.0
    ) -> tuple[FloatVector, FloatVector]:
        """The state at periapsis of the planar orbit with the given shape.

        **Arguments:** `eccentricity` e in [0, 1) (a bound orbit: e >= 1 has no
        periapsis of an ellipse and is refused); `semi_major_axis` a (length), > 0.
        Both are real scalars, checked when concrete.

        **Returns:** `(q, p)` with q = (a(1−e), 0) and p = (0, √(μ(1+e)/(a(1−e)))).
        """
        check_scalar(eccentricity, "Kepler.initial_state eccentricity")
        check_in_range(
            eccentricity, "Kepler.initial_state eccentricity", 0.0, 1.0, closed=(True, False)
        )
        check_scalar(semi_major_axis, "Kepler.initial_state semi_major_axis")
        check_positive(semi_major_axis, "Kepler.initial_state semi_major_axis")
        e = jnp.asarray(eccentricity, dtype=jnp.result_type(self.mu))
        rp = semi_major_axis * (1 - e)
        vp = jnp.sqrt(self.mu * (1 + e) / rp)
        zero = jnp.zeros_like(vp)
        return jnp.stack([rp, zero]), jnp.stack([zero, vp])

    def period(self, semi_major_axis: RealScalarLike = 1.0) -> FloatScalar:
        """Orbital period 2π √(a³/μ) of the bound orbit of semi-major axis a > 0."""
        check_scalar(semi_major_axis, "Kepler.period semi_major_axis")
        check_positive(semi_major_axis, "Kepler.period semi_major_axis")
        return 2 * jnp.pi * jnp.sqrt(semi_major_axis**3 / self.mu)

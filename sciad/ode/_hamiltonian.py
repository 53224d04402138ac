"""Models derived by autodiff from a scalar Hamiltonian or Lagrangian."""

from collections.abc import Callable

import jax
from jax.flatten_util import ravel_pytree
import jax.numpy as jnp

from .._core._model import AbstractModel, AbstractSeparableModel
from .._core._types import FloatScalar, RealScalarLike, State


def _check_callable(model: AbstractModel, name: str, signature: str) -> None:
    """A model's function field must be callable (`TypeError` naming it otherwise)."""
    f = getattr(model, name)
    if not callable(f):
        raise TypeError(f"{type(model).__name__}.{name} must be a function {signature}; got {f!r}.")


class HamiltonianSystem(AbstractModel):
    """Hamilton's equations from a scalar H(q, p), derived by autodiff.

    dq/dt = ∂H/∂p,   dp/dt = −∂H/∂q.

    For a general (non-separable) H, integrate with `sciad.RK4()` or
    `sciad.ode.solve`. For H = T(p) + V(q), use
    [`SeparableHamiltonian`][sciad.ode.SeparableHamiltonian] to get the symplectic
    splitting integrators.

    **Arguments:**

    - `hamiltonian`: `H(q, p) -> scalar`. To make its parameters differentiable
      and visible, make it an Equinox module whose fields are the parameters.

    **State:** `(q, p)`, two PyTrees of the same structure.

    **Example:**

    ```python
    model = sciad.ode.HamiltonianSystem(lambda q, p: 0.5 * p**2 + 0.5 * q**2 + 0.1 * q**2 * p**2)
    traj = sciad.simulate(model, (jnp.array(1.0), jnp.array(0.0)), dt=0.01, n_steps=100)
    ```
    """

    hamiltonian: Callable

    def __check_init__(self):
        _check_callable(self, "hamiltonian", "H(q, p) -> scalar")

    def vector_field(self, t: RealScalarLike, y: State) -> State:
        """(∂H/∂p, −∂H/∂q)."""
        q, p = y
        dq, dp = jax.grad(self.hamiltonian, argnums=(0, 1))(q, p)
        return dp, jax.tree.map(jnp.negative, dq)

    def energy(self, y: State) -> FloatScalar:
        """H(q, p)."""
        return self.hamiltonian(*y)


class SeparableHamiltonian(AbstractSeparableModel):
    """A separable Hamiltonian H = T(p) + V(q), in the split form the symplectic integrators use.

    velocity = ∂T/∂p,   force = −∂V/∂q, both by autodiff.

    **Arguments:**

    - `kinetic`: `T(p) -> scalar`.
    - `potential`: `V(q) -> scalar`. Equinox modules keep their parameters differentiable.

    **State:** `(q, p)`.

    **Example:**

    ```python
    model = sciad.ode.SeparableHamiltonian(lambda p: 0.5 * jnp.sum(p**2),
                                           lambda q: -jnp.sum(jnp.cos(q)))
    traj = sciad.simulate(model, (jnp.array([1.0]), jnp.array([0.0])), dt=0.01,
                          n_steps=100, integrator=sciad.Yoshida4())
    ```
    """

    kinetic: Callable
    potential: Callable

    def __check_init__(self):
        _check_callable(self, "kinetic", "T(p) -> scalar")
        _check_callable(self, "potential", "V(q) -> scalar")

    def velocity(self, t: RealScalarLike, p: State) -> State:
        """∂T/∂p."""
        return jax.grad(self.kinetic)(p)

    def force(self, t: RealScalarLike, q: State) -> State:
        """−∂V/∂q."""
        return jax.tree.map(jnp.negative, jax.grad(self.potential)(q))

    def energy(self, y: State) -> FloatScalar:
        """T(p) + V(q)."""
        q, p = y
        return self.kinetic(p) + self.potential(q)


class LagrangianSystem(AbstractModel):
    """The Euler–Lagrange equations of a scalar L(q, q̇), derived by autodiff.

    d/dt ∂L/∂q̇ = ∂L/∂q  ⇒  q̈ = M⁻¹ (∂L/∂q − (∂²L/∂q̇∂q) q̇),  M = ∂²L/∂q̇².

    M must be invertible (a regular Lagrangian). Reference: Cranmer et al.,
    *Lagrangian Neural Networks* (2020), eq. 6.

    **Arguments:**

    - `lagrangian`: `L(q, qdot) -> scalar`; an Equinox module keeps its parameters
      differentiable.

    **State:** `(q, qdot)`, two PyTrees of the same structure.

    **Example:**

    ```python
    pendulum = sciad.ode.LagrangianSystem(lambda q, v: 0.5 * v**2 + 9.81 * jnp.cos(q))
    traj = sciad.simulate(pendulum, (jnp.array(1.0), jnp.array(0.0)), dt=0.01, n_steps=100)
    ```
    """

    lagrangian: Callable

    def __check_init__(self):
        _check_callable(self, "lagrangian", "L(q, qdot) -> scalar")

    def vector_field(self, t: RealScalarLike, y: State) -> State:
        """(q̇, q̈)."""
        q, v = y
        qf, unravel = ravel_pytree(q)
        vf, _ = ravel_pytree(v)

        def lag(a, b):
            return self.lagrangian(unravel(a), unravel(b))

        dl_dq = jax.grad(lag, argnums=0)(qf, vf)
        mass = jax.hessian(lag, argnums=1)(qf, vf)
        mixed = jax.jacfwd(jax.grad(lag, argnums=1), argnums=0)(qf, vf)
        acc = jnp.linalg.solve(mass, dl_dq - mixed @ vf)
        return v, unravel(acc)

    def energy(self, y: State) -> FloatScalar:
        """The energy function E = q̇·∂L/∂q̇ − L (conserved for time-independent L)."""
        q, v = y
        p = jax.grad(self.lagrangian, argnums=1)(q, v)
        pv = sum(
            jnp.sum(a * b) for a, b in zip(jax.tree.leaves(p), jax.tree.leaves(v), strict=True)
        )
        return pv - self.lagrangian(q, v)

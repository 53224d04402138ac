"""The model interfaces every pillar implements."""

import abc
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._types import Anything, RealScalarLike, State


class AbstractModel(eqx.Module):
    """A dynamical system dy/dt = f(t, y) whose float fields are its parameters.

    Parameters must be JAX arrays (a Python `float` field is static: it gets no
    gradient and `sciad.fit` cannot fit it); `eqx.field(converter=jnp.asarray)`
    converts floats passed to the constructor.
    Subclasses implement [`vector_field`][sciad.AbstractModel.vector_field] and may
    override [`check_state`][sciad.AbstractModel.check_state] to give precise errors
    for a malformed initial state. Set the class variable `stiff = True` on stiff
    systems so that `sciad.ode.solve` picks an implicit solver, and
    `supports_complex = True` on models written for complex states.

    **Example:**

    ```python
    class Decay(sciad.AbstractModel):
        rate: jax.Array = eqx.field(converter=jnp.asarray)  # an array: differentiable

        def vector_field(self, t, y):
            return -self.rate * y

    traj = sciad.simulate(Decay(0.5), jnp.array(1.0), dt=0.01, n_steps=100)
    ```
    """

    stiff: ClassVar[bool] = False
    #: Whether the model's states may be complex. `False` by default: a complex state
    #: would run through real-valued dynamics (and gradients) as if real, so
    #: `simulate` refuses it unless the model sets this to `True`.
    supports_complex: ClassVar[bool] = False

    @abc.abstractmethod
    def vector_field(self, t: RealScalarLike, y: State) -> State:
        """The time derivative dy/dt at time `t` and state `y`.

        **Arguments:**

        - `t`: time (model units), a scalar.
        - `y`: the state, with the structure the model documents.

        **Returns:** a PyTree with the structure, shapes and dtypes of `y`.
        """

    def default_integrator(self) -> Anything:
        """The integrator `sciad.simulate` uses when none is given, or `None` for the
        core default (`VelocityVerlet()` for separable models, else `RK4()`). Models
        whose state lives on a manifold, or whose dynamics needs time stepping
        (contacts), return their own.

        **Returns:** a `sciad.AbstractIntegrator` instance, or `None`.
        """
        return None

    def check_state(self, y: State) -> None:
        """Raise a precise `ValueError` if `y` is not a valid state for this model.

        The default checks that `vector_field` maps `y` to a PyTree of the same
        structure, shapes and dtypes. Models with a fixed layout override this.

        **Arguments:**

        - `y`: a candidate state.

        **Returns:** nothing; raises `ValueError` on a malformed state.
        """
        key = _shape_key((self, y))
        if key is not None and key in _CHECKED:
            return
        try:
            out = jax.eval_shape(lambda yy: self.vector_field(0.0, yy), y)
        except Exception as e:  # the model itself rejects the state
            raise ValueError(f"y0 is not a valid state for {type(self).__name__}: {e}") from e
        want = jax.tree_util.tree_structure(y)
        got = jax.tree_util.tree_structure(out)
        if want != got:
            raise ValueError(
                f"y0 has structure {want}, but {type(self).__name__}.vector_field "
                f"returns structure {got}."
            )
        for a, b in zip(jax.tree_util.tree_leaves(y), jax.tree_util.tree_leaves(out), strict=True):
            if jnp.shape(a) != b.shape:
                raise ValueError(
                    f"y0 leaf has shape {jnp.shape(a)}, but "
                    f"{type(self).__name__}.vector_field returns shape {b.shape}."
                )
        if key is not None:
            if len(_CHECKED) > 4096:
                _CHECKED.clear()
            _CHECKED.add(key)


# Structures already checked by the default `check_state` (its probe traces the vector
# field, which costs about as much as a small jitted run): model structure, static
# fields, and every leaf's shape and dtype.
_CHECKED: set = set()


def _shape_key(tree: Anything) -> Anything:
    """A hashable summary of `tree`'s structure and leaf shapes/dtypes, or None."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    summary = tuple(
        (jnp.shape(x), jnp.result_type(x), getattr(x, "weak_type", False))
        if eqx.is_array_like(x)
        else x
        for x in leaves
    )
    try:
        hash((treedef, summary))
    except TypeError:
        return None
    return treedef, summary


class AbstractSeparableModel(AbstractModel):
    """A system with state `y = (q, p)` and split dynamics dq/dt = v(t, p), dp/dt = F(t, q).

    This is the form the symplectic splitting integrators need: a separable
    Hamiltonian H = T(p) + V(q) gives `velocity = ∂T/∂p` and `force = -∂V/∂q`.

    **Example:**

    ```python
    class Spring(sciad.AbstractSeparableModel):
        k: jax.Array = eqx.field(converter=jnp.asarray)

        def velocity(self, t, p):
            return p

        def force(self, t, q):
            return -self.k * q

    traj = sciad.simulate(Spring(1.0), (jnp.ones(3), jnp.zeros(3)), dt=0.01, n_steps=10,
                          integrator=sciad.VelocityVerlet())
    ```
    """

    @abc.abstractmethod
    def velocity(self, t: RealScalarLike, p: State) -> State:
        """dq/dt as a function of the momenta `p` (same structure as `q`)."""

    @abc.abstractmethod
    def force(self, t: RealScalarLike, q: State) -> State:
        """dp/dt as a function of the positions `q` (same structure as `p`)."""

    def vector_field(self, t: RealScalarLike, y: State) -> State:
        """dy/dt = (velocity(t, p), force(t, q)) for `y = (q, p)`."""
        q, p = y
        return (self.velocity(t, p), self.force(t, q))

    def check_state(self, y: State) -> None:
        """Require `y = (q, p)` with matching structure, then the generic check."""
        if not (isinstance(y, tuple) and len(y) == 2):
            raise ValueError(
                f"y0 for the separable model {type(self).__name__} must be a tuple "
                f"(q, p); got {type(y).__name__}."
            )
        q, p = y
        if jax.tree_util.tree_structure(q) != jax.tree_util.tree_structure(p) or any(
            jnp.shape(a) != jnp.shape(b)
            for a, b in zip(jax.tree_util.tree_leaves(q), jax.tree_util.tree_leaves(p), strict=True)
        ):
            raise ValueError("y0 = (q, p): q and p must have the same structure and shapes.")
        super().check_state(y)


def expect_shape(name: str, x: Anything, shape: tuple[int, ...], layout: str) -> None:
    """Raise `ValueError` unless `x` has exactly `shape` (used by `check_state`)."""
    if np.shape(x) != shape:
        raise ValueError(f"{name} must have shape {shape} ({layout}); got shape {np.shape(x)}.")

"""Energy minimisation of an MD structure, differentiable by the implicit function theorem."""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float
import lineax as lx
import numpy as np
import optimistix as optx

from .._core._results import from_optimistix, raise_on_failure, RESULTS
from .._core._types import FloatScalar, IntScalar, Positions
from .._core._validate import check_finite
from ._fire import FIRE
from ._neighbors import NeighborListBuilder
from ._system import MDSystem, with_neighbors

# The Hessian at a minimum is symmetric positive semidefinite: these tags let a user's
# `optx.ImplicitAdjoint(lx.CG(...))` run; SVD and the other dense solvers ignore them.
_HESSIAN_TAGS = frozenset({lx.symmetric_tag, lx.positive_semidefinite_tag})


class MinimizeResult(eqx.Module):
    """The outcome of [`sciad.md.minimize`][sciad.md.minimize].

    **Fields:**

    - `positions`: shape `(n, d)`, the minimised positions (length units); not wrapped
      into a periodic box (use `system.space.wrap`).
    - `energy`: the potential energy there (energy units).
    - `max_force`: the largest per-particle force norm maxᵢ |Fᵢ| there (energy/length;
      ASE's `fmax`). A convergence diagnostic: it is not differentiated (its derivative
      at a minimum is zero).
    - `num_steps`: the optimiser's steps.
    - `result`: `sciad.RESULTS.successful`, `max_steps_reached`, `nonfinite_state`
      (a non-finite energy, force or position), `neighbor_overflow` (the list built at
      the minimum overflowed), or `optimisation_failed` (another optimiser failure).
    - `stats`: optimistix's statistics (`num_steps`, `max_steps`).

    **Example:**

    ```python
    res = sciad.md.minimize(system, q0)
    res.positions, res.energy, res.max_force, res.result == sciad.RESULTS.successful
    ```
    """

    positions: Positions
    energy: FloatScalar
    max_force: FloatScalar
    num_steps: IntScalar
    result: RESULTS
    stats: dict[str, Any]


def _energy(q: Positions, args: tuple[MDSystem, NeighborListBuilder | None]) -> Array:
    """U(q); with a builder, over a neighbour list built at q (stop-gradient indices)."""
    system, builder = args
    if builder is not None:
        # An overflow is reported in MinimizeResult.result (checked at the minimum).
        system = with_neighbors(system, builder.build(system.space, q), reported=True)
    return system.potential_energy(q)


def _check(system: Any, q0: Any, solver: Any, neighbors: Any, max_steps: Any) -> jax.Array:
    if not isinstance(system, MDSystem):
        raise TypeError(f"system must be a sciad.md.MDSystem; got {type(system).__name__}.")
    if isinstance(solver, type):
        raise TypeError(
            f"solver must be an instance, got the class {solver.__name__}; "
            f"call it, e.g. {solver.__name__}()."
        )
    if not isinstance(solver, optx.AbstractMinimiser):
        raise TypeError(
            "solver must be an optimistix minimiser (sciad.md.FIRE(), optx.BFGS(...), "
            f"optx.NonlinearCG(...), ...); got {solver!r}."
        )
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps must be a positive int, got {max_steps!r}.")
    dtype = jnp.result_type(q0)
    if not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(
            f"q0 has dtype {dtype}; positions must be floating point. "
            "Use e.g. jnp.asarray(q0, dtype=float)."
        )
    q0 = jnp.asarray(q0)
    n = system.masses.shape[0]
    if q0.ndim != 2 or q0.shape[0] != n:
        raise ValueError(
            f"q0 must have shape (n, d) with n = len(masses) = {n}; got {tuple(q0.shape)}."
        )
    space = system.space
    space.check_positions(q0, "q0")
    check_finite(q0, "q0")
    check_finite(system, "system")
    system.check_positions(q0, "q0")
    if neighbors is not None:
        if not isinstance(neighbors, NeighborListBuilder):
            raise TypeError(
                "neighbors must be a sciad.md.NeighborListBuilder (made with "
                f"NeighborListBuilder.create); got {type(neighbors).__name__}."
            )
        if type(space) is not neighbors.space_type:
            raise TypeError(
                f"neighbors was made for {neighbors.space_type.__name__}, "
                f"but the system's space is {type(space).__name__}."
            )
        range_fn = getattr(system.potential, "range", None)
        reach = float(range_fn()) if callable(range_fn) else 0.0  # pyright: ignore[reportArgumentType]
        if neighbors.cutoff < reach:
            raise ValueError(
                f"neighbors.cutoff = {neighbors.cutoff} is below the potential's range "
                f"{reach}; make the builder with cutoff >= the potential's cut-off."
            )
    elif system.neighbors is not None:
        raise ValueError(
            "system carries a fixed neighbour list, which goes stale as particles move; "
            "pass the builder instead: minimize(system, q0, neighbors=builder)."
        )
    return q0


def minimize(
    system: MDSystem,
    q0: Float[ArrayLike, "n d"],
    *,
    solver: optx.AbstractMinimiser = FIRE(),
    neighbors: NeighborListBuilder | None = None,
    max_steps: int = 10_000,
    adjoint: optx.AbstractAdjoint | None = None,
    throw: bool = True,
) -> MinimizeResult:
    """Minimise the potential energy of `system` over the positions, from `q0`.

    The potential energy U(q) is minimised with FIRE (default) or any optimistix
    minimiser (`optx.BFGS`, `optx.NonlinearCG`, ...); the masses and momenta play no
    role. In a periodic box the energy is measured with minimum-image displacements, so
    the positions need not stay in the box (they are not wrapped).

    **Differentiating the minimum.** `jax.grad`, `jax.jvp`, `jax.vmap` and `jax.jit`
    apply. By default, derivatives with respect to the system's parameters (potential
    parameters, the box) come from the implicit function theorem at the minimum,
    H dq* = −∂²U/∂q∂θ dθ, not from the optimiser's iterations. A free cluster's Hessian
    H has six zero modes (rigid translations and rotations; three translations in a
    periodic box), so q*(θ) is only defined up to a rigid motion. The default linear
    solve is the SVD pseudo-inverse with singular values below √ε·σ_max dropped (ε the
    machine epsilon of `q0`'s dtype): it returns the tangent with no rigid-motion
    component, and the threshold also drops the near-zero rotational modes that a
    not-quite-converged minimum leaves (eigenvalues of the order of the residual
    force). Quantities invariant under rigid motions (distances, energies) get their
    true derivatives; the rigid-motion part of dq*/dθ is this gauge choice. The
    pseudo-inverse also drops any genuine mode softer than √ε·σ_max (an ill-conditioned
    minimum). The dense SVD costs O((nd)³): for large systems pass
    `adjoint=optx.ImplicitAdjoint(lx.CG(rtol=..., atol=...))` (the Hessian is tagged
    symmetric positive semidefinite; conjugate gradients from zero stay orthogonal to
    the exact zero modes). Plain `optx.ImplicitAdjoint()` fails on the singular Hessian.

    **Arguments:**

    - `system`: a [`MDSystem`][sciad.md.MDSystem].
    - `q0`: shape `(n, d)`, the starting positions (length units).
    - `solver`: an `optimistix.AbstractMinimiser`; default [`FIRE()`][sciad.md.FIRE].
      Its tolerances set convergence (for FIRE, the largest force component).
    - `neighbors`: optional [`NeighborListBuilder`][sciad.md.NeighborListBuilder] (made
      for the system's space, with `cutoff` ≥ the potential's cut-off). The list is
      rebuilt from scratch at every energy evaluation (an O(N) cell-list build, which
      roughly doubles the cost of an evaluation), so the energy is always the exact
      truncated energy; a list that overflows at the minimum is reported as
      `RESULTS.neighbor_overflow`. Without it, all pairs (O(N²)).
    - `max_steps`: the optimiser's step limit.
    - `adjoint`: how to differentiate: `None` for the implicit pseudo-inverse above
      (`optx.ImplicitAdjoint(lx.SVD(rcond=√ε))`), or any `optimistix.AbstractAdjoint`;
      `optx.RecursiveCheckpointAdjoint()` differentiates through the iterations.
    - `throw`: raise if the result is not `successful`; otherwise see
      `MinimizeResult.result` (under `vmap`, one code per batch element).

    **Returns:** a [`MinimizeResult`][sciad.md.MinimizeResult].

    **Example:**

    ```python
    lj = sciad.md.MDSystem(sciad.md.FreeSpace(), sciad.md.LennardJones(1.0, 1.0),
                           masses=jnp.ones(len(q0)))
    res = sciad.md.minimize(lj, q0, solver=sciad.md.FIRE(atol=1e-8))
    dE_dsigma = jax.grad(lambda s: sciad.md.minimize(
        eqx.tree_at(lambda m: m.potential.sigma, lj, s), s * q0).energy)(1.0)
    ```

    **Reference:** implicit differentiation of optima: B. M. Bell and J. V. Burke,
    "Algorithmic differentiation of implicit functions and optimal values", in
    *Advances in Automatic Differentiation* (Springer 2008); M. Blondel et al.,
    "Efficient and modular implicit differentiation", NeurIPS (2022).
    """
    q0 = _check(system, q0, solver, neighbors, max_steps)
    if not isinstance(throw, bool):
        raise TypeError(f"throw must be a bool, got {throw!r}.")
    if adjoint is None:
        rcond = float(np.sqrt(np.finfo(q0.dtype).eps))
        adjoint = optx.ImplicitAdjoint(lx.SVD(rcond=rcond))
    if not isinstance(adjoint, optx.AbstractAdjoint):
        raise TypeError(
            "adjoint must be an optimistix adjoint (e.g. optx.ImplicitAdjoint(lx.SVD())); "
            f"got {adjoint!r}."
        )
    out = _solve(system, q0, solver, neighbors, max_steps, adjoint)
    return raise_on_failure(out) if throw else out


@eqx.filter_jit
def _solve(
    system: MDSystem,
    q0: Positions,
    solver: optx.AbstractMinimiser,
    neighbors: NeighborListBuilder | None,
    max_steps: int,
    adjoint: optx.AbstractAdjoint,
) -> MinimizeResult:
    """The minimisation and its diagnostics, compiled as one program."""
    args = (system, neighbors)
    sol = optx.minimise(
        _energy,
        solver,
        q0,
        args=args,
        max_steps=max_steps,
        adjoint=adjoint,
        throw=False,
        tags=_HESSIAN_TAGS,
    )
    q = sol.value
    energy, grad = jax.value_and_grad(_energy)(q, args)
    force_sq = jax.lax.stop_gradient(jnp.sum(grad**2, axis=-1))
    max_force = jnp.sqrt(jnp.max(force_sq))
    finite = jnp.isfinite(energy) & jnp.all(jnp.isfinite(force_sq)) & jnp.all(jnp.isfinite(q))
    result = from_optimistix(sol.result)
    result = RESULTS.where(finite, result, RESULTS.nonfinite_state)
    if neighbors is not None:
        overflow = neighbors.build(system.space, q).did_overflow
        result = RESULTS.where(
            overflow & (result == RESULTS.successful), RESULTS.neighbor_overflow, result
        )
    return MinimizeResult(q, energy, max_force, sol.stats["num_steps"], result, sol.stats)


__all__ = ["MinimizeResult", "minimize"]

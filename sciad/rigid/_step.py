"""The constrained velocity update of a `MultiBody`, public as
`MultiBody.constrained_velocity`: the free motion over a step and the converged,
implicitly differentiated solve of its constraint rows (the kernel that
time-stepping integrators call)."""

import jax
import jax.numpy as jnp
import numpy as np

from .._core._types import Anything, RealScalarLike
from ._constraint_solver import (
    contact_terms,
    exact_diagonal,
    pyramid_block,
    scalar_rows,
    ScalarRows,
    solve_contacts,
)
from ._impedance import RowBlock


def _contact_diagonal(mb: Anything, c: Anything, dtype: Anything) -> Anything:
    """MuJoCo's approximate inverse inertia of each contact's rows: the sum of its two
    bodies' translational inverse weights (the world's is 0)."""
    tran = jnp.concatenate([mb.inverse_weights.body_translation.astype(dtype), jnp.zeros(1, dtype)])
    return tran[np.asarray(c.body_a)] + tran[np.asarray(c.body_b)]


def _row_blocks(mb: Anything, f: Anything, q: Anything, v: Anything) -> list[RowBlock]:
    """Every scalar constraint row block of the model but the contacts': hard joint
    limits, and the rows other elements add (`MultiBody._extra_rows`)."""
    blocks = [mb._limits(f)] if mb.limited.size else []
    return blocks + list(mb._extra_rows(f, q, v))


def constrained_velocity(
    mb: Anything,
    t: RealScalarLike,
    dt: RealScalarLike,
    q: Anything,
    v: Anything,
    implicit_damping: bool,
    act: Anything = None,
) -> tuple[Anything, Anything]:
    """v⁺ after a step `dt` from (t, q, v) (and activations `act`) of the `MultiBody`
    `mb`, and whether the solve converged (see `MultiBody.constrained_velocity`)."""
    dt = jnp.asarray(dt)
    f = mb._frames(q, v)
    terms = mb._terms(t, q, v, f, act=act, act_dt=dt)
    m = terms.mass_matrix
    exact = mb.inverse_weights is None
    pyramidal = mb.contact.cone == "pyramidal"
    blocks = _row_blocks(mb, f, q, v)
    # One solve with M for the free motion and, for exact inverse inertias, every
    # constraint row: M⁻¹[f, J_nᵀ, J_Lᵀ].
    rhs = [(terms.applied + terms.gravity - terms.coriolis)[:, None]]
    if mb.pairs:
        c = mb._contacts(f)
        _, jac = mb._contact_jacobian(f, c)
        if exact:
            rhs.append(jac[:, 0, :].T)
    if exact:
        rhs += [b.jac.T for b in blocks if b.diagonal is None]
    sol = jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(m), jnp.concatenate(rhs, axis=1))
    v_free = v + dt * sol[:, 0]
    start = 1
    parts = []
    cone = (jnp.zeros((0, 3, mb.nv), v.dtype), jnp.zeros((0, 3), v.dtype))
    cone += (jnp.zeros(0, v.dtype), jnp.zeros(0, v.dtype))
    if mb.pairs:
        if exact:
            diag = exact_diagonal(jac[:, 0, :], sol[:, start : start + jac.shape[0]])
            start += jac.shape[0]
        else:
            diag = _contact_diagonal(mb, c, v.dtype)
        if pyramidal:
            block, (idx, factor) = pyramid_block(c, jac, mb.contact.impratio)
            rows = scalar_rows(block, v, factor * diag[idx], dt)
            parts.append(rows._replace(inv_r=rows.inv_r * c.weight[idx]))
        else:
            cone = contact_terms(c, jac, diag, v, dt, mb.contact.impratio)
    for b in blocks:
        if b.diagonal is not None:
            diag = b.diagonal
        elif exact:
            diag = exact_diagonal(b.jac, sol[:, start : start + b.jac.shape[0]])
            start += b.jac.shape[0]
        else:
            raise ValueError(
                "a constraint row without an inverse weight in a MultiBody with "
                "inverse_weights; give the element's weight (InverseWeights)."
            )
        parts.append(scalar_rows(b, v, diag, dt))
    # Warm start from the current velocity: the previous step's solution.
    v_plus, ok = solve_contacts(m, v_free, v, *cone, mb.contact, ScalarRows.concatenate(parts, v))
    if implicit_damping:
        # MuJoCo's Euler: the constraint forces from the solve with M, then the damping
        # implicitly, v⁺ = v + (M + h D)⁻¹ h (f + f_c) with h f_c = M (v⁺ − v_free),
        # that is v + (M + h D)⁻¹ M (v⁺ − v).
        # The barrier keeps the factorisation after the Newton loop: two batched LAPACK
        # calls in flight at once can deadlock jaxlib's CPU thread pool (design.md).
        m_damped, rhs = jax.lax.optimization_barrier(
            (m + jnp.diag(dt * terms.damping), m @ (v_plus - v))
        )
        factor = jax.scipy.linalg.cho_factor(m_damped)
        v_plus = v + jax.scipy.linalg.cho_solve(factor, rhs)
    return v_plus, ok

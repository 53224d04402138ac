"""The constrained velocity update of a `MultiBody`, public as
`MultiBody.constrained_velocity`: the free motion over a step and the converged,
implicitly differentiated solve of its contacts and hard limits (the kernel that
time-stepping integrators call)."""

import jax
import jax.numpy as jnp

from .._core._types import Anything, RealScalarLike
from ._constraint_solver import contact_terms, limit_terms, solve_contacts


def constrained_velocity(
    mb: Anything,
    t: RealScalarLike,
    dt: RealScalarLike,
    q: Anything,
    v: Anything,
    implicit_damping: bool,
) -> tuple[Anything, Anything]:
    """v⁺ after a step `dt` from (t, q, v) of the `MultiBody` `mb`, and whether the
    solve converged (see `MultiBody.constrained_velocity`)."""
    dt = jnp.asarray(dt)
    f = mb._frames(q, v)
    terms = mb._terms(t, q, v, f)
    m = terms.mass_matrix
    if implicit_damping:
        m = m + jnp.diag(dt * terms.damping)
    # One solve with M for the free motion and every constraint row, M⁻¹[f, J_nᵀ, J_Lᵀ].
    rhs = [(terms.applied + terms.gravity - terms.coriolis)[:, None]]
    if mb.pairs:
        c = mb._contacts(f)
        _, jac = mb._contact_jacobian(f, c)
        rhs.append(jac[:, 0, :].T)
    if mb.limited.size:
        dist, lim_jac, lim_tau, lim_eps = mb._limits(f)
        rhs.append(lim_jac.T)
    sol = jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(m), jnp.concatenate(rhs, axis=1))
    v_free = v + dt * sol[:, 0]
    if mb.pairs:
        minv_jn = sol[:, 1 : 1 + jac.shape[0]]
        u_ref, inv_r = contact_terms(c, jac, minv_jn, v, dt)
        mu = c.friction
    else:
        jac, u_ref = jnp.zeros((0, 3, mb.nv), v.dtype), jnp.zeros((0, 3), v.dtype)
        inv_r = mu = jnp.zeros(0, v.dtype)
    limits = None
    if mb.limited.size:
        minv_jl = sol[:, sol.shape[1] - lim_jac.shape[0] :]
        limits = (lim_jac, *limit_terms(dist, lim_jac, minv_jl, lim_tau, lim_eps, dt))
    # Warm start from the current velocity: the previous step's solution.
    v, ok = solve_contacts(m, v_free, v, jac, u_ref, inv_r, mu, mb.contact, limits)
    return v, ok

"""The constrained velocity update of a `MultiBody`, public as
`MultiBody.constrained_velocity`: the free motion over a step and the converged,
implicitly differentiated solve of its constraint rows (the kernel that
time-stepping integrators call)."""

import jax
import jax.numpy as jnp
import numpy as np

from .._core._types import Anything, RealScalarLike
from ._collision import mujoco_contact_order
from ._constraint_solver import (
    contact_terms,
    exact_diagonal,
    pyramid_block,
    scalar_rows,
    ScalarRows,
    solve_contacts,
)
from ._impedance import RowBlock
from ._implicit import solve, step_matrix
from ._noslip import noslip, NoslipItems


def _contact_diagonal(mb: Anything, c: Anything, dtype: Anything) -> Anything:
    """MuJoCo's approximate inverse inertia of each contact's rows: the sum of its two
    bodies' translational inverse weights (the world's is 0)."""
    tran = jnp.concatenate([mb.inverse_weights.body_translation.astype(dtype), jnp.zeros(1, dtype)])
    return tran[np.asarray(c.body_a)] + tran[np.asarray(c.body_b)]


def _trees(parents: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """Each body's kinematic tree (MuJoCo's `body_treeid`: the trees are the world's
    children, numbered in body order) and the number of trees."""
    root = np.arange(len(parents))
    for b, p in enumerate(parents):
        if p >= 0:
            root[b] = root[p]  # parents come before their children
    roots, tree = np.unique(root, return_inverse=True)
    return tree.astype(np.int64), len(roots)


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
    implicit: str,
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
    factor = jax.scipy.linalg.cho_factor(m)
    sol = jax.scipy.linalg.cho_solve(factor, jnp.concatenate(rhs, axis=1))
    v_free = v + dt * sol[:, 0]
    start = 1
    parts = []
    slip = []  # noslip's updates, MuJoCo's order: friction losses, then contacts' edges
    cone = (jnp.zeros((0, 3, mb.nv), v.dtype), jnp.zeros((0, 3), v.dtype))
    cone += (jnp.zeros(0, v.dtype), jnp.zeros(0, v.dtype))
    if mb.pairs:
        if exact:
            diag = exact_diagonal(jac[:, 0, :], sol[:, start : start + jac.shape[0]])
            start += jac.shape[0]
        else:
            diag = _contact_diagonal(mb, c, v.dtype)
        if pyramidal:
            block, (idx, weight), edges = pyramid_block(c, jac, mb.contact.impratio)
            rows = scalar_rows(block, v, weight * diag[idx], dt)
            parts.append(rows._replace(inv_r=rows.inv_r * c.weight[idx]))
            if mb.contact.noslip_iterations:
                contact_trees = (c.body_a[idx], c.body_b[idx])
                order = mujoco_contact_order(
                    mb.geoms, mb.geom_body, mb.pairs, len(mb.contact_pairs)
                )
                pairs = edges[order].reshape(-1, 2)
                pairs = pairs[pairs[:, 0] >= 0]
                slip_contacts = NoslipItems(pairs[:, 0], pairs[:, 1], np.ones(len(pairs), bool))
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
        if b.friction:
            k = sum(p.jac.shape[0] for p in parts) + np.arange(b.jac.shape[0])
            slip.append(NoslipItems(k, k, np.zeros(len(k), bool)))
        parts.append(scalar_rows(b, v, diag, dt))
    if mb.pairs and pyramidal and mb.contact.noslip_iterations:
        slip.append(slip_contacts)
    rows = ScalarRows.concatenate(parts, v)
    # Warm start from the current velocity: the previous step's solution.
    v_plus, ok = solve_contacts(m, v_free, v, *cone, mb.contact, rows)
    items = NoslipItems.concatenate(slip)
    if mb.contact.noslip_iterations and len(items.first):
        # The barrier keeps the solve with M after the Newton loop (design.md).
        v_plus, chol = jax.lax.optimization_barrier((v_plus, factor[0]))
        used = np.unique(np.concatenate([items.first, items.second]))
        minv_jt = jax.scipy.linalg.cho_solve((chol, factor[1]), rows.jac[used].T)
        body_tree, n_trees = _trees(mb.parents)
        dof_tree = body_tree[mb.topology.dof_body]
        onehot = np.eye(n_trees, dtype=np.float32)[dof_tree]
        row_trees = (jnp.abs(rows.jac) > 0).astype(jnp.float32) @ onehot > 0
        if mb.pairs and pyramidal:
            # MuJoCo's: a contact's trees are its bodies', whatever its Jacobian
            tree = np.append(body_tree, -1)  # the world (body −1) is in no tree
            ta, tb = (tree[b] for b in contact_trees)
            own = (np.arange(n_trees) == ta[:, None]) | (np.arange(n_trees) == tb[:, None])
            row_trees = row_trees.at[: len(ta)].set(jnp.asarray(own))
        v_plus = noslip(
            v_plus,
            *rows,
            minv_jt,
            row_trees,
            items,
            used,
            dt,
            mb.contact.noslip_iterations,
            mb.contact.noslip_tolerance,
            jnp.diag(m),
            dof_tree,
        )
    if implicit != "none":
        # MuJoCo's Euler and implicit integrators: the constraint forces from the solve
        # with M, then the velocity derivatives D implicitly, v⁺ = v + H⁻¹ h (f + f_c)
        # with H = M − h D and h f_c = M (v⁺ − v_free), that is v + H⁻¹ M (v⁺ − v).
        # The barrier keeps the factorisation after the Newton loop: two batched LAPACK
        # calls in flight at once can deadlock jaxlib's CPU thread pool (design.md).
        h, symmetric = step_matrix(mb, t, q, v, f, terms, dt, implicit, act)
        h, rhs = jax.lax.optimization_barrier((h, m @ (v_plus - v)))
        v_plus = v + solve(h, symmetric, rhs)
    return v_plus, ok

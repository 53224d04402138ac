"""MuJoCo's noslip post-solve (`solNoSlip`): Gauss–Seidel sweeps over the friction
rows after the constraint solve, with the regularisation R removed, so that friction
holds without the soft solve's creep.

The solve's forces γ (impulses over the step) and velocity v⁺ come in; each sweep
visits, in MuJoCo's order, every friction-loss row and then every frictional contact's
pyramid edges in opposing pairs, and minimises ½ δᵀ A δ + δ·r over that row's (pair's)
change δ, where A = J M⁻¹ Jᵀ and r = J v − û is the rows' residual without R. A
friction-loss row is clipped to ±F; an edge pair (J_n + μ J_j, J_n − μ J_j) keeps its
sum (the normal force) and stays non-negative. Each update moves v by M⁻¹ Jᵀ δ. The
sweeps stop after `iterations`, or after the first whose improvement (the objective's
decrease, plus ½ Σ R γ² at the first sweep, over h² in MuJoCo's force units, scaled
by the inverse of the island's summed mass-matrix diagonal) is below `tolerance`.
Everything is MuJoCo's, including its restoring of a pair's forces when a step would
raise the cost by more than 1e-10.

The sweeps are plain array code, so every derivative (reverse, forward, higher
order) differentiates the iteration itself, as for any fixed-iteration method.

Reference: MuJoCo, `engine_solver.c`, `solNoSlip`; MuJoCo documentation, Computation,
"Noslip solver".
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int
import numpy as np

from .._core._types import RealScalarLike
from ._types import MINVAL


class NoslipItems(NamedTuple):
    """The updates of one sweep, in order (static): rows `first`, `second` (N,) of
    the concatenated scalar rows; `paired` (N,) whether the item is a pyramid edge
    pair (`first` the + edge, `second` the − edge) rather than one friction-loss row
    (`second` = `first`)."""

    first: np.ndarray
    second: np.ndarray
    paired: np.ndarray

    @classmethod
    def concatenate(cls, parts: "list[NoslipItems]") -> "NoslipItems":
        cols = zip(*parts, strict=True) if parts else ((), (), ())
        first, second, paired = (np.concatenate([np.zeros(0, int), *c]) for c in cols)
        return cls(first.astype(np.int64), second.astype(np.int64), paired.astype(bool))


def noslip(
    v: Float[Array, " nv"],
    jac: Float[Array, "L nv"],
    ref: Float[Array, " L"],
    inv_r: Float[Array, " L"],
    lower: Float[Array, " L"],
    upper: Float[Array, " L"],
    minv_jt: Float[Array, "nv F"],
    row_trees: Bool[Array, "L T"],
    items: NoslipItems,
    rows: np.ndarray,
    dt: RealScalarLike,
    iterations: int,
    tolerance: float,
    mass_diagonal: Float[Array, " nv"],
    dof_tree: np.ndarray,
) -> Float[Array, " nv"]:
    """v⁺ after MuJoCo's noslip sweeps (module docstring), from the solve's v⁺ `v`
    and its scalar rows (`jac`, reference velocities `ref`, inverse regularisations
    `inv_r`, impulse bounds `lower`, `upper`), with `minv_jt` = M⁻¹ J_Fᵀ for the rows
    `rows` (F,) that the `items` update and each row's kinematic trees `row_trees`
    (L, T), for a step `dt`.

    As MuJoCo's, the sweeps run per constraint island (the trees the active rows
    connect), each island stopping on its own improvement, scaled by 1/Σ M_ii over
    the island's dofs (`mass_diagonal`, `dof_tree` (nv,) static: MuJoCo 4's scale,
    measured against its solver statistics)."""
    dtype = v.dtype
    dt = jnp.asarray(dt, dtype)
    h2 = dt * dt
    gamma = jnp.clip((ref - jac @ v) * inv_r, lower, upper)
    active = inv_r > 0
    island, label = _islands(row_trees & active[:, None])
    n = row_trees.shape[1]
    inertia = jax.ops.segment_sum(mass_diagonal, label[dof_tree], n)
    scale = jnp.where(inertia > 0, 1.0 / jnp.where(inertia > 0, inertia, 1.0), 0.0)
    # ½ Σ R γ²: the cost the solve's regularisation carried (impulse units, × h²)
    soft = jnp.where(active, 0.5 * gamma**2 / jnp.where(active, inv_r, 1.0), 0.0)
    soft = jax.ops.segment_sum(soft, island, n)
    local = np.full(jac.shape[0], -1, np.int64)
    local[rows] = np.arange(len(rows))
    a, b = local[items.first], local[items.second]
    paired = jnp.asarray(items.paired)
    ja, jb, ma, mb = jac[items.first], jac[items.second], minv_jt[:, a].T, minv_jt[:, b].T
    aaa = jnp.sum(ja * ma, axis=1)
    abb = jnp.sum(jb * mb, axis=1)
    aab = jnp.sum(ja * mb, axis=1)
    aba = jnp.sum(jb * ma, axis=1)
    xs = (
        island[items.first],
        paired,
        ja,
        jb,
        ma,
        mb,
        aaa,
        abb,
        aab,
        aba,
        ref[items.first],
        ref[items.second],
        lower[items.first],
        upper[items.first],
    )

    def update(done, carry, x):
        v, improvement = carry
        (isl, pr, ja, jb, ma, mb, aaa, abb, aab, aba, ua, ub, lo, hi), (ga, gb) = x
        ra, rb = ja @ v - ua, jb @ v - ub
        # a friction-loss row: the unconstrained minimum, clipped to its bounds
        diag = jnp.maximum(aaa, MINVAL)
        single = jnp.clip(ga - ra / diag, lo, hi)
        d_single = single - ga
        c_single = 0.5 * d_single**2 * diag + d_single * ra
        # an edge pair: f = (mid + y, mid − y), y minimising the pair's quadratic
        a00, a11 = jnp.maximum(aaa, 1e-10), jnp.maximum(abb, 1e-10)
        b0 = ra - (a00 * ga + aab * gb)
        b1 = rb - (aba * ga + a11 * gb)
        mid = 0.5 * (ga + gb)
        k1 = a00 + a11 - aab - aba
        k0 = mid * (a00 - a11) + b0 - b1
        y = jnp.clip(-k0 / jnp.where(k1 < MINVAL, 1.0, k1), -mid, mid)
        y = jnp.where(k1 < MINVAL, 0.0, y)
        da, db = mid + y - ga, mid - y - gb
        change = 0.5 * (da * (a00 * da + aab * db) + db * (aba * da + a11 * db)) + da * ra + db * rb
        # MuJoCo restores the pair's forces when the step raises its cost
        keep = change > 1e-10 * h2
        da, db = jnp.where(keep, 0.0, da), jnp.where(keep, 0.0, db)
        change = jnp.where(keep, 0.0, change)
        # a finished island's rows stay
        go = (~done[isl]).astype(dtype)
        da = go * jnp.where(pr, da, d_single)
        db = go * jnp.where(pr, db, 0.0)
        change = go * jnp.where(pr, change, c_single)
        v = v + ma * da + mb * db
        return (v, improvement.at[isl].add(-change)), (ga + da, gb + db)

    def sweep(carry, first):
        v, ga, gb, done = carry
        init = (v, jnp.where(first, soft, jnp.zeros_like(soft)))
        step = functools.partial(update, done)
        (v, improvement), (ga, gb) = jax.lax.scan(step, init, (xs, (ga, gb)))
        return (v, ga, gb, done | (improvement / h2 * scale < tolerance)), None

    g_first, g_second = gamma[items.first], gamma[items.second]
    first = jnp.arange(iterations) == 0
    init = (v, g_first, g_second, jnp.zeros(n, bool))
    (v, *_), _ = jax.lax.scan(sweep, init, first)
    return v


def _islands(touch: Bool[Array, "L T"]) -> tuple[Int[Array, " L"], Int[Array, " T"]]:
    """The constraint islands (MuJoCo's `mj_island`) of the rows and of the trees:
    each tree's island is the smallest tree connected to it through the rows `touch`
    marks, a row's its trees' (rows touching no tree get island 0)."""
    n = touch.shape[1]
    t = touch.astype(jnp.float32)
    reach = (t.T @ t > 0) | jnp.eye(n, dtype=bool)
    for _ in range(int(np.ceil(np.log2(max(n, 2))))):
        r = reach.astype(jnp.float32)
        reach = r @ r > 0
    label = jnp.argmax(reach, axis=1)
    return label[jnp.argmax(touch, axis=1)], label

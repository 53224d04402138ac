"""The constraint rows and their solve: contacts and hard limits as one convex,
regularised Coulomb problem, solved by Newton's method and differentiated
implicitly."""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float
import numpy as np

from .._core._batching import compacting_while
from .._core._types import RealScalarLike
from ._collision import Contacts
from ._geom import ContactModel
from ._impedance import row_terms, RowBlock
from ._narrowphase import _unit

# ---------------------------------------------------------------------------------------
# The contact solve.
# ---------------------------------------------------------------------------------------


class _Problem(NamedTuple):
    mass: Array  # (nv, nv) M (+ h D)
    v_free: Array  # (nv,)
    jac: Array  # (C, D, nv), rows scaled to the cone's weighted coordinates
    u_ref: Array  # (C, D)
    inv_r: Array  # (C,) active / R (0 for inactive contacts)
    mu: Array  # (C,)
    row_jac: Array  # (L, nv) the scalar rows: limits, friction losses, pyramid edges
    row_ref: Array  # (L,)
    row_inv_r: Array  # (L,) active / R (0 for inactive rows)
    row_lower: Array  # (L,) the rows' force bounds
    row_upper: Array  # (L,)


class _Cone(NamedTuple):
    """Where y lies relative to K = {(n, t): ‖t‖ ≤ μ n}, per contact."""

    tangent_norm: Array  # ‖t‖
    direction: Array  # t̂ (0 where t = 0)
    inside: Array  # y ∈ K: Π_K(y) = y
    polar: Array  # y in the polar cone: Π_K(y) = 0
    n_star: Array  # Π_K(y)'s normal part on the boundary, (n + μ‖t‖)/(1 + μ²)


def _cone(y: Array, mu: Array) -> _Cone:
    yn, yt = y[..., 0], y[..., 1:]
    s, direction = _unit(yt, jnp.zeros_like(yt))
    # yn ≥ 0 matters only for μ = 0, where ‖t‖ ≤ μ yn would admit (yn < 0, t = 0).
    inside = (s <= mu * yn) & (yn >= 0)
    return _Cone(s, direction, inside, mu * s <= -yn, (yn + mu * s) / (1.0 + mu**2))


def _cone_projection(y: Array, mu: Array) -> Array:
    """Π_K(y) for K = {(n, t): ‖t‖ ≤ μ n}, per contact: y (..., D), μ (...)."""
    c = _cone(y, mu)
    boundary = jnp.concatenate([c.n_star[..., None], (mu * c.n_star)[..., None] * c.direction], -1)
    return jnp.where(c.inside[..., None], y, jnp.where(c.polar[..., None], 0.0, boundary))


def _cone_jacobian(y: Array, mu: Array) -> Array:
    """∂Π_K/∂y (..., D, D): the identity inside K, zero in its polar cone, and on the
    boundary, where Π_K(y) = n* (1, μ t̂) with n* = (n + μ‖t‖)/(1 + μ²),
    u uᵀ/(1 + μ²) + (μ n*/‖t‖) (0 ⊕ (I − t̂ t̂ᵀ)) with u = (1, μ t̂)."""
    c = _cone(y, mu)
    d = c.direction
    u = jnp.concatenate([jnp.ones_like(c.n_star)[..., None], mu[..., None] * d], -1)
    # ‖t‖ > 0 on the boundary; elsewhere 1, so that the unused branch stays finite.
    curvature = mu * c.n_star / jnp.where(c.inside | c.polar, 1.0, c.tangent_norm)
    k = y.shape[-1]
    eye2 = jnp.broadcast_to(jnp.eye(k - 1, dtype=y.dtype), d.shape + (k - 1,))
    across = (
        jnp.zeros(y.shape + (k,), y.dtype)
        .at[..., 1:, 1:]
        .set(eye2 - d[..., :, None] * d[..., None, :])
    )
    boundary = u[..., :, None] * u[..., None, :] / (1.0 + mu**2)[..., None, None]
    boundary = boundary + curvature[..., None, None] * across
    eye = jnp.broadcast_to(jnp.eye(k, dtype=y.dtype), boundary.shape)
    return jnp.where(
        c.inside[..., None, None], eye, jnp.where(c.polar[..., None, None], 0.0, boundary)
    )


class _Rows(NamedTuple):
    """The constraint residuals at v: contacts' y = û − J v (C, D) and Π_K(y), the
    scalar rows' z = û_L − J_L v (L,)."""

    y: Array
    proj: Array
    z: Array


def _rows(v: Array, p: _Problem) -> _Rows:
    y = p.u_ref - jnp.einsum("cij,j->ci", p.jac, v)
    return _Rows(y, _cone_projection(y, p.mu), p.row_ref - p.row_jac @ v)


def _interval(z: Array, p: _Problem) -> tuple[Array, Array]:
    """The scalar rows' forces γ = clip(z/R, lower, upper) and penalties
    φ(z) = γ z − R γ²/2 (the Moreau envelope of the bounds: z²/(2R) where the bounds
    do not bind, linear beyond; zero for inactive rows, 1/R = 0)."""
    gamma = jnp.clip(z * p.row_inv_r, p.row_lower, p.row_upper)
    active = p.row_inv_r > 0
    r = 1.0 / jnp.where(active, p.row_inv_r, 1.0)
    return gamma, jnp.where(active, gamma * z - 0.5 * r * gamma**2, 0.0)


def _penalty(r: _Rows, p: _Problem) -> Array:
    """Σ_c ‖Π_K(y_c)‖²/(2R_c) + Σ_l φ_l(z_l)."""
    contacts = jnp.sum(p.inv_r * jnp.sum(r.proj**2, axis=-1))
    return 0.5 * contacts + jnp.sum(_interval(r.z, p)[1])


def _gradient(v: Array, p: _Problem) -> tuple[Array, _Rows]:
    """∇ℓ(v) = M (v − v_free) − Jᵀ γ − J_Lᵀ γ_L, with γ = Π_K(y)/R and γ_L the
    scalar rows' forces."""
    r = _rows(v, p)
    g = p.mass @ (v - p.v_free) - jnp.einsum("cij,ci->j", p.jac, p.inv_r[:, None] * r.proj)
    return g - p.row_jac.T @ _interval(r.z, p)[0], r


def _cost(v: Array, p: _Problem) -> Array:
    dv = v - p.v_free
    return 0.5 * dv @ (p.mass @ dv) + _penalty(_rows(v, p), p)


def _newton_step(v: Array, p: _Problem) -> tuple[Array, Array, Array, _Rows]:
    """The full Newton step at v, dv = −H⁻¹∇ℓ with
    H = M + Jᵀ (∂Π_K/R) J + J_Lᵀ diag([bounds free]/R_L) J_L, and the Hessian's (upper)
    Cholesky factor, ∇ℓ(v) and the residuals."""
    g, r = _gradient(v, p)
    curv = p.inv_r[:, None, None] * _cone_jacobian(r.y, p.mu)
    h = p.mass + jnp.einsum("cji,cjk,ckl->il", p.jac, curv, p.jac)
    zr = r.z * p.row_inv_r
    free = (zr > p.row_lower) & (zr < p.row_upper)
    h = h + p.row_jac.T @ (jnp.where(free, p.row_inv_r, 0.0)[:, None] * p.row_jac)
    factor = jax.scipy.linalg.cho_factor(h)[0]
    return -jax.scipy.linalg.cho_solve((factor, False), g), factor, g, r


_STEPS = 2.0 ** -np.arange(12)  # backtracking line-search step lengths


def _scale(p: _Problem) -> Array:
    return jnp.maximum(jnp.max(jnp.abs(p.v_free)), 1.0)


def _newton(p: _Problem, v0: Array, max_iterations: int, tol: float) -> tuple[Array, ...]:
    """Minimise ℓ by Newton's method with a backtracking (Armijo) line search, until the
    full Newton step at the iterate (its error) is below `tol` (relative). Returns the
    iterate after that full step, the Cholesky factor of the Hessian it was taken with,
    and whether the test was met. Along the step, ℓ(v + α dv) needs only the scalars
    aᵀMa, aᵀM dv, dvᵀM dv (a = v − v_free) and y − α J dv: one product with J for all
    trial lengths α (and with J_L for the scalar rows)."""

    def cond(p, carry):
        _, _, it, done = carry
        return (~done) & (it < max_iterations)

    def body(p, carry):
        v, _, it, _ = carry
        alphas = jnp.asarray(_STEPS, v.dtype)
        dv, factor, g, r = _newton_step(v, p)
        a = v - p.v_free
        ma, md = p.mass @ a, p.mass @ dv
        f0 = 0.5 * a @ ma + _penalty(r, p)
        w = jnp.einsum("cij,j->ci", p.jac, dv)
        trial_proj = _cone_projection(r.y[None] - alphas[:, None, None] * w[None], p.mu[None])
        trial_z = r.z[None] - alphas[:, None] * (p.row_jac @ dv)[None]
        trial = (
            0.5 * a @ ma
            + alphas * (a @ md)
            + 0.5 * alphas**2 * (dv @ md)
            + 0.5 * jnp.sum(p.inv_r[None] * jnp.sum(trial_proj**2, axis=-1), axis=-1)
            + jnp.sum(jax.vmap(lambda z: _interval(z, p)[1])(trial_z), axis=-1)
        )
        ok = trial <= f0 + 1e-4 * alphas * (g @ dv)
        done = jnp.max(jnp.abs(dv)) <= tol * _scale(p)
        # Converged: take the full step (the line search's test is round-off there).
        k = jnp.where(done, 0, jnp.where(jnp.any(ok), jnp.argmax(ok), jnp.argmin(trial)))
        return v + alphas[k] * dv, factor, it + 1, done

    nv = v0.shape[-1]
    init = (v0, jnp.zeros((nv, nv), v0.dtype), jnp.asarray(0), jnp.asarray(False))
    # Under vmap only worlds still iterating take Newton steps, a quarter of the batch
    # at a time, instead of the whole batch waiting for the slowest world.
    v, factor, _, done = compacting_while(cond, body, p, init)
    return v, factor, done


@functools.partial(jax.custom_jvp, nondiff_argnums=(2, 3))
def _solve(p: _Problem, v_start: Array, max_iterations: int, tol: float) -> tuple[Array, Array]:
    """The minimiser v* of ℓ and whether Newton converged, differentiated implicitly
    (the rule below). The iterations run on data without derivatives; the value ends
    with one more Newton step, taken with the last step's factor and the data live. It
    moves v by O(tol²), and its first derivative is the implicit one. That matters
    inside a `lax.scan` (a simulation): reverse mode's first pass computes the value by
    this body, not the rule, so reverse over reverse differentiates the body; without
    the step its second derivatives would be silently wrong (tested)."""
    sp = jax.lax.stop_gradient(p)
    v, factor, done = _newton(sp, v_start, max_iterations, tol)
    v = v - jax.scipy.linalg.cho_solve((factor, False), _gradient(v, p)[0])
    return v, done


@_solve.defjvp
def _solve_jvp(max_iterations, tol, primals, tangents):
    # At the minimiser ∇ℓ(v*; θ) = 0, so dv* = −H⁻¹ ∂θ∇ℓ · dθ (implicit function
    # theorem), with H factored afresh at v*. The rule calls `_solve` for v*, so
    # differentiating the rule again differentiates v* implicitly too.
    p, v_start = primals
    v, ok = _solve(p, v_start, max_iterations, tol)
    dg = jax.jvp(lambda q: _gradient(v, q)[0], (p,), (tangents[0],))[1]
    dv = -jax.scipy.linalg.cho_solve((_newton_step(v, p)[1], False), dg)
    return (v, ok), (dv, np.zeros(jnp.shape(ok), jax.dtypes.float0))


class ScalarRows(NamedTuple):
    """The scalar rows of a solve: Jacobian (L, nv), reference velocities û (L,),
    inverse regularisations 1/R (L,; zero for inactive rows) and force bounds (L,)."""

    jac: Array
    ref: Array
    inv_r: Array
    lower: Array
    upper: Array

    @classmethod
    def empty(cls, v: Array) -> "ScalarRows":
        none = jnp.zeros(0, v.dtype)
        return cls(jnp.zeros((0,) + v.shape, v.dtype), none, none, none, none)

    @classmethod
    def concatenate(cls, parts: "list[ScalarRows]", v: Array) -> "ScalarRows":
        if not parts:
            return cls.empty(v)
        return cls(*(jnp.concatenate(x) for x in zip(*parts, strict=True)))


def solve_contacts(
    mass: Float[Array, "nv nv"],
    v_free: Float[Array, " nv"],
    v_start: Float[Array, " nv"],
    jac: Float[Array, "C D nv"],
    u_ref: Float[Array, "C D"],
    inv_r: Float[Array, " C"],
    mu: Float[Array, " C"],
    model: ContactModel,
    rows: ScalarRows | None = None,
) -> tuple[Float[Array, " nv"], Array]:
    """The post-constraint velocity v⁺ (the minimiser of ℓ) and whether the solve
    converged. Newton starts from `v_start` or `v_free`, whichever costs less (warm
    start, as MuJoCo's: the previous step's solution is usually close). The contacts'
    cone rows are (`jac`, `u_ref`, `inv_r`, `mu`); `rows` the scalar rows (limits,
    friction losses, pyramid edges: `scalar_rows`)."""
    if rows is None:
        rows = ScalarRows.empty(v_free)
    p = _Problem(mass, v_free, jac, u_ref, inv_r, mu, *rows)
    v_start = jax.lax.stop_gradient(v_start)
    sp = jax.lax.stop_gradient(p)
    v_start = jnp.where(_cost(v_start, sp) < _cost(sp.v_free, sp), v_start, sp.v_free)
    tol = max(model.tolerance, 100 * float(jnp.finfo(v_free.dtype).eps))
    return _solve(p, v_start, model.max_iterations, tol)


def exact_diagonal(rows: Float[Array, "K nv"], minv_rows_t: Float[Array, "nv K"]) -> Array:
    """The rows' exact inverse inertia (J M⁻¹ Jᵀ)_kk (MuJoCo's `diagexact`)."""
    return jnp.einsum("kv,vk->k", rows, minv_rows_t)


def _movable(diagonal: Array) -> Array:
    """Rows some degree of freedom can move: J M⁻¹ Jᵀ above round-off of the largest.
    A row no dof moves (a sphere on a floor with no vertical dof) cannot act, and is
    dropped rather than given R = 0."""
    scale = jnp.max(jnp.abs(diagonal), initial=0.0)
    return diagonal > jnp.finfo(diagonal.dtype).eps * scale


def scalar_rows(block: RowBlock, v: Array, diagonal: Array, dt: RealScalarLike) -> ScalarRows:
    """The solve's form of a `RowBlock`, with the rows' inverse inertia `diagonal`
    (the block's own, else the exact one): MuJoCo's reference û and regularisation R
    (`row_terms`); rows that do not act get 1/R = 0. The solve's γ is an impulse,
    so the block's force bounds are scaled by `dt`."""
    u = block.jac @ v
    ref, r = row_terms(
        block.impedance, block.violation, u, diagonal, dt, friction=block.friction, at=block.at
    )
    if block.bias is not None:
        ref = ref - jnp.asarray(dt, ref.dtype) * block.bias
    active = block.active & _movable(diagonal)
    inv_r = jnp.where(active, 1.0 / jnp.where(active, r, 1.0), 0.0)
    dt = jnp.asarray(dt, ref.dtype)
    return ScalarRows(block.jac, ref, inv_r, dt * block.lower, dt * block.upper)


# MuJoCo's mjMINMU: the smallest friction coefficient of a frictional contact.
_MIN_MU = 1e-5


def contact_terms(
    c: Contacts,
    jac: Float[Array, "C D nv"],
    diagonal: Float[Array, " C"],
    v: Float[Array, " nv"],
    dt: RealScalarLike,
    impratio: float,
) -> tuple[Float[Array, "C D nv"], Float[Array, "C D"], Float[Array, " C"], Float[Array, " C"]]:
    """The elliptic cone rows of the contacts for a step `dt`, in the form the solve
    takes them (`solve_contacts`): the Jacobian and reference velocities û (MuJoCo's,
    `row_terms`: the normal's from the distance, the friction rows' damped only, with
    the pair's `friction_reference` where it sets one) with
    each friction row j scaled by √(R_n/R_j), the inverse regularisations 1/R_n of the
    normals (zero for contacts that do not touch; R_n from the normal's inverse
    inertia `diagonal`) and the cone slopes μ.

    MuJoCo's elliptic cone (`mj_makeImpedance`, `mj_constraintUpdate`) gives friction
    row j (coefficient f_j among the contact's (f_s, f_s, f_torsion, f_roll, f_roll),
    each at least mjMINMU = 1e-5) R_j = R_n f_s²/(impratio f_j²) and costs
    ½‖Π_K(z)‖²/R_n, with z_j = √(R_n/R_j) y_j = √impratio (f_j/f_s) y_j and
    K = {‖z_t‖ ≤ μ z_n}, μ = f_s/√impratio: the cone ‖(f_j γ_j)‖ ≤ γ_n on the forces. A
    contact with restitution e > 0 keeps at least −e u⁻ of its approach velocity u⁻
    (Newton's law)."""
    u = jnp.einsum("cij,j->ci", jac, v)
    u_n, r = row_terms(c.impedance, c.dist, u[:, 0], diagonal, dt)
    bounce = jnp.maximum(u_n, -c.restitution * u[:, 0])
    u_n = jnp.where(c.restitution > 0, bounce, u_n)
    # MuJoCo's solreffriction, where a pair sets one, replaces the friction rows' solref
    own = jnp.any(c.friction_reference != 0, axis=1, keepdims=True)
    imp_f = c.impedance.at[:, :2].set(jnp.where(own, c.friction_reference, c.impedance[:, :2]))
    tangent = jax.vmap(
        lambda ut: row_terms(imp_f, jnp.zeros_like(c.dist), ut, diagonal, dt, friction=True)[0],
        in_axes=1,
        out_axes=1,
    )(u[:, 1:])
    active = (c.dist < 0) & _movable(diagonal)
    inv_r = jnp.where(active, c.weight / jnp.where(active, r, 1.0), 0.0)
    u_ref = jnp.concatenate([u_n[:, None], tangent], axis=1)
    d = jac.shape[1]
    fr = jnp.asarray(c.frictional)
    f = jnp.where(fr[:, None], jnp.maximum(c.friction, _MIN_MU), 0.0)
    root = float(np.sqrt(impratio))
    if d == 3 and impratio == 1:
        return jac, u_ref, inv_r, f[:, 0]  # the weights are 1
    # frictionless contacts (dim 1) keep weight 1: their cone (μ = 0) ignores the rows
    ratio = jnp.where(fr[:, None], root * f[:, : d - 1] / jnp.where(fr, f[:, 0], 1.0)[:, None], 1.0)
    scale = jnp.concatenate([jnp.ones_like(ratio[:, :1]), ratio], axis=1)
    return jac * scale[:, :, None], u_ref * scale, inv_r, f[:, 0] / root


def pyramid_block(
    c: Contacts, jac: Float[Array, "C D nv"], impratio: RealScalarLike
) -> tuple[RowBlock, tuple[np.ndarray, Float[Array, " K"]], np.ndarray]:
    """MuJoCo's pyramidal friction cone as scalar rows: a frictional contact of dim
    k has 2(k − 1) edges J_n ± f_j J_j (j = 1 … k − 1, f_j its friction coefficients,
    each at least mjMINMU = 1e-5, as MuJoCo's), each with force ≥ 0 and the contact's
    distance, a frictionless one a normal row; each row's factor on the normal's
    inverse inertia giving MuJoCo's R (2 f_s²(1 + f_s²)/impratio for edges, 1 for
    normals); and (static) each contact's opposing edge pairs (C, D − 1, 2), the rows
    of J_n + f_j J_j and J_n − f_j J_j (−1 past the contact's dim)."""
    rows, idx, factor = [], [], []
    edges = np.full((len(c.dim), max(c.rows - 1, 1), 2), -1, np.int64)
    n = 0
    for k in sorted(set(c.dim.tolist())):
        e = np.nonzero(c.dim == k)[0]
        if k == 1:
            rows.append(jac[e, 0])
            idx.append(e)
            factor.append(jnp.ones(len(e), jac.dtype))
            n += len(e)
            continue
        f = jnp.maximum(c.friction[e], _MIN_MU)
        rows += [
            jac[e, 0] + sign * f[:, j - 1, None] * jac[e, j]
            for j in range(1, k)
            for sign in (1.0, -1.0)
        ]
        for j in range(1, k):
            for s in range(2):
                edges[e, j - 1, s] = n + (2 * (j - 1) + s) * len(e) + np.arange(len(e))
        n += 2 * (k - 1) * len(e)
        idx.append(np.tile(e, 2 * (k - 1)))
        mu = f[:, 0]
        factor.append(jnp.tile(2 * mu**2 * (1 + mu**2) / impratio, 2 * (k - 1)))
    jacs, ids, factors = jnp.concatenate(rows), np.concatenate(idx), jnp.concatenate(factor)
    zero = jnp.zeros(len(ids), jac.dtype)
    block = RowBlock(
        c.dist[ids], jacs, c.impedance[ids], None, zero, zero + jnp.inf, c.dist[ids] < 0, False
    )
    return block, (ids, factors), edges


def body_jacobians(
    anc: np.ndarray, dof_body: np.ndarray, subspace: Float[Array, "nv 6"]
) -> Float[Array, "n 6 nv"]:
    """d(body spatial velocity)/dv (n, 6, nv): dof k moves body i when body(k) is i
    or one of its ancestors."""
    mask = jnp.asarray(anc[:, dof_body], subspace.dtype)  # (n, nv)
    return mask[:, None, :] * subspace.T[None]

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
from ._geom import ContactModel, safe_time_constant
from ._narrowphase import _unit

# ---------------------------------------------------------------------------------------
# The contact solve.
# ---------------------------------------------------------------------------------------


class _Problem(NamedTuple):
    mass: Array  # (nv, nv) M (+ h D)
    v_free: Array  # (nv,)
    jac: Array  # (C, 3, nv)
    u_ref: Array  # (C, 3)
    inv_r: Array  # (C,) active / R (0 for inactive contacts)
    mu: Array  # (C,)
    lim_jac: Array  # (L, nv) the hard joint limits' rows
    lim_ref: Array  # (L,)
    lim_inv_r: Array  # (L,)


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
    """Π_K(y) for K = {(n, t): ‖t‖ ≤ μ n}, per contact: y (..., 3), μ (...)."""
    c = _cone(y, mu)
    boundary = jnp.concatenate([c.n_star[..., None], (mu * c.n_star)[..., None] * c.direction], -1)
    return jnp.where(c.inside[..., None], y, jnp.where(c.polar[..., None], 0.0, boundary))


def _cone_jacobian(y: Array, mu: Array) -> Array:
    """∂Π_K/∂y (..., 3, 3): the identity inside K, zero in its polar cone, and on the
    boundary, where Π_K(y) = n* (1, μ t̂) with n* = (n + μ‖t‖)/(1 + μ²),
    u uᵀ/(1 + μ²) + (μ n*/‖t‖) (0 ⊕ (I − t̂ t̂ᵀ)) with u = (1, μ t̂)."""
    c = _cone(y, mu)
    d = c.direction
    u = jnp.concatenate([jnp.ones_like(c.n_star)[..., None], mu[..., None] * d], -1)
    # ‖t‖ > 0 on the boundary; elsewhere 1, so that the unused branch stays finite.
    curvature = mu * c.n_star / jnp.where(c.inside | c.polar, 1.0, c.tangent_norm)
    eye2 = jnp.broadcast_to(jnp.eye(2, dtype=y.dtype), d.shape + (2,))
    across = (
        jnp.zeros(y.shape + (3,), y.dtype)
        .at[..., 1:, 1:]
        .set(eye2 - d[..., :, None] * d[..., None, :])
    )
    boundary = u[..., :, None] * u[..., None, :] / (1.0 + mu**2)[..., None, None]
    boundary = boundary + curvature[..., None, None] * across
    eye = jnp.broadcast_to(jnp.eye(3, dtype=y.dtype), boundary.shape)
    return jnp.where(
        c.inside[..., None, None], eye, jnp.where(c.polar[..., None, None], 0.0, boundary)
    )


class _Rows(NamedTuple):
    """The constraint residuals at v: contacts' y = û − J v (C, 3) and Π_K(y), hard
    limits' z = û_L − J_L v (L,) (their projection on [0, ∞) is max(z, 0))."""

    y: Array
    proj: Array
    z: Array


def _rows(v: Array, p: _Problem) -> _Rows:
    y = p.u_ref - jnp.einsum("cij,j->ci", p.jac, v)
    return _Rows(y, _cone_projection(y, p.mu), p.lim_ref - p.lim_jac @ v)


def _penalty(r: _Rows, p: _Problem) -> Array:
    """Σ_c ‖Π_K(y_c)‖²/(2R_c) + Σ_l max(z_l, 0)²/(2R_l)."""
    contacts = jnp.sum(p.inv_r * jnp.sum(r.proj**2, axis=-1))
    return 0.5 * (contacts + jnp.sum(p.lim_inv_r * jnp.maximum(r.z, 0.0) ** 2))


def _gradient(v: Array, p: _Problem) -> tuple[Array, _Rows]:
    """∇ℓ(v) = M (v − v_free) − Jᵀ γ − J_Lᵀ γ_L, with γ = Π_K(y)/R and
    γ_L = max(z, 0)/R_L."""
    r = _rows(v, p)
    g = p.mass @ (v - p.v_free) - jnp.einsum("cij,ci->j", p.jac, p.inv_r[:, None] * r.proj)
    return g - p.lim_jac.T @ (p.lim_inv_r * jnp.maximum(r.z, 0.0)), r


def _cost(v: Array, p: _Problem) -> Array:
    dv = v - p.v_free
    return 0.5 * dv @ (p.mass @ dv) + _penalty(_rows(v, p), p)


def _newton_step(v: Array, p: _Problem) -> tuple[Array, Array, Array, _Rows]:
    """The full Newton step at v, dv = −H⁻¹∇ℓ with
    H = M + Jᵀ (∂Π_K/R) J + J_Lᵀ diag([z > 0]/R_L) J_L, and the Hessian's (upper)
    Cholesky factor, ∇ℓ(v) and the residuals."""
    g, r = _gradient(v, p)
    curv = p.inv_r[:, None, None] * _cone_jacobian(r.y, p.mu)
    h = p.mass + jnp.einsum("cji,cjk,ckl->il", p.jac, curv, p.jac)
    h = h + p.lim_jac.T @ (jnp.where(r.z > 0, p.lim_inv_r, 0.0)[:, None] * p.lim_jac)
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
    trial lengths α (and with J_L for the limits)."""

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
        trial_z = jnp.maximum(r.z[None] - alphas[:, None] * (p.lim_jac @ dv)[None], 0.0)
        trial = (
            0.5 * a @ ma
            + alphas * (a @ md)
            + 0.5 * alphas**2 * (dv @ md)
            + 0.5 * jnp.sum(p.inv_r[None] * jnp.sum(trial_proj**2, axis=-1), axis=-1)
            + 0.5 * jnp.sum(p.lim_inv_r[None] * trial_z**2, axis=-1)
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


def solve_contacts(
    mass: Float[Array, "nv nv"],
    v_free: Float[Array, " nv"],
    v_start: Float[Array, " nv"],
    jac: Float[Array, "C 3 nv"],
    u_ref: Float[Array, "C 3"],
    inv_r: Float[Array, " C"],
    mu: Float[Array, " C"],
    model: ContactModel,
    limits: tuple[Float[Array, "L nv"], Float[Array, " L"], Float[Array, " L"]] | None = None,
) -> tuple[Float[Array, " nv"], Array]:
    """The post-contact velocity v⁺ (the minimiser of ℓ) and whether the solve
    converged. Newton starts from `v_start` or `v_free`, whichever costs less (warm
    start, as MuJoCo's: the previous step's solution is usually close). `limits`:
    the hard joint limits' rows J_L, references û_L and 1/R_L (see `limit_terms`)."""
    if limits is None:
        none = jnp.zeros(0, v_free.dtype)
        limits = (jnp.zeros((0,) + v_free.shape, v_free.dtype), none, none)
    p = _Problem(mass, v_free, jac, u_ref, inv_r, mu, *limits)
    v_start = jax.lax.stop_gradient(v_start)
    sp = jax.lax.stop_gradient(p)
    v_start = jnp.where(_cost(v_start, sp) < _cost(sp.v_free, sp), v_start, sp.v_free)
    tol = max(model.tolerance, 100 * float(jnp.finfo(v_free.dtype).eps))
    return _solve(p, v_start, model.max_iterations, tol)


def contact_terms(
    c: Contacts,
    jac: Float[Array, "C 3 nv"],
    minv_jt: Float[Array, "nv C"],
    v: Float[Array, " nv"],
    dt: RealScalarLike,
) -> tuple[Float[Array, "C 3"], Float[Array, " C"]]:
    """The reference velocities û (C, 3) and the inverse regularisations 1/R (C,)
    (zero for contacts that do not touch) for a step `dt`, with each contact's time
    constant (at least two steps) and softness. `minv_jt` is M⁻¹ J_nᵀ for the normal
    rows."""
    u_pre = jnp.einsum("cij,j->ci", jac, v)
    push = -c.dist / safe_time_constant(c.time_constant, dt)
    bounce = -c.restitution * u_pre[:, 0]
    slip, _ = _unit(u_pre[:, 1:], jnp.zeros_like(u_pre[:, 1:]))
    # De Saxcé's correction, with the slip before the step: the convex model would
    # otherwise lift a sliding contact at normal speed μ|u_t|.
    u_n = jnp.maximum(push, bounce) - c.friction * slip
    u_ref = jnp.stack([u_n, jnp.zeros_like(u_n), jnp.zeros_like(u_n)], axis=-1)
    return u_ref, _inverse_regularisation(c.dist < 0, jac[:, 0, :], minv_jt, c.softness, c.weight)


def _inverse_regularisation(
    active: Array, rows: Array, minv_rows_t: Array, softness: Array, weight: Array | float
) -> Array:
    """1/R = weight / (ε J M⁻¹ Jᵀ) per constraint row (rows (K, nv), M⁻¹ Jᵀ (nv, K);
    ε a scalar or per row), zero where it does not act. A row that does not act may
    be zero (a ball joint's limit at θ = 0): double where. A row that no degree of
    freedom can move (J M⁻¹ Jᵀ = 0: a sphere on a floor with no vertical dof, say)
    cannot act either, and is dropped rather than divided by zero: its contact then
    carries no friction (MuJoCo's would, from the normal force its reference sets)."""
    w = jnp.einsum("kv,vk->k", rows, minv_rows_t)
    scale = jnp.max(jnp.abs(w), initial=0.0)
    active = active & (w > jnp.finfo(w.dtype).eps * scale)
    w = jnp.where(active, w, 1.0)
    return jnp.where(active, weight / (softness * w), 0.0)


def limit_terms(
    dist: Float[Array, " L"],
    lim_jac: Float[Array, "L nv"],
    minv_jt: Float[Array, "nv L"],
    time_constant: Float[Array, " L"],
    softness: Float[Array, " L"],
    dt: RealScalarLike,
) -> tuple[Float[Array, " L"], Float[Array, " L"]]:
    """The hard joint limits' reference velocities û_L = −r/τ (τ per limit, at least
    two steps `dt`: `safe_time_constant`) and inverse regularisations
    1/R_L = 1/(ε J_L M⁻¹ J_Lᵀ) (ε per limit; zero for limits that hold, r ≥ 0): the
    contacts' normal rows without restitution or friction. `minv_jt` is M⁻¹ J_Lᵀ."""
    inv_r = _inverse_regularisation(dist < 0, lim_jac, minv_jt, softness, 1.0)
    return -dist / safe_time_constant(time_constant, dt), inv_r


def body_jacobians(
    anc: np.ndarray, dof_body: np.ndarray, subspace: Float[Array, "nv 6"]
) -> Float[Array, "n 6 nv"]:
    """d(body spatial velocity)/dv (n, 6, nv): dof k moves body i when body(k) is i
    or one of its ancestors."""
    mask = jnp.asarray(anc[:, dof_body], subspace.dtype)  # (n, nv)
    return mask[:, None, :] * subspace.T[None]

"""`sciad.fit`: fit a model's parameters to data with optimistix."""

from collections.abc import Callable
from typing import Any
import warnings

import equinox as eqx
import jax
from jax.flatten_util import ravel_pytree
import jax.numpy as jnp
from jaxtyping import Array
import numpy as np
import optimistix as optx

from .._core._results import from_optimistix, raise_on_failure
from .._core._types import PyTree
from .._core._validate import check_finite, check_int, check_positive, is_concrete
from ._identifiability import identifiability, parameter_names
from ._result import FitResult


def free_mask(
    model: PyTree, spec: Any, name: str, default: Callable, owner: str = "model"
) -> PyTree:
    """A boolean PyTree over `model`'s leaves from a selector function, a filter spec, or
    None (`default` of each leaf); `owner` names `model` in messages."""
    if spec is None:
        return jax.tree.map(default, model)
    if callable(spec) and not isinstance(spec, type(model)):
        base = jax.tree.map(lambda _: False, model)
        try:
            return eqx.tree_at(spec, base, replace_fn=lambda _: True)
        except Exception as e:
            example = "lambda m: (m.length, m.damping)" if owner == "model" else 'lambda h: h["a"]'
            raise ValueError(
                f"{name} must select leaves of the {owner}, e.g. {example}; selecting failed: {e}"
            ) from e
    if jax.tree.structure(spec) != jax.tree.structure(model):
        raise ValueError(
            f"{name} must be a selector function or a PyTree of bools with the {owner}'s structure."
        )
    return spec


def check_free(model: PyTree, free: PyTree, positive: PyTree, owner: str, verb: str) -> None:
    """Check the `free` and `positive` masks over `model` (named `owner`): some free leaf
    is a float array, every free leaf is a real float array, and every positive leaf is
    free and starts > 0."""
    leaves = jax.tree_util.tree_flatten_with_path(model)[0]
    free_leaves = jax.tree.leaves(free)
    pos_leaves = jax.tree.leaves(positive)
    if not any(
        f and eqx.is_inexact_array(x) for (_, x), f in zip(leaves, free_leaves, strict=True)
    ):
        raise ValueError(
            f"{owner} has no free float parameters to {verb}: every parameter must be a "
            "floating-point JAX array (not an int, a Python float, or frozen by `free`)."
        )
    for (path, x), f, pos in zip(leaves, free_leaves, pos_leaves, strict=True):
        where = owner + jax.tree_util.keystr(path)
        if f and not eqx.is_inexact_array(x):
            raise ValueError(f"{where} is selected as free but is not a float array.")
        if f and jnp.iscomplexobj(x):
            raise TypeError(
                f"{where} is complex; {verb} its real and imaginary parts as two real parameters."
            )
        if pos and not f:
            raise ValueError(f"{where} is marked positive but is not free.")
        if pos and is_concrete(x) and not np.all(np.asarray(x) > 0):
            raise ValueError(f"{where} is marked positive, so it must start > 0; got {x}.")


def progress_hook(label: str = "fit") -> Callable[..., None]:
    """An optimistix `verbose` hook printing one line per optimiser step, as `label step`.

    It prints the loss evaluated on each step and the best loss so far (tracked on
    the host, so optimistix's placeholder state before the first step never shows).
    """
    state = {"step": 0, "best": float("inf")}

    def show(loss):
        state["step"] += 1
        state["best"] = min(state["best"], float(loss))
        print(
            f"  {label} step {state['step']:4d}   loss {float(loss):.6e}   best {state['best']:.6e}",
            flush=True,
        )

    def verbose(**kwargs):
        if "loss_this_step" in kwargs:
            jax.debug.callback(show, kwargs["loss_this_step"][1], ordered=True)

    return verbose


def fit(
    model: PyTree,
    loss: Callable[[PyTree, Any], PyTree],
    data: Any = None,
    *,
    solver: optx.AbstractLeastSquaresSolver | optx.AbstractMinimiser | None = None,
    free: Any = None,
    positive: Any = None,
    sigma: Any = None,
    absolute_sigma: bool = False,
    max_steps: int = 256,
    throw: bool = True,
    progress: bool = False,
    adjoint: optx.AbstractAdjoint = optx.ImplicitAdjoint(),
    check_rank: bool = True,
) -> FitResult:
    """Fit the float parameters of `model` to minimise `loss(model, data)`.

    With a least-squares solver (default `optx.LevenbergMarquardt(1e-8, 1e-8)`),
    `loss` returns residuals (any PyTree of arrays) and ½Σr² is minimised. With a
    minimiser (e.g. `optx.BFGS`), `loss` returns a scalar (or residuals, reduced
    to ½Σr²). `jax.grad` of the fitted parameters with respect to `data` (which may
    also carry hyperparameters) is by implicit differentiation (`adjoint`).

    **Arguments:**

    - `model`: an Equinox module (any sciad model); its inexact-array leaves are
      the parameters.
    - `loss`: `loss(model, data) -> residuals or scalar`.
    - `data`: anything the loss needs: observations, times, hyperparameters.
    - `solver`: an optimistix least-squares solver or minimiser.
    - `free`: which parameters to fit: a selector `lambda m: (m.a, m.b)` or a
      PyTree of bools like `model`. Default: every float array leaf; the rest
      stay frozen.
    - `positive`: parameters that must stay positive, as a selector or a PyTree of
      bools like `free`; they are fitted as log p, so p = exp(θ) > 0 always. Their
      initial values must be > 0.
    - `sigma`: the standard deviations of the residuals (per observation), as in
      `scipy.optimize.curve_fit`: the fit minimises ½Σ(r/σ)². One number for all
      residuals, or a PyTree with the residuals' structure whose leaves are each a
      number or an array of that residual leaf's shape; finite and > 0. Not for a
      scalar loss. Default: no weighting (σ = 1).
    - `absolute_sigma`: `True` if `sigma` are the residuals' true standard deviations
      (or the residuals are already divided by them): the covariance is (JᵀJ)⁻¹.
      `False` (default) takes `sigma` as relative weights and scales the covariance
      by s² = Σ(r/σ)²/(m − n), `curve_fit`'s default.
    - `max_steps`: the optimiser's step limit.
    - `throw`: raise if the optimiser fails; otherwise see `FitResult.result`.
    - `progress`: print one line per optimiser step (sets the solver's `verbose`).
    - `adjoint`: how to differentiate the fit (default implicit differentiation).
    - `check_rank`: compute the Jacobian of the residuals with respect to the free
      parameters at the solution and its SVD (`FitResult.identifiability`); costs one
      Jacobian (forward mode for least squares when there are at least as many
      residuals as parameters, else reverse mode), from which the covariance and
      standard errors come. Not for a scalar loss.

    **Returns:** a [`sciad.FitResult`][sciad.FitResult]; `print` it for a report.

    **Uncertainties:** for residuals, `FitResult.covariance` is s²(JᵀJ)⁻¹ with J the
    Jacobian of the residuals (divided by `sigma`) with respect to the free
    parameters at the solution and s² = Σ(r/σ)²/(m − n) for m residuals and n free
    parameters, or (JᵀJ)⁻¹ with `absolute_sigma=True`: the Gauss–Newton
    (linearised) covariance that `scipy.optimize.curve_fit` returns. It is computed
    from the SVD in `FitResult.identifiability` as a pseudo-inverse; a parameter the
    data do not determine gets an infinite standard error (and `nan` covariances),
    never a finite number, and if m ≤ n (and `absolute_sigma=False`) s² and the
    covariance are `inf`. A scalar loss has no covariance (`None`): its scale as a
    log-likelihood is unknown. See
    [Uncertainties](../fitting.md#uncertainties-covariance-and-standard-errors).

    **Checks:** before solving, the residuals' shapes are compared with the data's
    (by `jax.eval_shape`): a residual that is an observation array broadcast into an
    outer difference, such as predictions of shape `(n, 1)` minus observations of
    shape `(n,)` giving `(n, n)`, is refused with a `ValueError`. After solving, a
    rank-deficient Jacobian (parameters the data cannot tell apart, like a
    pendulum's length and gravity, of which only g/L is observed) sets
    `FitResult.rank_deficient` and, outside `jit`/`vmap`, warns with a `UserWarning`
    naming the parameters involved.

    **Differentiating a fit:** `jax.grad`, `jax.jvp` and second derivatives of the
    fitted parameters with respect to `data` work through `adjoint` (the implicit
    function theorem at the optimum). The fitted parameters do not depend on the
    initial values of the free parameters, so their gradient there is zero;
    frozen parameters are inputs of the problem and get true gradients.

    **Example:**

    ```python
    def residuals(model, data):
        ts, observed = data
        traj = sciad.simulate(model, y0, n_steps=1000, dt=0.01, saveat=sciad.SaveAt(steps=10))
        return traj.ys[:, 0] - observed

    res = sciad.fit(sciad.ode.Pendulum(length=0.8, damping=0.05), residuals, (ts, obs),
                    free=lambda m: (m.length, m.damping),
                    positive=lambda m: (m.length, m.damping))
    ```
    """
    if not isinstance(model, eqx.Module):
        raise TypeError(f"model must be an Equinox module; got {type(model).__name__}.")
    if not callable(loss):
        raise TypeError(f"loss must be callable as loss(model, data); got {loss!r}.")
    check_finite(model, "model")
    free_m = free_mask(model, free, "free", eqx.is_inexact_array)
    pos_m = free_mask(model, positive, "positive", lambda _: False)
    check_free(model, free_m, pos_m, "model", "fit")
    check_int(max_steps, "max_steps", minimum=1)
    flags = (throw, "throw"), (progress, "progress"), (check_rank, "check_rank")
    for flag, name in (*flags, (absolute_sigma, "absolute_sigma")):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be True or False; got {flag!r}.")
    if not isinstance(adjoint, optx.AbstractAdjoint):
        raise TypeError(
            f"adjoint must be an optimistix adjoint (e.g. optx.ImplicitAdjoint()); got {adjoint!r}."
        )

    if solver is None:
        solver = optx.LevenbergMarquardt(rtol=1e-8, atol=1e-8)
    least_squares = isinstance(solver, optx.AbstractLeastSquaresSolver)
    if not (least_squares or isinstance(solver, optx.AbstractMinimiser)):
        raise TypeError(
            "solver must be an optimistix least-squares solver (e.g. "
            "optx.LevenbergMarquardt) or minimiser (e.g. optx.BFGS); "
            f"got {solver!r}."
        )
    if progress:
        if not hasattr(solver, "verbose"):
            raise ValueError(f"{type(solver).__name__} has no `verbose` hook for progress.")
        solver = eqx.tree_at(lambda s: s.verbose, solver, progress_hook())

    params, static = eqx.partition(model, free_m)
    is_pos = eqx.filter(pos_m, free_m)  # None where frozen, like `params`
    theta0 = jax.tree.map(lambda x, s: jnp.log(x) if s else x, params, is_pos)
    try:
        out = eqx.filter_eval_shape(_residuals, theta0, (loss, static, is_pos, data, None))
    except (TypeError, ValueError) as e:  # the user's loss fails on these inputs
        raise type(e)(f"loss(model, data) fails before any fitting: {e}") from e
    scalar_loss = _check_residuals(out, data)
    if least_squares and scalar_loss:
        raise ValueError(
            "loss returned a scalar, but least-squares solvers need the residuals: "
            "return the vector of residuals, or pass a minimiser such as "
            "optx.BFGS(rtol=1e-8, atol=1e-8)."
        )
    if scalar_loss and (sigma is not None or absolute_sigma):
        raise ValueError(
            "sigma and absolute_sigma weight residuals and scale their covariance, but "
            "loss returned a scalar: return the residuals to use them."
        )
    if absolute_sigma and not check_rank:
        raise ValueError(
            "absolute_sigma only affects the covariance, which check_rank=False skips."
        )
    sigma = _check_sigma(sigma, out)
    # Module-level objective functions (not fresh closures) keep optimistix's
    # compiled solve cached across calls with the same `loss`.
    args = (loss, static, is_pos, data, sigma)
    kw = dict(args=args, max_steps=max_steps, throw=False, adjoint=adjoint)
    if least_squares:
        sol = optx.least_squares(_residuals, solver, theta0, **kw)  # pyright: ignore
    else:
        sol = optx.minimise(_scalar, solver, theta0, **kw)  # pyright: ignore
    result = from_optimistix(sol.result)
    final = _scalar(sol.value, args)
    fitted = to_model(sol.value, static, is_pos)
    p = eqx.filter(fitted, free_m)
    n = sum(np.size(x) for x in jax.tree.leaves(p))
    m = sum(int(np.prod(x.shape)) for x in jax.tree.leaves(out))
    ident = cov = errors = s2 = None
    if not scalar_loss:
        inf = jnp.asarray(jnp.inf, final.dtype)
        s2 = jax.lax.stop_gradient(2 * final / (m - n)) if m > n else inf
    if check_rank and s2 is not None:
        ident = identifiability(
            _residuals_p, p, (loss, static, data, sigma), least_squares and m >= n
        )
        if is_concrete(ident.deficient) and bool(ident.deficient):
            warnings.warn("sciad.fit: " + ident.describe(), UserWarning, stacklevel=2)
        cov = ident.covariance(1.0 if absolute_sigma else s2)
        errors = ravel_pytree(p)[1](jnp.sqrt(jnp.diagonal(cov)))
    free_leaves = tuple(bool(f) for f in jax.tree.leaves(free_m))
    out = FitResult(
        model=fitted,
        loss=final,
        num_steps=sol.stats["num_steps"],
        result=result,
        stats=sol.stats,
        identifiability=ident,
        covariance=cov,
        standard_errors=errors,
        residual_variance=s2,
        names=parameter_names(p),
        absolute_sigma=absolute_sigma,
        free=free_leaves,
    )
    return raise_on_failure(out) if throw else out


def _check_sigma(sigma: Any, out: PyTree) -> PyTree:
    """`sigma` as a PyTree with the residuals' structure (`out`, from `eval_shape`),
    each leaf a scalar or an array of its residual's shape, finite and > 0 (checked
    now if concrete, else by `eqx.error_if` when the fit runs)."""
    if sigma is None:
        return None
    if not isinstance(sigma, (list, tuple, dict, eqx.Module)) and np.ndim(sigma) == 0:
        sigma = jax.tree.map(lambda _: sigma, out)
    if jax.tree.structure(sigma) != jax.tree.structure(out):
        raise ValueError(
            "sigma must be one number or a PyTree with the residuals' structure "
            f"{jax.tree.structure(out)}; got {jax.tree.structure(sigma)}."
        )
    paths = jax.tree_util.tree_flatten_with_path(out)[0]
    checked = []
    for (path, r), s in zip(paths, jax.tree.leaves(sigma), strict=True):
        where = "sigma" + jax.tree_util.keystr(path)
        check_positive(s, where, shape=() if np.ndim(s) == 0 else r.shape)
        if isinstance(s, jax.Array) and s.dtype != r.dtype:
            raise TypeError(
                f"{where} has dtype {s.dtype} but the residual it divides has {r.dtype}."
            )
        s = jnp.asarray(s, r.dtype)  # Python and NumPy numbers take the residuals' dtype
        if not is_concrete(s):  # traced: checked when it runs
            s = eqx.error_if(s, ~(jnp.isfinite(s) & (s > 0)), f"{where} must be finite and > 0.")
        checked.append(s)
    return jax.tree.unflatten(jax.tree.structure(out), checked)


def to_model(theta: PyTree, static: PyTree, is_pos: PyTree) -> PyTree:
    """The model from optimiser coordinates: positive parameters are exp(θ)."""
    p = jax.tree.map(lambda x, s: jnp.exp(x) if s else x, theta, is_pos)
    return eqx.combine(p, static)


def _residuals(theta: PyTree, args: Any) -> PyTree:
    loss, static, is_pos, data, sigma = args
    return _weighted(loss(to_model(theta, static, is_pos), data), sigma)


def _residuals_p(p: PyTree, args: Any) -> PyTree:
    """The residuals as a function of the free parameters themselves (not log p)."""
    loss, static, data, sigma = args
    return _weighted(loss(eqx.combine(p, static), data), sigma)


def _weighted(r: PyTree, sigma: PyTree) -> PyTree:
    """The residuals divided by their standard deviations (unchanged if `sigma` is None)."""
    return r if sigma is None else jax.tree.map(jnp.divide, r, sigma)


def _check_residuals(out: PyTree, data: Any) -> bool:
    """Check the residuals' shapes (from `eval_shape`) against the data's, before
    solving; return whether the loss is a scalar.

    Residuals must be floating point and non-empty. A residual leaf that no data leaf
    matches in shape, but into which a data leaf broadcasts by gaining an axis as long
    as one of its own (shape (n,) into (n, n)), is the outer difference of an (n, 1)
    prediction and (n,) observations (or the reverse), and is refused.
    """
    leaves = jax.tree_util.tree_flatten_with_path(out)[0]
    if not leaves:
        raise ValueError("loss returned no residuals (an empty PyTree).")
    for path, r in leaves:
        where = "loss(model, data)" + jax.tree_util.keystr(path)
        if not jnp.issubdtype(r.dtype, jnp.floating):
            raise TypeError(
                f"{where} has dtype {r.dtype}; residuals must be real floating point "
                "(return complex residuals as their real and imaginary parts)."
            )
        if int(np.prod(r.shape)) == 0:
            raise ValueError(f"{where} is empty (shape {r.shape}); there is nothing to fit.")
    if len(leaves) == 1 and leaves[0][1].shape == ():
        return True
    shaped = [
        (p, tuple(np.shape(x)))
        for p, x in jax.tree_util.tree_flatten_with_path(data)[0]
        if hasattr(x, "shape") and np.size(x) > 1
    ]
    shapes = {s for _, s in shaped}
    for path, r in leaves:
        if r.shape in shapes:
            continue
        found = [(len(d), i) for i, (_, d) in enumerate(shaped) if _outer_broadcast(d, r.shape)]
        if found:  # name the likeliest observations: the most axes, the last such leaf
            dpath, d = shaped[max(found)[1]]
            dname = "data" + jax.tree_util.keystr(dpath)
            where = "loss(model, data)" + jax.tree_util.keystr(path)
            raise ValueError(
                f"{where} has shape {r.shape}, which is {dname} (shape {d}) broadcast "
                f"into an outer difference: the prediction and the observations differ "
                f"in shape (e.g. ({d[0]}, 1) against ({d[0]},)), so every prediction is "
                "compared with every observation. Give them the same shape (e.g. "
                "prediction[:, 0] or prediction.reshape(observed.shape))."
            )
    return False


def _outer_broadcast(d: tuple[int, ...], r: tuple[int, ...]) -> bool:
    """Whether `d` broadcasts into `r` by gaining an axis as long as one of its own."""
    if len(d) > len(r):
        return False
    try:
        if np.broadcast_shapes(d, r) != r:
            return False
    except ValueError:
        return False
    padded = (1,) * (len(r) - len(d)) + d
    own = {a for a in padded if a > 1}
    gained = {b for a, b in zip(padded, r, strict=True) if a == 1 and b > 1}
    return bool(own & gained)


def _scalar(theta: PyTree, args: Any) -> Array:
    return _half_sum_squares(_residuals(theta, args))


def _half_sum_squares(r: PyTree) -> Array:
    leaves = jax.tree.leaves(r)
    if len(leaves) == 1 and leaves[0].shape == ():
        return leaves[0]
    return 0.5 * jnp.sum(jnp.stack([jnp.sum(x**2) for x in leaves]))

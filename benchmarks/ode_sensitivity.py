"""Error-controlled forward sensitivities vs the default adjoint of `sciad.ode.solve`.

Issue 21, point 2: ∂x(T)/∂μ of the Van der Pol oscillator (μ = 1000, y0 = (2, 0),
T = 3000, stiff: Kvaerno5 + PID controller) at rtol = atol = 1e-8, float64:

1. the default adjoint (`diffrax.RecursiveCheckpointAdjoint`, reverse mode through the
   discrete solve, whose steps are chosen for the state only);
2. `adjoint=sciad.ode.ForwardSensitivity(wrt=μ only)`: the sensitivity equations
   solved with the state, inside the error norm;
3. the reference: `ForwardSensitivity` at rtol = atol = 1e-12, cross-checked against
   scipy's `solve_ivp` (Radau, analytic Jacobian) on the augmented system (x, v, ∂x/∂μ,
   ∂v/∂μ) at rtol = 1e-12, atol = 1e-14.

For each: the derivative, its relative error against the reference, the number of
accepted steps, the relative error of the state x(T) itself ("x error"), and the time
of a jitted `jax.grad` (compiled first; minimum over
`--repeats` runs, since other processes share the CPU; also the process CPU time).
The default adjoint is also run at rtol = atol = 1e-10 and 1e-11, to show what
tolerance it needs for the derivative accuracy `ForwardSensitivity` gives at 1e-8.
Prints the ratio of the errors (default / ForwardSensitivity) and of the times.

Run:  .venv/bin/python benchmarks/ode_sensitivity.py           (the issue's case)
      .venv/bin/python benchmarks/ode_sensitivity.py --quick   (μ = 10, T = 10; smoke test)
"""

import argparse
import time

from _common import machine
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import scipy.integrate

import sciad


def scipy_sensitivity(mu: float, y0: np.ndarray, t1: float) -> float:
    """∂x(t1)/∂μ from scipy Radau on the state and its μ-sensitivity, rtol 1e-12."""

    def f(t, z):
        x, v, sx, sv = z
        dv = mu * (1 - x * x) * v - x
        dsv = (-2 * mu * x * v - 1) * sx + mu * (1 - x * x) * sv + (1 - x * x) * v
        return [v, dv, sv, dsv]

    def jac(t, z):
        x, v, sx, sv = z
        a = -2 * mu * x * v - 1
        b = mu * (1 - x * x)
        return [
            [0, 1, 0, 0],
            [a, b, 0, 0],
            [0, 0, 0, 1],
            [-2 * mu * v * sx - 2 * mu * x * sv - 2 * x * v, -2 * mu * x * sx + 1 - x * x, a, b],
        ]

    z0 = [float(y0[0]), float(y0[1]), 0.0, 0.0]
    sol = scipy.integrate.solve_ivp(
        f, (0.0, t1), z0, method="Radau", jac=jac, rtol=1e-12, atol=1e-14
    )
    assert sol.success, sol.message
    return float(sol.y[2, -1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help="μ = 10, T = 10, no extra tolerances: a smoke test"
    )
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    mu, t1 = (10.0, 10.0) if a.quick else (1000.0, 3000.0)
    if a.quick:
        a.repeats = 1
    rtol = 1e-8
    y0 = jnp.array([2.0, 0.0])
    print(machine())
    print(
        f"VanDerPol(mu={mu}), y0=(2, 0), d x({t1}) / d mu, Kvaerno5 + PID, "
        f"rtol = atol = {rtol}, float64"
    )
    no_params = jax.tree.map(lambda _: False, sciad.ode.VanDerPol(mu=mu))
    spec = (eqx.tree_at(lambda m: m.mu, no_params, True), False)
    fs = sciad.ode.ForwardSensitivity(wrt=spec)

    def x_end(m, tol, adjoint):
        traj = sciad.ode.solve(
            sciad.ode.VanDerPol(mu=m),
            y0,
            jnp.array([0.0, t1]),
            rtol=tol,
            atol=tol,
            stiff=True,
            adjoint=adjoint,
            max_steps=1_000_000,
        )
        x = traj.ys[-1, 0]
        return x, (traj.stats["num_accepted_steps"], x)

    rows = []
    variants = [
        ("default adjoint", rtol, None, a.repeats),
        ("ForwardSensitivity", rtol, fs, a.repeats),
        ("default adjoint, 1e-10", 1e-10, None, 1),
        ("default adjoint, 1e-11", 1e-11, None, 1),
        ("reference (FS, 1e-12)", 1e-12, fs, 1),
    ]
    if a.quick:  # the tighter default-adjoint rows only repeat a compiled code path
        variants = [v for v in variants if not v[0].startswith("default adjoint, ")]
    for label, tol, adjoint, repeats in variants:
        grad = jax.jit(jax.grad(lambda m, tol=tol, adj=adjoint: x_end(m, tol, adj), has_aux=True))
        m0 = jnp.asarray(mu)
        t = time.perf_counter()
        d, (steps, x) = jax.block_until_ready(grad(m0))
        compile_s = time.perf_counter() - t
        best, best_cpu = np.inf, np.inf
        for _ in range(repeats):
            t, c = time.perf_counter(), time.process_time()
            jax.block_until_ready(grad(m0))
            best = min(best, time.perf_counter() - t)
            best_cpu = min(best_cpu, time.process_time() - c)
        rows.append((label, float(d), int(steps), best, best_cpu, compile_s, float(x)))

    ref, x_ref = rows[-1][1], rows[-1][6]
    t = time.perf_counter()
    ref_scipy = scipy_sensitivity(mu, np.asarray(y0), t1)
    scipy_s = time.perf_counter() - t
    print(
        f"{'':24s} {'dx/dmu':>22s} {'rel. error':>11s} {'x error':>9s} {'steps':>8s} "
        f"{'grad s':>8s} {'CPU s':>8s} {'1st call s':>10s}"
    )
    for label, d, steps, best, best_cpu, compile_s, x in rows:
        print(
            f"{label:24s} {d:22.15e} {abs(d - ref) / abs(ref):11.2e} "
            f"{abs(x - x_ref) / abs(x_ref):9.2e} {steps:8d} {best:8.3f} {best_cpu:8.3f} "
            f"{compile_s:10.1f}"
        )
    print(
        f"{'scipy Radau 1e-12':24s} {ref_scipy:22.15e} "
        f"{abs(ref_scipy - ref) / abs(ref):11.2e} {'':9s} {'':8s} {scipy_s:8.1f}"
    )
    err_default = abs(rows[0][1] - ref)
    err_fs = abs(rows[1][1] - ref)
    print(
        f"error ratio default / ForwardSensitivity = {err_default / err_fs:.1f}; "
        f"time ratio ForwardSensitivity / default = {rows[1][3] / rows[0][3]:.2f} "
        f"(CPU {rows[1][4] / rows[0][4]:.2f})"
    )


if __name__ == "__main__":
    main()

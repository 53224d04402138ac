"""Stiff solves: diffrax's implicit solvers and step-size controllers vs scipy (issue 21.3).

Solves the classical stiff test problems (Van der Pol μ = 1000, Robertson to t = 1e11,
HIRES, the Oregonator and the pollution problem POLL; `tests/stiff_problems.py`) with
`sciad.ode.solve` under several solver/controller configurations, and with
`scipy.integrate.solve_ivp` (Radau, BDF, LSODA, given the exact Jacobian) at the same
nominal rtol and atol = scale · rtol. For each it prints the accepted and rejected steps,
the vector-field evaluations where the solver reports them, the wall and CPU time of the
compiled call (each the minimum over `--repeats` runs) and the mixed relative error at
the final time against the reference, and the ratios of CPU time and error to scipy
Radau's at the same tolerance. A work-precision summary follows: per configuration and
tolerance, the geometric means over the problems of those two ratios and of the step
attempts relative to the old default (Kvaerno5 with diffrax's I controller).

    .venv/bin/python benchmarks/stiff.py                 # all problems, rtol 1e-4, 1e-6, 1e-8
    .venv/bin/python benchmarks/stiff.py --quick         # HIRES at 1e-6, Radau, default, old
    .venv/bin/python benchmarks/stiff.py --problems vdp hires --rtols 1e-6 --configs default "K5 I (old)"
"""

import argparse
from collections.abc import Callable
import os
from pathlib import Path
import sys
import time
from typing import Any

import jax

jax.config.update("jax_enable_x64", True)

from _common import machine  # noqa: E402
import diffrax  # noqa: E402
import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optimistix as optx  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import sciad  # noqa: E402
from tests.stiff_problems import PROBLEMS, StiffProblem  # noqa: E402


def _pid(pcoeff: float, icoeff: float, norm: Callable = optx.rms_norm) -> Callable:
    def make(rtol, atol):
        return diffrax.PIDController(rtol=rtol, atol=atol, pcoeff=pcoeff, icoeff=icoeff, norm=norm)

    return make


def _scaled(make: Callable, factor: float) -> Callable:
    """The same controller at tolerances tightened by `factor` internally."""
    return lambda rtol, atol: make(rtol * factor, atol * factor)


# name -> (solver, controller from (rtol, atol)); `None` controller = sciad's default.
CONFIGS: dict[str, tuple[Any, Callable | None]] = {
    "default": (None, None),
    "K5 I (old)": (diffrax.Kvaerno5(), _pid(0.0, 1.0)),
    "K5 PI.3/.4": (diffrax.Kvaerno5(), _pid(0.3, 0.4)),
    "K5 PI.2/.4": (diffrax.Kvaerno5(), _pid(0.2, 0.4)),
    "K5 PI.3/.3": (diffrax.Kvaerno5(), _pid(0.3, 0.3)),
    "K5 PI.2/.3": (diffrax.Kvaerno5(), _pid(0.2, 0.3)),
    "K5 PI max-norm": (diffrax.Kvaerno5(), _pid(0.4, 0.3, optx.max_norm)),
    "K5 PI tol/10": (diffrax.Kvaerno5(), _scaled(_pid(0.4, 0.3), 0.1)),
    "K4 PI": (diffrax.Kvaerno4(), _pid(0.4, 0.3)),
    "K3 PI": (diffrax.Kvaerno3(), _pid(0.4, 0.3)),
    "K3 I": (diffrax.Kvaerno3(), _pid(0.0, 1.0)),
}
# The configurations run by default; the others (`--configs ...`) were explored too.
DEFAULT_CONFIGS = (
    "default",
    "K5 I (old)",
    "K5 PI.3/.4",
    "K5 PI.3/.3",
    "K5 PI max-norm",
    "K5 PI tol/10",
    "K4 PI",
    "K3 PI",
)
SCIPY = ("Radau", "BDF", "LSODA")


def _timed(fn: Callable, repeats: int) -> tuple[Any, float, float]:
    """`fn()`, its wall time and the process CPU time, each the minimum over `repeats`.

    The CPU time is what the ratios use: it is far less sensitive than the wall time to
    the other processes on a shared machine (both sides here run on one core)."""
    out, wall, cpu = None, float("inf"), float("inf")
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        jax.block_until_ready(out)
        wall = min(wall, time.perf_counter() - w)
        cpu = min(cpu, time.process_time() - c)
    return out, wall, cpu


def run_sciad(p: StiffProblem, config: str, rtol: float, repeats: int) -> dict:
    """One configuration on one problem: steps, compiled time (min of `repeats`), error."""
    solver, make = CONFIGS[config]

    @eqx.filter_jit
    def go(model, y0, rtol, atol):
        kw: dict[str, Any] = dict(
            t0=0.0, t1=p.t1, saveat=diffrax.SaveAt(t1=True), max_steps=200_000, throw=False
        )
        if make is None:
            kw.update(rtol=rtol, atol=atol, stiff=True)
        else:
            kw.update(solver=solver, stepsize_controller=make(rtol, atol))
        traj = sciad.ode.solve(model, y0, **kw)
        return traj.y1, traj.stats, traj.result

    args = (p.model, jnp.asarray(p.y0), jnp.asarray(rtol), jnp.asarray(rtol * p.scale))
    jax.block_until_ready(go(*args))  # compile
    (y1, stats, result), wall, cpu = _timed(lambda: go(*args), repeats)
    ok = bool(result == sciad.RESULTS.successful)
    return dict(
        steps=int(stats["num_accepted_steps"]),
        rejected=int(stats["num_rejected_steps"]),
        nfev=None,
        wall=wall,
        cpu=cpu,
        y1=np.asarray(y1),
        ok=ok,
    )


def _scipy_fns(p: StiffProblem) -> tuple[Callable, Callable]:
    field = jax.jit(lambda t, y: p.model.vector_field(t, y))
    jac = jax.jit(jax.jacfwd(lambda t, y: p.model.vector_field(t, y), argnums=1))
    return (lambda t, y: np.asarray(field(t, y))), (lambda t, y: np.asarray(jac(t, y)))


def run_scipy(p: StiffProblem, method: str, rtol: float, repeats: int, fns=None) -> dict:
    """scipy `solve_ivp` with the exact (jitted JAX) Jacobian; time is the min of `repeats`."""
    f, jac = fns or _scipy_fns(p)
    go = lambda: solve_ivp(
        f, (0.0, p.t1), p.y0, method=method, rtol=rtol, atol=rtol * p.scale, jac=jac
    )
    go()  # warm the jitted field and Jacobian
    sol, wall, cpu = _timed(go, repeats)
    steps = sol.t.size - 1
    return dict(
        steps=steps,
        rejected=None,
        nfev=int(sol.nfev),
        wall=wall,
        cpu=cpu,
        y1=sol.y[:, -1],
        ok=bool(sol.status == 0),
    )


def reference(p: StiffProblem) -> np.ndarray:
    """The published reference at t1, else scipy Radau at rtol 1e-13."""
    if p.reference is not None:
        return p.reference
    f, jac = _scipy_fns(p)
    sol = solve_ivp(f, (0.0, p.t1), p.y0, method="Radau", rtol=1e-13, atol=1e-13 * p.scale, jac=jac)
    return sol.y[:, -1]


def _fmt(x: Any, spec: str = "") -> str:
    return "—" if x is None else format(x, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="HIRES at 1e-6, two configurations")
    ap.add_argument("--problems", nargs="*", default=list(PROBLEMS))
    ap.add_argument("--rtols", nargs="*", type=float, default=[1e-4, 1e-6, 1e-8])
    ap.add_argument("--configs", nargs="*", default=list(DEFAULT_CONFIGS), choices=CONFIGS)
    ap.add_argument("--scipy", nargs="*", default=list(SCIPY))
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    if a.quick:
        a.problems, a.rtols, a.repeats = ["hires"], [1e-6], 1
        a.configs, a.scipy = ["default", "K5 I (old)"], ["Radau"]
    print(
        f"# stiff solves; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"{os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f}; jax {jax.__version__}, "
        f"diffrax {diffrax.__version__}"
    )
    print(machine())
    rows: list[tuple[str, float, str, dict]] = []
    for key in a.problems:
        p = PROBLEMS[key]
        ref = reference(p)
        fns = _scipy_fns(p)
        print(f"\n## {p.name} (t1 = {p.t1:g}, atol = {p.scale:g}·rtol; reference: {p.source})")
        print(
            "| rtol | method | accepted | rejected | f evals | wall (s) | CPU (s) | error | "
            "CPU/Radau | error/Radau |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for rtol in a.rtols:
            results = {m: run_scipy(p, m, rtol, a.repeats, fns) for m in a.scipy}
            results |= {c: run_sciad(p, c, rtol, a.repeats) for c in a.configs}
            radau = results.get("Radau")
            for name, r in results.items():
                r["error"] = p.error(r["y1"], ref) if r["ok"] else float("nan")
                rt = re = None
                if radau is not None:
                    rt, re = r["cpu"] / radau["cpu"], r["error"] / radau["error"]
                rows.append((key, rtol, name, r | dict(time_ratio=rt, error_ratio=re)))
                print(
                    f"| {rtol:.0e} | {name}{'' if r['ok'] else ' (failed)'} | {r['steps']} | "
                    f"{_fmt(r['rejected'])} | {_fmt(r['nfev'])} | {r['wall']:.3g} | {r['cpu']:.3g} | "
                    f"{r['error']:.2e} | {_fmt(rt, '.2f')} | {_fmt(re, '.2g')} |",
                    flush=True,
                )
    _summary(rows, a.rtols)
    _equal_error(rows, a.rtols)
    print(f"\n# load at the end {os.getloadavg()[0]:.2f}")


def _summary(rows: list, rtols: list[float]) -> None:
    """Geometric means over the problems of CPU time and error relative to Radau, and of
    the step attempts (accepted + rejected) relative to the old default's."""
    names = list(dict.fromkeys(name for _, _, name, _ in rows))
    old = {(k, t): r for k, t, n, r in rows if n == "K5 I (old)"}

    def gmean(xs: list[float]) -> str:
        return f"{np.exp(np.mean(np.log(np.maximum(xs, 1e-300)))):.2g}" if xs else "—"

    print(
        "\n## Summary: geometric mean over problems of CPU/Radau, error/Radau and "
        "(accepted + rejected)/old default"
    )
    print("| method | " + " | ".join(f"rtol {r:.0e}" for r in rtols) + " |")
    print("|---|" + "---|" * len(rtols))
    for name in names:
        cells = []
        for rtol in rtols:
            rs = [(k, r) for k, t, n, r in rows if n == name and t == rtol]
            if not all(r["ok"] for _, r in rs):
                cells.append("failed")
                continue
            ct = gmean([r["time_ratio"] for _, r in rs if r["time_ratio"] is not None])
            ce = gmean([r["error_ratio"] for _, r in rs if r["error_ratio"] is not None])
            steps = [
                (r["steps"] + r["rejected"]) / (old[k, rtol]["steps"] + old[k, rtol]["rejected"])
                for k, r in rs
                if r["rejected"] is not None and (k, rtol) in old
            ]
            cells.append(f"{ct}, {ce}, {gmean(steps)}")
        print(f"| {name} | " + " | ".join(cells) + " |")


def _equal_error(rows: list, rtols: list[float]) -> None:
    """Work-precision: the CPU time each method needs for the default's error, relative
    to the default's, by log-log interpolation between the method's tolerances."""
    names = list(dict.fromkeys(name for _, _, name, _ in rows))
    by = {(k, n, t): r for k, t, n, r in rows}
    print(
        "\n## CPU time at the default's error / the default's CPU time, per default rtol "
        + " / ".join(f"{r:.0e}" for r in rtols)
        + " (x: outside the method's measured errors)"
    )
    print("| problem | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for key in dict.fromkeys(k for k, _, _, _ in rows):
        cells = []
        for name in names:
            pts = [by.get((key, name, t)) for t in rtols]
            if any(r is None or not r["ok"] for r in pts) or ("default" not in names):
                cells.append("—")
                continue
            err = np.log([r["error"] for r in pts])
            cpu = np.log([r["cpu"] for r in pts])
            order = np.argsort(err)
            out = []
            for t in rtols:
                d = by[key, "default", t]
                e = np.log(d["error"])
                inside = err.min() <= e <= err.max()
                out.append(
                    f"{np.exp(np.interp(e, err[order], cpu[order])) / d['cpu']:.2f}"
                    if inside
                    else "x"
                )
            cells.append("/".join(out))
        print(f"| {PROBLEMS[key].name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

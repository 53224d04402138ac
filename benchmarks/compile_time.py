"""Compile time of the main calls of the README's demo and the notebooks, cold and with
sciad's persistent compilation cache (`sciad.enable_compilation_cache`).

Each case runs in a fresh Python process three times:
1. **off**: no persistent cache (what every run of a script costs by default);
2. **write**: the cache enabled on an empty directory (the first run of a script);
3. **read**: the same directory again (every later run).
Each process times the first call of the jitted function (trace + compile + run) and a
second call with new argument values (run only); compile ≈ first − second. The cases
run with `throw=False` inside `jit` (see docs/composability.md, "Compile time and the
persistent cache": a run-time check inside `jit` is a host callback, which JAX never
stores), and the outcome is checked after the call with `sciad.check_result`.

Cases (the calls of `python -m sciad demo` and notebooks 01-04):
- `ode_grad`: `jit(grad)` of the pendulum's final angle through 1,000 RK4 steps;
- `md_grad`: `jit(value_and_grad)` of the mean potential energy of 108 LJ atoms over 200
  NVE steps with a neighbour list, with respect to ε;
- `rigid_grad`: `jit(grad)` of where the demo's thrown box comes to rest (448 steps,
  every contact solved and differentiated) with respect to its launch speed.

`--mjcf FILE ...` instead times MuJoCo models loaded with `sciad.rigid.load_mjcf` (e.g.
the real-model corpus in tests/.cache/real_models): for `simulate` over 10 steps
(forward) and `jax.grad` of the final positions' squared norm with respect to the start
velocity (gradient), `jax.jit(f).lower` (tracing) and `.compile()` (XLA) separately, in
wall and CPU seconds (`time.process_time`, less sensitive to a loaded machine), with
the number of jaxpr equations (nested jaxprs included) and the HLO text's size.

Run:  .venv/bin/python benchmarks/compile_time.py           (all cases)
      .venv/bin/python benchmarks/compile_time.py --quick   (the ODE case; smoke test)
      .venv/bin/python benchmarks/compile_time.py --mjcf tests/.cache/real_models/*/dm_control/suite/walker.xml
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

CASES = {
    "ode_grad": """
model = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
def f(length):
    m = eqx.tree_at(lambda m: m.length, model, length)
    traj = sciad.simulate(m, jnp.array([1.0, 0.0]), dt=0.01, n_steps=1000, throw=False)
    return traj.y1[0]
fn, args = jax.jit(jax.grad(f)), [(jnp.asarray(1.0),), (jnp.asarray(1.1),)]
""",
    "md_grad": """
import sciad.md as md
q0, box = md.lattice_for_density("fcc", 108, 0.8)
p0 = md.maxwell_boltzmann(jax.random.key(0), jnp.ones(108), 1.0, exact=True)
builder = md.NeighborListBuilder.create(box, q0, cutoff=2.5, skin=0.3)
def f(epsilon):
    pot = md.Truncated(md.LennardJones(sigma=1.0, epsilon=epsilon), cutoff=2.5, shift="force")
    system = md.MDSystem(box, pot, masses=jnp.ones(108))
    integ = md.NeighborListIntegrator(sciad.VelocityVerlet(), builder)
    traj = sciad.simulate(system, (q0, p0), dt=0.005, n_steps=200, integrator=integ,
                          saveat=sciad.SaveAt(steps=10), throw=False)
    return jnp.mean(jax.vmap(system.potential_energy)(traj.ys[0]))
fn, args = jax.jit(jax.value_and_grad(f)), [(jnp.asarray(1.0),), (jnp.asarray(1.05),)]
""",
    "rigid_grad": """
from sciad import rigid
cube = rigid.Box(jnp.full(3, 0.1))
world = rigid.MultiBody(
    [rigid.Body("box", joint=rigid.FreeJoint(), pos=(0.0, 0.0, 0.15), shape=cube, density=1000.0)],
    geoms=[rigid.Geom(rigid.Plane(), friction=0.5), rigid.Geom(cube, body="box", friction=0.5)],
)
q0, v0 = world.default_state()
def f(vx):
    traj = sciad.simulate(world, (q0, v0.at[0].set(vx)), dt=2e-3, n_steps=448,
                          adjoint=sciad.DirectAdjoint(), throw=False)
    return traj.y1[0][0]
fn, args = jax.jit(jax.grad(f)), [(jnp.asarray(4.0),), (jnp.asarray(3.9),)]
""",
}

_CHILD = """
import json, sys, time
t_start = time.perf_counter()
import jax
jax.config.update("jax_enable_x64", True)
import equinox as eqx, jax.numpy as jnp, sciad
if sys.argv[1] != "off":
    sciad.enable_compilation_cache(sys.argv[2], min_compile_time=0.0)
t_import = time.perf_counter() - t_start
exec(sys.argv[3])
t0 = time.perf_counter(); jax.block_until_ready(fn(*args[0])); t1 = time.perf_counter()
jax.block_until_ready(fn(*args[1])); t2 = time.perf_counter()
print(json.dumps({"import": t_import, "first": t1 - t0, "second": t2 - t1}))
"""


_MJCF_CHILD = """
import json, sys, time
import jax
import jax.extend as jex
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, sciad

def count(jaxpr):
    n = 0
    for eqn in jaxpr.eqns:
        n += 1
        for p in eqn.params.values():
            for sub in p if isinstance(p, (list, tuple)) else (p,):
                if isinstance(sub, jex.core.ClosedJaxpr):
                    n += count(sub.jaxpr)
                elif isinstance(sub, jex.core.Jaxpr):
                    n += count(sub)
    return n

mj = sciad.rigid.load_mjcf(sys.argv[1])
run = lambda y: sciad.simulate(mj.model, y, dt=mj.dt, n_steps=10, integrator=mj.integrator,
                               throw=False)
forward = lambda y: run(y).y1
gradient = jax.grad(lambda dv: jnp.sum(run((mj.y0[0], mj.y0[1] + dv, *mj.y0[2:])).y1[0] ** 2))
out = {}
for name, f, x in (("forward", forward, mj.y0), ("gradient", gradient, jnp.zeros_like(mj.y0[1]))):
    w0, c0 = time.perf_counter(), time.process_time()
    lowered = jax.jit(f).lower(x)
    w1, c1 = time.perf_counter(), time.process_time()
    lowered.compile()
    w2, c2 = time.perf_counter(), time.process_time()
    out[name] = dict(lower=(w1 - w0, c1 - c0), compile=(w2 - w1, c2 - c1),
                     eqns=count(jax.make_jaxpr(f)(x).jaxpr), hlo=len(lowered.as_text()))
print(json.dumps(out))
"""


def time_mjcf(paths: list[str]) -> None:
    """Lower and compile times of `simulate` and its gradient for MJCF files."""
    env = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
    print(
        f"{'model':<28} {'call':<9} {'lower s (cpu)':>14} {'compile s (cpu)':>16} "
        f"{'eqns':>7} {'HLO kB':>7}"
    )
    for path in paths:
        out = subprocess.run(
            [sys.executable, "-c", _MJCF_CHILD, path],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        if out.returncode != 0:
            raise RuntimeError(out.stderr[-3000:])
        name = f"{pathlib.Path(path).parent.name}/{pathlib.Path(path).stem}"[-28:]
        for call, r in json.loads(out.stdout.strip().splitlines()[-1]).items():
            (lw, lc), (cw, cc) = r["lower"], r["compile"]
            print(
                f"{name:<28} {call:<9} {lw:6.2f} ({lc:5.2f}) {cw:7.2f} ({cc:6.2f}) "
                f"{r['eqns']:7d} {r['hlo'] / 1e3:7.0f}",
                flush=True,
            )


def run_case(source: str, mode: str, cache: str) -> dict:
    env = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, cache, source],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        cwd=pathlib.Path(__file__).parent,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the ODE case only")
    parser.add_argument("--mjcf", nargs="+", metavar="FILE", help="time these MJCF models")
    args = parser.parse_args()
    import jax  # the machine line, as every benchmark prints it

    print(f"backend={jax.default_backend()} devices={len(jax.devices())} jax={jax.__version__}")
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.mjcf:
        time_mjcf(args.mjcf)
        return
    names = ["ode_grad"] if args.quick else list(CASES)
    print(
        f"{'case':<11} {'mode':<6} {'import s':>9} {'first call s':>13} {'second s':>9} {'≈ compile s':>12}"
    )
    for name in names:
        with tempfile.TemporaryDirectory() as cache:
            for mode in ("off", "write", "read"):
                r = run_case(CASES[name], mode, cache)
                print(
                    f"{name:<11} {mode:<6} {r['import']:9.2f} {r['first']:13.2f} "
                    f"{r['second']:9.3f} {r['first'] - r['second']:12.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()

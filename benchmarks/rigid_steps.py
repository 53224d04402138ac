"""Rigid-body stepping throughput: `sciad.rigid` vs MuJoCo C, MJX and Brax (issue 4).

Scenes (`benchmarks/_rigid.py`): the 5-link hinge chain (no contacts), a box dropped on
a plane, and Brax's ant. Every engine is built from the same MJCF and every world starts
from the same (qpos, qvel, control), drawn at random per world:

- sciad: `jax.vmap` over worlds of `sciad.simulate` (the integrator and step from the
  file), jitted and compiled ahead of time;
- MuJoCo C: `mj_step` in a Python loop (batch 1) and `mujoco.rollout` with `--threads`
  threads (every batch);
- MJX: `jax.jit` of a `lax.scan` of `jax.vmap(mjx.step)`;
- Brax: the generalized pipeline, `jax.jit` of a `lax.scan` of `jax.vmap(step)`.

Printed per scene and batch size: environment steps per second (batch × steps / the
minimum wall time over `--repeats` interleaved runs), the JAX engines' compile time
(tracing + XLA, separately from the run), the ratios sciad / MJX, sciad / Brax and
sciad / MuJoCo (> 1: sciad is faster), and how far each engine's final qpos is from
MuJoCo C's (the same model and integrator: the chain must agree closely; with contacts
each engine has its own contact model, so only the scale is meaningful).

Run:  /work/bench-venv/bin/python benchmarks/rigid_steps.py          (with the anchors)
      .venv/bin/python benchmarks/rigid_steps.py --quick             (sciad only, smoke test)
      /work/bench-venv/bin/python benchmarks/rigid_steps.py --scenes chain --batch 1 64
"""

import argparse
import os

# jaxlib 0.10.1's concurrency-optimised CPU scheduler deadlocks on the ant at batch
# 1,024 (sciad and MJX alike, 0% CPU after compiling): it is off for every JAX engine.
SCHEDULER_OFF = "--xla_cpu_enable_concurrency_optimized_scheduler=false"
os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {SCHEDULER_OFF}".strip()

from _common import interleaved  # noqa: E402
import _rigid  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402


def run_scene(name: str, batch: int, steps: int, args, anchors) -> dict:
    sc = _rigid.scene(name)
    mujoco, mjx, brax = anchors
    rng = np.random.default_rng(batch)
    m = mujoco.MjModel.from_xml_string(sc.xml)
    qpos, qvel, ctrl = sc.init(m, rng, batch)
    engines: dict[str, object] = {}
    notes = []
    dtype = jnp.float32 if args.f32 else jnp.float64
    if "sciad" in args.engines:
        try:
            engines["sciad"] = _rigid.SciadEngine(sc, qpos, qvel, ctrl, steps, dtype=dtype)
        except NotImplementedError as e:
            notes.append(f"sciad skipped: {e}")
    if mjx is not None and "mjx" in args.engines:
        try:
            engines["MJX"] = _rigid.MjxEngine(mjx, sc, qpos, qvel, ctrl, steps)
        except NotImplementedError as e:  # e.g. the PGS solver
            notes.append(f"MJX cannot run the model as written ({e}): run with solver=Newton")
            mjx_newton = _rigid.MjxEngine(mjx, sc, qpos, qvel, ctrl, steps, newton=True)
            engines[mjx_newton.label] = mjx_newton
    if brax is not None and "brax" in args.engines:
        try:
            engines["Brax"] = _rigid.BraxEngine(brax, sc, qpos, qvel, ctrl, steps)
        except NotImplementedError as e:  # the PGS solver, or RK4
            notes.append(f"Brax cannot run the model as written ({e}): run with Newton, Euler")
            try:
                as_brax = _rigid.BraxEngine(brax, sc, qpos, qvel, ctrl, steps, as_brax=True)
                engines[as_brax.label] = as_brax
            except Exception as e:  # noqa: BLE001 - another unsupported feature
                notes.append(f"Brax failed: {type(e).__name__}: {str(e)[:200]}")
        except Exception as e:  # an unsupported scene in Brax's MJCF loader
            notes.append(f"Brax failed: {type(e).__name__}: {str(e)[:200]}")
    if mujoco is not None and "mujoco" in args.engines:
        if batch == 1:
            engines["MuJoCo mj_step"] = _rigid.MujocoStepEngine(mujoco, sc, qpos, qvel, ctrl, steps)
        for threads in sorted({1, args.threads}) if batch == 1 else [args.threads]:
            e = _rigid.MujocoRolloutEngine(mujoco, sc, qpos, qvel, ctrl, steps, threads)
            engines[e.label] = e
    times = interleaved({k: e.run for k, e in engines.items()}, args.repeats)  # type: ignore[attr-defined]
    finals = {k: e.final_qpos(e.run()) for k, e in engines.items()}  # type: ignore[attr-defined]
    ref = next((finals[k] for k in finals if k.startswith("MuJoCo")), None)
    rows = {}
    for k, e in engines.items():
        rate = batch * steps / times[k]["wall"]
        diff = None if ref is None else float(np.max(np.abs(finals[k] - ref)))
        rows[k] = dict(
            rate=rate,
            cpu_rate=batch * steps / times[k]["cpu"],
            compile=getattr(e, "compile_s", 0.0),
            diff=diff,
            how=getattr(e, "how", ""),
        )
    return dict(rows=rows, notes=notes, load=_rigid.load(), source=sc.source)


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument(
        "--scenes", nargs="+", default=["chain", "box", "ant", "humanoid", "walker"]
    )
    parser.add_argument("--batch", nargs="+", type=int, default=[1, 64, 1024])
    parser.add_argument(
        "--steps",
        type=int,
        default=1000,
        help="steps per world; at batch B at most max(50, --budget // B) steps are run",
    )
    parser.add_argument("--budget", type=int, default=200_000, help="env-steps per run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="mujoco.rollout threads")
    parser.add_argument("--engines", nargs="+", default=["sciad", "mjx", "brax", "mujoco"])
    parser.add_argument(
        "--f32", action="store_true", help="JAX engines in float32 (default float64)"
    )
    parser.add_argument("--quick", action="store_true", help="smoke test: 20 steps, batch 1")
    args = parser.parse_args()
    if args.quick:  # batch 1 also runs the mj_step engine; the walker covers the real models
        args.steps, args.batch, args.repeats = 20, [1], 1
        args.scenes = [s for s in args.scenes if s != "humanoid"]
    if args.f32:
        jax.config.update("jax_enable_x64", False)
    anchors = _rigid.start()
    if anchors is None:
        return
    summary = []
    for name in args.scenes:
        for batch in args.batch:
            steps = min(args.steps, max(50, args.budget // batch))
            res = run_scene(name, batch, steps, args, anchors)
            print(f"\n== {name} ({res['source']}), batch {batch}, {steps} steps, {res['load']}")
            for n in res["notes"]:
                print("  NOTE:", n)
            rows = res["rows"]
            for k, r in rows.items():
                diff = "" if r["diff"] is None else f"  max|qpos - MuJoCo| {r['diff']:.2e}"
                comp = f"  compile {r['compile']:.2f} s" if r["compile"] else ""
                print(f"  {k:22s} {r['rate']:12,.0f} env-steps/s{comp}{diff}  {r['how']}")
            s = rows.get("sciad")
            if s is not None:
                ratios = []
                for k in rows:
                    if k != "sciad":
                        ratios.append(f"sciad/{k} {s['rate'] / rows[k]['rate']:.2f}")
                print("  ratios:", ", ".join(ratios))
            summary.append((name, batch, steps, res))
    print("\nSummary (env-steps/s; compile s in brackets; ratios > 1: sciad faster):")
    print(
        "| scene | batch | steps | sciad | MJX | Brax | MuJoCo C (best) "
        "| sciad/MJX | sciad/Brax | sciad/MuJoCo | load |"
    )
    print("|" + "---|" * 11)
    for name, batch, steps, res in summary:
        rows = res["rows"]

        def cell(k, rows=rows):
            r = None if k is None else rows.get(k)
            if r is None:
                return "—"
            return f"{r['rate']:,.0f}" + (f" ({r['compile']:.1f} s)" if r["compile"] else "")

        mjx_key = next((k for k in rows if k.startswith("MJX")), None)
        brax_key = next((k for k in rows if k.startswith("Brax")), None)
        c_keys = [k for k in rows if k.startswith("MuJoCo")]
        best_c = max(c_keys, key=lambda k: rows[k]["rate"]) if c_keys else None
        s = rows.get("sciad")

        def ratio(k, rows=rows, s=s):
            if s is None or k is None or k not in rows:
                return "—"
            return f"{s['rate'] / rows[k]['rate']:.2f}"

        c_cell = "—" if best_c is None else f"{rows[best_c]['rate']:,.0f} ({best_c[7:]})"
        print(
            f"| {name} | {batch} | {steps} | {cell('sciad')} | {cell(mjx_key)} | {cell(brax_key)} "
            f"| {c_cell} | {ratio(mjx_key)} | {ratio(brax_key)} | {ratio(best_c)} | {res['load']} |"
        )


if __name__ == "__main__":
    main()

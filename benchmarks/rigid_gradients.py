"""Gradients through contact: `sciad.rigid` vs MJX, Brax and MuJoCo C finite differences.

Two parts (issue 4):

1. **The sliding box.** A 0.2 m cube (8 kg) resting on a plane (μ = 0.5 on both geoms,
   dt = 1 ms) is launched at vx₀ = 1 m/s; after N = 100 and 1,000 steps, d(final x)/d(vx₀)
   and d(final x)/dμ from every engine:
   - sciad: reverse mode (`jax.grad`, `CheckpointAdjoint`), forward mode (`jax.jvp`)
     and central finite differences of its own forward run;
   - MJX: reverse mode with its default solver (fails: `lax.while_loop` has no
     transpose), reverse mode with its documented workaround of one solver iteration
     (`opt.iterations = 1`), and forward mode (`jax.jvp`, default solver);
   - Brax (generalized pipeline): reverse mode;
   - MuJoCo C: central finite differences (float64, h = 1e-5): the converged
     reference for MuJoCo's contact model, which MJX's forward mode must match.
   For hard Coulomb friction the box stops after vx₀/(μg) = 0.204 s: before that
   (N = 100) d x/d vx₀ = t = 0.1 and d x/dμ = −g t²/2 = −0.049; after it (N = 1,000)
   d x/d vx₀ = vx₀/(μg) = 0.2039 and d x/dμ = −vx₀²/(2μ²g) = −0.2039. Each engine's
   soft contact shifts these a little. (μ must stay below 1: the cube tips over its
   front edge when μ exceeds half its width over its centre's height, which is 1.)
2. **Cost of sciad's gradient**: time (minimum over `--repeats` runs, compiled ahead of
   time; compile time separately) and XLA peak memory (the compiled memory analysis:
   temp + arguments + outputs) of the gradient of the final x of the box, and of the
   final torso height of the ant, w.r.t. (initial velocity, friction), for N = 100 and
   1,000 steps, with `CheckpointAdjoint` (and `DirectAdjoint` for scale). Beside it MJX's
   reverse mode with the one-iteration workaround (the only reverse mode MJX has).

Run:  /work/bench-venv/bin/python benchmarks/rigid_gradients.py      (with the anchors)
      .venv/bin/python benchmarks/rigid_gradients.py --quick         (sciad only, smoke test)
"""

import argparse
import time

from _common import compiled_memory, mib
import _rigid
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import sciad
import sciad.rigid as rigid

VX0, MU, G = 1.0, 0.5, 9.81


def analytic(steps: int, dt: float) -> tuple[float, float]:
    """Hard Coulomb contact: (d x/d vx₀, d x/dμ) at t = steps·dt."""
    t, stop = steps * dt, VX0 / (MU * G)
    if t < stop:
        return t, -0.5 * G * t * t
    return VX0 / (MU * G), -(VX0**2) / (2 * MU**2 * G)


def _fmt(x) -> str:
    x = np.asarray(x, dtype=float)
    if x.ndim == 0:
        return f"{float(x): .6g}"
    return "[" + ", ".join(f"{v:.4g}" for v in x.ravel()) + "]"


# -- sciad ----------------------------------------------------------------------------


class SciadProblem:
    """f(v₀, μ) = an observable of the final state, for a scene loaded from MJCF."""

    def __init__(self, xml: str, q0_fn, obs, ctrl=None):
        self.mj = rigid.load_mjcf(xml)
        q0, v0 = self.mj.y0
        self.q0 = jnp.asarray(q0_fn(np.asarray(q0)))
        self.v0 = v0
        self.obs = obs
        model = self.mj.model
        if ctrl is not None:
            model = eqx.tree_at(
                lambda m: m.control,
                model,
                rigid.ConstantControl(jnp.asarray(ctrl)),
                is_leaf=lambda x: x is None,
            )
        self.model = model

    def with_friction(self, mu):
        n = len(self.model.geoms)
        return eqx.tree_at(lambda m: [g.friction for g in m.geoms], self.model, [mu] * n)

    def f(self, v0, mu, steps: int, adjoint=sciad.CheckpointAdjoint()):
        traj = sciad.simulate(
            self.with_friction(mu),
            (self.q0, v0),
            dt=self.mj.dt,
            n_steps=steps,
            integrator=self.mj.integrator,
            adjoint=adjoint,
        )
        return self.obs(traj.y1)


def time_grad(fn, args, repeats: int) -> tuple[float, float, dict]:
    """(compile s, min run s, XLA memory) of `jax.jit(fn)(*args)`."""
    t = time.perf_counter()
    jitted = jax.jit(fn)
    compiled = jitted.lower(*args).compile()
    compile_s = time.perf_counter() - t
    mem = compiled_memory(jitted, *args)
    jax.block_until_ready(compiled(*args))
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        best = min(best, time.perf_counter() - t)
    return compile_s, best, mem


# -- anchors ---------------------------------------------------------------------------


def mjx_final_x(mjx, mujoco, xml: str, iterations: int | None):
    m = mujoco.MjModel.from_xml_string(xml)
    if iterations is not None:
        m.opt.iterations = iterations
    mx = mjx.put_model(m)
    qpos0 = jnp.asarray(m.qpos0).at[2].set(0.1)

    def f(vx, mu, steps: int):
        mxf = mx.replace(geom_friction=mx.geom_friction.at[:, 0].set(mu))
        d = mjx.make_data(mxf).replace(qpos=qpos0, qvel=jnp.zeros(m.nv).at[0].set(vx))
        d = jax.lax.scan(lambda d, _: (mjx.step(mxf, d), None), d, None, length=steps)[0]
        return d.qpos[0]

    return f


def brax_final_x(brax, xml: str):
    pipeline, mjcf = brax
    sys = mjcf.loads(xml)
    q0 = jnp.asarray(sys.init_q).at[2].set(0.1)

    def f(vx, mu, steps: int):
        s = sys.replace(geom_friction=sys.geom_friction.at[:, 0].set(mu))
        st = pipeline.init(s, q0, jnp.zeros(s.qd_size()).at[0].set(vx))
        act = jnp.zeros(s.act_size())
        st = jax.lax.scan(lambda st, _: (pipeline.step(s, st, act), None), st, None, length=steps)[
            0
        ]
        return st.q[0]

    return f


def mujoco_fd(mujoco, xml: str, steps: int, h: float = 1e-5) -> tuple[float, float, float]:
    """(final x, d x/d vx₀, d x/dμ) by central differences of MuJoCo C (float64)."""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)

    def run(vx, mu):
        m.geom_friction[:, 0] = mu
        mujoco.mj_resetData(m, d)
        d.qpos[2] = 0.1
        d.qvel[0] = vx
        for _ in range(steps):
            mujoco.mj_step(m, d)
        return float(d.qpos[0])

    x = run(VX0, MU)
    dvx = (run(VX0 + h, MU) - run(VX0 - h, MU)) / (2 * h)
    dmu = (run(VX0, MU + h) - run(VX0, MU - h)) / (2 * h)
    return x, dvx, dmu


def _try(fn):
    try:
        out = fn()
        return jax.tree.map(lambda x: np.asarray(x), out), None
    except Exception as e:
        msg = str(e).strip().splitlines()
        return None, f"{type(e).__name__}: {msg[0][:160] if msg else ''}"


# -- main ------------------------------------------------------------------------------


def sliding_box(args, anchors):
    xml = _rigid.box_xml(timestep=1e-3, friction=MU)
    box = SciadProblem(xml, lambda q: _set(q, 2, 0.1), _final_x)
    print(
        f"\n== sliding box: d(final x)/d(vx0), d(final x)/d(mu); vx0 = {VX0} m/s, mu = {MU}, dt = 1 ms"
    )
    print(f"   {_rigid.load()}")
    rows = []
    for steps in args.steps:
        a_vx, a_mu = analytic(steps, 1e-3)
        print(f"\n-- N = {steps} steps; hard-Coulomb values {a_vx:.4f}, {a_mu:.4f}")
        out = _box_gradients(box, xml, steps, anchors)
        for k, (xv, dvx, dmu, err) in out.items():
            cells = [f"x = {xv:.6f}"]
            cells.append("dx/dvx0 = " + ("—" if dvx is None else f"{dvx: .6g}"))
            cells.append("dx/dmu = " + ("—" if dmu is None else f"{dmu: .6g}"))
            print(f"  {k:36s} " + "  ".join(cells) + (f"  FAILS: {err}" if err else ""))
        rows.append((steps, out))
    return rows


def _reverse(f, steps: int, x0: float) -> tuple:
    """(x, d/dvx0, d/dmu, error) from `jax.grad` of `f(vx0, mu, steps)`."""
    vx0, mu = jnp.asarray(VX0), jnp.asarray(MU)
    r, err = _try(lambda: jax.jit(jax.grad(lambda a, b: f(a, b, steps), (0, 1)))(vx0, mu))
    return (x0, float(r[0]), float(r[1]), None) if r is not None else (x0, None, None, err)


def _forward(f, steps: int, x0: float) -> tuple:
    """(x, d/dvx0, d/dmu, error) from `jax.jvp` of `f(vx0, mu, steps)`."""
    vx0, mu = jnp.asarray(VX0), jnp.asarray(MU)

    def both(a, b):
        return (
            jax.jvp(lambda v: f(v, b, steps), (a,), (jnp.ones_like(a),))[1],
            jax.jvp(lambda u: f(a, u, steps), (b,), (jnp.ones_like(b),))[1],
        )

    r, err = _try(lambda: jax.jit(both)(vx0, mu))
    return (x0, float(r[0]), float(r[1]), None) if r is not None else (x0, None, None, err)


def _value(f, steps: int) -> float:
    return float(jax.jit(lambda a, b: f(a, b, steps))(jnp.asarray(VX0), jnp.asarray(MU)))


def _box_gradients(box: "SciadProblem", xml: str, steps: int, anchors) -> dict:
    mujoco, mjx, brax = anchors

    def sc_f(vx, mu, steps):
        return box.f(jnp.zeros(6, vx.dtype).at[0].set(vx), mu, steps)

    fwd = jax.jit(lambda a, b: sc_f(a, b, steps))
    h, vx0, mu = 1e-5, jnp.asarray(VX0), jnp.asarray(MU)
    x = float(fwd(vx0, mu))
    fd_vx = (float(fwd(vx0 + h, mu)) - float(fwd(vx0 - h, mu))) / (2 * h)
    fd_mu = (float(fwd(vx0, mu + h)) - float(fwd(vx0, mu - h))) / (2 * h)
    out = {
        "sciad reverse (CheckpointAdjoint)": _reverse(sc_f, steps, x),
        "sciad forward (jvp)": _forward(sc_f, steps, x),
        "sciad finite differences": (x, fd_vx, fd_mu, None),
    }
    if mujoco is not None:
        out["MuJoCo C finite differences"] = (*mujoco_fd(mujoco, xml, steps), None)
    if mjx is not None:
        f = mjx_final_x(mjx, mujoco, xml, None)
        xm = _value(f, steps)
        out["MJX reverse (default solver)"] = _reverse(f, steps, xm)
        f1 = mjx_final_x(mjx, mujoco, xml, 1)
        out["MJX reverse, iterations=1"] = _reverse(f1, steps, _value(f1, steps))
        out["MJX forward (jvp, default solver)"] = _forward(f, steps, xm)
    if brax is not None:
        fb = brax_final_x(brax, xml)
        out["Brax generalized reverse"] = _reverse(fb, steps, _value(fb, steps))
    return out


def _set(q, i, v):
    q = q.copy()
    q[i] = v
    return q


def _final_x(y):
    return y[0][0]


def _torso_z(y):
    return y[0][2]


def costs(args, anchors):
    mujoco, mjx, _ = anchors
    print("\n== cost of sciad's reverse-mode gradient (w.r.t. initial velocity and friction)")
    scenes = {
        "box": (
            _rigid.box_xml(timestep=1e-3, friction=MU),
            lambda q: _set(q, 2, 0.1),
            _final_x,
            None,
            "final x",
        ),
    }
    if "ant" in args.scenes:
        sc = _rigid.scene("ant")
        import mujoco as _mj

        m = _mj.MjModel.from_xml_string(sc.xml)
        qpos, _, ctrl = sc.init(m, np.random.default_rng(0), 1)
        scenes["ant"] = (sc.xml, lambda q: qpos[0], _torso_z, ctrl[0], "final torso height")
    for name, (xml, q0_fn, obs, ctrl, what) in scenes.items():
        if name not in args.scenes:
            continue
        p = SciadProblem(xml, q0_fn, obs, ctrl)
        v0 = p.v0.at[0].set(VX0) if name == "box" else p.v0
        mu = jnp.asarray(MU)
        for steps in args.steps:
            for label, adjoint in (
                ("CheckpointAdjoint", sciad.CheckpointAdjoint()),
                ("DirectAdjoint", sciad.DirectAdjoint()),
            ):
                if label == "DirectAdjoint" and not args.direct:
                    continue
                _cost_row(name, what, p, v0, steps, label, adjoint, args.repeats)
            if name == "box" and mjx is not None:
                f1 = mjx_final_x(mjx, mujoco, xml, 1)
                comp, best, mem = time_grad(
                    _grad_of(f1, steps), (jnp.asarray(VX0), mu), args.repeats
                )
                print(
                    f"  {name:4s} N={steps:5d} MJX reverse (iterations=1) grad {best * 1e3:9.2f} ms, "
                    f"compile {comp:.1f} s, XLA peak {mib(mem['total'])}  {_rigid.load()}"
                )


def _grad_of(f, steps: int):
    return jax.grad(lambda a, b: f(a, b, steps), (0, 1))


def _cost_row(name, what, p, v0, steps, label, adjoint, repeats):
    mu = jnp.asarray(MU)

    def fwd(v, u):
        return p.f(v, u, steps, adjoint)

    g = jax.grad(fwd, argnums=(0, 1))
    comp, best, mem = time_grad(g, (v0, mu), repeats)
    _, fbest, _ = time_grad(fwd, (v0, mu), repeats)
    dv, dmu = jax.jit(g)(v0, mu)
    finite = bool(np.all(np.isfinite(np.asarray(dv)))) and bool(np.isfinite(float(dmu)))
    print(
        f"  {name:4s} N={steps:5d} sciad {label:17s} grad {best * 1e3:9.2f} ms "
        f"(forward {fbest * 1e3:8.2f} ms, x{best / fbest:.1f}), compile {comp:.1f} s, "
        f"XLA peak {mib(mem['total'])}; d({what})/dmu = {float(dmu): .5g}, "
        f"finite: {finite}  {_rigid.load()}"
    )


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--steps", nargs="+", type=int, default=[100, 1000])
    parser.add_argument("--scenes", nargs="+", default=["box", "ant"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--direct", action="store_true", help="also time DirectAdjoint")
    parser.add_argument("--skip-agreement", action="store_true")
    parser.add_argument("--skip-costs", action="store_true")
    parser.add_argument("--quick", action="store_true", help="smoke test: 20 steps, box only")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.scenes, args.repeats = [20], ["box"], 1
    anchors = _rigid.start()
    if anchors is None:
        return
    if not args.skip_agreement:
        sliding_box(args, anchors)
    if not args.skip_costs:
        costs(args, anchors)


if __name__ == "__main__":
    main()

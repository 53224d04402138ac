"""Shared pieces of the rigid-body benchmark scripts: scenes, engines and timing.

Not a benchmark itself. Every scene is one MJCF string; every engine is built from it:

- **sciad**: `sciad.rigid.load_mjcf(xml)` (model, initial state, step,
  integrator from the file). Runs are `sciad.simulate`, `vmap`ped over worlds.
- **MuJoCo C** (optional): `mujoco.mj_step` in a Python loop at batch 1, and
  `mujoco.rollout` (C loop, one `MjData` per thread) at every batch size.
- **MJX** (optional): `jax.jit` of a `lax.scan` over `jax.vmap(mjx.step)`.
- **Brax** (optional): the generalized pipeline, `jax.jit` of a `lax.scan` over
  `jax.vmap(pipeline.step)`, on `brax.io.mjcf.loads` of the same MJCF.

The anchors are optional: each loader returns `None` and prints why when its package is
missing, so every script still runs its sciad side (the CI smoke test does exactly that).
They live in the benchmark virtual environment (see `benchmarks/README.md`).

All engines start every world from the same initial (qpos, qvel) (and control), given
in MuJoCo's layout and converted for sciad, and the final states are compared.
"""

from collections.abc import Callable
import dataclasses
import os
import time
from typing import Any

from _common import machine, package_version  # (importing _common enables float64 first)
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import sciad
import sciad.rigid as rigid

HERE = os.path.dirname(os.path.abspath(__file__))

# -- scenes ---------------------------------------------------------------------------


def chain_xml(n: int = 5, length: float = 0.5, radius: float = 0.05, timestep: float = 1e-3):
    """An n-link pendulum of capsules hanging along −z from hinges about y (the MJCF twin
    of tests/rigid/scenes.py `chain`). No contacts: the geoms have contype = conaffinity
    = 0, which every engine honours (Brax ignores `<flag contact="disable"/>`)."""
    body = ""
    for i in reversed(range(n)):
        z = 0.0 if i == 0 else -length
        body = (
            f'<body name="link{i}" pos="0 0 {z}">'
            '<joint type="hinge" axis="0 1 0"/>'
            f'<geom type="capsule" fromto="0 0 0 0 0 {-length}" size="{radius}" '
            'density="1000" contype="0" conaffinity="0"/>'
            f"{body}</body>"
        )
    return (
        f'<mujoco model="chain{n}"><option timestep="{timestep}" integrator="Euler"/>'
        f"<worldbody>{body}</worldbody></mujoco>"
    )


def box_xml(timestep: float = 1e-3, friction: float = 1.0):
    """A 0.2 m cube (1,000 kg/m³, 8 kg) on a plane, free joint; friction μ on both geoms
    (MuJoCo takes the larger). Dropped from just above the plane with a sideways
    velocity, it lands, slides and stops."""
    return (
        f'<mujoco model="box"><option timestep="{timestep}" integrator="Euler"/>'
        "<worldbody>"
        f'<geom name="floor" type="plane" size="10 10 0.1" friction="{friction} 0.005 0.0001"/>'
        '<body name="box" pos="0 0 0.2"><freejoint name="root"/>'
        f'<geom name="box" type="box" size="0.1 0.1 0.1" density="1000" '
        f'friction="{friction} 0.005 0.0001"/>'
        "</body></worldbody></mujoco>"
    )


def ant_path() -> tuple[str, str]:
    """The ant: Brax's `envs/assets/ant.xml` from the installed brax package, else the
    fallback `benchmarks/scenes/ant.xml`. Returns `(path, where)`."""
    try:
        import brax

        path = os.path.join(os.path.dirname(brax.__file__ or ""), "envs", "assets", "ant.xml")
        if os.path.exists(path):
            return path, f"brax {package_version('brax')} package data"
    except ImportError:
        pass
    path = os.path.join(HERE, "scenes", "ant.xml")
    return path, "benchmarks/scenes/ant.xml (brax not installed)"


@dataclasses.dataclass
class Scene:
    """One benchmark scene: its MJCF and how to draw a batch of initial states."""

    name: str
    xml: str
    source: str
    contact: bool
    init: Callable[[Any, np.random.Generator, int], tuple[np.ndarray, np.ndarray, np.ndarray]]


def _init_chain(m, rng, batch):
    qpos = rng.uniform(-0.5, 0.5, size=(batch, m.nq))
    qvel = np.zeros((batch, m.nv))
    return qpos, qvel, np.zeros((batch, m.nu))


def _init_box(m, rng, batch):
    qpos = np.tile(m.qpos0, (batch, 1))
    qpos[:, 2] = 0.1 + rng.uniform(0.0, 0.02, batch)  # lands within 64 ms
    qvel = np.zeros((batch, m.nv))
    qvel[:, 0] = rng.uniform(-1.0, 1.0, batch)
    qvel[:, 1] = rng.uniform(-0.2, 0.2, batch)
    return qpos, qvel, np.zeros((batch, m.nu))


def _init_ant(m, rng, batch):
    import mujoco

    qpos0 = np.array(m.qpos0)
    i = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_NUMERIC, "init_qpos")
    if i >= 0:  # Brax's start pose (ankles inside their ranges; MuJoCo's qpos0 is not)
        adr, size = m.numeric_adr[i], m.numeric_size[i]
        qpos0 = np.array(m.numeric_data[adr : adr + size])
    qpos = np.tile(qpos0, (batch, 1))
    qpos[:, 7:] += rng.uniform(-0.1, 0.1, (batch, m.nq - 7))
    qvel = 0.1 * rng.normal(size=(batch, m.nv))
    ctrl = rng.uniform(-0.5, 0.5, (batch, m.nu))  # a constant random control per world
    return qpos, qvel, ctrl


def _init_real(m, rng, batch):
    """A real model's start: MuJoCo's qpos0 with every hinge and slide joint moved by up
    to ±0.05 (free joints kept), small random velocities, and a constant random control
    per world within 30% of each actuator's range (±0.3 where unlimited)."""
    qpos = np.tile(np.array(m.qpos0), (batch, 1))
    for j in np.flatnonzero(m.jnt_type >= 2):  # 2: slide, 3: hinge
        qpos[:, m.jnt_qposadr[j]] += rng.uniform(-0.05, 0.05, batch)
    qvel = 0.05 * rng.normal(size=(batch, m.nv))
    limited = m.actuator_ctrllimited.astype(bool)
    lo = np.where(limited, m.actuator_ctrlrange[:, 0], -1.0)
    hi = np.where(limited, m.actuator_ctrlrange[:, 1], 1.0)
    ctrl = 0.3 * rng.uniform(lo, hi, (batch, m.nu))
    return qpos, qvel, ctrl


# The real models of issue 17's throughput bar, read from the test corpus
# (tests/rigid/real_models.py: the installed packages or the pinned wheels).
REAL = {
    "humanoid": ("gymnasium/humanoid", "Gymnasium 1.4.0 humanoid.xml (RK4, dt 3 ms, 17 actuators)"),
    "walker": ("dm_control/walker", "dm_control 1.0.50 suite/walker.xml (dt 2.5 ms, 6 actuators)"),
}


def real_xml(corpus_name: str) -> str:
    """A corpus model as one self-contained MJCF string (MuJoCo's own flattening of its
    includes, `mj_saveLastXML`), so every engine reads the same text."""
    import sys
    import tempfile

    import mujoco

    sys.path.append(os.path.dirname(HERE))
    from tests.rigid.real_models import corpus, quiet_mujoco

    path = dict(corpus())[corpus_name]
    with quiet_mujoco(), tempfile.TemporaryDirectory() as tmp:
        m = mujoco.MjModel.from_xml_path(str(path))
        flat = os.path.join(tmp, "flat.xml")
        mujoco.mj_saveLastXML(flat, m)
        with open(flat) as f:
            return f.read()


def scene(name: str) -> Scene:
    """The scene called `name`: "chain", "box", "ant", or a real model of the test
    corpus: "humanoid" (Gymnasium) or "walker" (dm_control)."""
    if name == "chain":
        return Scene(
            "chain", chain_xml(), "5-link hinge chain (tests/rigid/scenes.py)", False, _init_chain
        )
    if name == "box":
        return Scene("box", box_xml(), "0.2 m cube on a plane", True, _init_box)
    if name == "ant":
        path, where = ant_path()
        with open(path) as f:
            return Scene("ant", f.read(), where, True, _init_ant)
    if name in REAL:
        corpus_name, source = REAL[name]
        return Scene(name, real_xml(corpus_name), source, True, _init_real)
    raise ValueError(f"unknown scene {name!r}; choose chain, box, ant, humanoid or walker.")


# -- anchors -------------------------------------------------------------------------


def load_mujoco() -> Any:
    try:
        import mujoco
    except ImportError as e:
        print(f"NOTE: MuJoCo anchors skipped ({e}); install mujoco in the benchmark venv.")
        return None
    return mujoco


def load_mjx() -> Any:
    try:
        import logging

        logging.getLogger("absl").setLevel(logging.ERROR)
        from mujoco import mjx
    except Exception as e:
        print(f"NOTE: MJX anchor skipped ({type(e).__name__}: {e}); install mujoco-mjx.")
        return None
    return mjx


def load_brax() -> Any:
    try:
        import warnings

        warnings.filterwarnings("ignore", message="Brax System")
        from brax.generalized import pipeline
        from brax.io import mjcf
    except Exception as e:
        print(f"NOTE: Brax anchor skipped ({type(e).__name__}: {e}); install brax.")
        return None
    return pipeline, mjcf


def versions() -> str:
    names = ("jax", "mujoco", "mujoco-mjx", "brax", "equinox")
    return ", ".join(f"{n} {package_version(n)}" for n in names)


# -- engines -------------------------------------------------------------------------
#
# Every engine: built for one scene, batch size and number of steps from host arrays
# (qpos, qvel, ctrl) of shape (batch, ·); `.compile_s` (JAX engines: trace + compile),
# `.run()` returns something to block on, `.final_qpos(out)` the final qpos (batch, nq)
# in MuJoCo's layout.


def _aot(fn, *args) -> tuple[Any, float]:
    t = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    return compiled, time.perf_counter() - t


def start() -> tuple | None:
    """Print the machine and versions and load the anchors: `(mujoco, mjx, brax)`
    (each `None` if missing), or `None` without mujoco (sciad reads the scenes
    with it)."""
    print(machine())
    print(versions())
    anchors = (load_mujoco(), load_mjx(), load_brax())
    if anchors[0] is None:
        print(
            "NOTE: sciad reads the scenes with sciad.rigid.load_mjcf, which needs mujoco; "
            "nothing to run."
        )
        return None
    return anchors


class SciadEngine:
    """`jax.vmap` over worlds of `sciad.simulate(model, y0, dt, n_steps, integrator)`."""

    label = "sciad"

    def __init__(self, sc: Scene, qpos, qvel, ctrl, steps: int, dtype=jnp.float64):
        model, y0_fn, dt, integrator, self.how = sciad_scene(sc)
        self.to_qpos = y0_fn[1]
        q0, v0 = y0_fn[0](qpos, qvel)
        y0 = (jnp.asarray(q0, dtype), jnp.asarray(v0, dtype))
        model = jax.tree.map(lambda x: x.astype(dtype) if eqx.is_inexact_array(x) else x, model)
        u = jnp.asarray(ctrl, dtype)
        with_control = ctrl.shape[1] > 0 and np.any(ctrl != 0)

        def one(y, u):
            m = model
            if with_control:
                m = eqx.tree_at(
                    lambda m: m.control, m, rigid.ConstantControl(u), is_leaf=lambda x: x is None
                )
            return sciad.simulate(m, y, dt=dt, n_steps=steps, integrator=integrator).y1

        batched = jax.vmap(one)
        self.compiled, self.compile_s = _aot(batched, y0, u)
        self.run = lambda: self.compiled(y0, u)

    def final_qpos(self, out) -> np.ndarray:
        return self.to_qpos(np.asarray(out[0]))


def sciad_scene(sc: Scene):
    """`(model, (to_sciad, to_qpos), dt, integrator, how)` for a scene, read with
    `sciad.rigid.load_mjcf` from the same MJCF as the anchors."""
    mj = rigid.load_mjcf(sc.xml)

    def to_sciad(qpos, qvel):
        q = np.stack([np.asarray(mj.qpos_to_q(x)) for x in qpos])
        v = np.stack([np.asarray(mj.qvel_to_v(x)) for x in qvel])
        return q, v

    def to_qpos(q):
        return np.stack([np.asarray(mj.q_to_qpos(x)) for x in q])

    return mj.model, (to_sciad, to_qpos), mj.dt, mj.integrator, "sciad.rigid.load_mjcf"


class MujocoStepEngine:
    """MuJoCo C: `mujoco.mj_step` in a Python loop, batch 1."""

    label = "MuJoCo mj_step"

    def __init__(self, mujoco, sc: Scene, qpos, qvel, ctrl, steps: int):
        self.mujoco, self.steps = mujoco, steps
        self.m = mujoco.MjModel.from_xml_string(sc.xml)
        self.d = mujoco.MjData(self.m)
        self.y0 = (qpos[0], qvel[0], ctrl[0])
        self.run = self._run

    def _run(self) -> np.ndarray:
        mj, m, d = self.mujoco, self.m, self.d
        mj.mj_resetData(m, d)
        d.qpos[:], d.qvel[:], d.ctrl[:] = self.y0
        for _ in range(self.steps):
            mj.mj_step(m, d)
        return d.qpos[None].copy()

    def final_qpos(self, out) -> np.ndarray:
        return np.asarray(out)


class MujocoRolloutEngine:
    """MuJoCo C: `mujoco.rollout` over the batch (a C loop, one `MjData` per thread)."""

    def __init__(self, mujoco, sc: Scene, qpos, qvel, ctrl, steps: int, threads: int):
        from mujoco import rollout

        self.label = f"MuJoCo rollout {threads}T"
        m = mujoco.MjModel.from_xml_string(sc.xml)
        d = mujoco.MjData(m)
        full = mujoco.mjtState.mjSTATE_FULLPHYSICS
        state0 = np.zeros((qpos.shape[0], mujoco.mj_stateSize(m, full)))
        for i in range(qpos.shape[0]):
            mujoco.mj_resetData(m, d)
            d.qpos[:], d.qvel[:] = qpos[i], qvel[i]
            mujoco.mj_getState(m, d, state0[i], full)
        control = np.repeat(ctrl[:, None, :], steps, axis=1)
        datas = [mujoco.MjData(m) for _ in range(threads)]
        self.nq = m.nq
        self.run = lambda: rollout.rollout(m, datas, state0, control)[0]

    def final_qpos(self, out) -> np.ndarray:
        # a full-physics state is (time, qpos, qvel, ...)
        return np.asarray(out)[:, -1, 1 : 1 + self.nq]


class MjxEngine:
    """MJX: `jax.jit` of `jax.vmap` over worlds of a `lax.scan` of `mjx.step`."""

    label = "MJX"

    def __init__(self, mjx, sc: Scene, qpos, qvel, ctrl, steps: int, newton: bool = False):
        import mujoco

        m = mujoco.MjModel.from_xml_string(sc.xml)
        if newton:  # MJX has no PGS solver (the Gymnasium humanoid's)
            m.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
            self.label = "MJX (Newton)"
        mx = mjx.put_model(m)

        def one(qp, qv, u):
            d = mjx.make_data(mx).replace(qpos=qp, qvel=qv, ctrl=u)
            return jax.lax.scan(lambda d, _: (step(d), None), d, None, length=steps)[0].qpos

        def step(d):  # MJX turns some int32 fields of a tendon model to int64 under x64
            return jax.tree.map(lambda new, old: new.astype(old.dtype), mjx.step(mx, d), d)

        args = tuple(jnp.asarray(a) for a in (qpos, qvel, ctrl))
        self.compiled, self.compile_s = _aot(jax.vmap(one), *args)
        self.run = lambda: self.compiled(*args)

    def final_qpos(self, out) -> np.ndarray:
        return np.asarray(out)


class BraxEngine:
    """Brax, generalized pipeline: `jax.jit` of `jax.vmap` of a `lax.scan` of
    `pipeline.step`."""

    label = "Brax"

    def __init__(self, brax, sc: Scene, qpos, qvel, ctrl, steps: int, as_brax: bool = False):
        pipeline, mjcf = brax
        if as_brax:  # Brax runs only Euler steps and has no PGS solver (the humanoid's)
            import mujoco

            m = mujoco.MjModel.from_xml_string(mjcf.fuse_bodies(sc.xml))
            m.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
            m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
            system = mjcf.load_model(m)
            self.label = "Brax (Newton, Euler)"
        else:
            system = mjcf.loads(sc.xml)

        def one(qp, qv, u):
            st = pipeline.init(system, qp, qv)
            step = lambda st, _: (pipeline.step(system, st, u), None)  # noqa: E731
            return jax.lax.scan(step, st, None, length=steps)[0].q

        args = tuple(jnp.asarray(a) for a in (qpos, qvel, ctrl))
        self.compiled, self.compile_s = _aot(jax.vmap(one), *args)
        self.run = lambda: self.compiled(*args)

    def final_qpos(self, out) -> np.ndarray:
        return np.asarray(out)


def load() -> str:
    try:
        return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load unknown"

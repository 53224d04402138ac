"""The fuzz runner: `python -m tests.fuzz_runner TARGET [MAX_EXAMPLES]` feeds random input
to one entry point of sciad with hypothesis and prints one JSON line
`{"examples": int, "outcomes": {kind: count}, "failures": [{"input", "detail"}]}`.

It runs without the test suite's jaxtyping import hook (see `tests/bad_inputs/__init__.py`),
so the errors tested are the ones users see. Every example must end in one of:

- `ok`: a result that is finite where `result == RESULTS.successful` (or a returned
  non-successful `RESULTS` code, `reported`);
- `refused`: a `ValueError`/`TypeError` (or `FileNotFoundError`/`ImportError`) raised by a
  `raise` statement in sciad's own source (the traceback's innermost frame is in `sciad/`
  and its line is a `raise`), or, for `load_mjcf`, MuJoCo's XML compiler refusing the file
  (the innermost Python frame is sciad's call of `mujoco.MjModel.from_xml_*`);
- `runtime`: an `equinox.EquinoxRuntimeError` (a `throw=True` result code or an
  `eqx.error_if` on a traced argument).

Anything else (a JAX/NumPy/equinox error, a message-less error, a non-finite "successful"
result) is a failure. Failures are collected, not raised, so one run reports them all;
hypothesis is derandomised, so the examples are the same on every machine.
"""

import json
import linecache
import math
import os
from pathlib import Path
import sys
import traceback
from typing import Any
import warnings

import equinox as eqx
from hypothesis import given, HealthCheck, settings, strategies as st
import jax
import jax.numpy as jnp
import numpy as np

import sciad
import sciad.md as md
import sciad.rigid as rigid

SCIAD_DIR = str(Path(sciad.__file__).resolve().parent)
ACCEPTED = (ValueError, TypeError, FileNotFoundError, ImportError)

# ---------------------------------------------------------------------------------------
# Classifying an outcome


def _finite(tree: Any) -> bool:
    leaves = [x for x in jax.tree.leaves(tree) if eqx.is_array(x)]
    return all(
        bool(jnp.all(jnp.isfinite(x))) for x in leaves if jnp.issubdtype(x.dtype, jnp.inexact)
    )


def _raised_by(e: BaseException) -> tuple[str, int, str]:
    """The file, line and source text of the innermost Python frame of `e`."""
    tb = e.__traceback__
    assert tb is not None
    while tb.tb_next is not None:
        tb = tb.tb_next
    file = tb.tb_frame.f_code.co_filename
    return file, tb.tb_lineno, linecache.getline(file, tb.tb_lineno).strip()


def _is_sciad_error(e: BaseException, mujoco_ok: bool) -> str | None:
    """Why `e` is not an error raised by sciad, or `None` if it is."""
    if not isinstance(e, ACCEPTED):
        return f"raised {type(e).__name__}, not ValueError/TypeError"
    if not str(e).strip():
        return f"raised {type(e).__name__} with an empty message"
    file, line, text = _raised_by(e)
    if not str(Path(file).resolve()).startswith(SCIAD_DIR):
        return f"raised {type(e).__name__} inside {file}:{line}, not in sciad"
    if text.startswith("raise "):
        return None
    if mujoco_ok and "mujoco.MjModel.from_xml" in text:
        return None
    return f"raised {type(e).__name__} at {file}:{line} ({text!r}), not a sciad `raise`"


def outcome(call, check, mujoco_ok: bool = False) -> tuple[str, str]:
    """Run `call()`, then `check(result)` -> `(kind, detail)`; kind 'bad' is a failure."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # sciad's warnings are tested elsewhere
            out = call()
        kind, detail = check(out)
    except eqx.EquinoxRuntimeError as e:
        return "runtime", str(e).splitlines()[0][:200]
    except Exception as e:  # noqa: BLE001 - classify every error
        why = _is_sciad_error(e, mujoco_ok)
        if why is None:
            return "refused", f"{type(e).__name__}: {str(e)[:200]}"
        tb = "".join(traceback.format_exception(e))[-2500:]
        return "bad", f"{why}: {str(e)[:400]}\n{tb}"
    return kind, detail


def check_trajectory(traj: sciad.Trajectory) -> tuple[str, str]:
    if bool(jnp.all(traj.result == sciad.RESULTS.successful)):
        if not (_finite(traj.ys) and _finite(traj.y1)):
            return "bad", "non-finite trajectory reported as successful"
        return "ok", ""
    return "reported", str(sciad.RESULTS[traj.result])[:120]


# ---------------------------------------------------------------------------------------
# Strategies: a handful of shapes (compilation dominates), many values. Each example is
# either well formed (two in three) or may put nonsense into any field, so that both the
# runs and the checks are exercised.

NASTY = [0.0, -1.0, math.nan, math.inf, -math.inf, 1e300, 1e-300]
BAD_DTYPES = ["float32", "float16", "int32", "complex128", "bool"]


class Fuzz:
    """Draws for one example: `pick(good, nasty)` draws from `good`, or, in a bad
    example, from `good + nasty`."""

    def __init__(self, draw):
        self.draw = draw
        self.bad = draw(st.sampled_from([False, False, True]))

    def pick(self, good: list, nasty: list = ()):
        return self.draw(st.sampled_from(list(good) + (list(nasty) if self.bad else [])))

    def value(self, good: list = (0.5, 1.0, 2.0)) -> float:
        return self.pick([*good, self.draw(st.floats(0.1, 10.0))], NASTY)

    def dtype(self) -> str:
        return self.pick(["float64"], BAD_DTYPES)

    def scalar(self, good: list = (0.5, 1.0, 2.0)):
        """A Python float, a 0-d JAX array or a NumPy scalar."""
        value = self.value(good)
        kind = self.pick(["python", "jax", "numpy"])
        if kind == "python":
            return value
        with np.errstate(all="ignore"):
            x = np.asarray(value).astype(self.dtype())
        return jnp.asarray(x) if kind == "jax" else x[()]

    def array(self, shapes: list, bad_shapes: list = (), good: list = (0.5, 1.0, 2.0)):
        shape = self.pick(shapes, bad_shapes)
        values = [self.value(good) for _ in range(math.prod(shape))]
        with np.errstate(all="ignore"):
            return jnp.asarray(np.asarray(values).reshape(shape).astype(self.dtype()))

    def run_options(self) -> dict:
        """`dt`, `n_steps`/`t1`, `t0` and a `saveat` spec for `simulate`."""
        dt = self.pick([0.01, 0.05], [0.0, -0.01, math.nan, math.inf, 1e300])
        opts: dict = {"dt": dt if self.pick([True, False]) else self.scalar([dt])}
        how = self.pick(["n_steps", "n_steps", "t1"], ["both", "neither"])
        t0 = opts["t0"] = self.pick([0.0, 1.0, 1e7], [math.nan, math.inf])
        if how in ("n_steps", "both"):
            opts["n_steps"] = self.pick([4, 10], [0, -3, 2.5, True])
        if how in ("t1", "both"):
            opts["t1"] = t0 + self.pick([0.2], [-0.2, 0.0, 0.123, math.nan, math.inf])
        save = self.pick([None, "steps", "ts", "t0"])
        if save == "steps":
            opts["saveat"] = dict(steps=self.pick([1, 2], [100, 0, -1]))
        elif save == "ts":
            opts["saveat"] = dict(ts=self.pick([[0.0, 0.01]], [[0.01, 0.0], [0.0, 5.0]]))
            opts["t0"] = 0.0
            if "t1" in opts:
                opts["t1"] -= t0
        elif save == "t0":
            opts["saveat"] = dict(t0=True)
        return opts


def _saveat(opts: dict) -> dict:
    """`opts` with its `saveat` spec made a `sciad.SaveAt` (built in the call, since
    building it may raise)."""
    if "saveat" not in opts:
        return opts
    spec = dict(opts["saveat"])
    if "ts" in spec:
        spec["ts"] = jnp.asarray(spec["ts"])
    return {**opts, "saveat": sciad.SaveAt(**spec)}


# ---------------------------------------------------------------------------------------
# Targets

ODE_MODELS = {
    "pendulum": sciad.ode.Pendulum,
    "oscillator": sciad.ode.HarmonicOscillator,
    "kepler": sciad.ode.Kepler,
    "kepler_ic": sciad.ode.Kepler,
}


@st.composite
def ode_case(draw):
    f = Fuzz(draw)
    which = f.pick(sorted(ODE_MODELS))
    if which == "pendulum":
        kw = dict(length=f.scalar(), gravity=f.scalar([9.81]), damping=f.scalar([0.0, 0.1]))
        y0 = f.array([(2,)], [(3,), (2, 1), ()])
    elif which == "oscillator":
        kw = dict(mass=f.scalar(), stiffness=f.scalar(), drive_amplitude=f.scalar([0.0, 1.0]),
                  drive_frequency=f.scalar([0.0, 2.0]))  # fmt: skip
        y0 = f.array([(2,)], [(4,)])
    else:
        kw = dict(mu=f.scalar())
        if which == "kepler":
            y0 = (f.array([(2,), (3,)], [(4,)]), f.array([(2,), (3,)]))
        else:  # an eccentricity; the state comes from initial_state
            y0 = f.pick([0.0, 0.3, 0.9, 0.999], [1.0, -0.1, math.nan, 1.5])
    splitting = ["VelocityVerlet", "Yoshida4"]  # for separable models only
    separable = which.startswith("kepler")
    integrator = f.pick([None, "RK4", *(splitting if separable else [])], splitting)
    return which, kw, y0, integrator, f.run_options()


@given(ode_case())
def fuzz_simulate_ode(case):
    which, kw, y0, integrator, opts = case

    def call():
        model = ODE_MODELS[which](**kw)
        state = model.initial_state(y0) if which == "kepler_ic" else y0
        integ = None if integrator is None else getattr(sciad, integrator)()
        return sciad.simulate(model, state, integrator=integ, throw=False, **_saveat(opts))

    def check(traj):
        kind, detail = check_trajectory(traj)
        if kind == "ok" and "n_steps" in opts and "saveat" not in opts:
            # the clock: t1 = t0 + n dt exactly (in float64), whatever the state's dtype
            expect = opts.get("t0", 0.0) + opts["n_steps"] * float(opts["dt"])
            if not math.isclose(float(traj.t1), expect, rel_tol=1e-12, abs_tol=1e-12):
                return "bad", f"t1 = {float(traj.t1)!r}, expected t0 + n dt = {expect!r}"
        if kind == "ok" and "ts" in opts.get("saveat", {}):
            asked = np.asarray(opts["saveat"]["ts"], dtype=float)
            if not np.allclose(np.asarray(traj.ts, dtype=float), asked, rtol=0, atol=1e-12):
                return "bad", f"saved at ts = {traj.ts}, asked for {asked}"
        return kind, detail

    record(case, outcome(call, check))


AXES = [(0.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 3.0, 4.0)]
BAD_AXES = [(0.0, 0.0, 0.0), (0.0, math.nan, 1.0)]
JOINTS = {
    "hinge": lambda f: dict(axis=f.pick(AXES, BAD_AXES), damping=f.value([0.0, 0.1])),
    "hinge_range": lambda f: dict(
        axis=(0.0, 1.0, 0.0), range=f.pick([(-1.0, 1.0), (0.0, 0.5)], [(1.0, -1.0), (0.0, 0.0)])
    ),
    "slider": lambda f: dict(axis=f.pick(AXES, BAD_AXES)),
    "ball": lambda f: {},
    "free": lambda f: {},
    "fixed": lambda f: {},
}
JOINT_CLASSES = {
    "hinge": rigid.HingeJoint,
    "hinge_range": rigid.HingeJoint,
    "slider": rigid.SliderJoint,
    "ball": rigid.BallJoint,
    "free": rigid.FreeJoint,
    "fixed": rigid.FixedJoint,
}
INERTIAS = [(0.1, 0.1, 0.1), (0.1, 0.2, 0.25)]
BAD_INERTIAS = [(0.0, 0.0, 0.0), (-0.1, 0.1, 0.1), (0.1, 0.1, 1.0), (math.nan, 0.1, 0.1)]


@st.composite
def rigid_case(draw):
    f = Fuzz(draw)
    specs = []
    for i in range(f.pick([1, 2])):
        kind = f.pick(sorted(JOINTS))
        specs.append(
            dict(
                joint=(kind, JOINTS[kind](f)),
                parent=None if i == 0 else f.pick(["b0"], ["zz"]),
                pos=(0.0, 0.0, f.pick([0.0, -0.5], [math.nan])),
                mass=f.value(),
                inertia=f.pick(INERTIAS, BAD_INERTIAS),
            )
        )
    gravity = f.pick([(0.0, 0.0, -9.81)], [(0.0, 0.0, math.nan)])
    state = f.pick(["default", "perturbed"], ["wrong", "nan"])
    dt = f.pick([1e-3], [0.0, -1e-3, 1.0])
    geoms = []
    if f.pick([False, True]):  # a ground plane and a shape on each body, touching or not
        geoms.append(dict(shape=("plane", ()), pos=(0.0, 0.0, f.pick([-0.1, -1.0, 0.05]))))
        for i in range(len(specs)):
            shape = f.pick([("sphere", (0.1,)), ("box", ((0.1, 0.05, 0.1),)),
                            ("capsule", (0.05, 0.1))], [("sphere", (-0.1,)), ("sphere", (0.0,))])  # fmt: skip
            geoms.append(
                dict(shape=shape, body=f"b{i}", friction=f.value([0.5, 1.0, 0.0]),
                     restitution=f.pick([0.0, 0.5], [1.5, -0.1]),
                     time_constant=f.pick([None, 0.02, 1e-4], [0.0, -0.01, math.nan]))
            )  # fmt: skip
    return specs, gravity, state, dt, geoms


SHAPES = {"plane": rigid.Plane, "sphere": rigid.Sphere, "box": rigid.Box, "capsule": rigid.Capsule}


@given(rigid_case())
def fuzz_simulate_rigid(case):
    specs, gravity, state, dt, geom_specs = case

    def call():
        bodies = []
        for i, spec in enumerate(specs):
            kind, joint_kw = spec["joint"]
            joint = JOINT_CLASSES[kind](**joint_kw)
            bodies.append(rigid.Body(f"b{i}", **{**spec, "joint": joint}))
        geoms = []
        for spec in geom_specs:
            kind, args = spec["shape"]
            rest = {k: v for k, v in spec.items() if k not in ("shape", "time_constant")}
            tau = spec.get("time_constant")
            impedance = None if tau is None else rigid.Impedance(time_constant=tau)
            geoms.append(rigid.Geom(SHAPES[kind](*args), impedance=impedance, **rest))
        model = rigid.MultiBody(bodies, gravity=gravity, geoms=geoms)
        q, v = model.default_state()
        if state == "perturbed":
            q, v = model.normalize(q + 0.1), v + 0.3
        elif state == "wrong":
            q = jnp.zeros(q.shape[0] + 1)
        elif state == "nan":
            v = jnp.full_like(v, jnp.nan)
        return sciad.simulate(model, (q, v), dt=dt, n_steps=5, throw=False)

    record(case, outcome(call, check_trajectory))


@st.composite
def md_case(draw):
    f = Fuzz(draw)
    n, d = f.pick([4, 3]), f.pick([3, 2])
    case = dict(
        n=n, d=d,
        space=f.pick(["free", "box", "box", "triclinic"]),
        box=f.pick([4.0, 10.0], [1.0, 0.0, -4.0, math.nan]),
        potential=f.pick(["lj", "truncated", "soft", "species"]),
        sigma=f.value([1.0]), epsilon=f.value([1.0]),
        cutoff=f.pick([1.5, 1.9], [2.5, 3.0, 0.0, -1.0, math.inf]),
        masses=f.array([(n,)], [(n + 1,), (n, 1)]),
        species=f.pick([[0, 1, 0, 1], [0, 0, 1, 1]], [[0, 2, 0, 1], [0, -1, 0, 1]])[:n],
        positions=f.pick([(n, d)], [(n,), (n + 1, d), (n, d + 1)]),
        spacing=f.pick([1.2, 1.5], [0.0, math.nan]),
        dtype=f.dtype(),
        run=f.pick([False, True]),
    )  # fmt: skip
    return case


def _md_system(c: dict) -> md.MDSystem:
    d = c["d"]
    if c["space"] == "free":
        space = md.FreeSpace()
    elif c["space"] == "box":
        space = md.PeriodicBox(jnp.full(d, c["box"]))
    else:
        space = md.TriclinicBox(c["box"] * jnp.eye(d) + 0.1 * jnp.tri(d, k=-1))
    sigma, eps = c["sigma"], c["epsilon"]
    if c["potential"] == "lj":
        pot = md.LennardJones(sigma, eps)
    elif c["potential"] == "truncated":
        pot = md.Truncated(md.LennardJones(sigma, eps), c["cutoff"])
    elif c["potential"] == "soft":
        pot = md.Truncated(md.SoftSphere(sigma, eps), c["cutoff"])
    else:
        lj = md.LennardJones(jnp.full((2, 2), sigma), jnp.full((2, 2), eps))
        return md.MDSystem(
            space, md.Truncated(lj, c["cutoff"]), masses=c["masses"],
            species=jnp.asarray(c["species"]),
        )  # fmt: skip
    return md.MDSystem(space, pot, masses=c["masses"])


@given(md_case())
def fuzz_md_system(c):
    def call():
        system = _md_system(c)
        # the first points of a 3 x 3 (x 3) grid with the given spacing, in the requested
        # shape (a wrong number of particles or dimensions in a bad example)
        rows, cols = (*c["positions"], 1)[:2] if len(c["positions"]) == 1 else c["positions"]
        axes = np.meshgrid(*[np.arange(3.0)] * max(cols, 2), indexing="ij")
        grid = np.stack(axes, -1).reshape(-1, max(cols, 2))[:rows, :cols]
        q = jnp.asarray(c["spacing"] * grid).astype(c["dtype"]).reshape(c["positions"])
        if not c["run"]:
            return system.potential_energy(q)
        return sciad.simulate(system, (q, jnp.zeros_like(q)), dt=0.002, n_steps=3, throw=False)

    def check(out):
        if isinstance(out, sciad.Trajectory):
            return check_trajectory(out)
        if not _finite(out):
            return "bad", f"potential_energy returned {out}"
        return "ok", ""

    record(c, outcome(call, check))


@st.composite
def mjcf_case(draw):
    """A small MJCF model: a floor and one or two bodies with random attributes."""
    f = Fuzz(draw)
    v = lambda good=("1", "0.5"): f.pick(list(good), ["0", "-1", "nan", "inf", "abc", "1 2"])
    joint_type = f.pick(["hinge", "slide", "ball", "free", ""], ["spin"])
    geom_type = f.pick(["sphere", "box", "capsule", "cylinder"], ["ellipsoid", "mesh"])
    size = f.pick(["0.1", "0.1 0.2", "0.1 0.2 0.3"], ["0", "-0.1", "x"])
    attrs = []
    if f.pick([False, True]):
        attrs.append(f'mass="{v()}"')
    if f.pick([False, True]):
        attrs.append(f'density="{v(("1000", "500"))}"')
    jattrs = []
    if f.pick([False, True]):
        jattrs.append(f'range="{v(("-1", "-0.5"))} {v(("1", "0.5"))}" limited="true"')
    if f.pick([False, True]):
        jattrs.append(f'damping="{v(("0.1", "0"))}"')
    if f.pick([False, True]):
        jattrs.append(f'axis="{f.pick(["0 1 0", "0 0 1"], ["0 0 0", "1 0"])}"')
    joint = f'<joint name="j" type="{joint_type}" {" ".join(jattrs)}/>' if joint_type else ""
    if joint_type in ("free", "ball"):
        joint = f'<joint name="j" type="{joint_type}"/>'
    inertial = ""
    if f.pick([False, True]):
        inertial = f'<inertial pos="0 0 0" mass="{v()}" diaginertia="{v(("0.1",))} 0.1 0.1"/>'
    child = ""
    if f.pick([False, True]):
        child = (
            '<body name="c" pos="0 0 -0.3"><joint type="hinge" axis="0 1 0"/>'
            f'<geom type="capsule" size="0.05 0.1" mass="{v()}"/></body>'
        )
    timestep = f.pick(["0.002", "0.01"], ["0", "-0.01", "0.5"])
    integrator = f.pick(["Euler", "RK4", "implicitfast"])
    solref = f.pick(["", 'solref="0.02 1"'], ['solref="0.0001 1"', 'solref="-1 1"'])
    xml = f"""<mujoco model="fuzz">
  <option timestep="{timestep}" integrator="{integrator}"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1" {solref}/>
    <body name="b" pos="0 0 {v(("1", "0.3"))}">
      {joint}
      {inertial}
      <geom type="{geom_type}" size="{size}" {" ".join(attrs)}/>
      {child}
    </body>
  </worldbody>
</mujoco>"""
    return xml, f.pick([False, True])


@given(mjcf_case())
def fuzz_load_mjcf(case):
    xml, run = case

    def call():
        loaded = rigid.load_mjcf(xml)
        if not run:
            return loaded
        return sciad.simulate(
            loaded.model, loaded.y0, dt=loaded.dt, n_steps=3,
            integrator=loaded.integrator, throw=False,
        )  # fmt: skip

    def check(out):
        if isinstance(out, sciad.Trajectory):
            return check_trajectory(out)
        if not (_finite(out.model) and _finite(out.y0)):
            return "bad", "load_mjcf returned a model with non-finite parameters"
        return "ok", ""

    record(case, outcome(call, check, mujoco_ok=True))


def _predict(model):
    y0 = jnp.array([0.5, 0.0])
    traj = sciad.simulate(model, y0, dt=0.05, n_steps=20, saveat=sciad.SaveAt(steps=4))
    return traj.ys[:, 0]  # the angle at t = 0.2, 0.4, ..., 1.0 (5 values)


def _residuals(model, data):
    return _predict(model) - data


SELECTORS = {
    None: None,
    "length": lambda m: m.length,
    "length_gravity": lambda m: (m.length, m.gravity),
    "nothing": lambda m: (),
    "not_a_field": lambda m: jnp.ones(2),
}


@st.composite
def fit_case(draw):
    f = Fuzz(draw)
    return dict(
        data=f.pick(["clean"], ["random"]),
        random_data=f.array([(5,)], [(5, 1), (4,), (5, 2)]),
        length=f.value([0.8, 1.2]),
        free=f.pick([None, "length", "length_gravity"], ["nothing", "not_a_field"]),
        positive=f.pick([None, "length"], ["length_gravity"]),
        max_steps=f.pick([64], [1, 0, -1]),
    )


@given(fit_case())
def fuzz_fit(c):
    def call():
        model = sciad.ode.Pendulum(length=c["length"], gravity=9.81, damping=0.1)
        data = c["random_data"]
        if c["data"] == "clean":
            data = _predict(sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1))
        return sciad.fit(
            model, _residuals, data, free=SELECTORS[c["free"]],
            positive=SELECTORS[c["positive"]], max_steps=c["max_steps"], throw=False,
        )  # fmt: skip

    def check(res):
        if bool(res.result == sciad.RESULTS.successful):
            if not (_finite(res.model) and _finite(res.loss)):
                return "bad", f"non-finite fit reported as successful: {res.model}"
            if c["free"] in (None, "length_gravity") and not res.rank_deficient:
                # only g/L (and the damping) are observable: the fit must say so
                return "bad", f"length and gravity both free, rank_deficient={res.rank_deficient}"
            return "ok", ""
        return "reported", str(sciad.RESULTS[res.result])[:120]

    record(c, outcome(call, check))


TARGETS = {
    "simulate_ode": fuzz_simulate_ode,
    "simulate_rigid": fuzz_simulate_rigid,
    "md_system": fuzz_md_system,
    "load_mjcf": fuzz_load_mjcf,
    "fit": fuzz_fit,
}

# ---------------------------------------------------------------------------------------

RECORDS: list[tuple[str, str, str]] = []


def record(case: Any, result: tuple[str, str]) -> None:
    RECORDS.append((repr(case)[:1500], *result))


def main() -> None:
    jax.config.update("jax_enable_x64", True)
    target, max_examples = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # prints and warnings from sciad go to stderr, not into the report
    sys.stdout = sys.stderr
    test = settings(
        max_examples=max_examples,
        derandomize=True,
        deadline=None,
        database=None,
        phases=["explicit", "generate"],  # no shrinking: failures are recorded, not raised
        suppress_health_check=list(HealthCheck),
    )(TARGETS[target])
    test()
    counts: dict[str, int] = {}
    for _, kind, _ in RECORDS:
        counts[kind] = counts.get(kind, 0) + 1
    failures = [{"input": c, "detail": d} for c, k, d in RECORDS if k == "bad"]
    report = {"examples": len(RECORDS), "outcomes": counts, "failures": failures}
    if os.environ.get("SCIAD_FUZZ_VERBOSE"):
        report["records"] = [{"input": c, "kind": k, "detail": d[:200]} for c, k, d in RECORDS]
    out.write(json.dumps(report))
    out.write("\n")
    out.flush()


if __name__ == "__main__":
    main()

"""Bad input to the core (`simulate`, `SaveAt`, adjoints, checkpoints, `windowed_average`) and the error each must raise."""

import pathlib
import tempfile

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import pytest

import sciad

from . import case_names, run_case
from ._common import KEPLER, OK, PEND, sim, Y0  # noqa: F401

KY0 = KEPLER.initial_state(eccentricity=0.5)
F32 = jnp.zeros(1, jnp.float32)


class Still(sciad.AbstractModel):
    """dy/dt = 0, in any dtype."""

    def vector_field(self, t, y):
        return jnp.zeros_like(y)


def still(y0=F32, **kw):
    return sim(Still(), y0, **kw)


def kepler_state(model=KEPLER, n=5):
    """The integrator state after `n` velocity-Verlet steps of `model`."""
    return sciad.simulate(model, KY0, dt=0.01, n_steps=n).integrator_state


def resume(state, y0=KY0, **kw):
    return sim(KEPLER, y0, integrator=sciad.VelocityVerlet(), integrator_state=state, **kw)


def traced_resume():
    """A stale state passed inside jit: refused at run time."""
    state = kepler_state()
    run = jax.jit(lambda y, s: resume(s, y0=y).y1)
    return jax.block_until_ready(run(KY0, state))


def windowed(**kw):
    args = dict(fn=lambda t, y, m: y, dt=0.01, n_steps=10, window=5)
    args.update(kw)
    fn = args.pop("fn")
    return sciad.windowed_average(PEND, Y0, fn, **args)


LIKE = (KY0, jnp.asarray(0.0), sciad.VelocityVerlet().init(KEPLER, 0.0, KY0))


def checkpoint(edit=None, model=KEPLER, like=LIKE, load_model=KEPLER):
    """Save a Kepler checkpoint, let `edit` change its bytes, load it."""
    path = pathlib.Path(tempfile.mkdtemp()) / "run.ckpt"
    traj = sciad.simulate(KEPLER, KY0, dt=0.01, n_steps=5)
    sciad.save_checkpoint(path, (traj.y1, traj.t1, traj.integrator_state), model)
    if edit is not None:
        path.write_bytes(edit(path.read_bytes()))
    return sciad.load_checkpoint(path, like, load_model)


def flip(data, n=64):
    cut = len(data) - 100
    return data[:cut] + bytes(b ^ 0xA5 for b in data[cut : cut + n]) + data[cut + n :]


_ONE_HINGE = sciad.rigid.MultiBody(
    [
        sciad.rigid.Body(
            "a", joint=sciad.rigid.HingeJoint(damping=0.1), mass=1.0, inertia=jnp.ones(3)
        )
    ]
)

CASES = [
    (
        "model edited by tree_at to a negative length",
        lambda: sim(eqx.tree_at(lambda m: m.length, PEND, -1.0)),
        ValueError,
        r"Pendulum.length must be finite and > 0; got -1.0",
    ),
    (
        "rigid joint edited by tree_at to a negative damping",
        lambda: sciad.simulate(
            eqx.tree_at(lambda m: m.joints[0].damping, _ONE_HINGE, -1.0),
            _ONE_HINGE.default_state(),
            **OK,
        ),
        ValueError,
        r"HingeJoint.damping must be finite and >= 0; got -1.0",
    ),
    ("y0 shape", lambda: sim(y0=jnp.zeros(3)), ValueError, r"y0 must have shape \(2,\)"),
    ("y0 structure", lambda: sim(KEPLER, jnp.zeros(4)), ValueError, r"y0 .* tuple \(q, p\)"),
    ("y0 q/p mismatch", lambda: sim(KEPLER, (jnp.zeros(2), jnp.zeros(3))), ValueError, "q and p"),
    ("y0 integer", lambda: sim(y0=jnp.array([1, 0])), TypeError, "y0 has dtype int"),
    ("y0 NaN", lambda: sim(y0=jnp.array([jnp.nan, 0.0])), ValueError, "y0 contains NaN"),
    ("y0 empty", lambda: sim(y0=()), ValueError, "y0 is empty"),
    ("dt negative", lambda: sim(dt=-0.1), ValueError, "dt must be positive"),
    ("dt zero", lambda: sim(dt=0.0), ValueError, "dt must be positive"),
    ("dt NaN", lambda: sim(dt=float("nan")), ValueError, "dt must be finite"),
    ("dt vector", lambda: sim(dt=jnp.ones(2)), ValueError, "dt must be a real scalar"),
    ("t1 < t0", lambda: sim(n_steps=None, t0=1.0, t1=0.5), ValueError, "t1 must be >= t0"),
    ("t1 and n_steps", lambda: sim(t1=1.0), ValueError, "exactly one of t1 and n_steps"),
    (
        "neither t1 nor n_steps",
        lambda: sim(n_steps=None),
        ValueError,
        "exactly one of t1 and n_steps",
    ),
    ("n_steps negative", lambda: sim(n_steps=-1), ValueError, "n_steps must be >= 0"),
    ("n_steps float", lambda: sim(n_steps=10.0), TypeError, "n_steps must be a Python int"),
    ("t1 off grid", lambda: sim(n_steps=None, t1=0.015), ValueError, "whole number of steps"),
    (
        "NaN parameter",
        lambda: sim(sciad.ode.Pendulum(length=float("nan"))),
        ValueError,
        r"model\.length contains NaN|Pendulum\.length must be finite",
    ),
    (
        "saveat outside",
        lambda: sim(saveat=sciad.SaveAt(ts=jnp.array([0.0, 0.5]))),
        ValueError,
        r"SaveAt.ts must lie in \[t0, t1\]",
    ),
    (
        "saveat off grid",
        lambda: sim(saveat=sciad.SaveAt(ts=jnp.array([0.0, 0.055]))),
        ValueError,
        "step grid",
    ),
    (
        "saveat unsorted",
        lambda: sim(saveat=sciad.SaveAt(ts=jnp.array([0.05, 0.01]))),
        ValueError,
        "strictly increasing",
    ),
    ("saveat steps", lambda: sciad.SaveAt(steps=0), ValueError, r"SaveAt\(steps=...\)"),
    ("saveat fn", lambda: sciad.SaveAt(fn=3), TypeError, r"SaveAt\(fn=...\) must be callable"),
    (
        "diffrax saveat",
        lambda: sim(saveat=diffrax.SaveAt(t1=True)),
        TypeError,
        "saveat must be a sciad.SaveAt",
    ),
    ("unknown integrator", lambda: sim(integrator="rk45"), TypeError, "unknown integrator 'rk45'"),
    (
        "diffrax solver as integrator",
        lambda: sim(integrator=diffrax.Tsit5()),
        TypeError,
        "unknown integrator",
    ),
    ("integrator class", lambda: sim(integrator=sciad.RK4), TypeError, r"pass RK4\(\)"),
    (
        "splitting on non-separable",
        lambda: sim(integrator=sciad.VelocityVerlet()),
        TypeError,
        "needs a separable model",
    ),
    (
        "model not a model",
        lambda: sciad.simulate(lambda t, y: -y, Y0, **OK),
        TypeError,
        "model must be a sciad.AbstractModel",
    ),
    (
        "model class",
        lambda: sciad.simulate(sciad.ode.Pendulum, Y0, **OK),
        TypeError,
        "model must be an instance",
    ),
    (
        "diffrax adjoint",
        lambda: sim(adjoint=diffrax.DirectAdjoint()),
        TypeError,
        "adjoint must be a sciad.AbstractAdjoint",
    ),
    ("max_steps zero", lambda: sim(max_steps=0), ValueError, "max_steps must be a positive int"),
    (
        "checkpoint levels",
        lambda: sciad.CheckpointAdjoint(levels=0),
        ValueError,
        r"CheckpointAdjoint\(levels=...\)",
    ),
    (
        "traced t1",
        lambda: jax.jit(lambda t1: sim(n_steps=None, t1=t1).y1)(1.0),
        ValueError,
        "t1 fixes the number of steps",
    ),
    (
        "nbody masses",
        lambda: sciad.ode.NBody(masses=jnp.ones((2, 2))),
        ValueError,
        r"masses must have shape \(n,\)",
    ),
    (
        "nbody q shape",
        lambda: sim(sciad.ode.NBody(masses=jnp.ones(3)), (jnp.zeros((2, 3)), jnp.zeros((2, 3)))),
        ValueError,
        r"y0\[0\] \(q\) must have shape \(n, d\)",
    ),
    # --- time in the state's dtype
    (
        "dt below float32 resolution at t0",
        lambda: still(t0=1e7, dt=1e-3),
        ValueError,
        "below the resolution of the time dtype float32 at t = 10000000",
    ),
    (
        "dt below float32 resolution at t1",
        lambda: still(t0=2.0**24 - 4, dt=1.0, n_steps=4),
        ValueError,
        "at t = 16777216",
    ),
    (
        "dt below float16 resolution",
        lambda: still(jnp.zeros(1, jnp.float16), t0=100.0, dt=0.01),
        ValueError,
        "time dtype float16",
    ),
    (
        "dt below float64 resolution",
        lambda: still(jnp.zeros(1), t0=1e20, dt=1.0),
        ValueError,
        "time dtype float64",
    ),
    (
        "dt below resolution traced",
        lambda: jax.block_until_ready(
            jax.jit(lambda t0: still(t0=t0, dt=1e-3).t1)(jnp.float32(1e7))
        ),
        Exception,
        "below the resolution",
    ),
    ("t0 string", lambda: sim(t0="0"), TypeError, "t0 must be a real scalar; got '0'"),
    ("dt string", lambda: sim(dt="0.1"), TypeError, "dt must be a real scalar; got '0.1'"),
    ("t1 string", lambda: sim(n_steps=None, t1="1"), TypeError, "t1 must be a real scalar"),
    ("t0 None", lambda: sim(t0=None), TypeError, "t0 must be a real scalar; got None"),
    ("dt None", lambda: sim(dt=None), TypeError, "dt must be a real scalar; got None"),
    ("t0 complex", lambda: sim(t0=1j), TypeError, "t0 must be a real number"),
    (
        "n_steps beyond int32",
        lambda: sim(n_steps=2**31),
        ValueError,
        "longer than the int32 step counter",
    ),
    (
        "t1 beyond int32 steps",
        lambda: sim(n_steps=None, t1=1e10, dt=1.0),
        ValueError,
        "int32 step counter",
    ),
    ("n_steps bool", lambda: sim(n_steps=True), TypeError, "n_steps must be a Python int"),
    # --- states
    (
        "y0 complex",
        lambda: sim(y0=jnp.array([1.0 + 0j, 0.0])),
        TypeError,
        "y0 has complex dtype complex128, but Pendulum does not support complex",
    ),
    (
        "y0 complex leaf",
        lambda: sim(KEPLER, (KY0[0], KY0[1].astype(jnp.complex128))),
        TypeError,
        r"y0\[1\] has complex dtype",
    ),
    (
        "y0 complex64",
        lambda: still(jnp.zeros(2, jnp.complex64)),
        TypeError,
        "complex dtype complex64",
    ),
    (
        "y0 mixed float dtypes",
        lambda: sim(KEPLER, (KY0[0].astype(jnp.float32), KY0[1])),
        TypeError,
        "y0 mixes the dtypes float32, float64",
    ),
    ("y0 list of numbers", lambda: sim(y0=[1.0, 0.0]), TypeError, r"y0 is a list of numbers"),
    ("throw not bool", lambda: sim(throw="no"), TypeError, "throw must be True or False"),
    ("max_steps float", lambda: sim(max_steps=3.0), ValueError, "max_steps must be a positive int"),
    ("max_steps bool", lambda: sim(max_steps=True), ValueError, "max_steps must be a positive int"),
    (
        "checkpoint levels bool",
        lambda: sciad.CheckpointAdjoint(levels=True),
        ValueError,
        r"CheckpointAdjoint\(levels=...\)",
    ),
    (
        "checkpoint memory negative",
        lambda: sciad.CheckpointAdjoint(memory=-1),
        ValueError,
        r"CheckpointAdjoint\(memory=...\) must be a positive int \(bytes\), got -1",
    ),
    (
        "checkpoint memory and levels",
        lambda: sciad.CheckpointAdjoint(levels=3, memory=2**20),
        ValueError,
        "CheckpointAdjoint takes levels or memory, not both",
    ),
    (
        "checkpoint memory too small",
        lambda: sim(n_steps=1000, adjoint=sciad.CheckpointAdjoint(memory=8)),
        ValueError,
        r"CheckpointAdjoint\(memory=8\) is too small for this run: .* need at least",
    ),
    # --- SaveAt
    (
        "saveat steps beyond run",
        lambda: sim(saveat=sciad.SaveAt(steps=20)),
        ValueError,
        r"SaveAt\(steps=20\) .* only 10 steps: it would save nothing",
    ),
    (
        "saveat steps with t1 beyond run",
        lambda: sim(saveat=sciad.SaveAt(t1=True, steps=11)),
        ValueError,
        r"SaveAt\(steps=11\)",
    ),
    (
        "saveat steps on empty run",
        lambda: sim(n_steps=0, saveat=sciad.SaveAt(steps=1)),
        ValueError,
        "only 0 steps",
    ),
    (
        "saveat steps bool",
        lambda: sciad.SaveAt(steps=True),
        ValueError,
        r"SaveAt\(steps=...\) must be a positive int",
    ),
    (
        "saveat t0 not bool",
        lambda: sciad.SaveAt(t0="yes"),
        TypeError,
        r"SaveAt\(t0=...\) must be True or False",
    ),
    (
        "saveat t1 not bool",
        lambda: sciad.SaveAt(t1=1),
        TypeError,
        r"SaveAt\(t1=...\) must be True or False",
    ),
    (
        "saveat ts NaN",
        lambda: sim(saveat=sciad.SaveAt(ts=jnp.array([0.0, jnp.nan]))),
        ValueError,
        "SaveAt.ts must be finite",
    ),
    (
        "saveat ts complex",
        lambda: sim(saveat=sciad.SaveAt(ts=jnp.array([0.0, 0.05j]))),
        TypeError,
        "SaveAt.ts must be real",
    ),
    (
        "saveat ts 2-D",
        lambda: sim(saveat=sciad.SaveAt(ts=jnp.zeros((2, 2)))),
        ValueError,
        "non-empty 1-D array",
    ),
    (
        "saveat ts empty",
        lambda: sim(saveat=sciad.SaveAt(ts=jnp.zeros(0))),
        ValueError,
        "non-empty 1-D array",
    ),
    (
        "saveat ts string",
        lambda: sim(saveat=sciad.SaveAt(ts="0.1")),
        TypeError,
        "SaveAt.ts must be a real number or array",
    ),
    (
        "saveat fn signature",
        lambda: sim(saveat=sciad.SaveAt(steps=1, fn=lambda y: y)),
        TypeError,
        r"SaveAt.fn must be callable as fn\(t, y, model\)",
    ),
    (
        "saveat fn returns text",
        lambda: sim(saveat=sciad.SaveAt(steps=1, fn=lambda t, y, m: "x")),
        TypeError,
        "SaveAt.fn must return a PyTree of arrays",
    ),
    # --- resuming
    (
        "integrator_state from another point",
        lambda: resume(kepler_state()),
        ValueError,
        r"integrator_state does not belong .* integrator.refresh\(model, t0, y0, state\)",
    ),
    (
        "integrator_state from other parameters",
        lambda: resume(kepler_state(sciad.ode.Kepler(mu=2.0), 0)),
        ValueError,
        "does not belong to this model",
    ),
    (
        "integrator_state NaN",
        lambda: resume(sciad.SplittingState(jnp.full(2, jnp.nan))),
        ValueError,
        "does not belong",
    ),
    (
        "integrator_state traced stale",
        traced_resume,
        Exception,
        "does not belong to this model, t0 and y0",
    ),
    (
        "integrator_state shape",
        lambda: resume(sciad.SplittingState(jnp.zeros(3))),
        ValueError,
        r"integrator_state.force has shape \(3,\) .* gives shape \(2,\)",
    ),
    (
        "integrator_state dtype",
        lambda: resume(sciad.SplittingState(jnp.zeros(2, jnp.float32))),
        ValueError,
        "dtype float32, but VelocityVerlet",
    ),
    (
        "integrator_state structure",
        lambda: resume(jnp.zeros(2)),  # the bare force, not a SplittingState
        ValueError,
        "integrator_state has structure",
    ),
    (
        "integrator_state for RK4",
        lambda: sim(integrator_state=jnp.zeros(2)),
        ValueError,
        r"RK4.init\(model, t0, y0\) has structure",
    ),
    (
        "windowed stale integrator_state",
        lambda: sciad.windowed_average(
            KEPLER,
            KY0,
            lambda t, y, m: y[0],
            dt=0.01,
            n_steps=10,
            window=5,
            integrator_state=kepler_state(),
        ),
        ValueError,
        "does not belong",
    ),
    # --- windowed_average
    (
        "windowed fn signature",
        lambda: windowed(fn=lambda y: y),
        TypeError,
        r"callable as fn\(t, y, model\)",
    ),
    (
        "windowed window not dividing",
        lambda: windowed(window=3),
        ValueError,
        r"n_steps \(10\) a multiple of window \(3\)",
    ),
    (
        "windowed window zero",
        lambda: windowed(window=0),
        ValueError,
        "window must be a positive int",
    ),
    (
        "windowed save_every bool",
        lambda: windowed(save_every=True),
        ValueError,
        "save_every must be a positive int",
    ),
    (
        "windowed t0 vector",
        lambda: windowed(t0=jnp.zeros(2)),
        ValueError,
        "t0 must be a real scalar",
    ),
    # --- checkpoints
    (
        "checkpoint flipped bytes",
        lambda: checkpoint(flip),
        ValueError,
        "corrupt: the SHA-256 checksum",
    ),
    ("checkpoint truncated", lambda: checkpoint(lambda d: d[:-7]), ValueError, "truncated"),
    (
        "checkpoint header cut",
        lambda: checkpoint(lambda d: d[:25]),
        ValueError,
        "header cannot be read",
    ),
    (
        "checkpoint other version",
        lambda: checkpoint(lambda d: d.replace(b'"format": 1', b'"format": 2', 1)),
        ValueError,
        "format version 2; this sciad reads version 1",
    ),
    (
        "checkpoint foreign file",
        lambda: checkpoint(lambda d: b"\x93NUMPY" + d),
        ValueError,
        "not a sciad checkpoint",
    ),
    (
        "checkpoint other model",
        lambda: checkpoint(load_model=PEND),
        ValueError,
        "written for a sciad.ode.*Kepler, not a .*Pendulum",
    ),
    (
        "checkpoint other model structure",
        lambda: checkpoint(load_model=sciad.ode.Kepler(mu=jnp.float32(1.0))),
        ValueError,
        "another structure",
    ),
    (
        "checkpoint wrong template dtype",
        lambda: checkpoint(like=(KY0, jnp.asarray(0.0, jnp.float32), LIKE[2])),
        ValueError,
        r"Leaf 2 was saved as \(\) float64; the template has \(\) float32",
    ),
    (
        "checkpoint wrong template size",
        lambda: checkpoint(like=(KY0, LIKE[2])),
        ValueError,
        "It holds 4 leaves; the template has 3",
    ),
    (
        "checkpoint missing file",
        lambda: sciad.load_checkpoint("/nonexistent/run.ckpt", LIKE),
        FileNotFoundError,
        "No such file",
    ),
    # --- sciad.ensemble
    (
        "ensemble leading axes disagree",
        lambda: sciad.ensemble(lambda b: b["a"], {"a": jnp.zeros(4), "b": jnp.zeros((3, 2))}),
        ValueError,
        r"disagree on the number of members .*batch\['a'\] has 4, batch\['b'\] has 3",
    ),
    (
        "ensemble scalar leaf",
        lambda: sciad.ensemble(lambda b: b, (jnp.zeros(4), 1.0)),
        ValueError,
        r"batch\[1\] is a scalar; every leaf of batch needs the leading member axis",
    ),
    (
        "ensemble empty batch",
        lambda: sciad.ensemble(lambda b: b, jnp.zeros((0, 2))),
        ValueError,
        "batch has 0 members",
    ),
    ("ensemble no leaves", lambda: sciad.ensemble(lambda b: b, {}), ValueError, "no array leaves"),
    (
        "ensemble string leaf",
        lambda: sciad.ensemble(lambda b: b, ["ab"]),
        TypeError,
        r"batch\[0\] must be an array; got 'ab'",
    ),
    ("ensemble fn", lambda: sciad.ensemble(3, jnp.zeros(4)), TypeError, "fn must be callable"),
    (
        "ensemble chunk_size zero",
        lambda: sciad.ensemble(lambda b: b, jnp.zeros(4), chunk_size=0),
        ValueError,
        r"sciad.ensemble: chunk_size must be an int >= 1; got 0",
    ),
    (
        "ensemble chunk_size float",
        lambda: sciad.ensemble(lambda b: b, jnp.zeros(4), chunk_size=2.0),
        TypeError,
        "chunk_size must be an int",
    ),
    (
        "ensemble chunk_size and memory_budget",
        lambda: sciad.ensemble(lambda b: b, jnp.zeros(4), chunk_size=2, memory_budget=10**6),
        ValueError,
        "give chunk_size or memory_budget, not both",
    ),
    (
        "ensemble memory_budget negative",
        lambda: sciad.ensemble(lambda b: b, jnp.zeros(4), memory_budget=-1),
        ValueError,
        "memory_budget must be an int >= 1",
    ),
    (
        "ensemble memory_budget below one member",
        lambda: sciad.ensemble(lambda b: jnp.outer(b, b), jnp.zeros((4, 100)), memory_budget=8),
        ValueError,
        "memory_budget=8 bytes is below one member's estimated use",
    ),
    (
        "ensemble reduce unknown",
        lambda: sciad.ensemble(lambda b: b, jnp.zeros(4), reduce="max"),
        ValueError,
        "reduce must be None, 'sum' or 'mean'; got 'max'",
    ),
    (
        "ensemble mesh not a mesh",
        lambda: sciad.ensemble(lambda b: b, jnp.zeros(4), mesh=jax.devices()),
        TypeError,
        "mesh must be a jax.sharding.Mesh",
    ),
    (
        "progress a string",
        lambda: sim(progress="yes"),
        TypeError,
        "progress must be True, False or a sciad progress meter",
    ),
    (
        "progress meter every above 1",
        lambda: sciad.TextProgressMeter(every=1.5),
        ValueError,
        r"TextProgressMeter.every must lie in \(0.0, 1.0\]; got 1.5",
    ),
]


@pytest.mark.parametrize("name", case_names(CASES))
def test_bad_input(name, bad_input_runner):
    run_case(bad_input_runner, __name__, name)

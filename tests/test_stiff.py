"""The stiff default of `sciad.ode.solve` (issue 21.3): Kvaerno5 with a PI controller.

Accuracy on the classical stiff test problems against published reference values and
against scipy's Radau; fewer steps and far fewer rejections than the old default
(Kvaerno5 with diffrax's I controller); the non-stiff default is unchanged. The
measurements behind the choice are `benchmarks/stiff.py` (docs/benchmarks.md).
"""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad

from .stiff_problems import PROBLEMS


def _final(problem, rtol):
    """The default solve of `problem` at rtol and atol = scale · rtol: the final state."""
    traj = sciad.ode.solve(
        problem.model,
        jnp.asarray(problem.y0),
        t0=0.0,
        t1=problem.t1,
        saveat=diffrax.SaveAt(t1=True),
        rtol=rtol,
        atol=rtol * problem.scale,
    )
    assert traj.result == sciad.RESULTS.successful
    return traj.y1


@pytest.mark.parametrize("name", ["rober", "hires"])
def test_default_meets_the_published_reference(name):
    # Robertson to t = 1e11 and HIRES, against the IVP test set's reference values.
    # The mixed relative error (components below `scale` count absolutely) stays below
    # the requested rtol; measured: 2.8e-8 (Robertson), 4.9e-9 (HIRES) at rtol 1e-6.
    problem = PROBLEMS[name]
    rtol = 1e-6
    assert problem.model.stiff  # the default picks the implicit solver by itself
    assert problem.error(_final(problem, rtol), problem.reference) < rtol


def _vdp_steps(**kwargs):
    traj = sciad.ode.solve(
        sciad.ode.VanDerPol(mu=100.0),
        jnp.array([2.0, 0.0]),
        t0=0.0,
        t1=300.0,  # about two periods, (3 − 2 ln 2) μ ≈ 161 each
        saveat=diffrax.SaveAt(t1=True),
        max_steps=20_000,
        **kwargs,
    )
    return int(traj.stats["num_accepted_steps"]), int(traj.stats["num_rejected_steps"])


def test_stiff_default_takes_fewer_steps_than_the_i_controller():
    # Van der Pol at μ = 100 at the default tolerances. The I controller alternates
    # between accepting and rejecting on the slow manifold (measured: 2,380 accepted,
    # 2,196 rejected, a rejected fraction of 0.48); the PI controller damps that
    # (2,111 and 552: 0.21). A rejected fraction of 0.3 is halfway between.
    new_accepted, new_rejected = _vdp_steps(stiff=True)
    old_accepted, old_rejected = _vdp_steps(
        solver=diffrax.Kvaerno5(), stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-8)
    )
    new_total, old_total = new_accepted + new_rejected, old_accepted + old_rejected
    assert new_total < 0.7 * old_total  # measured 0.58
    assert new_rejected / new_total < 0.3
    assert old_rejected / old_total > 0.3  # the bound separates the two controllers


def test_stiff_default_agrees_with_scipy_radau_at_tight_tolerance():
    # The pollution problem (20 species, rate constants 1e-4 .. 4e11): the default at
    # rtol 1e-10 against scipy's Radau at rtol 1e-12 with the exact Jacobian.
    # Measured mixed error 5.4e-12; Radau itself at rtol 1e-10 is off by 1.4e-12.
    integrate = pytest.importorskip("scipy.integrate")
    problem = PROBLEMS["poll"]
    field = jax.jit(problem.model.vector_field)
    jac = jax.jit(jax.jacfwd(problem.model.vector_field, argnums=1))
    radau = integrate.solve_ivp(
        lambda t, y: np.asarray(field(t, y)),
        (0.0, problem.t1),
        problem.y0,
        method="Radau",
        rtol=1e-12,
        atol=1e-16,
        jac=lambda t, y: np.asarray(jac(t, y)),
    )
    assert radau.status == 0
    rtol = 1e-10
    assert problem.error(_final(problem, rtol), radau.y[:, -1]) < rtol


def test_non_stiff_default_is_tsit5_with_the_i_controller():
    # The non-stiff default is untouched: the same steps, bit for bit, as Tsit5 with
    # diffrax's default PIDController at rtol 1e-6, atol 1e-8.
    model, y0, ts = sciad.ode.LotkaVolterra(), jnp.array([10.0, 1.0]), jnp.linspace(0, 10, 11)
    default = sciad.ode.solve(model, y0, ts)
    explicit = sciad.ode.solve(
        model,
        y0,
        ts,
        solver=diffrax.Tsit5(),
        stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-8),
    )
    assert int(default.stats["num_steps"]) == int(explicit.stats["num_steps"])
    assert bool(jnp.all(default.ys == explicit.ys))

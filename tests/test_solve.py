"""sciad.ode.solve: diffrax pass-through, adjoints for every derivative order, results."""

import functools

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
import pytest
from scipy.integrate import solve_ivp

import sciad

from .helpers import central_fd, fd_directional

TS = jnp.linspace(0.0, 2.0, 5)
Y0 = jnp.array([10.0, 1.0])


def final_prey(params, adjoint=None):
    model = sciad.ode.LotkaVolterra(alpha=params[0], beta=params[1], gamma=3.0, delta=1.0)
    traj = sciad.ode.solve(model, Y0, TS, rtol=1e-10, atol=1e-10, adjoint=adjoint)
    return traj.ys[-1, 0]


P = jnp.array([1.5, 1.0])

# Compiled once and shared by the tests that need them (each costs seconds to compile).
grad_prey = jax.jit(jax.grad(final_prey))


@functools.cache
def direct_adjoint_hessian():
    """`final_prey`'s Hessian at `P` through DirectAdjoint (two tests compare with it)."""
    return jax.hessian(lambda p: final_prey(p, diffrax.DirectAdjoint()))(P)


def test_grad_default_adjoint_matches_fd():
    g = grad_prey(P)
    assert np.allclose(g, central_fd(final_prey, P, eps=1e-6), rtol=1e-5)


def test_forward_mode_adjoint_jvp_matches_fd():
    v = jnp.array([1.0, -0.5])
    tangent = jax.jvp(lambda p: final_prey(p, diffrax.ForwardMode()), (P,), (v,))[1]
    assert np.isclose(tangent, fd_directional(final_prey, P, v), rtol=1e-5)


def scipy_prey_gradient(params):
    """d(final prey)/d(alpha, beta) from the forward sensitivity equations, ds/dt = J s +
    df/dp, solved by scipy's DOP853 at rtol = atol = 1e-13: a reference independent of sciad
    and diffrax, smooth in `params` to far below the finite-difference step used on it."""
    a, b, g, d = float(params[0]), float(params[1]), 3.0, 1.0

    def rhs(t, u):
        x, z = u[0], u[1]
        jac = np.array([[a - b * z, -b * x], [d * z, d * x - g]])
        s_a = jac @ u[2:4] + np.array([x, 0.0])
        s_b = jac @ u[4:6] + np.array([-x * z, 0.0])
        return np.concatenate([[a * x - b * x * z, d * x * z - g * z], s_a, s_b])

    u0 = np.concatenate([np.asarray(Y0), np.zeros(4)])
    sol = solve_ivp(rhs, (0.0, float(TS[-1])), u0, method="DOP853", rtol=1e-13, atol=1e-13)
    return sol.y[[2, 4], -1]


@pytest.mark.slow
def test_direct_adjoint_hessian_matches_sensitivity_equations():
    # The reference is central differences (step 1e-4) of the scipy sensitivity gradient:
    # truncation ~1e-8 and solver noise ~1e-9. Finite differences of sciad's own gradient
    # are no reference here: the adaptive controller's accept/reject decisions move within
    # a 1e-5 stencil, which put them 3e-4 off on a GPU.
    hess = direct_adjoint_hessian()
    assert np.allclose(scipy_prey_gradient(P), grad_prey(P), rtol=1e-8)
    ref = np.stack([central_fd(lambda p, i=i: scipy_prey_gradient(p)[i], P, 1e-4) for i in (0, 1)])
    assert np.allclose(hess, hess.T, rtol=1e-8)
    assert np.allclose(hess, ref, rtol=1e-6)


@pytest.mark.parametrize(
    "transform",
    [
        lambda f: jax.jvp(f, (P,), (P,)),
        lambda f: jax.jacfwd(f)(P),
        lambda f: jax.hessian(f)(P),
        lambda f: jax.grad(lambda p: jax.grad(f)(p)[0])(P),
    ],
    ids=["jvp", "jacfwd", "hessian", "grad_of_grad"],
)
def test_default_adjoint_explains_higher_order(transform):
    with pytest.raises(TypeError, match="DirectAdjoint"):
        transform(final_prey)


def test_solver_and_controller_pass_through():
    model = sciad.ode.ExponentialDecay(rate=1.0)
    traj = sciad.ode.solve(
        model,
        jnp.array(1.0),
        jnp.array([0.0, 1.0]),
        solver=diffrax.Heun(),
        stepsize_controller=diffrax.ConstantStepSize(),
        dt0=0.25,
    )
    # Heun with four constant steps: (1 − h + h²/2)^4 exactly.
    assert np.isclose(traj.ys[-1], (1 - 0.25 + 0.25**2 / 2) ** 4, rtol=1e-14)
    assert int(traj.stats["num_steps"]) == 4


def test_event_terminates_and_is_reported():
    model = sciad.ode.LotkaVolterra()
    cond = lambda t, y, args, **kw: y[0] - 1.0  # prey falls to 1
    traj = sciad.ode.solve(
        model,
        Y0,
        None,
        t0=0.0,
        t1=10.0,
        event=diffrax.Event(cond, optx.Newton(rtol=1e-10, atol=1e-10)),
        saveat=diffrax.SaveAt(t1=True),
        rtol=1e-10,
        atol=1e-10,
    )
    assert traj.result == sciad.RESULTS.event_occurred
    assert np.isclose(traj.y1[0], 1.0, atol=1e-8)
    assert 0.0 < float(traj.t1) < 10.0


def test_user_saveat_with_fn_and_final_state():
    lv = sciad.ode.LotkaVolterra()
    saveat = diffrax.SaveAt(ts=TS, fn=lambda t, y, args: args.invariant(y))
    traj = sciad.ode.solve(lv, Y0, t0=0.0, t1=2.0, saveat=saveat, rtol=1e-10, atol=1e-10)
    assert traj.ys.shape == (5,) and np.allclose(traj.ys, lv.invariant(Y0), rtol=1e-8)
    assert traj.y1.shape == (2,)


def test_max_steps_code_and_throw():
    model = sciad.ode.LotkaVolterra()
    traj = sciad.ode.solve(model, Y0, TS, max_steps=3, throw=False)
    assert traj.result == sciad.RESULTS.max_steps_reached
    with pytest.raises(sciad.RunError, match=r"^sciad.ode.solve: the run needed more steps"):
        sciad.ode.solve(model, Y0, TS, max_steps=3)


def test_vmap_over_initial_conditions_and_jit():
    model = sciad.ode.LotkaVolterra()
    y0s = jnp.stack([jnp.linspace(5.0, 10.0, 6), jnp.ones(6)], axis=1)
    batched = jax.jit(jax.vmap(lambda y: sciad.ode.solve(model, y, TS).ys))(y0s)
    looped = jnp.stack([sciad.ode.solve(model, y, TS).ys for y in y0s])
    assert batched.shape == (6, 5, 2) and np.allclose(batched, looped, rtol=1e-10)


def test_vmap_results_per_element():
    model = sciad.ode.ExponentialDecay(rate=1.0)

    def batch(throw):
        return jax.vmap(
            lambda t1: sciad.ode.solve(
                model,
                jnp.array(1.0),
                None,
                t0=0.0,
                t1=t1,
                dt0=0.1,
                saveat=diffrax.SaveAt(t1=True),
                max_steps=20,
                stepsize_controller=diffrax.ConstantStepSize(),
                throw=throw,
            )
        )(jnp.array([1.0, 5.0]))

    out = batch(False)
    codes = np.asarray(out.result._value)
    assert codes[0] == sciad.RESULTS.successful._value
    assert codes[1] == sciad.RESULTS.max_steps_reached._value
    # With throw=True under an eager vmap the error's first line says it all.
    with pytest.raises(sciad.RunError) as info:
        batch(True)
    assert str(info.value).splitlines()[0] == (
        "sciad.ode.solve: the run needed more steps than `max_steps` allowed; it stopped "
        "early in 1 of 2 runs of the batch (the first: run 1)."
    )


def test_backsolve_adjoint_passes_through():
    def f(k):
        model = sciad.ode.ExponentialDecay(rate=k)
        traj = sciad.ode.solve(
            model,
            jnp.array(1.0),
            jnp.array([0.0, 2.0]),
            adjoint=diffrax.BacksolveAdjoint(),
            rtol=1e-10,
            atol=1e-10,
        )
        assert traj.y1 is None
        return traj.ys[-1]

    assert np.isclose(jax.grad(f)(0.5), -2.0 * np.exp(-1.0), rtol=1e-8)  # d/dk e^{-2k}


def test_forward_mode_limits_are_as_documented():
    """ForwardMode: forward over forward works; reverse mode fails with JAX's while-loop error."""
    f = lambda p: final_prey(p, diffrax.ForwardMode())
    fwd2 = jax.jacfwd(jax.jacfwd(f))(P)
    hess = direct_adjoint_hessian()
    assert np.allclose(fwd2, hess, rtol=1e-6)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        jax.grad(f)(P)


def test_time_runs_forwards_in_both_paths():
    """t1 < t0 is refused with or without ts (as sciad.simulate does); t1 == t0 is a no-op."""
    model = sciad.ode.ExponentialDecay(rate=1.0)
    y0 = jnp.array(1.0)
    with pytest.raises(ValueError, match="t1 must be >= t0"):
        sciad.ode.solve(model, y0, t0=1.0, t1=0.0, saveat=diffrax.SaveAt(t1=True))
    with pytest.raises(ValueError, match="t1 must be >= t0"):
        sciad.ode.solve(model, y0, jnp.array([0.5]), t0=1.0)
    same = sciad.ode.solve(model, y0, t0=1.0, t1=1.0, saveat=diffrax.SaveAt(t1=True))
    assert float(same.y1) == 1.0 and same.result == sciad.RESULTS.successful
    one = sciad.ode.solve(model, y0, jnp.array([0.5]))
    assert float(one.ys[0]) == 1.0


def test_default_tolerances_and_explicit_ones():
    """rtol/atol default to 1e-6/1e-8; given ones reach the PID controller."""
    model = sciad.ode.ExponentialDecay(rate=1.0)
    exact = np.exp(-2.0)
    loose = sciad.ode.solve(model, jnp.array(1.0), jnp.array([0.0, 2.0]))
    tight = sciad.ode.solve(model, jnp.array(1.0), jnp.array([0.0, 2.0]), rtol=1e-12, atol=1e-14)
    assert abs(float(loose.ys[-1]) - exact) < 1e-6
    assert abs(float(tight.ys[-1]) - exact) < 1e-12
    assert int(tight.stats["num_steps"]) > int(loose.stats["num_steps"])

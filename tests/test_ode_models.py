"""ODE models against independent references: scipy on hand-written NumPy right-hand sides,
analytic solutions, conservation laws, and Lagrangian/Hamiltonian cross-derivations."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import sciad

TS = np.linspace(0.0, 2.0, 9)


def _np_rhs(name):
    """Independent NumPy right-hand sides, written from the textbook equations."""
    return {
        "decay": lambda t, y: -0.5 * y,
        "oscillator": lambda t, y: [y[1], (-2.0 * y[0] - 0.3 * y[1] + 0.7 * np.cos(1.1 * t)) / 1.5],
        "pendulum": lambda t, y: [y[1], -(9.81 / 0.8) * np.sin(y[0]) - 0.2 * y[1]],
        "lv": lambda t, y: [1.5 * y[0] - y[0] * y[1], y[0] * y[1] - 3.0 * y[1]],
        "lorenz": lambda t, y: [
            10 * (y[1] - y[0]),
            y[0] * (28 - y[2]) - y[1],
            y[0] * y[1] - 8 / 3 * y[2],
        ],
        "vdp": lambda t, y: [y[1], 2.0 * (1 - y[0] ** 2) * y[1] - y[0]],
        "fhn": lambda t, y: [y[0] - y[0] ** 3 / 3 - y[1] + 0.5, (y[0] + 0.7 - 0.8 * y[1]) / 12.5],
        "sir": lambda t, y: [-0.3 * y[0] * y[1], 0.3 * y[0] * y[1] - 0.1 * y[1], 0.1 * y[1]],
        "robertson": lambda t, y: [
            -0.04 * y[0] + 1e4 * y[1] * y[2],
            0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2,
            3e7 * y[1] ** 2,
        ],
    }[name]


CASES = [
    ("decay", sciad.ode.ExponentialDecay(rate=0.5), [1.0, 2.0]),
    (
        "oscillator",
        sciad.ode.HarmonicOscillator(
            mass=1.5, stiffness=2.0, damping=0.3, drive_amplitude=0.7, drive_frequency=1.1
        ),
        [1.0, 0.0],
    ),
    ("pendulum", sciad.ode.Pendulum(length=0.8, gravity=9.81, damping=0.2), [2.0, 0.5]),
    ("lv", sciad.ode.LotkaVolterra(alpha=1.5, beta=1.0, gamma=3.0, delta=1.0), [10.0, 1.0]),
    ("lorenz", sciad.ode.Lorenz(), [1.0, 1.0, 1.0]),
    ("vdp", sciad.ode.VanDerPol(mu=2.0), [2.0, 0.0]),
    ("fhn", sciad.ode.FitzHughNagumo(), [-1.0, 1.0]),
    ("sir", sciad.ode.SIR(beta=0.3, gamma=0.1), [0.99, 0.01, 0.0]),
]


@pytest.mark.parametrize("name, model, y0", CASES, ids=[c[0] for c in CASES])
def test_model_matches_scipy(name, model, y0):
    ref = solve_ivp(
        _np_rhs(name), (0.0, 2.0), y0, method="DOP853", t_eval=TS, rtol=1e-12, atol=1e-12
    )
    traj = sciad.ode.solve(model, jnp.asarray(y0), jnp.asarray(TS), rtol=1e-10, atol=1e-12)
    assert traj.ys.shape == (len(TS), len(y0))
    scale = np.maximum(1.0, np.abs(ref.y.T))
    assert np.max(np.abs(np.asarray(traj.ys) - ref.y.T) / scale) < 1e-7


def test_robertson_stiff_default_and_conservation():
    ts = np.array([0.0, 0.4, 4.0, 40.0])
    ref = solve_ivp(
        _np_rhs("robertson"),
        (0.0, 40.0),
        [1.0, 0.0, 0.0],
        method="Radau",
        t_eval=ts,
        rtol=1e-10,
        atol=1e-14,
    )
    traj = sciad.ode.solve(
        sciad.ode.Robertson(), jnp.array([1.0, 0.0, 0.0]), jnp.asarray(ts), rtol=1e-8, atol=1e-12
    )
    assert sciad.ode.Robertson.stiff
    assert np.allclose(traj.ys, ref.y.T, rtol=1e-5, atol=1e-10)
    assert np.allclose(jnp.sum(traj.ys, axis=1), 1.0, atol=1e-12)
    implicit_steps = int(traj.stats["num_steps"])
    # The default explicit solver cannot finish within 10x the implicit solver's steps.
    explicit = sciad.ode.solve(
        sciad.ode.Robertson(),
        jnp.array([1.0, 0.0, 0.0]),
        jnp.asarray(ts),
        rtol=1e-8,
        atol=1e-12,
        stiff=False,
        max_steps=10 * implicit_steps,
        throw=False,
    )
    assert explicit.result == sciad.RESULTS.max_steps_reached


def test_exponential_decay_exact():
    traj = sciad.simulate(
        sciad.ode.ExponentialDecay(rate=0.5), jnp.array([1.0, 2.0]), t1=2.0, dt=1e-3
    )
    assert np.allclose(traj.y1, np.exp(-1.0) * np.array([1.0, 2.0]), rtol=1e-12)


def test_small_angle_pendulum_period():
    L, g, theta0 = 0.7, 9.81, 0.01
    model = sciad.ode.Pendulum(length=L, gravity=g, damping=0.0)
    dt = 1e-3
    traj = sciad.simulate(
        model, jnp.array([theta0, 0.0]), n_steps=4000, dt=dt, saveat=sciad.SaveAt(steps=1)
    )
    omega = np.asarray(traj.ys[:, 1])
    ts = np.asarray(traj.ts)
    i = np.nonzero((omega[:-1] < 0) & (omega[1:] >= 0))[0][0]  # ω: − → +, half a period... at θ min
    j = np.nonzero((omega[:-1] > 0) & (omega[1:] <= 0))[0]
    j = j[j > i][0]
    # Linear interpolation of the zero crossings of ω: half a period apart.
    cross = lambda k: ts[k] - omega[k] * dt / (omega[k + 1] - omega[k])
    period = 2 * (cross(j) - cross(i))
    expect = 2 * np.pi * np.sqrt(L / g) * (1 + theta0**2 / 16)  # finite-amplitude correction
    assert abs(period - expect) / expect < 1e-6


def test_kepler_orbit_closes_after_one_period():
    model = sciad.ode.Kepler(mu=1.3)
    y0 = model.initial_state(eccentricity=0.5, semi_major_axis=1.2)
    n = 20_000
    dt = float(model.period(semi_major_axis=1.2)) / n
    traj = sciad.simulate(model, y0, dt=dt, n_steps=n, integrator=sciad.Yoshida6())
    assert np.allclose(traj.y1[0], y0[0], atol=1e-9) and np.allclose(traj.y1[1], y0[1], atol=1e-9)
    assert np.isclose(model.energy(y0), -1.3 / (2 * 1.2), rtol=1e-12)  # E = −μ/(2a)


def test_two_body_nbody_reduces_to_kepler():
    m1, m2, G = 1.0, 0.3, 1.0
    nbody = sciad.ode.NBody(masses=jnp.array([m1, m2]), G=G)
    kep = sciad.ode.Kepler(mu=G * (m1 + m2))
    rq, rv = kep.initial_state(eccentricity=0.4)
    M = m1 + m2
    q = jnp.stack([-m2 / M * rq, m1 / M * rq])
    v = jnp.stack([-m2 / M * rv, m1 / M * rv])
    p = v * jnp.array([[m1], [m2]])
    kw = dict(dt=1e-3, n_steps=3000, integrator=sciad.Yoshida4())
    a = sciad.simulate(nbody, (q, p), **kw)
    b = sciad.simulate(kep, (rq, rv), **kw)
    rel = a.y1[0][1] - a.y1[0][0]
    assert np.allclose(rel, b.y1[0], atol=1e-10)
    assert np.allclose(jnp.sum(a.y1[1], axis=0), 0.0, atol=1e-13)  # momentum conserved


def test_nbody_force_finite_with_softening_and_matches_fd():
    model = sciad.ode.NBody(masses=jnp.array([1.0, 2.0, 0.5]), G=1.0, softening=0.1)
    q = jnp.array([[0.0, 0.0, 0.0], [1.0, 0.2, 0.0], [0.3, -0.4, 0.5]])
    f = model.force(0.0, q)
    eps = 1e-6
    fd = np.zeros((3, 3))
    for i in range(3):
        for k in range(3):
            e = np.zeros((3, 3))
            e[i, k] = eps
            fd[i, k] = -(model.potential(q + e) - model.potential(q - e)) / (2 * eps)
    assert np.allclose(f, fd, rtol=1e-7, atol=1e-10)
    assert np.allclose(jnp.sum(f, axis=0), 0.0, atol=1e-13)  # Newton's third law


def _double_pendulum_lagrangian(m1, m2, l1, l2, g):
    def lag(q, v):
        (t1, t2), (w1, w2) = q, v
        x1v = l1 * w1 * jnp.cos(t1)
        y1v = l1 * w1 * jnp.sin(t1)
        x2v = x1v + l2 * w2 * jnp.cos(t2)
        y2v = y1v + l2 * w2 * jnp.sin(t2)
        kin = 0.5 * m1 * (x1v**2 + y1v**2) + 0.5 * m2 * (x2v**2 + y2v**2)
        pot = -m1 * g * l1 * jnp.cos(t1) - m2 * g * (l1 * jnp.cos(t1) + l2 * jnp.cos(t2))
        return kin - pot

    return lag


def test_double_pendulum_equals_lagrangian_derivation():
    p = dict(m1=1.0, m2=0.7, l1=1.1, l2=0.6, g=9.81)
    dp = sciad.ode.DoublePendulum(
        mass1=p["m1"], mass2=p["m2"], length1=p["l1"], length2=p["l2"], gravity=p["g"]
    )
    lag = sciad.ode.LagrangianSystem(_double_pendulum_lagrangian(**p))
    y = jnp.array([1.2, -0.4, 0.3, 2.0])
    a = dp.vector_field(0.0, y)
    b = lag.vector_field(0.0, (y[:2], y[2:]))
    assert np.allclose(a, jnp.concatenate(b), rtol=1e-12)
    traj = sciad.simulate(dp, y, t1=2.0, dt=1e-3)
    assert abs(float(dp.energy(traj.y1) - dp.energy(y))) < 1e-9
    assert np.isclose(dp.energy(y), lag.energy((y[:2], y[2:])), rtol=1e-12)


def test_lagrangian_pendulum_matches_pendulum():
    L, g = 0.9, 9.81
    lag = sciad.ode.LagrangianSystem(lambda q, v: 0.5 * L**2 * v**2 + g * L * jnp.cos(q))
    pend = sciad.ode.Pendulum(length=L, gravity=g)
    a = sciad.simulate(lag, (jnp.array(1.0), jnp.array(0.0)), t1=1.0, dt=1e-3)
    b = sciad.simulate(pend, jnp.array([1.0, 0.0]), t1=1.0, dt=1e-3)
    assert np.allclose(jnp.stack(a.y1), b.y1, atol=1e-12)


def test_hamiltonian_forms_agree_and_conserve():
    H = lambda q, p: 0.5 * jnp.sum(p**2) - jnp.sum(jnp.cos(q))
    general = sciad.ode.HamiltonianSystem(H)
    split = sciad.ode.SeparableHamiltonian(
        lambda p: 0.5 * jnp.sum(p**2), lambda q: -jnp.sum(jnp.cos(q))
    )
    y0 = (jnp.array([1.0, 0.5]), jnp.array([0.0, 0.2]))
    a = sciad.simulate(general, y0, t1=1.0, dt=1e-3, integrator=sciad.RK4())
    b = sciad.simulate(split, y0, t1=1.0, dt=1e-3, integrator=sciad.Yoshida6())
    assert np.allclose(a.y1[0], b.y1[0], atol=1e-11) and np.allclose(a.y1[1], b.y1[1], atol=1e-11)
    assert abs(float(general.energy(b.y1) - general.energy(y0))) < 1e-12


def test_non_separable_hamiltonian_matches_scipy():
    H = lambda q, p: 0.5 * p**2 * (1 + 0.3 * q**2) + 0.5 * q**2
    model = sciad.ode.HamiltonianSystem(H)
    rhs = lambda t, y: [y[1] * (1 + 0.3 * y[0] ** 2), -(0.3 * y[0] * y[1] ** 2 + y[0])]
    ref = solve_ivp(rhs, (0.0, 2.0), [1.0, 0.5], method="DOP853", rtol=1e-12, atol=1e-12)
    traj = sciad.simulate(model, (jnp.array(1.0), jnp.array(0.5)), t1=2.0, dt=1e-3)
    assert np.allclose(jnp.stack(traj.y1), ref.y[:, -1], atol=1e-11)


def test_conserved_quantities():
    lv = sciad.ode.LotkaVolterra()
    traj = sciad.ode.solve(
        lv, jnp.array([10.0, 1.0]), jnp.linspace(0.0, 10.0, 21), rtol=1e-10, atol=1e-10
    )
    inv = jax.vmap(lv.invariant)(traj.ys)
    assert np.max(np.abs(inv - inv[0])) < 1e-7
    sir = sciad.ode.solve(
        sciad.ode.SIR(), jnp.array([0.99, 0.01, 0.0]), jnp.linspace(0.0, 100.0, 11)
    )
    assert np.allclose(jnp.sum(sir.ys, axis=1), 1.0, atol=1e-12)


def test_model_parameters_are_differentiable_arrays():
    m = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
    leaves = jax.tree.leaves(m)
    assert len(leaves) == 3 and all(isinstance(x, jax.Array) for x in leaves)
    assert "length" in repr(m)


def test_parameters_checked_only_when_concrete():
    """Under vmap and grad the parameters are tracers and pass; built concrete, a batch
    of parameters is checked element by element."""
    y = jnp.array([1.0, 0.0])
    acc = jax.vmap(lambda L: sciad.ode.Pendulum(length=L).vector_field(0.0, y)[1])(
        jnp.array([1.0, 2.0])
    )
    assert np.allclose(acc, -9.81 * np.sin(1.0) / np.array([1.0, 2.0]), rtol=1e-14)
    g = jax.grad(lambda mu: sciad.ode.Kepler(mu=mu).initial_state(0.5)[1][1])(2.0)
    assert np.isclose(g, 0.5 * np.sqrt(1.5 / 0.5 / 2.0), rtol=1e-12)  # d√(3μ)/dμ
    sciad.ode.Pendulum(length=jnp.array([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"Pendulum\.length must be finite and > 0; got -2\.0"):
        sciad.ode.Pendulum(length=jnp.array([1.0, -2.0]))
    e = jax.vmap(lambda ecc: sciad.ode.Kepler().initial_state(ecc)[0][0])(jnp.array([0.0, 0.5]))
    assert np.allclose(e, [1.0, 0.5], rtol=1e-14)


def test_legitimate_signs_are_accepted():
    """Parameters whose sign is physics, not error: growth, a drive, a stimulus, ρ < 0."""
    grow = sciad.ode.ExponentialDecay(rate=-0.5)
    assert float(grow.vector_field(0.0, jnp.array(2.0))) == 1.0
    osc = sciad.ode.HarmonicOscillator(drive_amplitude=-1.0, drive_frequency=-2.0)
    assert np.isclose(osc.vector_field(0.0, jnp.array([0.0, 0.0]))[1], -1.0, rtol=1e-14)
    fhn = sciad.ode.FitzHughNagumo(a=-0.2, current=-0.5)
    assert np.isfinite(np.asarray(fhn.vector_field(0.0, jnp.array([0.0, 0.0])))).all()
    cold = sciad.ode.Lorenz(rho=-1.0)  # heated from above: decays to rest
    traj = sciad.ode.solve(cold, jnp.array([1.0, 1.0, 1.0]), jnp.array([0.0, 20.0]))
    assert np.all(np.abs(np.asarray(traj.ys[-1])) < 1e-3)
    # zero is allowed where a term may be switched off
    harmonic = sciad.ode.VanDerPol(mu=0.0).vector_field(0.0, jnp.array([1.0, 0.5]))
    assert np.allclose(harmonic, [0.5, -1.0], rtol=1e-14)
    no_spread = sciad.ode.SIR(beta=0.0, gamma=0.1).vector_field(0.0, jnp.array([0.9, 0.1, 0.0]))
    assert np.allclose(no_spread, [0.0, -0.01, 0.01], rtol=1e-14)
    assert float(sciad.ode.NBody(jnp.ones(2), softening=0.0).softening) == 0.0

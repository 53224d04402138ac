"""`sciad.ode.ForwardSensitivity`: error-controlled forward sensitivities in `solve`.

References are independent of sciad's solve: scipy's DOP853 integrates the forward
sensitivity equations (the state and ∂y/∂θ for every parameter and initial value) at
rtol = atol = 1e-12, with the vector field's Jacobians from JAX.
"""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad

# Its module-scoped fixtures are computed once: on one xdist worker, not on each.
pytestmark = pytest.mark.xdist_group("sensitivity")

scipy_integrate = pytest.importorskip("scipy.integrate")

RTOL = 1e-6
FS = sciad.ode.ForwardSensitivity()

# (model class, parameter names, parameter values, y0, t1): parameters first, then y0.
PROBLEMS = {
    "vdp": (sciad.ode.VanDerPol, ("mu",), [10.0], [2.0, 0.0], 10.0),
    "lv": (
        sciad.ode.LotkaVolterra,
        ("alpha", "beta", "gamma", "delta"),
        [1.5, 1.0, 3.0, 1.0],
        [10.0, 1.0],
        10.0,
    ),
}


def _model(name, theta):
    cls, names, values, y0, _ = PROBLEMS[name]
    k = len(values)
    return cls(**dict(zip(names, theta[:k], strict=True))), theta[k:]


def _end_state(name, adjoint):
    """θ = (parameters, y0) ↦ y(t1) through `sciad.ode.solve` at RTOL."""
    t1 = PROBLEMS[name][4]

    def f(theta):
        model, y0 = _model(name, theta)
        traj = sciad.ode.solve(
            model, y0, jnp.array([0.0, t1]), rtol=RTOL, atol=RTOL, adjoint=adjoint
        )
        return traj.ys[-1]

    return f


def _theta(name):
    _, _, values, y0, _ = PROBLEMS[name]
    return jnp.asarray(values + y0)


def _scipy_sensitivities(name):
    """y(t1) and ∂y(t1)/∂θ from scipy DOP853 on the forward sensitivity equations."""
    theta0 = _theta(name)
    n = len(PROBLEMS[name][3])
    p = theta0.size

    def field(y, theta):
        return _model(name, theta)[0].vector_field(0.0, y)

    @jax.jit
    def rhs(z):
        y, s = z[:n], z[n:].reshape(n, p)
        jy, jt = jax.jacfwd(field, argnums=(0, 1))(y, theta0)
        return jnp.concatenate([field(y, theta0), (jy @ s + jt).ravel()])

    s0 = np.zeros((n, p))
    s0[:, p - n :] = np.eye(n)
    z0 = np.concatenate([np.asarray(theta0[p - n :]), s0.ravel()])
    sol = scipy_integrate.solve_ivp(
        lambda t, z: np.asarray(rhs(jnp.asarray(z))),
        (0.0, PROBLEMS[name][4]),
        z0,
        method="DOP853",
        rtol=1e-12,
        atol=1e-12,
    )
    assert sol.success
    return sol.y[:n, -1], sol.y[n:, -1].reshape(n, p)


@pytest.fixture(scope="module", params=sorted(PROBLEMS))
def problem(request):
    """Per model: the scipy reference, and the Jacobians of y(t1) w.r.t. θ from the
    sensitivities (forward and reverse) and from the default adjoint, all at RTOL."""
    name = request.param
    theta = _theta(name)
    fs = _end_state(name, FS)
    return dict(
        name=name,
        theta=theta,
        ref=_scipy_sensitivities(name),
        jac_fwd=jax.jit(jax.jacfwd(fs))(theta),
        jac_rev=jax.jit(jax.jacrev(fs))(theta),
        jac_default=jax.jit(jax.jacrev(_end_state(name, None)))(theta),
        value=fs(theta),
    )


def _rel_error(jac, ref):
    return float(np.max(np.abs(np.asarray(jac) - ref)) / np.max(np.abs(ref)))


def test_sensitivities_match_scipy(problem):
    """∂y(t1)/∂θ within 20 rtol of scipy's forward sensitivities (relative to the
    largest entry). rtol bounds the local error per step, not the global error;
    measured: 7.2 rtol (Van der Pol), 4.3 rtol (Lotka–Volterra), while the default
    adjoint is at 172 rtol on Van der Pol, so the bound tells the two apart."""
    y_ref, s_ref = problem["ref"]
    scale = np.max(np.abs(y_ref))
    np.testing.assert_allclose(problem["value"], y_ref, rtol=0, atol=20 * RTOL * scale)
    assert _rel_error(problem["jac_fwd"], s_ref) < 20 * RTOL


def test_more_accurate_than_default_adjoint(problem):
    """The point of the option: at the same rtol its derivatives are more accurate
    than the default adjoint's (which differentiates steps chosen for y only)."""
    s_ref = problem["ref"][1]
    err_fs = _rel_error(problem["jac_fwd"], s_ref)
    err_default = _rel_error(problem["jac_default"], s_ref)
    # Measured at RTOL (float64, diffrax 0.7.2): Van der Pol 1.7e-4 vs 7.2e-6 (24x);
    # Lotka–Volterra 1.1e-5 vs 4.3e-6 (2.7x). The gain depends on how differently the
    # sensitivities and the state vary: large across the relaxation jumps of Van der
    # Pol, small on the smooth Lotka–Volterra cycle.
    margin = {"vdp": 10.0, "lv": 2.0}[problem["name"]]
    assert err_default > margin * err_fs, (err_default, err_fs)


def test_forward_and_reverse_agree(problem):
    """jacfwd and jacrev (through the custom JVP's transpose) give the same numbers."""
    np.testing.assert_allclose(problem["jac_rev"], problem["jac_fwd"], rtol=1e-12, atol=1e-14)


# A short, fast problem for the transforms: d x(1) / d mu and d y(1) / d (mu, y0).
Y0 = jnp.array([2.0, 0.0])
TS = jnp.array([0.0, 0.5, 1.0])


def _x_end(mu, adjoint=FS, y0=Y0):
    traj = sciad.ode.solve(
        sciad.ode.VanDerPol(mu=mu), y0, TS, rtol=1e-8, atol=1e-8, adjoint=adjoint
    )
    return traj.ys[-1, 0]


# Compiled once, shared by the fixture, the finite differences and the loops below.
x_end = jax.jit(_x_end)
grad_x_end = jax.jit(jax.grad(_x_end))


@pytest.fixture(scope="module")
def first_order():
    mu = jnp.asarray(3.0)
    return dict(
        mu=mu,
        grad=grad_x_end(mu),
        jacfwd=jax.jit(jax.jacfwd(_x_end))(mu),
        jvp=jax.jit(lambda m: jax.jvp(_x_end, (m,), (jnp.asarray(1.0),)))(mu),
        value=x_end(mu),
    )


def test_grad_jvp_jacfwd_agree(first_order):
    d = first_order
    np.testing.assert_allclose(d["jacfwd"], d["grad"], rtol=1e-13)
    np.testing.assert_allclose(d["jvp"][1], d["grad"], rtol=1e-13)
    # the primal is the same solve whether differentiated or not
    np.testing.assert_allclose(d["jvp"][0], d["value"], rtol=1e-15)
    fd = (x_end(d["mu"] + 1e-4) - x_end(d["mu"] - 1e-4)) / 2e-4
    np.testing.assert_allclose(d["grad"], fd, rtol=1e-5)


def test_vmap_of_grad(first_order):
    """Batched parameters and batched initial states, each equal to its single run."""
    mus = jnp.array([first_order["mu"], 2.0])
    batched = jax.jit(jax.vmap(jax.grad(_x_end)))(mus)
    np.testing.assert_allclose(batched[0], first_order["grad"], rtol=1e-10)
    np.testing.assert_allclose(batched[1], grad_x_end(mus[1]), rtol=1e-10)
    y0s = jnp.stack([Y0, jnp.array([1.0, 0.5])])
    dy0 = jax.vmap(jax.grad(lambda y: _x_end(first_order["mu"], y0=y)))(y0s)
    np.testing.assert_allclose(
        dy0[1], jax.jacfwd(lambda y: _x_end(first_order["mu"], y0=y))(y0s[1]), rtol=1e-12
    )


def test_wrt_restricts_and_refuses_the_rest(first_order):
    """Sensitivities for mu only: the same derivative; differentiating y0 then raises."""
    spec = (
        eqx.tree_at(
            lambda m: m.mu, jax.tree.map(lambda _: False, sciad.ode.VanDerPol(mu=1.0)), True
        ),
        False,
    )
    only_mu = sciad.ode.ForwardSensitivity(wrt=spec)
    g = jax.grad(_x_end)(first_order["mu"], only_mu)
    np.testing.assert_allclose(g, first_order["grad"], rtol=1e-6)
    with pytest.raises(
        ValueError, match=r"with respect to \(model, y0\)\[1\], which wrt does not select"
    ):
        jax.grad(lambda y: _x_end(first_order["mu"], only_mu, y))(Y0)


def test_times_are_not_differentiable():
    def end(t1):
        return sciad.ode.solve(
            sciad.ode.VanDerPol(mu=3.0),
            Y0,
            t0=0.0,
            t1=t1,
            saveat=diffrax.SaveAt(t1=True),
            adjoint=FS,
        ).ys[-1, 0]

    with pytest.raises(
        ValueError, match="differentiates with respect to the model's parameters and y0 only"
    ):
        jax.grad(end)(jnp.asarray(1.0))


def test_second_order(first_order):
    """d²x/dμ²: forward over reverse with the default ForwardMode, reverse over reverse
    with DirectAdjoint; both differentiate the same sensitivity solve. ForwardMode
    cannot be reversed: JAX refuses grad of grad."""
    mu = first_order["mu"]
    fwd_rev = jax.jacfwd(jax.grad(_x_end))(mu)
    direct = sciad.ode.ForwardSensitivity(adjoint=diffrax.DirectAdjoint())
    rev_rev = jax.grad(jax.grad(_x_end))(mu, direct)
    np.testing.assert_allclose(rev_rev, fwd_rev, rtol=1e-10)
    fd = (grad_x_end(mu + 1e-4) - grad_x_end(mu - 1e-4)) / 2e-4
    np.testing.assert_allclose(fwd_rev, fd, rtol=1e-4)
    with pytest.raises(
        ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"
    ):
        jax.grad(jax.grad(_x_end))(mu)


def test_fixed_steps_equal_differentiating_the_discrete_solve():
    """With a constant step the sensitivity equations, integrated by the same explicit
    Runge–Kutta method, are the derivative of the discrete solve (internal
    differentiation): ForwardMode through the plain solve gives the same numbers."""
    model = sciad.ode.LotkaVolterra()

    def end(theta, adjoint):
        m = sciad.ode.LotkaVolterra(*theta[:4])
        traj = sciad.ode.solve(
            m,
            theta[4:],
            t0=0.0,
            t1=2.0,
            dt0=0.01,
            saveat=diffrax.SaveAt(t1=True),
            stepsize_controller=diffrax.ConstantStepSize(),
            adjoint=adjoint,
        )
        return traj.ys[-1]

    theta = jnp.array([model.alpha, model.beta, model.gamma, model.delta, 10.0, 1.0])
    fs = jax.jacfwd(lambda th: end(th, FS))(theta)
    direct = jax.jacfwd(lambda th: end(th, diffrax.ForwardMode()))(theta)
    np.testing.assert_allclose(fs, direct, rtol=1e-12, atol=1e-12 * float(jnp.max(jnp.abs(direct))))


def test_saved_function_sensitivity_conserved():
    """A `SaveAt(fn=...)` output's sensitivity, from S through the linearised `fn`:
    Lotka–Volterra's invariant V(y; θ) is conserved, so dV(y(t), θ)/dθ at t = 10
    equals dV(y0, θ)/dθ, to the tolerance."""
    y0 = jnp.array([10.0, 1.0])

    def invariant_at(theta):
        m = sciad.ode.LotkaVolterra(*theta)
        traj = sciad.ode.solve(
            m,
            y0,
            t0=0.0,
            t1=10.0,
            rtol=1e-8,
            atol=1e-8,
            saveat=diffrax.SaveAt(ts=jnp.array([0.0, 10.0]), fn=lambda t, y, mm: mm.invariant(y)),
            adjoint=FS,
        )
        return traj.ys

    theta = jnp.array([1.5, 1.0, 3.0, 1.0])
    jac = jax.jacfwd(invariant_at)(theta)
    exact = jax.grad(lambda th: sciad.ode.LotkaVolterra(*th).invariant(y0))(theta)
    np.testing.assert_allclose(jac[0], exact, rtol=1e-14)
    np.testing.assert_allclose(jac[1], exact, rtol=0, atol=1e-6 * float(jnp.max(jnp.abs(exact))))

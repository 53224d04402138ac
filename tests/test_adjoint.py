"""Differentiating runs: every adjoint × every transform, against finite differences."""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad

from .helpers import central_fd, fd_directional

ADJOINTS = [
    sciad.CheckpointAdjoint(),
    sciad.CheckpointAdjoint(levels=3),
    sciad.DirectAdjoint(),
]
Y0 = jnp.array([1.0, 0.0])
PARAMS = jnp.array([1.0, 0.1])  # (length, damping)
TS = jnp.linspace(0.0, 3.0, 7)


def loss(params, y0=Y0, adjoint=sciad.CheckpointAdjoint(), dt=0.01):
    model = sciad.ode.Pendulum(length=params[0], gravity=9.81, damping=params[1])
    traj = sciad.simulate(model, y0, t1=3.0, dt=dt, adjoint=adjoint, saveat=sciad.SaveAt(ts=TS))
    return jnp.sum(traj.ys[:, 0] ** 2) + traj.y1[1]


# Compiled derivatives shared by every test of this module (and their parameters): each
# distinct program costs seconds to trace and compile, so a derivative of one loss with
# one adjoint is compiled once and reused wherever a test needs it.
@functools.cache
def loss_grad(adjoint):
    """`jax.jit(jax.grad(loss))` for one adjoint (adjoints hash by value)."""
    return jax.jit(jax.grad(lambda p: loss(p, adjoint=adjoint)))


@functools.cache
def derivatives(f, adjoint):
    """One compiled program giving `f(·, adjoint)`'s gradient, Hessian and the directional
    derivative along `v` by forward mode, for `f` one of this module's losses."""

    def all_of(p, v):
        g = lambda p: f(p, adjoint)
        return jax.grad(g)(p), jax.hessian(g)(p), jax.jvp(g, (p,), (v,))[1]

    return jax.jit(all_of)


def _saves_loss(params, adjoint):
    return loss(params, adjoint=adjoint)


@pytest.fixture(autouse=True, scope="module")
def _drop_shared_programs():
    """Forget the shared compiled functions with the module (conftest drops JAX's caches)."""
    yield
    for cached in (loss_grad, derivatives, _memory):
        cached.cache_clear()


@pytest.fixture(scope="module")
def reference():
    """Finite-difference gradient and Hessian of `loss` (float64, central differences)."""
    grad = central_fd(loss, PARAMS, eps=1e-6)
    g = loss_grad(sciad.CheckpointAdjoint())  # `loss`'s default adjoint
    hess = np.stack([central_fd(lambda p, i=i: g(p)[i], PARAMS, eps=1e-5) for i in range(2)])
    return grad, hess


@pytest.mark.parametrize("adjoint", ADJOINTS)
def test_grad_matches_fd(adjoint, reference):
    g = loss_grad(adjoint)(PARAMS)
    assert np.allclose(g, reference[0], rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("adjoint", ADJOINTS)
def test_jvp_matches_fd(adjoint):
    v = jnp.array([0.3, -1.0])
    _, tangent = jax.jvp(lambda p: loss(p, adjoint=adjoint), (PARAMS,), (v,))
    fd = fd_directional(loss, PARAMS, v)
    assert np.allclose(tangent, fd, rtol=1e-7)


@pytest.mark.parametrize("adjoint", ADJOINTS)
def test_jacfwd_equals_jacrev(adjoint):
    f = lambda p: loss(p, adjoint=adjoint)
    assert np.allclose(jax.jacfwd(f)(PARAMS), jax.jacrev(f)(PARAMS), rtol=1e-12)


@pytest.mark.parametrize(
    "adjoint",
    [ADJOINTS[0]] + [pytest.param(a, marks=pytest.mark.slow) for a in ADJOINTS[1:]],
)
def test_hessian_and_hvp_and_grad_of_grad(adjoint, reference):
    f = lambda p: loss(p, adjoint=adjoint)

    @jax.jit  # the three second-order transforms in one compiled program
    def second_order(p, v):
        hvp = jax.jvp(jax.grad(f), (p,), (v,))[1]
        gg = jax.grad(lambda p: jax.grad(f)(p)[0])(p)
        return jax.hessian(f)(p), hvp, gg

    v = jnp.array([1.0, 2.0])
    hess, hvp, gg = second_order(PARAMS, v)
    assert np.allclose(hess, hess.T, rtol=1e-10)
    assert np.allclose(hess, reference[1], rtol=1e-6, atol=1e-8)
    assert np.allclose(hvp, hess @ v, rtol=1e-10)
    assert np.allclose(gg, hess[0], rtol=1e-10)


def test_adjoints_agree_to_rounding():
    grads = [loss_grad(a)(PARAMS) for a in ADJOINTS]
    for g in grads[1:]:
        assert np.allclose(g, grads[0], rtol=1e-12)


def test_grad_wrt_initial_state_and_dt():
    g_y0 = jax.grad(lambda y: loss(PARAMS, y0=y))(Y0)
    assert np.allclose(g_y0, central_fd(lambda y: loss(PARAMS, y0=y), Y0), rtol=1e-7, atol=1e-9)

    def of_dt(dt):  # n_steps fixed: dt is a traced, differentiable argument
        traj = sciad.simulate(
            sciad.ode.ExponentialDecay(rate=0.7), jnp.array(1.0), n_steps=50, dt=dt
        )
        return traj.y1

    g = jax.grad(of_dt)(0.02)
    assert np.isclose(g, central_fd(of_dt, jnp.array(0.02))[()], rtol=1e-7)
    assert np.isclose(g, -0.7 * 50 * np.exp(-0.7), rtol=1e-5)  # d/dT e^{-kT}, T = 50 dt


def test_filter_grad_over_whole_model():
    model = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)

    def f(m):
        return sciad.simulate(m, Y0, t1=1.0, dt=0.01).y1[0]

    grads = eqx.filter_grad(f)(model)
    for name in ("length", "gravity", "damping"):
        fd = central_fd(
            lambda x, n=name: f(eqx.tree_at(lambda m: getattr(m, n), model, x)),
            getattr(model, name),
        )
        assert np.isclose(getattr(grads, name), fd, rtol=1e-7), name


def test_vmap_of_grad_and_grad_of_vmap():
    lengths = jnp.linspace(0.8, 1.2, 4)
    per = jax.vmap(jax.grad(lambda L: loss(jnp.stack([L, 0.1]))))(lengths)
    # d loss / dL one length at a time: the length component of the (shared, compiled) gradient
    g = loss_grad(sciad.CheckpointAdjoint())  # `loss`'s default adjoint
    loop = jnp.stack([g(jnp.stack([L, 0.1]))[0] for L in lengths])
    assert np.allclose(per, loop, rtol=1e-12)
    total = jax.grad(lambda L: jnp.sum(jax.vmap(lambda x: loss(jnp.stack([x, 0.1])))(L)))(lengths)
    assert np.allclose(total, per, rtol=1e-12)


def test_symplectic_gradients_through_long_run():
    """Gradient of a Kepler observable w.r.t. μ through 2,000 Yoshida-4 steps vs FD."""

    def f(mu):
        model = sciad.ode.Kepler(mu=mu)
        y0 = sciad.ode.Kepler(mu=1.0).initial_state(eccentricity=0.3)
        traj = sciad.simulate(model, y0, dt=0.005, n_steps=2000, integrator=sciad.Yoshida4())
        return traj.y1[0][0]

    g = jax.grad(f)(jnp.asarray(1.0))
    assert np.isclose(g, central_fd(f, jnp.asarray(1.0), eps=1e-6)[()], rtol=1e-6)


@functools.cache  # DirectAdjoint at 16,384 steps serves two tests
def _memory(adjoint, n):
    chain = sciad.ode.SeparableHamiltonian(
        lambda p: 0.5 * jnp.sum(p**2),
        lambda q: jnp.sum(0.5 * jnp.diff(q) ** 2 + 0.25 * jnp.diff(q) ** 4),
    )
    q0 = jnp.sin(jnp.linspace(0.0, 3.0, 200))

    def f(q):
        traj = sciad.simulate(chain, (q, jnp.zeros_like(q)), dt=0.01, n_steps=n, adjoint=adjoint)
        return jnp.sum(traj.y1[0] ** 2)

    compiled = jax.jit(jax.grad(f)).lower(q0).compile()
    return compiled.memory_analysis().temp_size_in_bytes


def test_checkpoint_memory_is_sublinear():
    """Reverse-mode scratch memory: O(√n) for CheckpointAdjoint, O(n) for DirectAdjoint."""
    direct = [_memory(sciad.DirectAdjoint(), n) for n in (4096, 16384)]
    ckpt = [_memory(sciad.CheckpointAdjoint(), n) for n in (4096, 16384)]
    assert direct[1] / direct[0] > 3.0  # linear: ×4 steps → ~×4 memory
    assert ckpt[1] / ckpt[0] < 2.5  # √: ×4 steps → ~×2 memory
    assert ckpt[1] < direct[1] / 10


def test_padded_checkpoint_chunks():
    """7 blocks of 32 steps do not split into whole checkpoint chunks (3 chunks of 3
    blocks; 2 of 4 with `levels=3`): the last chunk is padded and its extra blocks
    skipped by a `cond`. Every derivative, and `vmap`, must equal the unpadded `DirectAdjoint`
    run's, and the gradient must match finite differences."""

    def run(params, y0, adjoint):
        model = sciad.ode.Pendulum(length=params[0], gravity=9.81, damping=params[1])
        y1 = sciad.simulate(model, y0, n_steps=224, dt=0.01, adjoint=adjoint).y1
        return y1[0] + 0.3 * y1[1] ** 2

    direct = jax.jit(lambda p, y0=Y0: run(p, y0, sciad.DirectAdjoint()))
    grad_direct = jax.jit(jax.grad(direct))
    g_ref = grad_direct(PARAMS, Y0)
    assert np.allclose(g_ref, central_fd(direct, PARAMS, eps=1e-6), rtol=1e-7, atol=1e-9)
    h_ref = jax.jit(jax.hessian(direct))(PARAMS)
    y0s = jnp.stack([Y0, jnp.array([0.5, -0.2]), jnp.array([-1.0, 0.3])])
    looped = jnp.stack([grad_direct(PARAMS, y0) for y0 in y0s])
    v = jnp.array([0.3, -1.0])
    for adjoint in (sciad.CheckpointAdjoint(), sciad.CheckpointAdjoint(levels=3)):
        f = lambda p, y0=Y0, a=adjoint: run(p, y0, a)

        @jax.jit  # every transform of the padded run in one compiled program
        def transforms(p, f=f):
            tangent = jax.jvp(f, (p,), (v,))[1]
            batched = jax.vmap(jax.grad(f), in_axes=(None, 0))(p, y0s)
            return f(p), jax.grad(f)(p), tangent, jax.hessian(f)(p), batched

        value, grad, tangent, hess, batched = transforms(PARAMS)
        assert np.allclose(value, direct(PARAMS), rtol=1e-14)
        assert np.allclose(grad, g_ref, rtol=1e-12)
        assert np.allclose(tangent, g_ref @ v, rtol=1e-12)
        assert np.allclose(hess, h_ref, rtol=1e-10)
        assert np.allclose(batched, looped, rtol=1e-12)


def test_memory_budget_schedules():
    """`CheckpointAdjoint(memory=...)` picks its schedule from the budget: store
    everything when the residuals fit, one level of the smallest chunks that fit, or
    deeper nesting; a budget no schedule fits is refused before anything runs."""
    from sciad._core._adjoint import _plan

    def body(c):
        return jax.lax.scan(lambda y, _: (jnp.sin(y), None), c, None, length=32)[0]

    carry = jnp.ones(2)  # 16 bytes; residuals 32 × 2 × 8 = 512 bytes per block
    assert _plan(body, carry, 100, 100 * 512) == ()
    assert _plan(body, carry, 100, 100 * 16 + 512) == (1,)
    # 60 blocks of 16 bytes + 2 blocks' residuals fit: the smallest such chunk, 2 (a divisor)
    assert _plan(body, carry, 100, 50 * 16 + 2 * 512) == (2,)
    deep = _plan(body, carry, 100, 1100)
    assert len(deep) >= 2
    with pytest.raises(ValueError, match=r"CheckpointAdjoint\(memory=100\) is too small"):
        _plan(body, carry, 100, 100)


def _long_loss(params, adjoint):
    """3,200 RK4 steps (100 blocks of 32), the final state only."""
    model = sciad.ode.Pendulum(length=params[0], gravity=9.81, damping=params[1])
    traj = sciad.simulate(model, Y0, n_steps=3200, dt=0.001, adjoint=adjoint)
    return jnp.sum(traj.y1**2)


@pytest.mark.parametrize(
    "memory, depth",
    [(10**9, 0), (20_000, 1), (8_000, 2)],  # store everything, one level, two levels
)
def test_memory_budget_gradients_equal_direct(memory, depth):
    """Gradients, Hessians and forward mode with every kind of budgeted schedule equal
    `DirectAdjoint`'s to round-off, through a long run and through one with saves."""
    from sciad._core import _adjoint

    plans = []
    plan = _adjoint._plan

    def spy(*args):
        plans.append(plan(*args))
        return plans[-1]

    budget = sciad.CheckpointAdjoint(memory=memory)
    v = jnp.array([0.3, -1.0])
    for f in (_long_loss, _saves_loss):
        # DirectAdjoint reference: compiled once for all three budgets (outside the spy,
        # so only the budgeted runs' plans are recorded, as before)
        ref, h_ref, _ = derivatives(f, sciad.DirectAdjoint())(PARAMS, v)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_adjoint, "_plan", spy)
            g, h, tangent = derivatives(f, budget)(PARAMS, v)
        assert np.allclose(g, ref, rtol=1e-12, atol=1e-14)
        assert np.allclose(h, h_ref, rtol=1e-10)
        assert np.allclose(tangent, ref @ v, rtol=1e-12)
    assert max(len(p) for p in plans) == depth  # the schedule the budget asked for


def test_memory_budget_bounds_memory():
    """Through 16,384 steps, the budgeted gradient's scratch memory follows the budget:
    a generous one stores everything (as DirectAdjoint), a small one stays small."""
    direct = _memory(sciad.DirectAdjoint(), 16384)
    big = _memory(sciad.CheckpointAdjoint(memory=10**9), 16384)
    small = _memory(sciad.CheckpointAdjoint(memory=2**20), 16384)
    assert big > direct / 2
    assert small <= 2**20 < direct / 10


def test_memory_budget_argument_is_checked():
    for bad in (0, -5, True):
        with pytest.raises(ValueError, match=r"CheckpointAdjoint\(memory=...\) must be"):
            sciad.CheckpointAdjoint(memory=bad)
    with pytest.raises(ValueError, match="levels or memory, not both"):
        sciad.CheckpointAdjoint(levels=2, memory=2**20)


class _Driven(sciad.AbstractModel):
    """A pendulum driven at frequency ω: a model that depends on time."""

    length: jax.Array
    force: jax.Array
    omega: float = 2.0

    def vector_field(self, t, y):
        return jnp.stack(
            [y[1], -9.81 / self.length * jnp.sin(y[0]) + self.force * jnp.cos(self.omega * t)]
        )


def _small_state_cases():
    """(name, loss(params, adjoint)) for runs whose state and parameters are few: a
    time-dependent RK4 model saved at uneven times, velocity Verlet (a cached force in
    the integrator's state) over a long run, and a float32 run."""
    ts = jnp.array([0.0, 0.31, 0.5, 1.27, 2.0])

    def driven(p, adjoint):
        model = _Driven(p[0], p[1])
        traj = sciad.simulate(
            model, Y0, t1=2.0, dt=0.01, adjoint=adjoint, saveat=sciad.SaveAt(ts=ts)
        )
        return jnp.sum(traj.ys[:, 0] ** 2) + traj.y1[1]

    def verlet(p, adjoint):
        osc = sciad.ode.SeparableHamiltonian(
            lambda mom: 0.5 * jnp.sum(mom**2),
            lambda q: 0.5 * p[0] * q[0] ** 2 + 0.25 * p[1] * q[0] ** 4,
        )
        y0 = (jnp.array([1.0]), jnp.array([0.0]))
        traj = sciad.simulate(
            osc, y0, n_steps=3200, dt=0.005, adjoint=adjoint, integrator=sciad.VelocityVerlet()
        )
        return jnp.sum(traj.y1[0] ** 2) + jnp.sum(traj.y1[1])

    return {"driven": driven, "verlet": verlet}


SMALL = _small_state_cases()


@pytest.mark.parametrize("name", sorted(SMALL))
def test_memory_budget_preaccumulates_small_states(name):
    """With a memory budget, a run whose state and parameters are few stores each
    block's Jacobian, accumulated by forward mode, instead of recomputing: gradients,
    forward mode, Hessians, grad of grad and vmapped gradients equal `DirectAdjoint`'s
    to round-off and central differences; the compiled gradient holds the Jacobians
    (a custom JVP), not the steps' intermediates, and so less memory than storing
    everything."""
    f = SMALL[name]
    budget = sciad.CheckpointAdjoint(memory=2**20)
    v = jnp.array([0.3, -1.0])
    ref, h_ref, _ = derivatives(f, sciad.DirectAdjoint())(PARAMS, v)
    g, h, tangent = derivatives(f, budget)(PARAMS, v)
    assert np.allclose(g, ref, rtol=1e-12, atol=1e-14)
    assert np.allclose(h, h_ref, rtol=1e-10, atol=1e-12)
    assert np.allclose(tangent, ref @ v, rtol=1e-12)
    assert np.allclose(g, central_fd(lambda p: f(p, budget), PARAMS, eps=1e-6), rtol=1e-6)
    jaxpr = str(jax.make_jaxpr(jax.grad(lambda p: f(p, budget)))(PARAMS))
    assert "custom_jvp_call" in jaxpr

    def memory(adjoint):
        compiled = jax.jit(jax.grad(lambda p: f(p, adjoint))).lower(PARAMS).compile()
        return compiled.memory_analysis().temp_size_in_bytes

    # (the benchmark: 0.24 MiB against 9.16 MiB through 100,000 pendulum steps)
    assert memory(budget) < memory(sciad.DirectAdjoint()) / 2
    # grad of grad and vmap of grad, against the stored-everything run
    gg = lambda a: jax.grad(lambda s: jax.grad(lambda p: f(p, a))(PARAMS * s)[0])(1.0)  # noqa: E731
    assert np.allclose(gg(budget), gg(sciad.DirectAdjoint()), rtol=1e-10)
    batch = jnp.stack([PARAMS, 1.3 * PARAMS])
    vg = lambda a: jax.vmap(jax.grad(lambda p: f(p, a)))(batch)  # noqa: E731
    assert np.allclose(vg(budget), vg(sciad.DirectAdjoint()), rtol=1e-12, atol=1e-14)


def test_memory_budget_float32_and_large_states():
    """float32 runs preaccumulate in float32 (the gradient agrees with float64's to
    float32 round-off); a state of 400 numbers is not preaccumulated (a plain scan,
    checkpointed as the budget says)."""
    f = SMALL["driven"]
    budget = sciad.CheckpointAdjoint(memory=2**20)
    g64 = jax.grad(lambda p: f(p, budget))(PARAMS)
    p32 = PARAMS.astype(jnp.float32)
    model = _Driven(p32[0], p32[1])
    y32 = Y0.astype(jnp.float32)

    def f32(p):
        traj = sciad.simulate(_Driven(p[0], p[1]), y32, t1=2.0, dt=0.01, adjoint=budget)
        return jnp.sum(traj.y1**2)

    def f64(p):
        traj = sciad.simulate(_Driven(p[0], p[1]), Y0, t1=2.0, dt=0.01, adjoint=budget)
        return jnp.sum(traj.y1**2)

    g32 = jax.grad(f32)(p32)
    assert g32.dtype == jnp.float32 and model.length.dtype == jnp.float32
    assert np.allclose(g32, jax.grad(f64)(PARAMS), rtol=1e-4)
    assert np.all(np.isfinite(g64))
    chain = sciad.ode.SeparableHamiltonian(
        lambda p: 0.5 * jnp.sum(p**2), lambda q: jnp.sum(0.5 * jnp.diff(q) ** 2)
    )
    q0 = jnp.sin(jnp.linspace(0.0, 3.0, 200))

    def big(q):
        traj = sciad.simulate(chain, (q, jnp.zeros_like(q)), dt=0.01, n_steps=64, adjoint=budget)
        return jnp.sum(traj.y1[0] ** 2)

    from sciad._core import _adjoint

    calls = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_adjoint, "_preaccumulated", lambda *a: calls.append(a))
        jax.make_jaxpr(jax.grad(big))(q0)
    assert not calls

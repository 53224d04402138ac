"""The torque-free asymmetric rigid body: conservation over 10,000 steps, the
Dzhanibekov flip against the elliptic-function solution, the energy gain of
semi-implicit Euler (also MuJoCo's), and convergence orders on SO(3)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.special import ellipj, ellipk, ellipkinc

import sciad
import sciad.rigid as rigid

from ..helpers import fit_order

INERTIA = np.array([1.0, 2.0, 3.0])
W0 = np.array([0.1, 10.0, 0.1])  # near the intermediate axis: it flips
DT, N = 1e-3, 10_000


def top(gravity=(0.0, 0.0, 0.0), **kw):
    body = rigid.Body("top", joint=rigid.FreeJoint(), mass=1.0, inertia=jnp.asarray(INERTIA), **kw)
    return rigid.MultiBody([body], gravity=jnp.asarray(gravity))


def initial(model, w=W0):
    q0, _ = model.default_state()
    return q0, jnp.concatenate([jnp.zeros(3), jnp.asarray(w)])


def observe(t, y, model):
    q, v = y
    return jnp.concatenate([model.energy(y)[None], model.momentum(q, v)[:3], v[3:]])


def run(integrator):
    model = top()
    traj = sciad.simulate(
        model,
        initial(model),
        dt=DT,
        n_steps=N,
        integrator=integrator,
        saveat=sciad.SaveAt(steps=10, t0=True, fn=observe),
    )
    return np.asarray(traj.ts), np.asarray(traj.ys)


def analytic_flips(t_end, i=INERTIA, w=W0):
    """Times at which ω₂ changes sign, from the exact solution of Euler's equations
    (Landau & Lifshitz, Mechanics §37, case L² > 2EI₂): ω₂ = B sn(τ, k), with
    τ = τ₀ + t √((I₃−I₂)(L²−2EI₁)/(I₁I₂I₃)) and k² = (I₂−I₁)(2EI₃−L²)/((I₃−I₂)(L²−2EI₁))."""
    e = 0.5 * np.sum(i * w**2)
    l2 = np.sum((i * w) ** 2)
    assert l2 > 2 * e * i[1]
    m = (i[1] - i[0]) * (2 * e * i[2] - l2) / ((i[2] - i[1]) * (l2 - 2 * e * i[0]))
    rate = np.sqrt((i[2] - i[1]) * (l2 - 2 * e * i[0]) / np.prod(i))
    b = np.sqrt((2 * e * i[2] - l2) / (i[1] * (i[2] - i[1])))
    tau0 = ellipkinc(np.arcsin(w[1] / b), m)  # ω₁ > 0: cn τ₀ > 0, so |τ₀| < K
    sn, cn, dn, _ = ellipj(tau0, m)
    a = np.sqrt((2 * e * i[2] - l2) / (i[0] * (i[2] - i[0])))
    assert np.isclose(a * cn, w[0]) and np.isclose(b * sn, w[1])
    k = ellipk(m)
    zeros = (2 * k * np.arange(1, 100) - tau0) / rate  # sn changes sign at τ = 2jK
    period = 4 * k / rate
    return zeros[zeros <= t_end], period


def sign_changes(ts, x):
    i = np.nonzero(np.sign(x[:-1]) != np.sign(x[1:]))[0]
    return ts[i] - x[i] * (ts[i + 1] - ts[i]) / (x[i + 1] - x[i])


@pytest.fixture(scope="module")
def splitting():
    return run(rigid.FreeBodySplitting())


def test_splitting_conserves_and_flips(splitting):
    """FreeBodySplitting, I = diag(1, 2, 3), ω₀ = (0.1, 10, 0.1), dt = 1e-3, 10,000 steps:

    - |ΔE/E| < 2e-6 over the run (measured max 6.9e-7; bounded, no drift: the final
      error is 1e-12);
    - the world angular momentum is conserved to round-off: |ΔL|/|L| < 2e-12
      (measured 6.5e-13);
    - ω₂ flips 5 times in 10 s, as the exact solution says (flip period 3.9106 s, two
      flips per period), and every flip lies within 1e-4 s of the exact flip time
      (measured 4e-5 s).
    """
    ts, o = splitting
    e, lw, w2 = o[:, 0], o[:, 1:4], o[:, 5]
    assert np.max(np.abs(e / e[0] - 1)) < 2e-6
    assert abs(e[-1] / e[0] - 1) < 1e-10
    assert np.max(np.linalg.norm(lw - lw[0], axis=1)) / np.linalg.norm(lw[0]) < 2e-12
    exact, period = analytic_flips(ts[-1])
    assert np.isclose(period, 3.9106, atol=1e-4)
    flips = sign_changes(ts, w2)
    assert len(flips) == len(exact) == 5
    assert np.max(np.abs(flips - exact)) < 1e-4


def test_semi_implicit_euler_gains_energy():
    """Semi-implicit Euler on the same body gains energy steadily, because the
    gyroscopic term is explicit: +6.03% over the 10,000 steps (asserted between 5% and
    7%), and |L| grows by 3%. It still flips 5 times, up to 5 ms late."""
    ts, o = run(rigid.SemiImplicitEuler())
    e, lw, w2 = o[:, 0], o[:, 1:4], o[:, 5]
    gain = e[-1] / e[0] - 1
    assert 0.05 < gain < 0.07, gain
    assert np.all(np.diff(e) > 0)  # a steady drift, not an oscillation
    l_drift = np.linalg.norm(lw[-1]) / np.linalg.norm(lw[0]) - 1
    assert 0.02 < l_drift < 0.04
    assert len(sign_changes(ts, w2)) == 5


def test_semi_implicit_euler_is_mujocos_euler():
    """MuJoCo's Euler integrator on the same body gives the same state after the 10,000
    steps to 1e-9, so the same +6% energy gain: the drift is the method's, not ours."""
    mujoco = pytest.importorskip("mujoco")
    xml = (
        '<mujoco><option timestep="0.001" gravity="0 0 0"/><worldbody><body><freejoint/>'
        '<inertial pos="0 0 0" mass="1" diaginertia="1 2 3"/></body></worldbody></mujoco>'
    )
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qvel[3:] = W0
    for _ in range(N):
        mujoco.mj_step(m, d)
    mujoco.mj_forward(m, d)
    model = top()
    traj = sciad.simulate(
        model, initial(model), dt=DT, n_steps=N, integrator=rigid.SemiImplicitEuler()
    )
    np.testing.assert_allclose(traj.y1[1], d.qvel, rtol=0, atol=1e-9 * np.max(np.abs(W0)))
    np.testing.assert_allclose(traj.y1[0], d.qpos, atol=1e-9)


def euler_reference(w, t, i=INERTIA):
    """ω(t) and the orientation quaternion by SciPy's DOP853 (rtol 1e-13) on Euler's
    equations INERTIA ω̇ = (INERTIA ω) × ω and q̇ = ½ q ⊗ (0, ω)."""

    def f(_, y):
        om, q = y[:3], y[3:]
        dw = np.cross(i * om, om) / i
        w_, x, y_, z = q
        dq = 0.5 * np.array(
            [
                -x * om[0] - y_ * om[1] - z * om[2],
                w_ * om[0] + y_ * om[2] - z * om[1],
                w_ * om[1] - x * om[2] + z * om[0],
                w_ * om[2] + x * om[1] - y_ * om[0],
            ]
        )
        return np.concatenate([dw, dq])

    sol = solve_ivp(
        f, (0, t), np.concatenate([w, [1, 0, 0, 0]]), method="DOP853", rtol=1e-13, atol=1e-14
    )
    return sol.y[:3, -1], sol.y[3:, -1]


@eqx.filter_jit
def short_run(model, y0, dt, integrator, n=20):
    return sciad.simulate(model, y0, dt=dt, n_steps=n, integrator=integrator).y1


@eqx.filter_jit
def saved_run(model, y0, dt, integrator):
    """40 steps, saving every 10 (one compilation for every dt)."""
    return sciad.simulate(
        model, y0, dt=dt, n_steps=40, integrator=integrator, saveat=sciad.SaveAt(steps=10)
    ).ys


@pytest.mark.parametrize(
    "integrator, order",
    [(rigid.RKMK4(), 4), pytest.param(rigid.FreeBodySplitting(), 2, marks=pytest.mark.slow)],
    ids=["RKMK4", "splitting"],
)
def test_convergence_order_on_so3(integrator, order):
    """Global error at T = 0.4 against the DOP853 reference, for dt = 0.04, 0.02, 0.01
    (a fast, strongly precessing spin): RKMK4 converges at order 4 in orientation and
    angular velocity, the splitting at order 2."""
    w = np.array([2.0, 3.0, -1.5])
    model = top()
    w_ref, q_ref = euler_reference(w, 0.4)
    errors = []
    dts = [0.04, 0.02, 0.01]
    for dt, k in zip(dts, (0, 1, 3), strict=True):  # saves after 10, 20, 30, 40 steps
        qs, vs = saved_run(model, initial(model, w), jnp.asarray(dt), integrator)
        q, v = np.asarray(qs[k]), np.asarray(vs[k])
        dq = min(np.linalg.norm(q[3:] - q_ref), np.linalg.norm(q[3:] + q_ref))
        errors.append(max(dq, np.linalg.norm(v[3:] - w_ref) / np.linalg.norm(w)))
    p = fit_order(dts, errors)
    assert order - 0.2 < p < order + 0.3, (p, errors)


@eqx.filter_jit
def falling(model, y0, integrator, t, n):
    y1 = sciad.simulate(model, y0, dt=t / n, n_steps=n, integrator=integrator).y1
    com = lambda q: model.com_positions(q)[0]
    vcom0 = jax.jvp(com, (y0[0],), (model.position_derivative(*y0),))[1]
    want = com(y0[0]) + vcom0 * t + 0.5 * model.gravity * t**2
    return y1, com(y1[0]) - want


@pytest.mark.slow
def test_splitting_with_gravity_offset_and_rotated_axes():
    """With gravity, a centre of mass off the body origin and principal axes rotated in
    the body frame, the splitting's centre of mass falls exactly as x₀ + v₀t + ½gt²
    (to 1e-12; measured 2e-14), and its state agrees with RKMK4's to O(dt²): within
    2e-5 after 100 steps of 5 ms (measured 3.8e-6 in v, 6.4e-7 in q)."""
    kw = dict(com=jnp.array([0.1, -0.05, 0.2]), inertia_quat=jnp.array([0.9, 0.2, -0.3, 0.1]))
    model = top(gravity=(0.0, 0.0, -9.81), **kw)
    q0, v0 = initial(model, np.array([1.0, -2.0, 0.5]))
    y0 = (q0, v0.at[:3].set(jnp.array([0.3, 0.0, 1.0])))
    (qs, vs), err_split = falling(model, y0, rigid.FreeBodySplitting(), 0.5, 100)
    (qr, vr), err_rk = falling(model, y0, rigid.RKMK4(), 0.5, 100)
    assert np.max(np.abs(err_split)) < 1e-12
    assert np.max(np.abs(err_rk)) < 1e-9  # RKMK4's truncation error (measured 1.5e-11)
    assert np.max(np.abs(vs - vr)) < 2e-5
    assert np.max(np.abs(qs - qr)) < 2e-5

# %% [markdown]
# # Simulate a pendulum, and batch it with `vmap`
#
# One call, `sciad.simulate`, runs a model with a fixed-step integrator; an ensemble is
# `jax.vmap` of that call. Each step below checks the physics it shows.

# %%
"""Simulate a damped pendulum, vmap ensembles over angles and lengths, check the physics.

Checks: the damped pendulum's energy decreases at every step (dE/dt = -b L^2 w^2 <= 0);
vmapped periods match the exact elliptic-integral period 4 K(sin^2(theta0/2)) sqrt(L/g);
symplectic integrators keep the energy error bounded over long runs (Kepler and a
`SeparableHamiltonian` pendulum) where RK4 drifts.

Run: `python examples/simulate_and_vmap.py` (writes `simulate_and_vmap.png`).
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy.special import ellipk  # noqa: E402

import sciad  # noqa: E402

jax.config.update("jax_enable_x64", True)

# %% [markdown]
# ## One simulation
#
# State (θ, ω); RK4 with dt = 0.01 over 10 s, saving 101 points.

# %%
pendulum = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
y0 = jnp.array([1.0, 0.0])
ts = jnp.linspace(0.0, 10.0, 101)
traj = sciad.simulate(pendulum, y0, t1=10.0, dt=0.01, saveat=sciad.SaveAt(ts=ts))
assert traj.ys.shape == (101, 2)
assert traj.result == sciad.RESULTS.successful
np.testing.assert_allclose(traj.ts, ts, atol=1e-12)
np.testing.assert_allclose(traj.ys[-1], traj.y1)  # the last save is the final state
print(f"theta(10 s) = {float(traj.y1[0]):+.6f} rad")

# %% [markdown]
# ## Damping only removes energy
#
# With E = ½L²ω² + gL(1 − cos θ), dE/dt = −bL²ω² ≤ 0. Saving the energy (an observable,
# via `SaveAt(fn=...)`) at every step, it must decrease at every step.

# %%
energy_saves = sciad.SaveAt(t0=True, steps=1, fn=lambda t, y, model: model.energy(y))
energy = np.asarray(sciad.simulate(pendulum, y0, t1=10.0, dt=0.01, saveat=energy_saves).ys)
assert energy.shape == (1001,)
assert np.all(np.diff(energy) < 0), "energy must decrease at every step when damping > 0"
print(f"energy {energy[0]:.4f} -> {energy[-1]:.4f} J/kg over 10 s")

# %% [markdown]
# ## Ensembles are `vmap`
#
# Over initial angles, and over lengths (a parameter is just a field: `eqx.tree_at`).
# The undamped period is 4 K(m) √(L/g) with m = sin²(θ₀/2); the period is read off as four
# times the first zero crossing of θ, linearly interpolated between steps.

# %%
undamped = eqx.tree_at(lambda m: m.damping, pendulum, jnp.asarray(0.0))
g = float(pendulum.gravity)


def period(model, theta0):
    """Four times the first zero crossing of theta, released from theta0 at rest."""
    tr = sciad.simulate(
        model, jnp.stack([theta0, 0.0]), t1=3.0, dt=1e-3, saveat=sciad.SaveAt(t0=True, steps=1)
    )
    theta = tr.ys[:, 0]
    k = jnp.argmax(theta <= 0)
    ta, tb, a, b = tr.ts[k - 1], tr.ts[k], theta[k - 1], theta[k]
    return 4 * (ta - a * (tb - ta) / (b - a))


amplitudes = jnp.linspace(0.1, 2.5, 16)
periods = jax.vmap(lambda a: period(undamped, a))(amplitudes)
exact = 4 * np.sqrt(1.0 / g) * ellipk(np.sin(np.asarray(amplitudes) / 2) ** 2)
np.testing.assert_allclose(periods, exact, rtol=1e-7)
assert np.all(np.diff(np.asarray(periods)) > 0)  # larger swings are slower

lengths = jnp.linspace(0.25, 4.0, 16)
periods_l = jax.vmap(lambda L: period(eqx.tree_at(lambda m: m.length, undamped, L), 0.5))(lengths)
exact_l = 4 * np.sqrt(np.asarray(lengths) / g) * ellipk(np.sin(0.25) ** 2)
np.testing.assert_allclose(periods_l, exact_l, rtol=1e-7)
print(
    f"16 + 16 vmapped periods match 4 K(m) sqrt(L/g) to {np.max(np.abs(periods / exact - 1)):.1e}"
)

# The damped ensemble, for the plot.
angles0 = jnp.linspace(0.2, 2.5, 8)
ens = jax.vmap(
    lambda a: sciad.simulate(
        pendulum, jnp.stack([a, 0.0]), t1=10.0, dt=0.01, saveat=sciad.SaveAt(ts=ts)
    ).ys[:, 0]
)(angles0)
assert ens.shape == (8, 101)

# %% [markdown]
# ## Symplectic integrators conserve energy (no drift)
#
# Kepler's problem at eccentricity 0.5, 100 orbits of 500 steps each: Yoshida4's energy
# error stays bounded (the same in the last tenth of the run as in the first) and the
# angular momentum q × p is kept to round-off; RK4's energy and angular momentum drift.

# %%
kepler = sciad.ode.Kepler(mu=1.0)
yk = kepler.initial_state(eccentricity=0.5)
orbit = float(kepler.period())


def invariants(t, y, model):
    q, p = y
    return model.energy(y), q[0] * p[1] - q[1] * p[0]


drift = {}
for integrator in (sciad.Yoshida4(), sciad.RK4()):
    tr = sciad.simulate(
        kepler,
        yk,
        dt=orbit / 500,
        n_steps=50_000,
        integrator=integrator,
        saveat=sciad.SaveAt(steps=25, fn=invariants),
    )
    e_err = np.abs(np.asarray(tr.ys[0]) - float(kepler.energy(yk)))
    l_err = np.abs(np.asarray(tr.ys[1]) - float(invariants(0.0, yk, kepler)[1]))
    tenth = e_err.size // 10
    drift[type(integrator).__name__] = (e_err[:tenth].max(), e_err[-tenth:].max(), l_err.max())
for name, (first, last, lerr) in drift.items():
    print(f"Kepler {name:9s} |dE| first tenth {first:.2e}, last tenth {last:.2e}; |dL| {lerr:.1e}")
first, last, lerr = drift["Yoshida4"]
assert last < 1.05 * first < 1e-6, "symplectic energy error must stay bounded"
assert lerr < 1e-11, "a splitting method conserves angular momentum of a central force"
first, last, _ = drift["RK4"]
assert last > 3 * first, "RK4 drifts"

# %% [markdown]
# The same with a `SeparableHamiltonian` pendulum, H = p²/2 − g cos q (L = 1 m), at a
# coarse dt = 0.1 for 2000 s: velocity Verlet's energy error oscillates but does not
# grow; RK4's drifts steadily.

# %%
sep = sciad.ode.SeparableHamiltonian(
    lambda p: 0.5 * jnp.sum(p**2), lambda q: -g * jnp.sum(jnp.cos(q))
)
ys0 = (jnp.array([1.0]), jnp.array([0.0]))
sep_energy = sciad.SaveAt(t0=True, steps=10, fn=lambda t, y, model: model.energy(y))
errs = {}
for integrator in (sciad.VelocityVerlet(), sciad.RK4()):
    e = np.asarray(
        sciad.simulate(
            sep, ys0, dt=0.1, n_steps=20_000, integrator=integrator, saveat=sep_energy
        ).ys
    )
    tenth = e.size // 10
    errs[type(integrator).__name__] = (
        np.abs(e[:tenth] - e[0]).max(),
        np.abs(e[-tenth:] - e[0]).max(),
    )
print(
    "pendulum dt=0.1 |dE| first/last tenth:", {k: f"{a:.3f}/{b:.3f}" for k, (a, b) in errs.items()}
)
first, last = errs["VelocityVerlet"]
assert last < 1.01 * first
first, last = errs["RK4"]
assert last > 5 * first

# %% [markdown]
# ## Plot

# %%
fig, axes = plt.subplots(1, 3, figsize=(14, 4))
for a, row in zip(angles0, ens, strict=True):
    axes[0].plot(ts, row, label=f"{float(a):.1f}")
axes[0].set(xlabel="time (s)", ylabel="angle (rad)", title="vmap over initial angle")
axes[0].legend(title="theta0", fontsize=7)
axes[1].plot(amplitudes, periods, "o", label="simulated")
axes[1].plot(amplitudes, exact, "-", label="4K(m)sqrt(L/g)")
axes[1].set(xlabel="amplitude (rad)", ylabel="period (s)", title="period vs amplitude")
axes[1].legend()
axes[2].plot(np.linspace(0, 10, energy.size), energy)
axes[2].set(xlabel="time (s)", ylabel="energy (J/kg)", title="damped energy")
fig.tight_layout()
fig.savefig("simulate_and_vmap.png", dpi=100)
print("wrote simulate_and_vmap.png")

# %% [markdown]
# # Gradients of a simulation: reverse, forward, Hessian-vector products, grad of grad
#
# Every `sciad.simulate` run is differentiable in every mode. Each derivative below is
# checked against central finite differences, and where there is one, an exact answer.

# %%
"""Differentiate a pendulum simulation in every mode and check each derivative.

Checks: `eqx.filter_grad` w.r.t. all parameters against central finite differences;
`jax.jvp` against finite differences and against the reverse-mode gradient; the
forward-mode Jacobian of the flow map w.r.t. y0 against finite differences and against
Liouville's theorem, det = exp(-b T); a Hessian-vector product `jax.jvp(jax.grad(f))`
against finite differences of the gradient, and the Hessian it builds for symmetry and
linearity; grad of grad against the exact d^2/dk^2 of exponential decay and against a
second finite difference.

Run: `python examples/gradients.py`.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import sciad

jax.config.update("jax_enable_x64", True)

# %% [markdown]
# ## A scalar loss of a trajectory
#
# The mean squared angle over 101 saved points of a 10 s run (1000 RK4 steps).

# %%
pendulum = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
y0 = jnp.array([1.0, 0.0])
saveat = sciad.SaveAt(ts=jnp.linspace(0.0, 10.0, 101))


def loss(model, y0=y0):
    return jnp.mean(sciad.simulate(model, y0, t1=10.0, dt=0.01, saveat=saveat).ys[:, 0] ** 2)


EPS = 1e-6
NAMES = ("length", "gravity", "damping")


def shifted(model, name, h):
    """`model` with parameter `name` moved by `h`."""
    return eqx.tree_at(lambda m: getattr(m, name), model, getattr(model, name) + h)


# %% [markdown]
# ## Reverse mode: `eqx.filter_grad`, w.r.t. every parameter at once

# %%
grads = eqx.filter_grad(loss)(pendulum)
for name in NAMES:
    fd = (loss(shifted(pendulum, name, EPS)) - loss(shifted(pendulum, name, -EPS))) / (2 * EPS)
    print(f"dloss/d{name:8s} grad {float(getattr(grads, name)):+.10f}   FD {float(fd):+.10f}")
    np.testing.assert_allclose(getattr(grads, name), fd, rtol=1e-6)

# %% [markdown]
# ## Forward mode: `jax.jvp` along a direction in parameter space
#
# The directional derivative must agree with finite differences along the same direction,
# and with the reverse-mode gradient dotted with the direction.

# %%
# A tangent is a model-shaped PyTree whose entries may have any sign. Build it with
# `eqx.tree_at` (the constructor checks physics: it refuses a negative gravity).
direction = eqx.tree_at(
    lambda m: (m.length, m.gravity, m.damping),
    pendulum,
    (jnp.asarray(0.3), jnp.asarray(-0.2), jnp.asarray(0.5)),
)
value, deriv = jax.jvp(loss, (pendulum,), (direction,))
np.testing.assert_allclose(value, loss(pendulum), rtol=1e-14)


def along(h):
    return jax.tree.map(lambda p, v: p + h * v, pendulum, direction)


fd = (loss(along(EPS)) - loss(along(-EPS))) / (2 * EPS)
dot = sum(float(getattr(grads, n) * getattr(direction, n)) for n in NAMES)
print(f"jvp {float(deriv):+.10f}   FD {float(fd):+.10f}   <grad, v> {dot:+.10f}")
np.testing.assert_allclose(deriv, fd, rtol=1e-6)
np.testing.assert_allclose(deriv, dot, rtol=1e-10)

# %% [markdown]
# ## Liouville's theorem: the flow map's Jacobian w.r.t. the initial state
#
# The pendulum's vector field has divergence −b, so the flow map shrinks phase-space
# volume at rate b: det ∂y(T)/∂y₀ = exp(−bT). `jax.jacfwd` (forward mode, one pass per
# input) gives it to RK4's accuracy (a relative error of about 2e-8 at dt = 0.01).


# %%
def flow(y):
    return sciad.simulate(pendulum, y, t1=10.0, dt=0.01).y1


jac_fwd = jax.jacfwd(flow)(y0)
jac_fd = jnp.stack([(flow(y0 + EPS * e) - flow(y0 - EPS * e)) / (2 * EPS) for e in jnp.eye(2)], 1)
np.testing.assert_allclose(jac_fwd, jac_fd, rtol=1e-6, atol=1e-9)
det = float(jnp.linalg.det(jac_fwd))
print(f"det dy(10)/dy0 = {det:.10f};  exp(-b T) = {float(jnp.exp(-0.1 * 10.0)):.10f}")
np.testing.assert_allclose(det, np.exp(-1.0), rtol=1e-7)

# %% [markdown]
# ## Hessian-vector product: forward over reverse
#
# H v = d/dh ∇f(p + h v), computed as `jax.jvp(jax.grad(f), (p,), (v,))` without forming H.
# Here p = (length, damping).


# %%
def loss_p(p):
    return loss(eqx.tree_at(lambda m: (m.length, m.damping), pendulum, (p[0], p[1])))


p0 = jnp.array([1.0, 0.1])
grad_p = eqx.filter_jit(jax.grad(loss_p))


@eqx.filter_jit
def hvp(v):
    return jax.jvp(jax.grad(loss_p), (p0,), (v,))[1]


v = jnp.array([0.6, -0.8])
hv = hvp(v)
hv_fd = (grad_p(p0 + EPS * v) - grad_p(p0 - EPS * v)) / (2 * EPS)
print(f"Hv {np.asarray(hv)}   FD {np.asarray(hv_fd)}")
np.testing.assert_allclose(hv, hv_fd, rtol=1e-6)

# The full Hessian, one HVP per basis vector: symmetric, and linear in v.
hess = jnp.stack([hvp(e) for e in jnp.eye(2)], axis=1)
np.testing.assert_allclose(hess, hess.T, rtol=1e-10)
np.testing.assert_allclose(hess @ v, hv, rtol=1e-10)

# %% [markdown]
# ## Grad of grad, against an exact answer
#
# For exponential decay y(T) = y₀ e^{−kT}, so d²y(T)/dk² = T² y₀ e^{−kT}. Reverse over
# reverse (`jax.grad(jax.grad(...))`) through 200 RK4 steps must reproduce it (RK4's own
# error at dt = 0.01 is far below the tolerance).

# %%
T = 2.0


def decay_final(k):
    model = sciad.ode.ExponentialDecay(rate=k)
    return sciad.simulate(model, jnp.array(1.0), t1=T, dt=0.01).y1


k0 = jnp.asarray(0.5)
second = jax.grad(jax.grad(decay_final))(k0)
exact = T**2 * np.exp(-0.5 * T)
h = 1e-4
fd2 = (decay_final(k0 + h) - 2 * decay_final(k0) + decay_final(k0 - h)) / h**2
print(f"d2y/dk2 grad-of-grad {float(second):.10f}   exact {exact:.10f}   FD {float(fd2):.10f}")
np.testing.assert_allclose(second, exact, rtol=1e-9)
np.testing.assert_allclose(second, fd2, rtol=1e-6)

print("all derivatives agree with finite differences and exact values")

"""DiffTRe reweighting: the estimator's algebra (identity at θ = θ̂, the fluctuation
formula for its gradient), and its gradient against an exact quadrature for a Morse
dimer (cut off at half the box, as the minimum image requires) in a periodic box
sampled exactly."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import sciad.md as md

L, KT = 2.5, 0.7


def dimer(alpha, r0=1.0):
    space = md.PeriodicBox(jnp.full(3, L))
    pot = md.Truncated(md.Morse(1.0, alpha, r0), cutoff=L / 2)
    return md.MDSystem(space, pot, masses=jnp.ones(2))


def separation(system, q):
    return jnp.linalg.norm(system.space.displacement(q[1], q[0]))


def exact_frames(alpha, count, seed=0):
    """Independent canonical samples of the minimum-image separation (rejection)."""
    rng = np.random.default_rng(seed)
    out = []
    u_min = -1.0
    while len(out) < count:
        dr = rng.uniform(-L / 2, L / 2, (200_000, 3))
        r = np.linalg.norm(dr, axis=1)
        u = np.where(r < L / 2, (1 - np.exp(-alpha * (r - 1.0))) ** 2 - 1, 0.0)
        keep = rng.uniform(size=r.shape) < np.exp(-(u - u_min) / KT)
        out.extend(dr[keep])
    dr = np.asarray(out[:count])
    return jnp.asarray(np.stack([np.zeros_like(dr), dr], axis=1))


def quadrature_mean_r(alpha, r0=1.0, m=160):
    """⟨r⟩ over the cube of minimum-image separations, midpoint rule, float64."""
    x = (np.arange(m) + 0.5) / m * L - L / 2
    X, Y, Z = np.meshgrid(x, x, x, indexing="ij")
    r = np.sqrt(X**2 + Y**2 + Z**2)
    u = np.where(r < L / 2, (1 - np.exp(-alpha * (r - r0))) ** 2 - 1, 0.0)
    w = np.exp(-u / KT)
    return np.sum(r * w) / np.sum(w)


def test_identity_and_fluctuation_formula():
    frames = exact_frames(2.0, 500)
    ref = dimer(jnp.asarray(2.0))
    avg, n_eff = md.reweighted_average(ref, ref, frames, KT, separation)
    r = jax.vmap(lambda q: separation(ref, q))(frames)
    assert np.isclose(avg, jnp.mean(r), rtol=1e-12) and np.isclose(n_eff, 500.0)
    # d⟨r⟩/dα = −Cov(r, ∂U/∂α)/kT exactly (r does not depend on α)
    g = jax.grad(lambda a: md.reweighted_average(dimer(a), ref, frames, KT, separation)[0])(
        jnp.asarray(2.0)
    )
    du = jax.vmap(jax.grad(lambda a, q: dimer(a).potential_energy(q)), in_axes=(None, 0))(
        jnp.asarray(2.0), frames
    )
    cov = jnp.mean(r * du) - jnp.mean(r) * jnp.mean(du)
    assert np.isclose(g, -cov / KT, rtol=1e-10)
    # away from the reference the effective sample size drops
    _, n_far = md.reweighted_average(dimer(jnp.asarray(5.0)), ref, frames, KT, separation)
    assert float(n_far) < 0.9 * 500


def test_gradient_matches_quadrature():
    """d⟨r⟩/dr₀ from reweighting equals the quadrature derivative within 4σ."""
    alpha = 2.0
    frames = exact_frames(alpha, 20_000, seed=1)
    ref = dimer(jnp.asarray(alpha))

    def mean_r(r0, f):
        return md.reweighted_average(dimer(jnp.asarray(alpha), r0), ref, f, KT, separation)[0]

    one = jnp.asarray(1.0)
    g = float(jax.grad(mean_r)(one, frames))
    blocks = [float(jax.grad(mean_r)(one, b)) for b in jnp.split(frames, 20)]
    err = np.std(blocks, ddof=1) / np.sqrt(20)
    h = 1e-3
    exact = (quadrature_mean_r(alpha, 1 + h) - quadrature_mean_r(alpha, 1 - h)) / (2 * h)
    assert abs(exact) > 10 * err  # the test can fail
    assert abs(g - exact) < 4 * err, (g, exact, err)
    assert abs(float(mean_r(one, frames)) - quadrature_mean_r(alpha)) < 0.01


def test_neighbor_list_energies_agree():
    frames = exact_frames(2.0, 50)
    ref = dimer(jnp.asarray(2.0))
    pot = md.Truncated(md.Morse(1.0, 2.0, 1.0), cutoff=1.2)
    trunc = eqx.tree_at(lambda s: s.potential, ref, pot)
    builder = md.NeighborListBuilder.create(trunc.space, frames[0], cutoff=1.2, skin=0.0)
    moved = eqx.tree_at(lambda s: s.potential.potential.alpha, trunc, jnp.asarray(2.3))
    a, n1 = md.reweighted_average(moved, trunc, frames, KT, separation)
    b, n2 = md.reweighted_average(moved, trunc, frames, KT, separation, builder=builder)
    assert np.isclose(a, b, rtol=1e-12) and np.isclose(n1, n2, rtol=1e-12)

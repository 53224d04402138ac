"""Switched (smooth) cut-offs: the switch against the incomplete beta function, its
derivatives at both ends, energies and forces against a NumPy reference, and Hessians
through an MD run converging to finite differences as h².

`python -m tests.md.test_switch` prints the convergence table of docs/benchmarks.md
(Switched C² and C³ against Truncated, plain and force-shifted)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import betainc

import sciad
import sciad.md as md

from ..helpers import central_fd, fit_order

R_ON, R_C = 2.0, 2.5


def numpy_switch(x, k):
    """S(x) and S′(x) (d/dx) of the C² and C³ switches, written out by hand."""
    if k == 2:
        return 1 - 10 * x**3 + 15 * x**4 - 6 * x**5, -30 * x**2 * (1 - x) ** 2
    return 1 - 35 * x**4 + 84 * x**5 - 70 * x**6 + 20 * x**7, -140 * x**3 * (1 - x) ** 3


def numpy_switched_lj(q, box, k, species=None, sigma=None, eps=None):
    """Independent O(N²) energy and forces of S(r)·LJ(r) with minimum image."""
    n = len(q)
    e, f = 0.0, np.zeros_like(q)
    for a in range(n):
        for b in range(a + 1, n):
            s, ep = (
                (1.0, 1.0)
                if species is None
                else (sigma[species[a], species[b]], eps[species[a], species[b]])
            )
            d = q[a] - q[b]
            d -= box * np.round(d / box)
            r = np.sqrt(d @ d)
            if r >= R_C:
                continue
            u = 4 * ep * ((s / r) ** 12 - (s / r) ** 6)
            du = -24 * ep * (2 * (s / r) ** 12 - (s / r) ** 6) / r
            x = min(max((r - R_ON) / (R_C - R_ON), 0.0), 1.0)
            sw, dsw = numpy_switch(x, k)
            e += sw * u
            fr = -(sw * du + dsw / (R_C - R_ON) * u)
            f[a] += fr * d / r
            f[b] -= fr * d / r
    return e, f


def jittered_cubic(seed=0):
    """64 atoms on a jittered simple-cubic grid in a 5 × 5.5 × 6 box: many pairs in the
    switching shell, no overlaps."""
    rng = np.random.default_rng(seed)
    box = np.array([5.0, 5.5, 6.0])
    g = np.stack(np.meshgrid(*[np.arange(4)] * 3, indexing="ij"), -1).reshape(-1, 3)
    return (g + 0.5) * box / 4 + rng.normal(0, 0.08, g.shape), box


def nth_derivative(fn, m):
    """d^m fn / dr^m of a scalar function, compiled."""
    for _ in range(m):
        fn = jax.grad(fn)
    return jax.jit(lambda r: fn(r))


@pytest.mark.parametrize("k", [2, 3])
def test_switch_is_one_minus_the_incomplete_beta_function(k):
    pot = md.Switched(md.LennardJones(1.0, 1.0), R_ON, R_C, smoothness=k)
    r = np.linspace(1.5, 3.0, 301)
    x = np.clip((r - R_ON) / (R_C - R_ON), 0.0, 1.0)
    got = np.asarray(jax.vmap(pot.switch)(jnp.asarray(r)))
    assert np.allclose(got, 1 - betainc(k + 1, k + 1, x), rtol=0, atol=1e-14)
    # The monomial form cancels terms up to 84: ~100 ulp of round-off near x = 1.
    assert np.allclose(got, numpy_switch(x, k)[0], rtol=0, atol=5e-14)
    assert np.all(got[r <= R_ON] == 1.0) and np.all(got[r >= R_C] == 0.0)
    assert np.all(np.diff(got) <= 0)  # monotone
    # The energy is S·u, and u itself below r_on.
    lj = md.LennardJones(1.0, 1.0)
    for ri in (1.1, 2.2, 2.45):
        expect = float(pot.switch(jnp.asarray(ri))) * float(lj.pair_energy(jnp.asarray(ri)))
        assert np.isclose(pot.pair_energy(jnp.asarray(ri)), expect, rtol=1e-14)
    assert pot.pair_energy(jnp.asarray(1.1)) == lj.pair_energy(jnp.asarray(1.1))
    assert pot.range() == R_C


# The first derivative of S that does not vanish at the ends, d^(k+1)S/dr^(k+1), by hand:
# S = 1 − I_x(k+1, k+1) has S′(x) = −x^k (1 − x)^k / B(k+1, k+1), so its k-th x-derivative
# is −k!/B at x = 0⁺ and −(−1)^k k!/B at x = 1⁻ (1/B = 30 for k = 2, 140 for k = 3).
_JUMP = {2: (-60.0, -60.0), 3: (-840.0, 840.0)}


@pytest.mark.parametrize("k", [2, 3])
def test_derivatives_continuous_at_r_on_and_r_c(k):
    """S and its first k derivatives are continuous at both ends (one-sided values all
    match the analytic limits); the (k+1)-th jumps there by the analytic amount, so the
    switch is exactly C^k. The switched energy's first k derivatives vanish at r_c⁻."""
    width = R_C - R_ON
    pot = md.Switched(md.Morse(1.0, 3.0, 1.1), R_ON, R_C, smoothness=k)
    delta = 1e-9
    for m in range(k + 2):
        ds = nth_derivative(pot.switch, m)
        scale = 1.0 if m == 0 else 1e3 / width**m
        at = {side: float(ds(jnp.asarray(R_ON + side * delta))) for side in (-1, 1)}
        bt = {side: float(ds(jnp.asarray(R_C + side * delta))) for side in (-1, 1)}
        if m == 0:
            expect_on, expect_c = (1.0, 1.0), (0.0, 0.0)
        elif m <= k:
            expect_on, expect_c = (0.0, 0.0), (0.0, 0.0)
        else:  # below r_on and beyond r_c S is constant; inside it is the analytic jump
            j_on, j_c = _JUMP[k]
            expect_on, expect_c = (0.0, j_on / width**m), (j_c / width**m, 0.0)
        got = (at[-1], at[1], bt[-1], bt[1])
        assert np.allclose(got, (*expect_on, *expect_c), rtol=1e-6, atol=1e-6 * scale), (m, got)
        if m == k + 1:
            assert abs(at[1] - at[-1]) > 10 / width**m  # the jump is real
    for m in range(k + 1):
        du = nth_derivative(pot.pair_energy, m)
        inner = float(du(jnp.asarray(R_C - delta)))
        assert abs(inner) < 1e-6 and float(du(jnp.asarray(R_C + delta))) == 0.0, (m, inner)
        # At r_on the switched energy joins the bare one, derivative by derivative.
        bare = float(nth_derivative(pot.potential.pair_energy, m)(jnp.asarray(R_ON)))
        for side in (-1, 1):
            assert np.isclose(float(du(jnp.asarray(R_ON + side * delta))), bare, rtol=1e-6)


@pytest.mark.parametrize("k", [2, 3])
def test_energy_and_forces_match_numpy(k):
    q, box = jittered_cubic()
    pot = md.Switched(md.LennardJones(1.0, 1.0), R_ON, R_C, smoothness=k)
    system = md.MDSystem(md.PeriodicBox(jnp.asarray(box)), pot, masses=jnp.ones(len(q)))
    e_ref, f_ref = numpy_switched_lj(q, box, k)
    assert np.isclose(system.potential_energy(jnp.asarray(q)), e_ref, rtol=1e-12)
    assert np.allclose(system.force(0.0, jnp.asarray(q)), f_ref, rtol=1e-10, atol=1e-12)
    # The same through a neighbour list built at the switched potential's range.
    builder = md.NeighborListBuilder.create(
        system.space, jnp.asarray(q), cutoff=pot.range(), skin=0.2
    )
    nbrs = builder.build(system.space, jnp.asarray(q))
    listed = md.pair_energy_sum(pot, system.space, jnp.asarray(q), (nbrs.i, nbrs.j, nbrs.mask()))
    assert np.isclose(listed, e_ref, rtol=1e-12)


def test_forces_are_minus_energy_gradient_by_fd():
    q, box = jittered_cubic(1)
    q5 = jnp.asarray(q[:5] * 0.55)  # packed closer: pairs on both sides of r_on
    pot = md.Switched(md.Morse(1.0, 3.0, 1.1), R_ON, R_C, smoothness=3)
    small = md.MDSystem(md.PeriodicBox(jnp.asarray(box)), pot, masses=jnp.ones(5))
    r = np.linalg.norm(q5[:, None] - q5[None], axis=-1)[np.triu_indices(5, 1)]
    assert np.any((r > R_ON) & (r < R_C)) and np.any(r < R_ON)
    fd = -central_fd(small.potential_energy, q5, eps=1e-6)
    assert np.allclose(small.force(0.0, q5), fd, rtol=1e-7, atol=1e-9)


def test_species_matrices():
    sig, eps = md.lorentz_berthelot(jnp.array([1.0, 1.3]), jnp.array([1.0, 0.5]))
    pot = md.Switched(md.LennardJones(sig, eps), R_ON, R_C, smoothness=2)
    q, box = jittered_cubic(2)
    species = np.arange(len(q)) % 2
    system = md.MDSystem(
        md.PeriodicBox(jnp.asarray(box)), pot, masses=jnp.ones(len(q)), species=jnp.asarray(species)
    )
    e_ref, f_ref = numpy_switched_lj(q, box, 2, species, np.asarray(sig), np.asarray(eps))
    assert np.isclose(system.potential_energy(jnp.asarray(q)), e_ref, rtol=1e-12)
    assert np.allclose(system.force(0.0, jnp.asarray(q)), f_ref, rtol=1e-10, atol=1e-12)


def lj_liquid(potential, seed=0):
    """32 atoms, fcc at ρ = 0.84 (box 3.36), T = 1."""
    q, box = md.lattice_for_density("fcc", 32, 0.84)
    p = md.maxwell_boltzmann(jax.random.key(seed), jnp.ones(32), 1.0, exact=True)
    return md.MDSystem(box, potential, masses=jnp.ones(32)), (q, p)


def fd_errors(potential, hs, order=2, n_steps=1000, dt=5e-4):
    """Largest |FD − AD| of the gradient (`order=1`) or Hessian (`order=2`) of the
    mean-square displacement after `n_steps` w.r.t. (σ, ε): AD by `jax.grad` or
    forward-over-reverse, FD by central differences (of the observable or of its
    gradient) with step h, for each h; and the largest |AD| entry."""
    system, y0 = lj_liquid(potential)

    def msd(theta):
        s = eqx.tree_at(
            lambda s: (s.potential.potential.sigma, s.potential.potential.epsilon),
            system,
            (theta[0], theta[1]),
        )
        q1 = sciad.simulate(s, y0, dt=dt, n_steps=n_steps).y1[0]
        return jnp.mean(jnp.sum((q1 - y0[0]) ** 2, axis=1))

    theta = jnp.array([1.0, 1.0])
    f = jax.jit(msd if order == 1 else jax.grad(msd))
    exact = np.asarray(jax.jit(jax.grad(msd) if order == 1 else jax.jacfwd(jax.grad(msd)))(theta))
    errors = []
    for h in hs:
        columns = [(f(theta + h * e) - f(theta - h * e)) / (2 * h) for e in jnp.eye(2)]
        errors.append(float(np.max(np.abs(np.stack(columns, axis=-1) - exact))))
    return np.array(errors), float(np.max(np.abs(exact)))


@pytest.mark.slow
def test_hessian_through_md_converges_to_finite_differences_as_h_squared():
    """1,000 velocity-Verlet steps of a periodic LJ liquid with a C³ switch: the
    finite-difference Hessian's error falls 4× per halving of h. (With Truncated, plain
    or force-shifted, it does not converge: docs/benchmarks.md, not asserted here.)"""
    hs = (1e-3, 5e-4, 2.5e-4)
    pot = md.Switched(md.LennardJones(1.0, 1.0), r_on=1.3, cutoff=1.6, smoothness=3)
    errors, scale = fd_errors(pot, hs)
    ratios = errors[:-1] / errors[1:]
    assert np.all((ratios > 3.5) & (ratios < 4.6)), (errors, ratios)
    assert 1.9 < fit_order(hs, errors) < 2.1
    assert errors[-1] < 1e-3 * scale


if __name__ == "__main__":
    jax.config.update("jax_enable_x64", True)
    hs = (1e-3, 5e-4, 2.5e-4, 1.25e-4, 6.25e-5)
    lj = md.LennardJones(1.0, 1.0)
    for order, what in ((1, "gradient"), (2, "Hessian")):
        for name, pot in (
            ("Switched C3", md.Switched(lj, r_on=1.3, cutoff=1.6, smoothness=3)),
            ("Switched C2", md.Switched(lj, r_on=1.3, cutoff=1.6, smoothness=2)),
            ("Truncated force", md.Truncated(lj, cutoff=1.6, shift="force")),
            ("Truncated none", md.Truncated(lj, cutoff=1.6)),
        ):
            errors, scale = fd_errors(pot, hs, order)
            ratios = " ".join(f"{r:.2f}" for r in errors[:-1] / errors[1:])
            print(
                f"{what}, {name}: max|AD| {scale:.4g}; errors",
                " ".join(f"{e:.3g}" for e in errors),
                "; ratios",
                ratios,
            )

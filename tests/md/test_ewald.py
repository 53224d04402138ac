"""Ewald summation: the NaCl Madelung constant (orthorhombic, triclinic and primitive cells),
independence of α, an independent NumPy Ewald, forces and parameter gradients against finite
differences, excluded pairs, the neutralising background, equivalent lattice bases, the strain
virial, and errors for open space."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import erfc

import sciad.md as md

from ..helpers import central_fd

MADELUNG_NACL = 1.747564594633182  # per ion pair, in units of q²/r0

# Jitted entry points: one compiled program per cutoff, k-set and shape (charges, α and
# the cell are arguments), instead of hundreds of op-by-op compilations.
_energy = eqx.filter_jit(lambda ewald, space, q: ewald.energy(space, q))
_energy_and_grad = eqx.filter_jit(
    lambda ewald, space, q: jax.value_and_grad(lambda x: ewald.energy(space, x))(q)
)
_potential = eqx.filter_jit(lambda system, q: system.potential_energy(q))
_force = eqx.filter_jit(lambda system, q: system.force(0.0, q))


def rock_salt(m):
    """NaCl with nearest-neighbour distance 1: m³ conventional cells (8 m³ ions), box 2m."""
    na = np.array([[0, 0, 0], [1, 1, 0], [1, 0, 1], [0, 1, 1]], float)
    g = np.stack(np.meshgrid(*[np.arange(m)] * 3, indexing="ij"), -1).reshape(-1, 1, 3) * 2.0
    q = np.concatenate([(g + na).reshape(-1, 3), (g + na + [1.0, 0, 0]).reshape(-1, 3)])
    charges = np.concatenate([np.ones(4 * m**3), -np.ones(4 * m**3)])
    return jnp.asarray(q), jnp.asarray(charges), 2.0 * m


def numpy_ewald(q, charges, cell, alpha, kmax, images=2):
    """An independent, plain Ewald sum: real space over explicit images, all k ≠ 0."""
    q, charges, cell = (np.asarray(x, np.float64) for x in (q, charges, cell))
    n = len(q)
    shifts = np.stack(np.meshgrid(*[np.arange(-images, images + 1)] * 3, indexing="ij"), -1)
    shifts = shifts.reshape(-1, 3) @ cell
    e_real = 0.0
    for a in range(n):
        for b in range(n):
            r = np.linalg.norm(q[a] - q[b] + shifts, axis=1)
            if a == b:
                r = r[r > 0]
            e_real += 0.5 * charges[a] * charges[b] * np.sum(erfc(alpha * r) / r)
    m = np.stack(np.meshgrid(*[np.arange(-kmax, kmax + 1)] * 3, indexing="ij"), -1).reshape(-1, 3)
    m = m[np.any(m != 0, axis=1)]
    k = 2 * np.pi * m @ np.linalg.inv(cell).T
    k2 = np.sum(k**2, axis=1)
    s = np.sum(charges[:, None] * np.exp(1j * q @ k.T), axis=0)
    volume = abs(np.linalg.det(cell))
    e_recip = 2 * np.pi / volume * np.sum(np.exp(-k2 / (4 * alpha**2)) / k2 * np.abs(s) ** 2)
    return e_real + e_recip - alpha / np.sqrt(np.pi) * np.sum(charges**2)


@pytest.fixture(scope="module")
def melt():
    """20 random non-overlapping ions (±1, neutral) in a triclinic cell."""
    cell = jnp.array([[5.0, 0.0, 0.0], [0.8, 5.2, 0.0], [-0.6, 0.5, 4.9]])
    rng = np.random.default_rng(0)
    frac = []
    distance = jax.jit(lambda a, b: jnp.linalg.norm(md.TriclinicBox(cell).displacement(a, b)))
    while len(frac) < 20:
        s = rng.uniform(0, 1, 3)
        d = [distance(jnp.asarray(s @ cell), jnp.asarray(t @ cell)) for t in frac]
        if all(x > 0.9 for x in d):
            frac.append(s)
    q = jnp.asarray(np.array(frac) @ np.asarray(cell))
    charges = jnp.asarray(np.tile([1.0, -1.0], 10))
    return md.TriclinicBox(cell), q, charges


def test_madelung_constant_rock_salt():
    q, charges, L = rock_salt(2)  # 64 ions, box 4
    n_pairs = len(charges) // 2
    ewald = md.Ewald(charges, alpha=2.5, cutoff=1.99, kmax=14)
    ortho = _energy(ewald, md.PeriodicBox(jnp.full(3, L)), q)
    assert abs(float(-ortho / n_pairs) - MADELUNG_NACL) < 1e-6  # measured 5e-12
    # The same box written as a triclinic cell gives the same number.
    tri = _energy(ewald, md.TriclinicBox(jnp.eye(3) * L), q)
    assert np.isclose(tri, ortho, rtol=1e-13)
    # The 2-ion primitive fcc cell (a genuinely triclinic cell; real space is empty).
    prim = md.TriclinicBox(jnp.array([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]]))
    ewald = md.Ewald(jnp.array([1.0, -1.0]), alpha=6.0, cutoff=0.5, kmax=12)
    e = _energy(ewald, prim, jnp.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]))
    assert abs(float(-e) - MADELUNG_NACL) < 1e-6  # measured 2e-11


def test_independent_of_alpha_and_matches_numpy(melt):
    space, q, charges = melt
    energies = [
        float(_energy(md.Ewald(charges, alpha=a, cutoff=2.4, kmax=k), space, q))
        for a, k in ((2.2, 18), (2.6, 21), (3.0, 24))
    ]
    assert np.ptp(energies) < 1e-11 * abs(energies[0])  # measured 7.5e-13
    ref = numpy_ewald(q, charges, space.cell, alpha=1.5, kmax=16, images=2)
    assert np.isclose(energies[0], ref, rtol=1e-12)  # measured 1.2e-13
    # dU/dα vanishes (the splitting is arbitrary).
    dalpha = jax.jit(jax.grad(lambda a: md.Ewald(charges, a, 2.4, 21).energy(space, q)))(
        jnp.asarray(2.6)
    )
    assert abs(float(dalpha)) < 1e-8 * abs(energies[0])


def test_neutralising_background_for_net_charge(melt):
    space, q, charges = melt
    charged = charges.at[0].set(2.0)  # net charge +1
    terms = eqx.filter_jit(lambda ewald: ewald.energy_terms(space, q, md.all_pairs(20)))
    e = [terms(md.Ewald(charged, alpha=a, cutoff=2.4, kmax=k)) for a, k in ((2.2, 18), (3.0, 24))]
    totals = [float(sum(x)) for x in e]
    assert abs(totals[1] - totals[0]) < 1e-10 * abs(totals[0])
    volume = float(space.volume())
    assert np.isclose(e[0][4], -np.pi / (2 * volume * 2.2**2), rtol=1e-12)
    assert abs(float(sum(e[1][:4]) - sum(e[0][:4]))) > 1e-3  # without it, α would matter


def test_forces_and_parameter_gradients_match_finite_differences(melt):
    space, q, charges = melt
    q, charges = q[:8], charges[:8]
    system = md.MDSystem(space, md.Ewald(charges, 2.0, 2.4, 8), masses=jnp.ones(8))
    energy = jax.jit(lambda x: system.potential_energy(x))
    assert np.allclose(_force(system, q), -central_fd(energy, q, eps=1e-6), rtol=1e-7, atol=1e-8)

    @jax.jit
    def of_params(theta):
        ewald = md.Ewald(theta[:8], theta[8], 2.4, 8, coulomb=theta[9])
        return ewald.energy(space, q)

    theta = jnp.concatenate([charges * 0.7, jnp.array([2.0, 1.3])])
    assert np.allclose(
        jax.jit(jax.grad(of_params))(theta), central_fd(of_params, theta), rtol=1e-7, atol=1e-9
    )


def test_excluded_pairs_lose_their_whole_coulomb_interaction(melt):
    """With exclusions, U = U(no exclusions) − Σ_excluded qᵢqⱼ/r (nearest image)."""
    space, q, charges = melt
    excl = jnp.array([[0, 1], [2, 3], [2, 5], [7, 19]])
    ewald = md.Ewald(charges, alpha=2.2, cutoff=2.4, kmax=12)
    plain = md.MDSystem(space, ewald, masses=jnp.ones(20))
    excluded = md.MDSystem(space, ewald, masses=jnp.ones(20), exclusions=excl)
    a, b = excl.T
    r = jnp.linalg.norm(jax.vmap(space.displacement)(q[a], q[b]), axis=1)
    bare = float(jnp.sum(charges[a] * charges[b] / r))
    assert np.isclose(_potential(excluded, q), _potential(plain, q) - bare, rtol=1e-12)
    f = _force(excluded, q)
    assert np.all(np.isfinite(f)) and np.allclose(jnp.sum(f, axis=0), 0.0, atol=1e-10)


def test_equivalent_lattice_bases_agree(melt):
    """Another basis of the same lattice (a unimodular shear of the cell) gives the same
    energy and forces; `for_accuracy` sizes each basis's k-set for the same tolerance."""
    space, q, charges = melt
    shear = jnp.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    sheared = md.TriclinicBox(shear @ space.cell)
    results = []
    for box in (space, sheared):
        ewald = md.Ewald.for_accuracy(charges, box, cutoff=1.4, accuracy=1e-10)
        results.append(_energy_and_grad(ewald, box, q))
    (e0, f0), (e1, f1) = results
    assert np.isclose(e1, e0, rtol=1e-9) and np.allclose(f1, f0, rtol=1e-8, atol=1e-8)
    # Rock salt in a cubic box and in a sheared basis of the same lattice.
    qs, cs, L = rock_salt(2)
    ew = md.Ewald(cs, alpha=3.6, cutoff=1.6, kmax=(24, 36, 24))
    e_cube = _energy(ew, md.TriclinicBox(jnp.eye(3) * L), qs)
    e_shear = _energy(ew, md.TriclinicBox(shear * L), qs)
    assert np.isclose(e_shear, e_cube, rtol=1e-10)
    assert abs(float(-e_shear) / 32 - MADELUNG_NACL) < 1e-6


def test_neighbour_list_gives_the_all_pairs_energy(melt):
    space, q, charges = melt
    system = md.MDSystem(space, md.Ewald(charges, 2.2, 2.4, 10), masses=jnp.ones(20))
    builder = md.NeighborListBuilder.create(space, q, cutoff=2.4, skin=0.04)
    listed = eqx.tree_at(
        lambda s: s.neighbors,
        system,
        eqx.filter_jit(builder.build)(space, q),
        is_leaf=lambda x: x is None,
    )
    assert np.isclose(_potential(listed, q), _potential(system, q), rtol=1e-13)
    assert system.potential.range() == 2.4


def test_virial_is_the_strain_derivative(melt):
    """W_ab = −∂U/∂ε_ab for every (a, b), shear included, in a triclinic cell."""
    space, q, charges = melt
    bonds = jnp.array([[0, 1], [2, 3]])
    pot = md.Ewald(charges, 2.2, 2.4, 10) + md.HarmonicBond(bonds, 50.0, 1.2)
    system = md.MDSystem(space, pot, masses=jnp.ones(20), exclusions=bonds)
    W = eqx.filter_jit(md.virial_tensor)(system, q)
    assert np.allclose(W, W.T, rtol=1e-9, atol=1e-10)

    @jax.jit
    def strained(eps):
        f = jnp.eye(3) + eps
        s = eqx.tree_at(lambda s: s.space, system, md.TriclinicBox(space.cell @ f.T))
        return s.potential_energy(q @ f.T)

    fd = central_fd(strained, jnp.zeros((3, 3)), eps=1e-6)
    assert np.allclose(W, -fd, rtol=1e-7, atol=1e-7)


def test_open_space_and_bad_shapes_raise():
    with pytest.raises(TypeError, match="Ewald summation needs a periodic space"):
        md.MDSystem(md.FreeSpace(), md.Ewald(jnp.ones(2), 1.0, 1.0, 2), masses=jnp.ones(2))
    with pytest.raises(TypeError, match="Ewald summation needs a periodic space"):
        md.Ewald(jnp.ones(2), 1.0, 1.0, 2).energy(md.FreeSpace(), jnp.zeros((2, 3)))
    box = md.PeriodicBox(jnp.full(3, 4.0))
    with pytest.raises(ValueError, match=r"charges must have shape \(3,\)"):
        md.MDSystem(box, md.Ewald(jnp.ones(2), 1.0, 1.0, 2), masses=jnp.ones(3))
    with pytest.raises(ValueError, match="at most half the box's smallest width"):
        md.MDSystem(box, md.Ewald(jnp.ones(2), 1.0, 2.5, 2), masses=jnp.ones(2))


def test_for_accuracy_reaches_the_requested_accuracy(melt):
    space, q, charges = melt
    ref = float(_energy(md.Ewald(charges, alpha=3.0, cutoff=2.4, kmax=24), space, q))
    for tol in (1e-4, 1e-8):
        e = float(
            _energy(md.Ewald.for_accuracy(charges, space, cutoff=2.4, accuracy=tol), space, q)
        )
        assert abs(e - ref) < 10 * tol * abs(ref)


def test_gradients_finite_at_masked_coincident_pairs_and_at_the_cutoff():
    """Padding pairs (i = j = n), a masked coincident pair, a pair exactly at r_c and an
    excluded coincident pair: finite energy, finite gradients, nothing hidden."""
    box = md.PeriodicBox(jnp.full(3, 6.0))
    q = jnp.array([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [3.5, 1.0, 1.0], [1.0, 3.0, 2.0]])
    charges = jnp.array([1.0, -1.0, 0.5, -0.5])
    ewald = md.Ewald(charges, alpha=1.5, cutoff=2.5, kmax=6)
    pairs = (
        jnp.array([0, 0, 1, 4]),
        jnp.array([1, 2, 3, 4]),
        jnp.array([False, True, True, False]),  # (0, 1) coincident but masked; (0, 2) at r_c
    )
    excl = md.Exclusions(jnp.array([[0, 1]]))  # the coincident pair, excluded: erf(αr)/r → 2α/√π
    e, g = jax.jit(jax.value_and_grad(lambda x: ewald.energy(box, x, pairs, None, excl)))(q)
    assert np.isfinite(e) and np.all(np.isfinite(g))
    e_terms = jax.jit(lambda x: ewald.energy_terms(box, x, pairs, excl))(q)
    assert np.isclose(e_terms[3], 1.0 * 2 * 1.5 / np.sqrt(np.pi), rtol=1e-14)  # −q0 q1 · 2α/√π

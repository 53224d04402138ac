"""Energy minimisation: Lennard-Jones cluster global minima (Cambridge Cluster Database),
fcc crystals, implicit differentiation against scaling laws and finite differences of
re-minimised structures, jit/vmap, result codes."""

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import optimistix as optx
import pytest

import sciad
import sciad.md as md

# Cambridge Cluster Database, Lennard-Jones global minima (ε = σ = 1), quoted to 6 decimals:
# D. J. Wales and J. P. K. Doye, J. Phys. Chem. A 101, 5111 (1997).
E_LJ7 = -16.505384
E_LJ13 = -44.326801
R_MIN = 2 ** (1 / 6)  # the LJ pair minimum


def bipyramid() -> np.ndarray:
    """A pentagonal bipyramid of edge 2^{1/6} (the LJ7 global-minimum motif)."""
    radius = R_MIN / (2 * np.sin(np.pi / 5))
    height = np.sqrt(R_MIN**2 - radius**2)
    ang = 2 * np.pi * np.arange(5) / 5
    ring = np.stack([radius * np.cos(ang), radius * np.sin(ang), np.zeros(5)], axis=1)
    return np.concatenate([ring, [[0.0, 0.0, height], [0.0, 0.0, -height]]])


def icosahedron() -> np.ndarray:
    """A centred icosahedron, 13 atoms, centre-to-vertex distance 1.09."""
    phi = (1 + 5**0.5) / 2
    v = []
    for s1 in (-1.0, 1.0):
        for s2 in (-1.0, 1.0):
            v += [[0.0, s1, s2 * phi], [s1, s2 * phi, 0.0], [s2 * phi, 0.0, s1]]
    v = np.array(v) / np.linalg.norm(v[0]) * 1.09
    return np.concatenate([np.zeros((1, 3)), v])


def perturbed(q: np.ndarray, scale: float = 0.05, seed: int = 0) -> jax.Array:
    rng = np.random.default_rng(seed)
    return jnp.asarray(q + scale * rng.standard_normal(q.shape))


def lj_cluster(n: int, sigma=1.0, epsilon=1.0) -> md.MDSystem:
    return md.MDSystem(md.FreeSpace(), md.LennardJones(sigma, epsilon), masses=jnp.ones(n))


def distances(q: jax.Array) -> jax.Array:
    """All pair distances, shape (n(n−1)/2,): invariant under rigid motions."""
    i, j = np.triu_indices(q.shape[0], k=1)
    return jnp.sqrt(jnp.sum((q[i] - q[j]) ** 2, axis=-1))


# Jitted evaluations (one program per system shape, not many op-by-op compilations).
_gradient = eqx.filter_jit(lambda system, q: jax.grad(system.potential_energy)(q))
_potential = eqx.filter_jit(lambda system, q: system.potential_energy(q))

# One solver object per use keeps the compiled programs cached across tests.
FIRE_TIGHT = md.FIRE(atol=1e-10)
BFGS_TIGHT = optx.BFGS(rtol=1e-10, atol=1e-10)


# --- global minima ---------------------------------------------------------------------


@pytest.mark.parametrize("solver", [FIRE_TIGHT, BFGS_TIGHT], ids=["FIRE", "BFGS"])
@pytest.mark.parametrize(
    "start, reference", [(bipyramid, E_LJ7), (icosahedron, E_LJ13)], ids=["LJ7", "LJ13"]
)
def test_lj_cluster_global_minimum(start, reference, solver):
    q0 = perturbed(start())
    res = md.minimize(lj_cluster(len(q0)), q0, solver=solver)
    assert res.result == sciad.RESULTS.successful
    # The database quotes 6 decimals: agreement to its rounding.
    assert abs(float(res.energy) - reference) < 1e-6, float(res.energy)
    grad = _gradient(lj_cluster(len(q0)), res.positions)
    assert float(res.max_force) == pytest.approx(
        float(jnp.max(jnp.linalg.norm(grad, axis=1))), rel=1e-12
    )
    if isinstance(solver, md.FIRE):
        # FIRE stops on the largest force component.
        assert float(jnp.max(jnp.abs(grad))) <= 1e-10
        assert 0 < int(res.num_steps) < 1000
    else:
        assert float(res.max_force) < 1e-5


def _lj_forces_numpy(x: np.ndarray) -> np.ndarray:
    """Lennard-Jones forces (ε = σ = 1), all pairs, in plain NumPy."""
    d = x[:, None, :] - x[None, :, :]
    r2 = np.sum(d**2, axis=-1)
    np.fill_diagonal(r2, 1.0)
    inv6 = r2**-3
    coef = 24 * (2 * inv6**2 - inv6) / r2  # −u'(r)/r
    np.fill_diagonal(coef, 0.0)
    return np.sum(coef[:, :, None] * d, axis=1)


def _fire_numpy(x, n_steps, p: md.FIRE):
    """FIRE 2.0 with semi-implicit Euler, transcribed from LAMMPS's `min_style fire`
    (Guénolé et al. 2020), one scalar step at a time."""
    x = np.array(x, dtype=np.float64)
    v = np.zeros_like(x)
    dt, alpha, n_pos, last_dt = p.dt_start, p.alpha_start, 0, 0.0
    events = {"grow": 0, "uphill": 0}
    for i in range(1, n_steps + 1):
        f = _lj_forces_numpy(x)
        power = np.sum(f * v)
        scale1 = scale2 = 0.0
        if power > 0:
            scale1 = 1 - alpha
            scale2 = alpha * np.sqrt(np.sum(v * v) / np.sum(f * f))
            n_pos += 1
            if n_pos > p.n_min:
                dt, alpha = min(dt * p.f_inc, p.dt_max), alpha * p.f_alpha
                events["grow"] += 1
        else:
            n_pos = 0
            if not (p.initial_delay and i <= p.n_min):
                alpha = p.alpha_start
                if dt * p.f_dec >= p.dt_min:
                    dt *= p.f_dec
            if i > 1:
                events["uphill"] += 1
            x = x - 0.5 * last_dt * v
            v = np.zeros_like(v)
        v = v + dt * f
        if power > 0:
            v = scale1 * v + scale2 * f
        x = x + dt * v
        last_dt = dt
    return x, events


def test_fire_matches_scalar_transcription():
    """60 FIRE steps on LJ7 agree with a plain-NumPy transcription of the algorithm, with
    time-step growth and uphill restarts both exercised."""
    q0 = perturbed(bipyramid(), 0.1, seed=4)
    fire = md.FIRE(atol=0.0, n_min=5, dt_start=0.05, dt_max=0.5, dt_min=1e-3)
    res = md.minimize(lj_cluster(7), q0, solver=fire, max_steps=60, throw=False)
    expected, events = _fire_numpy(np.asarray(q0), 60, fire)
    assert events["grow"] > 5 and events["uphill"] > 0, events
    assert int(res.num_steps) == 60
    np.testing.assert_allclose(res.positions, expected, rtol=0, atol=1e-12)


def test_fire_inside_optimistix():
    """FIRE is an optimistix minimiser: a quartic bowl through `optx.minimise`."""
    fn = lambda y, args: jnp.sum((y - args) ** 2) + jnp.sum((y - args) ** 4)
    target = jnp.array([1.0, -2.0, 0.5])
    sol = optx.minimise(fn, md.FIRE(atol=1e-12), jnp.zeros(3), args=target, max_steps=5000)
    np.testing.assert_allclose(sol.value, target, atol=1e-12)
    assert int(sol.stats["num_steps"]) < 5000


# --- crystals in a periodic box ----------------------------------------------------------

CELLS, A_FCC, CUTOFF = 3, 1.5874, 2.2  # 108 atoms at number density ≈ 1.0
FRAC = md.lattice("fcc", CELLS, 1.0)[0]  # fractional-like positions for a = 1


def fcc_system(length) -> md.MDSystem:
    pot = md.Truncated(md.LennardJones(1.0, 1.0), cutoff=CUTOFF, shift="force")
    return md.MDSystem(md.PeriodicBox(jnp.full(3, length)), pot, masses=jnp.ones(FRAC.shape[0]))


def test_fcc_lattice_stays_and_perturbed_returns():
    system = fcc_system(CELLS * A_FCC)
    lattice_q = FRAC * A_FCC
    e_lattice = float(_potential(system, lattice_q))
    # A perfect lattice has zero force by symmetry: the minimiser takes no step.
    still = md.minimize(system, lattice_q, solver=FIRE_TIGHT)
    assert int(still.num_steps) == 0
    assert float(still.max_force) < 1e-12
    np.testing.assert_array_equal(still.positions, lattice_q)
    # A perturbed crystal relaxes back to the lattice, up to a rigid translation.
    q0 = perturbed(np.asarray(lattice_q), 0.04, seed=1)
    back = md.minimize(system, q0, solver=FIRE_TIGHT)
    assert back.result == sciad.RESULTS.successful
    assert abs(float(back.energy) - e_lattice) < 1e-10 * abs(e_lattice)
    shift = back.positions - lattice_q
    np.testing.assert_allclose(shift - jnp.mean(shift, axis=0, keepdims=True), 0.0, atol=1e-8)
    # The same minimisation with a neighbour list, rebuilt at every energy evaluation.
    builder = md.NeighborListBuilder.create(system.space, lattice_q, cutoff=CUTOFF, skin=0.1)
    listed = md.minimize(system, q0, solver=FIRE_TIGHT, neighbors=builder)
    assert listed.result == sciad.RESULTS.successful
    assert abs(float(listed.energy) - e_lattice) < 1e-10 * abs(e_lattice)
    np.testing.assert_allclose(listed.positions, back.positions, atol=1e-7)


def test_fcc_box_derivative_by_implicit_differentiation():
    """q*(L) = lattice(L) + a translation: dq*/dL = FRAC/cells up to the translation gauge,
    which the pseudo-inverse removes (zero mean); dE*/dL = d/dL of the lattice energy."""
    L0 = CELLS * A_FCC
    q0 = perturbed(np.asarray(FRAC * A_FCC), 0.02, seed=2)

    def relaxed(length):
        res = md.minimize(fcc_system(length), q0, solver=FIRE_TIGHT)
        return res.positions, res.energy

    (dq, de) = jax.jacfwd(relaxed)(L0)
    expected = (FRAC - jnp.mean(FRAC, axis=0, keepdims=True)) / CELLS
    np.testing.assert_allclose(dq, expected, atol=1e-9)
    de_lattice = jax.jit(jax.grad(lambda L: fcc_system(L).potential_energy(FRAC * L / CELLS)))(L0)
    assert float(de) == pytest.approx(float(de_lattice), rel=1e-9)


# --- implicit differentiation of cluster minima ----------------------------------------


def test_lj_minimum_scales_with_sigma_and_epsilon():
    """q*(σ) = σ q*(1) up to rigid motion and E*(σ, ε) = ε E*(1, 1): d d_ij/dσ = d_ij(1),
    dE*/dσ = 0, dE*/dε = E*; and dd_ij/dσ against central differences of re-minimised
    structures."""
    q0 = perturbed(icosahedron())

    @jax.jit
    def relaxed(params):
        sigma, epsilon = params
        res = md.minimize(lj_cluster(13, sigma, epsilon), sigma * q0, solver=FIRE_TIGHT)
        return distances(res.positions), res.energy

    p0 = jnp.array([1.0, 1.0])
    (d1, e1), (dd, de) = jax.jvp(relaxed, (p0,), (jnp.array([1.0, 0.0]),))
    (_, _), (dd_eps, de_eps) = jax.jvp(relaxed, (p0,), (jnp.array([0.0, 1.0]),))
    assert abs(float(e1) - E_LJ13) < 1e-6
    np.testing.assert_allclose(dd, d1, atol=1e-9)  # d d_ij / dσ = d_ij(σ=1)
    np.testing.assert_allclose(dd_eps, 0.0, atol=1e-9)  # shape independent of ε
    assert abs(float(de)) < 1e-9
    assert float(de_eps) == pytest.approx(float(e1), rel=1e-12)
    h = 1e-4
    d_plus, _ = relaxed(p0 + jnp.array([h, 0.0]))
    d_minus, _ = relaxed(p0 - jnp.array([h, 0.0]))
    np.testing.assert_allclose(dd, (d_plus - d_minus) / (2 * h), atol=1e-8)
    # Reverse mode agrees with forward mode.
    g = jax.grad(lambda p: jnp.sum(relaxed(p)[0] ** 2))(p0)
    np.testing.assert_allclose(g, [2 * float(jnp.sum(d1 * dd)), 0.0], rtol=1e-9, atol=1e-9)


def test_conjugate_gradient_adjoint_matches_svd():
    """The singular Hessian (6 rigid-body zero modes) solved by CG from zero gives the
    same minimum-norm tangent as the SVD pseudo-inverse."""
    q0 = perturbed(bipyramid())

    def tangent(adjoint):
        f = lambda s: md.minimize(lj_cluster(7, s), s * q0, solver=FIRE_TIGHT, adjoint=adjoint)
        return jax.jvp(lambda s: f(s).positions, (1.0,), (1.0,))

    q, svd = tangent(None)  # the default: SVD pseudo-inverse
    _, cg = tangent(optx.ImplicitAdjoint(lx.CG(rtol=1e-12, atol=1e-12, max_steps=500)))
    np.testing.assert_allclose(cg, svd, atol=1e-8)
    # The minimum-norm tangent has no rigid translation and no rigid rotation.
    centred = q - jnp.mean(q, axis=0, keepdims=True)
    np.testing.assert_allclose(jnp.mean(svd, axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(jnp.sum(jnp.cross(centred, svd), axis=0), 0.0, atol=1e-10)
    # Both are the scaling law: q*(σ) = σ q*(1) up to a rigid motion.
    np.testing.assert_allclose(svd, centred, atol=1e-9)


def morse_cluster(alpha, r0, depth) -> md.MDSystem:
    return md.MDSystem(md.FreeSpace(), md.Morse(depth, alpha, r0), masses=jnp.ones(13))


def test_morse_loss_gradient_matches_finite_differences():
    """Gradient of the radius of gyration of a relaxed Morse cluster with respect to
    (α, r₀, D), against central differences of re-minimised structures."""
    q0 = perturbed(icosahedron(), 0.03, seed=3)

    @jax.jit
    def loss(params):
        alpha, r0, depth = params
        res = md.minimize(morse_cluster(alpha, r0, depth), q0, solver=FIRE_TIGHT)
        q = res.positions
        return jnp.mean(jnp.sum((q - jnp.mean(q, axis=0, keepdims=True)) ** 2, axis=1))

    p0 = jnp.array([6.0, 1.0, 1.0])
    g = jax.grad(loss)(p0)
    h = 1e-5
    fd = np.array(
        [(float(loss(p0 + h * e)) - float(loss(p0 - h * e))) / (2 * h) for e in np.eye(3)]
    )
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    assert abs(float(g[2])) < 1e-9  # the structure does not depend on the well depth


# --- transformations and result codes --------------------------------------------------


def test_jit_and_vmap_over_sigma():
    q0 = perturbed(bipyramid())

    def energy_and_size(sigma):
        res = md.minimize(lj_cluster(7, sigma), sigma * q0, solver=FIRE_TIGHT)
        return res.energy, jnp.max(distances(res.positions)), res.result

    sigmas = jnp.array([0.9, 1.0, 1.2])
    energies, sizes, results = jax.jit(jax.vmap(energy_and_size))(sigmas)
    np.testing.assert_allclose(energies, E_LJ7, atol=1e-6)
    np.testing.assert_allclose(sizes / sigmas, sizes[1], rtol=1e-9)
    assert bool(jnp.all(results == sciad.RESULTS.successful))
    eager = md.minimize(lj_cluster(7, 1.2), 1.2 * q0, solver=FIRE_TIGHT)
    assert float(eager.energy) == pytest.approx(float(energies[2]), abs=1e-12)


def test_result_codes_max_steps_and_nonfinite():
    q0 = perturbed(icosahedron())
    system = lj_cluster(13)
    res = md.minimize(system, q0, max_steps=3, throw=False)
    assert res.result == sciad.RESULTS.max_steps_reached
    assert int(res.num_steps) == 3
    with pytest.raises(sciad.RunError, match=r"^sciad.md.minimize: the run needed more steps"):
        md.minimize(system, q0, max_steps=3)
    clash = q0.at[1].set(q0[0])  # two atoms on top of each other: infinite energy
    with pytest.raises(ValueError, match="q0: particles 0 and 1 are at the same point"):
        md.minimize(system, clash, max_steps=3, throw=False)  # concrete: refused up front
    # Traced positions can only be seen at run time: a result code, or an error.
    bad = jax.jit(lambda q: md.minimize(system, q, max_steps=3, throw=False))(clash)
    assert bad.result == sciad.RESULTS.nonfinite_state
    assert int(bad.num_steps) == 0  # FIRE stops at the first non-finite energy
    # Inside a JIT equinox raises it after its stack report; the message names the call.
    with pytest.raises(
        eqx.EquinoxRuntimeError, match=r"\nequinox.EquinoxRuntimeError: sciad.md.minimize: the st"
    ):
        eqx.filter_jit(lambda q: md.minimize(system, q, max_steps=3).energy)(clash)

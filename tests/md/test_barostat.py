"""Stochastic cell rescaling (NPT): the exact volume distribution of an ideal gas, the target
pressure of an LJ fluid within statistical error (Langevin and Nosé–Hoover thermostats),
exact resumption, vmap over seeds, gradients for fixed keys, the current box in saved
observables."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.md as md

from ..helpers import central_fd, tree_equal_bits, xfail_bitwise_on_gpu


def _block_mean_err(x, blocks=20):
    """Mean and its standard error from block averages (handles time correlation)."""
    x = np.asarray(x)
    b = x[: len(x) // blocks * blocks].reshape((blocks, -1) + x.shape[1:]).mean(axis=1)
    return b.mean(axis=0), b.std(axis=0, ddof=1) / np.sqrt(blocks)


class Zero(md.AbstractPairPotential):
    """No interaction: an ideal gas."""

    def pair_energy(self, r):
        return 0.0 * r

    def range(self):
        return 0.0


def _volume(t, y, m):
    return m.space.volume()


def ideal_gas_volumes(n, kT, p0, dt, n_steps, key=0):
    q = jax.random.uniform(jax.random.key(key), (n, 3)) * 2.5
    system = md.MDSystem(md.PeriodicBox(jnp.full(3, 2.5)), Zero(), masses=jnp.ones(n))
    y0 = (q, md.maxwell_boltzmann(jax.random.key(key + 1), system.masses, kT))
    thermostat = md.LangevinBAOAB(friction=5.0, kT=kT, key=jax.random.key(key + 2))
    npt = md.CellRescaling(
        thermostat, pressure=p0, compressibility=1.0, tau_p=0.5, key=jax.random.key(key + 3)
    )
    saveat = sciad.SaveAt(steps=10, fn=_volume)
    return sciad.simulate(system, y0, dt=dt, n_steps=n_steps, integrator=npt, saveat=saveat).ys


@pytest.mark.slow
def test_ideal_gas_volume_is_gamma_distributed():
    """n = 16 non-interacting particles at kT = 1, P₀ = 1: the isothermal–isobaric density
    exp(−β(H + P₀V)) dV dq dp gives ρ(V) ∝ V¹⁶ e^{−V}: ⟨V⟩ = 17, Var V = 17. Dropping the
    kT/V term would give ⟨V⟩ = 16, about 10 standard errors away. Measured:
    ⟨V⟩ = 17.03 ± 0.11, Var V = 17.5 ± 0.6."""
    n, kT, p0 = 16, 1.0, 1.0
    v = np.asarray(ideal_gas_volumes(n, kT, p0, dt=0.02, n_steps=100_000))[500:]
    mean, err = _block_mean_err(v)
    exact = (n + 1) * kT / p0
    assert abs(mean - exact) < 4 * err, (mean, err)
    assert err < 0.01 * exact
    var, var_err = _block_mean_err((v - exact) ** 2)
    assert abs(var - (n + 1) * (kT / p0) ** 2) < 4 * var_err, (var, var_err)


def lj_fluid():
    """64 LJ atoms (shifted-force cut-off 2.0) from a simple-cubic lattice at ρ = 0.7."""
    q, box = md.lattice_for_density("sc", 64, 0.7)
    pot = md.Truncated(md.LennardJones(1.0, 1.0), cutoff=2.0, shift="force")
    system = md.MDSystem(box, pot, masses=jnp.ones(64))
    return system, (q, md.maxwell_boltzmann(jax.random.key(1), system.masses, 1.5))


def _observe(t, y, m):
    return jnp.stack([md.pressure(m, y), m.space.volume(), m.space.min_width()])


@pytest.mark.slow
@pytest.mark.parametrize("thermostat", ["langevin", "nose-hoover"])
def test_lj_fluid_mean_pressure_equals_target(thermostat):
    """kT = 1.5, P₀ = 3 (ρ ≈ 0.69): the mean instantaneous virial pressure equals P₀ within
    block-averaged error (with Nosé–Hoover the exact identity is ⟨P⟩ = P₀ − ⟨kT/V⟩, here
    0.016, below the error), and the box stays wider than twice the cut-off. Measured:
    3.034 ± 0.059 (Langevin), 3.023 ± 0.058 (Nosé–Hoover chain)."""
    system, y0 = lj_fluid()
    kT, p0 = 1.5, 3.0
    if thermostat == "langevin":
        inner = md.LangevinBAOAB(friction=2.0, kT=kT, key=jax.random.key(2))
    else:
        inner = md.NoseHooverChain(kT=kT, tau=0.5)
    npt = md.CellRescaling(
        inner, pressure=p0, compressibility=0.1, tau_p=0.5, key=jax.random.key(3)
    )
    saveat = sciad.SaveAt(steps=10, fn=_observe)
    traj = sciad.simulate(system, y0, dt=0.005, n_steps=10_000, integrator=npt, saveat=saveat)
    obs = np.asarray(traj.ys)[200:]  # after 2,000 steps
    mean, err = _block_mean_err(obs[:, 0])
    assert abs(mean - p0) < 4 * err, (mean, err)
    assert err < 0.1
    assert obs[:, 2].min() > 2 * 2.0


def small_npt(key=0, n=27):
    q, box = md.lattice_for_density("sc", n, 0.5)
    pot = md.Truncated(md.LennardJones(1.0, 1.0), cutoff=1.5, shift="force")
    system = md.MDSystem(box, pot, masses=jnp.ones(n))
    y0 = (q, md.maxwell_boltzmann(jax.random.key(key), system.masses, 1.0))
    return system, y0


def npt_of(key, kT=1.0):
    k1, k2 = jax.random.split(key)
    return md.CellRescaling(
        md.LangevinBAOAB(friction=1.0, kT=kT, key=k1),
        pressure=0.5,
        compressibility=0.5,
        tau_p=0.2,
        key=k2,
    )


def run(system, y0, npt, n, **kw):
    return sciad.simulate(system, y0, dt=0.005, n_steps=n, integrator=npt, **kw)


def _key_bits(state):
    return jax.tree.map(
        lambda x: jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x,
        state,
    )


def _resumable(system, y0, npt, n):
    """A run from an explicit initial state, saving the volume: the 100-step program is
    shared by the resume and vmap tests (kept on one worker)."""
    saveat = sciad.SaveAt(t1=True, fn=_volume)
    return run(system, y0, npt, n, integrator_state=npt.init(system, 0.0, y0), saveat=saveat)


@xfail_bitwise_on_gpu
@pytest.mark.xdist_group("md-barostat-100")
def test_resume_bit_for_bit_and_saved_box_is_current():
    system, y0 = small_npt()
    npt = npt_of(jax.random.key(7))
    kw = dict(saveat=sciad.SaveAt(t1=True, fn=_volume))
    whole = _resumable(system, y0, npt, 200)
    half = _resumable(system, y0, npt, 100)
    rest = run(system, half.y1, npt, 100, t0=half.t1, integrator_state=half.integrator_state, **kw)
    assert tree_equal_bits(whole.y1, rest.y1)
    assert tree_equal_bits(_key_bits(whole.integrator_state), _key_bits(rest.integrator_state))
    box = whole.integrator_state.space
    assert float(whole.ys[-1]) == float(box.volume())  # SaveAt.fn saw the current box
    assert float(box.volume()) != float(system.space.volume())  # and the box moved
    assert float(npt.model_at(system, whole.integrator_state).space.volume()) == float(box.volume())


@pytest.mark.xdist_group("md-barostat-100")
def test_vmap_over_seeds():
    system, y0 = small_npt()

    def final_volume(key):
        npt = npt_of(key)
        traj = _resumable(system, y0, npt, 100)
        return npt.model_at(system, traj.integrator_state).space.volume()

    keys = jax.random.split(jax.random.key(0), 3)
    batched = jax.vmap(final_volume)(keys)
    assert np.allclose(batched[1], final_volume(keys[1]), rtol=1e-12)
    assert len(set(np.asarray(batched).tolist())) == 3


@pytest.mark.slow
def test_gradient_for_fixed_keys_matches_fd():
    """d/d(ε, σ, P₀) of the final volume plus potential energy after 64 NPT steps of a
    soft-sphere fluid (α = 5), jvp = grad·v, and the Hessian against FD of the gradient.

    The potential is smooth (C⁴) on purpose: with a cut-off, u'' (shifted force) or u
    (plain) jumps at r_c, so the discrete trajectory's gradient jumps wherever a pair
    sits at r_c at some step; an LJ run showed FD Hessian entries off by 7× (252.8 for
    the exact 35.0) though first-order FD agreed to 1e-7.
    """
    q, box = md.lattice_for_density("sc", 27, 0.5)
    system = md.MDSystem(box, md.SoftSphere(1.5, 20.0, alpha=5.0), masses=jnp.ones(27))
    y0 = (q, md.maxwell_boltzmann(jax.random.key(0), system.masses, 1.0))

    @jax.jit
    def f(x):
        s = eqx.tree_at(lambda m: (m.potential.epsilon, m.potential.sigma), system, (x[0], x[1]))
        npt = eqx.tree_at(lambda b: b.pressure, npt_of(jax.random.key(3)), x[2])
        traj = run(s, y0, npt, 64)  # whole check blocks of 32: one scan body to compile
        final = npt.model_at(s, traj.integrator_state)
        return final.space.volume() + final.potential_energy(traj.y1[0])

    x = jnp.array([20.0, 1.5, 0.5])
    grad = jax.jit(jax.grad(f))
    g = grad(x)
    assert np.allclose(g, central_fd(f, x, eps=1e-6), rtol=1e-6, atol=1e-8)
    v = jnp.array([0.2, -0.1, 0.4])
    assert np.allclose(jax.jvp(f, (x,), (v,))[1], g @ v, rtol=1e-9)
    hess = jax.jit(jax.hessian(f))(x)
    fd = np.stack([central_fd(lambda y, i=i: grad(y)[i], x, eps=1e-5) for i in range(3)])
    assert np.allclose(hess, fd, rtol=1e-6, atol=1e-8), (hess, fd)


def test_triclinic_box_scales_isotropically_like_the_orthorhombic_one():
    """A TriclinicBox with a diagonal cell runs the same trajectory as the PeriodicBox, and
    its cell stays proportional to the initial one."""
    system, y0 = small_npt()
    tri = eqx.tree_at(lambda m: m.space, system, md.TriclinicBox(jnp.diag(system.space.lengths)))
    npt = npt_of(jax.random.key(4))
    a = run(system, y0, npt, 50)
    b = run(tri, y0, npt, 50)
    assert np.allclose(a.y1[0], b.y1[0], atol=1e-9)
    cell = b.integrator_state.space.cell
    ratio = cell / tri.space.cell
    assert np.allclose(ratio[np.eye(3, dtype=bool)], ratio[0, 0], rtol=1e-12)
    assert np.allclose(a.integrator_state.space.lengths, jnp.diag(cell), rtol=1e-9)


def test_pressure_correction_acts_like_a_shifted_target():
    """A constant correction c is the same as the target P₀ − c."""
    system, y0 = small_npt()
    npt = npt_of(jax.random.key(5))
    c = 0.3
    shifted = eqx.tree_at(lambda b: b.pressure, npt, npt.pressure - c)
    corrected = md.CellRescaling(
        npt.thermostat,
        pressure=npt.pressure,
        compressibility=npt.compressibility,
        tau_p=npt.tau_p,
        key=npt.key,
        pressure_correction=lambda s: jnp.asarray(c),
    )
    a, b = run(system, y0, shifted, 50), run(system, y0, corrected, 50)
    assert np.allclose(a.y1[0], b.y1[0], rtol=1e-10, atol=1e-12)


def test_rejects_free_space_and_a_list_inside():
    system, y0 = small_npt()
    npt = npt_of(jax.random.key(0))
    free = eqx.tree_at(lambda m: m.space, system, md.FreeSpace())
    with pytest.raises(TypeError, match="needs a periodic space"):
        run(free, y0, npt, 1)
    builder = md.NeighborListBuilder.create(system.space, y0[0], cutoff=1.5, skin=0.3)
    inner = md.NeighborListIntegrator(md.LangevinBAOAB(1.0, 1.0, jax.random.key(1)), builder)
    with pytest.raises(TypeError, match="goes inside the neighbour list"):
        md.CellRescaling(inner, pressure=0.5, compressibility=0.5, tau_p=0.2, key=jax.random.key(2))


def test_inside_a_neighbor_list_equals_all_pairs():
    """NeighborListIntegrator(CellRescaling(...)) builds lists in the current box: the
    run equals the all-pairs run, box included, and keeps the thermostat's key."""
    system, y0 = lj_fluid()
    npt = md.CellRescaling(
        md.LangevinBAOAB(friction=2.0, kT=1.5, key=jax.random.key(2)),
        pressure=3.0,
        compressibility=0.1,
        tau_p=0.5,
        key=jax.random.key(3),
    )
    builder = md.NeighborListBuilder.create(system.space, y0[0], cutoff=2.0, skin=0.1)
    listed = md.NeighborListIntegrator(npt, builder)
    saveat = sciad.SaveAt(steps=50, fn=_observe)
    ref = run(system, y0, npt, 400, saveat=saveat)
    got = run(system, y0, listed, 400, saveat=saveat)
    assert int(listed.rebuilds(got.integrator_state)) > 0
    assert np.allclose(got.ys, ref.ys, rtol=1e-9)
    assert np.allclose(got.y1[0], ref.y1[0], atol=1e-9)
    assert not np.allclose(ref.ys[:, 1], ref.ys[0, 1])  # the volume did move


def test_float32_dtypes_follow_the_inputs():
    """A float32 system stays float32 through both thermostats and the volume moves."""
    system, (q, _) = small_npt()
    f32 = jnp.float32
    system = md.MDSystem(
        md.PeriodicBox(system.space.lengths.astype(f32)), system.potential, masses=jnp.ones(27, f32)
    )
    y0 = (q.astype(f32), md.maxwell_boltzmann(jax.random.key(0), system.masses, 1.0))
    for inner in (
        md.NoseHooverChain(kT=1.0, tau=0.2),
        md.LangevinBAOAB(1.0, 1.0, jax.random.key(1)),
    ):
        npt = md.CellRescaling(
            inner, pressure=0.5, compressibility=0.5, tau_p=0.2, key=jax.random.key(2)
        )
        traj = sciad.simulate(system, y0, dt=0.005, n_steps=20, integrator=npt)
        box = traj.integrator_state.space
        assert traj.y1[0].dtype == traj.y1[1].dtype == box.lengths.dtype == f32
        assert bool(jnp.all(jnp.isfinite(traj.y1[0])))


def _compressed_gas():
    """27 non-interacting particles with a cut-off r_c = 1.5 in a box of L = 3.78, pushed
    by P₀ = 20 (their own pressure is 0.5): the box falls below 2 r_c = 3 in 4 steps."""
    q, box = md.lattice_for_density("sc", 27, 0.5)
    pot = md.Truncated(md.GaussianCore(0.0, 1.0), cutoff=1.5)
    system = md.MDSystem(box, pot, masses=jnp.ones(27))
    y0 = (q, md.maxwell_boltzmann(jax.random.key(0), system.masses, 1.0))
    npt = md.CellRescaling(
        md.LangevinBAOAB(1.0, 1.0, jax.random.key(1)),
        pressure=20.0,
        compressibility=0.5,
        tau_p=0.2,
        key=jax.random.key(2),
    )
    return system, y0, npt


def test_box_compressed_below_twice_the_cutoff_is_reported():
    """The minimum image fails once the box is narrower than 2 r_c: the run reports
    RESULTS.box_too_small (raised with throw=True), also inside a neighbour list; the
    run that stops before the box crosses 2 r_c is successful."""
    system, y0, npt = _compressed_gas()
    width = sciad.SaveAt(steps=1, fn=lambda t, y, m: m.space.min_width())
    traj = run(system, y0, npt, 40, saveat=width, throw=False)
    w = np.asarray(traj.ys)
    crossed = int(np.argmax(w < 3.0))  # index of the first step narrower than 2 r_c
    assert w[crossed] < 3.0 <= w[:crossed].min() and crossed >= 2
    assert traj.result == sciad.RESULTS.box_too_small
    before = run(system, y0, npt, crossed, throw=False)
    assert before.result == sciad.RESULTS.successful
    with pytest.raises(eqx.EquinoxRuntimeError, match="narrower than twice the interaction"):
        run(system, y0, npt, 40, saveat=width)  # the program above, now raising
    builder = md.NeighborListBuilder.create(system.space, y0[0], cutoff=1.5, skin=0.2)
    listed = run(system, y0, md.NeighborListIntegrator(npt, builder), 40, throw=False)
    assert listed.result == sciad.RESULTS.box_too_small  # not reported as an overflow

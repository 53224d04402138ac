"""Neighbour lists: exact pair sets against a NumPy O(N²) minimum-image reference."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sciad._core._results import RESULTS
from sciad.md._neighbors import (
    needs_rebuild,
    NeighborList,
    NeighborListBuilder,
    update,
)
from sciad.md._space import FreeSpace, PeriodicBox, TriclinicBox

CUTOFF, SKIN = 1.5, 0.3
RC = CUTOFF + SKIN


# --- reference and configurations -------------------------------------------------------


def reference_pairs(space, r, rc):
    """All pairs i < j with minimum-image distance < rc, by plain NumPy O(N²)."""
    r = np.asarray(r, dtype=np.float64)
    if isinstance(space, FreeSpace):
        dr = r[:, None, :] - r[None, :, :]
    else:
        cell = (
            np.diag(np.asarray(space.lengths))
            if isinstance(space, PeriodicBox)
            else np.asarray(space.cell)
        )
        s = r @ np.linalg.inv(cell)
        ds = s[:, None, :] - s[None, :, :]
        dr = (ds - np.round(ds)) @ cell
    d2 = np.sum(dr**2, axis=-1)
    i, j = np.nonzero(np.triu(d2 < rc * rc, k=1))
    return set(zip(i.tolist(), j.tolist(), strict=True))


def pairs_of(nbrs: NeighborList):
    m = np.asarray(nbrs.mask())
    i, j = np.asarray(nbrs.i)[m], np.asarray(nbrs.j)[m]
    assert np.all(i < j)
    out = list(zip(i.tolist(), j.tolist(), strict=True))
    assert len(out) == len(set(out)), "a pair is listed twice"
    return set(out)


def fractional_config(kind, rng, n, frac_sigma=0.04):
    """Fractional coordinates in [0, 1)^3: uniform, jittered fcc, or a few tight clumps."""
    if kind == "uniform":
        return rng.uniform(0.0, 1.0, (n, 3))
    if kind == "dense":  # fcc, 5 × 5 × 5 unit cells = 500 particles
        m = 5
        base = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
        grid = np.stack(np.meshgrid(*[np.arange(m)] * 3, indexing="ij"), -1).reshape(-1, 1, 3)
        s = ((grid + base[None]) / m).reshape(-1, 3)
        return np.mod(s + rng.normal(0.0, 0.01, s.shape), 1.0)
    # clustered: four Gaussian clumps
    centres = rng.uniform(0.0, 1.0, (4, 3))
    s = centres[rng.integers(0, 4, n)] + rng.normal(0.0, frac_sigma, (n, 3))
    return np.mod(s, 1.0)


# Packing fraction 0.5 for unit diameters: density 6 φ / π ≈ 0.955; 500 particles.
DENSE_L = (500 / (6 * 0.5 / np.pi)) ** (1 / 3)


def make_space(space_kind, L):
    if space_kind == "periodic":
        return PeriodicBox(jnp.array([L, L, L]))
    if space_kind == "triclinic":
        return TriclinicBox(jnp.array([[L, 0.0, 0.0], [0.3 * L, L, 0.0], [0.2 * L, -0.25 * L, L]]))
    return FreeSpace()


def make_case(space_kind, config, seed=0):
    rng = np.random.default_rng(seed)
    n, L = {"uniform": (300, 8.0), "dense": (500, DENSE_L), "clustered": (300, 10.0)}[config]
    s = fractional_config(config, rng, n)
    space = make_space(space_kind, L)
    if space_kind == "free":
        r = s * L
    elif space_kind == "periodic":
        r = s * L
    else:
        r = s @ np.asarray(space.cell)
    return space, jnp.asarray(r)


# --- correctness of the pair set ---------------------------------------------------------


@pytest.mark.parametrize("method", ["cell", "brute"])
@pytest.mark.parametrize("config", ["uniform", "dense", "clustered"])
@pytest.mark.parametrize("space_kind", ["periodic", "triclinic", "free"])
def test_pairs_match_numpy_reference(space_kind, config, method):
    space, r = make_case(space_kind, config)
    if space_kind == "triclinic":
        assert CUTOFF < 0.5 * float(space.min_width())
    builder = NeighborListBuilder.create(space, r, cutoff=CUTOFF, skin=SKIN, method=method)
    if method == "cell" and not (space_kind == "free" and config == "clustered"):
        assert builder.grid is not None
    nbrs = builder.build(space, r)
    ref = reference_pairs(space, r, RC)
    assert len(ref) > 0
    assert not bool(nbrs.did_overflow)
    assert int(nbrs.count) == len(ref)
    assert pairs_of(nbrs) == ref
    assert nbrs.capacity >= len(ref)
    np.testing.assert_array_equal(np.asarray(nbrs.reference), np.asarray(r))
    # padding is the sentinel n
    m = np.asarray(nbrs.mask())
    assert np.all(np.asarray(nbrs.i)[~m] == r.shape[0])
    assert np.all(np.asarray(nbrs.j)[~m] == r.shape[0])
    assert nbrs.result() == RESULTS.successful


def test_free_space_dilute_cloud_falls_back_to_all_pairs():
    rng = np.random.default_rng(1)
    r = jnp.asarray(rng.uniform(0.0, 60.0, (100, 3)))
    builder = NeighborListBuilder.create(
        FreeSpace(), r, cutoff=CUTOFF, skin=SKIN, capacity=2000, method="cell"
    )
    assert builder.grid is None
    r = jnp.asarray(rng.uniform(0.0, 10.0, (100, 3)))  # denser now; still exact
    nbrs = builder.build(FreeSpace(), r)
    assert pairs_of(nbrs) == reference_pairs(FreeSpace(), r, RC)


def test_auto_method_matches_reference():
    space, r = make_case("periodic", "uniform")
    builder = NeighborListBuilder.create(space, r, cutoff=CUTOFF, skin=SKIN)
    assert pairs_of(builder.build(space, r)) == reference_pairs(space, r, RC)


@pytest.mark.parametrize(
    "lengths, grid",
    [
        ((5.8, 8.7, 12.0), (2, 3, 4)),  # 2 cells: the -1 and +1 neighbours coincide
        ((5.5, 5.9, 9.0), (1, 2, 3)),  # 1 cell: every offset is the same cell
    ],
)
def test_small_grids_visit_each_cell_once(lengths, grid):
    cutoff, skin = 2.5, 0.3
    rng = np.random.default_rng(2)
    L = np.array(lengths)
    r = jnp.asarray(rng.uniform(0.0, 1.0, (200, 3)) * L)
    space = PeriodicBox(jnp.asarray(L))
    builder = NeighborListBuilder.create(space, r, cutoff=cutoff, skin=skin, method="cell")
    assert builder.grid == grid
    nbrs = builder.build(space, r)
    ref = reference_pairs(space, r, cutoff + skin)
    assert int(nbrs.count) == len(ref)  # no double counting
    assert pairs_of(nbrs) == ref


def test_small_grid_triclinic():
    cutoff, skin = 2.0, 0.3
    cell = np.array([[5.0, 0.0, 0.0], [1.5, 5.0, 0.0], [-1.0, 1.0, 9.0]])
    space = TriclinicBox(jnp.asarray(cell))
    assert cutoff < 0.5 * float(space.min_width())
    rng = np.random.default_rng(3)
    r = jnp.asarray(rng.uniform(0.0, 1.0, (150, 3)) @ cell)
    builder = NeighborListBuilder.create(space, r, cutoff=cutoff, skin=skin, method="cell")
    assert min(builder.grid) < 3
    nbrs = builder.build(space, r)
    ref = reference_pairs(space, r, cutoff + skin)
    assert int(nbrs.count) == len(ref)
    assert pairs_of(nbrs) == ref


def test_unwrapped_positions():
    space, r = make_case("triclinic", "uniform")
    shift = jnp.asarray(np.random.default_rng(4).integers(-2, 3, r.shape).astype(np.float64))
    r_unwrapped = r + shift @ space.cell
    builder = NeighborListBuilder.create(space, r, cutoff=CUTOFF, skin=SKIN, method="cell")
    assert pairs_of(builder.build(space, r_unwrapped)) == reference_pairs(space, r, RC)


def test_float32():
    space, r = make_case("periodic", "uniform")
    space32 = PeriodicBox(space.lengths.astype(jnp.float32))
    r32 = r.astype(jnp.float32)
    builder = NeighborListBuilder.create(space32, r32, cutoff=CUTOFF, skin=SKIN, method="cell")
    nbrs = jax.jit(builder.build)(space32, r32)
    assert nbrs.reference.dtype == jnp.float32
    assert pairs_of(nbrs) == reference_pairs(space32, r32, RC)


# --- overflow ----------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["cell", "brute"])
def test_capacity_overflow_is_reported_with_true_count(method):
    space, r = make_case("periodic", "dense")
    builder = NeighborListBuilder.create(
        space, r, cutoff=CUTOFF, skin=SKIN, capacity=50, method=method
    )
    nbrs = builder.build(space, r)
    ref = reference_pairs(space, r, RC)
    assert bool(nbrs.did_overflow)
    assert nbrs.result() == RESULTS.neighbor_overflow
    assert int(nbrs.count) == len(ref)
    assert int(jnp.sum(nbrs.mask())) == 50
    assert pairs_of(nbrs) <= ref


def test_cell_overflow_is_reported():
    space, r = make_case("periodic", "uniform")
    builder = NeighborListBuilder.create(space, r, cutoff=CUTOFF, skin=SKIN, method="cell")
    assert not bool(builder.build(space, r).did_overflow)
    # Same box, but the particles crowd into a few clumps: some cell exceeds max_per_cell.
    _, r_clumped = make_case("periodic", "clustered")
    r_clumped = r_clumped[: r.shape[0]] * 0.8
    assert bool(builder.build(space, r_clumped).did_overflow)
    tight = NeighborListBuilder.create(space, r, cutoff=CUTOFF, skin=SKIN, max_per_cell=2)
    assert tight.grid is not None
    assert bool(tight.build(space, r).did_overflow)


@pytest.mark.parametrize("space_kind", ["periodic", "triclinic"])
def test_shrunk_traced_box_is_reported(space_kind):
    space, r = make_case(space_kind, "uniform")
    builder = NeighborListBuilder.create(space, r, cutoff=CUTOFF, skin=SKIN, method="cell")
    build = jax.jit(lambda scale, r: builder.build(jax.tree.map(lambda x: scale * x, space), r))
    # 8 / 1.8 -> 4 cells of edge 2.0 (widths of the sheared cell are a bit smaller).
    widths = 1.0 / np.linalg.norm(
        np.linalg.inv(
            np.diag(np.asarray(space.lengths))
            if space_kind == "periodic"
            else np.asarray(space.cell)
        ),
        axis=0,
    )
    safe = 1.001 * RC * np.array(builder.grid) / widths  # each cell edge just above RC
    s_ok, s_bad = float(np.max(safe)), 0.99 * float(np.max(safe))
    assert s_ok < 1.0
    nbrs = build(jnp.asarray(s_ok), r * s_ok)
    assert not bool(nbrs.did_overflow)
    scaled = jax.tree.map(lambda x: s_ok * x, space)
    assert pairs_of(nbrs) == reference_pairs(scaled, r * s_ok, RC)
    assert bool(build(jnp.asarray(s_bad), r * s_bad).did_overflow)


def test_free_space_cloud_outgrowing_grid_is_reported():
    space, r = make_case("free", "uniform")
    builder = NeighborListBuilder.create(space, r, cutoff=CUTOFF, skin=SKIN, method="cell")
    assert not bool(builder.build(space, r + 100.0).did_overflow)  # translation is fine
    assert bool(builder.build(space, 1.6 * r).did_overflow)


def test_structural_errors():
    space, r = make_case("periodic", "uniform")
    with pytest.raises(ValueError, match="half the box"):
        NeighborListBuilder.create(space, r, cutoff=4.5, skin=0.0)
    with pytest.raises(ValueError, match="d = 2"):
        NeighborListBuilder.create(space, r[:, :2], cutoff=1.0, skin=0.1)
    builder = NeighborListBuilder.create(space, r, cutoff=1.0, skin=0.1)
    with pytest.raises(TypeError, match="PeriodicBox"):
        builder.build(FreeSpace(), r)


# --- rebuilding --------------------------------------------------------------------------


def test_needs_rebuild_threshold_and_update():
    space, r = make_case("periodic", "uniform")
    builder = NeighborListBuilder.create(space, r, cutoff=CUTOFF, skin=SKIN, method="cell")
    nbrs = builder.build(space, r)
    check = jax.jit(needs_rebuild)
    direction = jnp.array([0.6, 0.0, 0.8])
    for frac, expected in [(0.0, False), (0.49, False), (0.51, True)]:
        moved = r.at[7].add(frac * SKIN * direction)
        assert bool(check(nbrs, space, moved)) is expected
    # Minimum image: wrapping a particle through the boundary is not a move.
    wrapped = r.at[3, 0].add(8.0)
    assert not bool(check(nbrs, space, wrapped))

    upd = jax.jit(lambda nb, x: update(builder, nb, space, x))
    small = r.at[7].add(0.49 * SKIN * direction)
    kept = upd(nbrs, small)
    np.testing.assert_array_equal(np.asarray(kept.reference), np.asarray(r))
    big = r + 0.4 * jnp.asarray(np.random.default_rng(5).normal(size=r.shape))
    rebuilt = upd(nbrs, big)
    np.testing.assert_array_equal(np.asarray(rebuilt.reference), np.asarray(big))
    assert pairs_of(rebuilt) == reference_pairs(space, big, RC)


def test_list_stays_valid_until_rebuild():
    """Within skin/2 of motion every pair closer than `cutoff` is still in the list."""
    space, r = make_case("periodic", "dense")
    builder = NeighborListBuilder.create(space, r, cutoff=CUTOFF, skin=SKIN, method="cell")
    nbrs = builder.build(space, r)
    rng = np.random.default_rng(6)
    step = rng.normal(size=r.shape)
    step = 0.499 * SKIN * step / np.linalg.norm(step, axis=1, keepdims=True)
    moved = r + jnp.asarray(step)
    assert not bool(needs_rebuild(nbrs, space, moved))
    assert reference_pairs(space, moved, CUTOFF) <= pairs_of(nbrs)


# --- transformations ---------------------------------------------------------------------


def test_jit_and_vmap_over_configurations_and_boxes():
    rng = np.random.default_rng(7)
    lengths = jnp.asarray([[8.0, 8.0, 8.0], [8.3, 7.9, 8.1], [7.8, 8.4, 8.2]])
    rs = jnp.asarray(rng.uniform(0.0, 1.0, (3, 200, 3))) * lengths[:, None, :]
    builder = NeighborListBuilder.create(
        PeriodicBox(lengths[0]), rs[0], cutoff=CUTOFF, skin=SKIN, capacity=3000, method="cell"
    )
    batched = jax.jit(jax.vmap(lambda L, x: builder.build(PeriodicBox(L), x)))(lengths, rs)
    assert batched.i.shape == (3, 3000)
    assert batched.mask().shape == (3, 3000)
    for b in range(3):
        one = jax.tree.map(lambda x, b=b: x[b], batched)
        ref = reference_pairs(PeriodicBox(lengths[b]), rs[b], RC)
        assert not bool(one.did_overflow)
        assert int(one.count) == len(ref)
        assert pairs_of(one) == ref
    # update under vmap (cond becomes select): element 0 moves a lot, the others do not.
    moved = rs.at[0].add(0.5)
    out = jax.jit(jax.vmap(lambda L, nb, x: update(builder, nb, PeriodicBox(L), x)))(
        lengths, batched, moved
    )
    np.testing.assert_array_equal(np.asarray(out.reference), np.asarray(moved))
    np.testing.assert_array_equal(np.asarray(out.i[1:]), np.asarray(batched.i[1:]))


def _lj(r2):
    inv6 = 1.0 / r2**3
    return 4.0 * (inv6 * inv6 - inv6)


def _energy_from_list(space, r, nbrs):
    dr = jax.vmap(space.displacement)(r[nbrs.i], r[nbrs.j])
    m = nbrs.mask()
    r2 = jnp.where(m, jnp.sum(dr**2, axis=-1), 1.0)  # double where: padding has dr = 0
    inside = m & (r2 < CUTOFF**2)
    return jnp.sum(jnp.where(inside, _lj(jnp.where(inside, r2, 1.0)), 0.0))


def _energy_dense(space, r):
    n = r.shape[0]
    dr = jax.vmap(jax.vmap(space.displacement, (None, 0)), (0, None))(r, r)
    upper = jnp.triu(jnp.ones((n, n), dtype=bool), k=1)
    r2 = jnp.where(upper, jnp.sum(dr**2, axis=-1), 1.0)
    inside = upper & (r2 < CUTOFF**2)
    return jnp.sum(jnp.where(inside, _lj(jnp.where(inside, r2, 1.0)), 0.0))


@pytest.mark.parametrize("space_kind", ["periodic", "triclinic"])
def test_grad_through_energy_with_list_built_inside(space_kind):
    space, r = make_case(space_kind, "dense")
    r, L = r[:120], 1.0  # fewer particles in the same box: no overlaps
    builder = NeighborListBuilder.create(space, r, cutoff=CUTOFF, skin=SKIN, method="cell")

    def energy(r, scale):
        sp = jax.tree.map(lambda x: scale * x, space)
        nbrs = builder.build(sp, r)  # traced positions and traced box
        return _energy_from_list(sp, r, nbrs)

    def dense(r, scale):
        return _energy_dense(jax.tree.map(lambda x: scale * x, space), r)

    g = jax.jit(jax.grad(energy, argnums=(0, 1)))(r, jnp.asarray(L))
    g_ref = jax.jit(jax.grad(dense, argnums=(0, 1)))(r, jnp.asarray(L))
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in g)
    np.testing.assert_allclose(np.asarray(g[0]), np.asarray(g_ref[0]), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(float(g[1]), float(g_ref[1]), rtol=1e-10)
    np.testing.assert_allclose(float(energy(r, L)), float(dense(r, L)), rtol=1e-12)


def test_grad_with_padding_is_finite_and_vmaps():
    """Lots of padded slots (i = j = n) and a batch: gradients stay finite."""
    space, r = make_case("free", "uniform")
    r = r[:100]
    builder = NeighborListBuilder.create(space, r, cutoff=CUTOFF, skin=SKIN, capacity=5000)
    energy = lambda x: _energy_from_list(space, x, builder.build(space, x))
    rs = jnp.stack([r, r * 1.01, r * 0.99])
    g = jax.jit(jax.vmap(jax.grad(energy)))(rs)
    assert bool(jnp.all(jnp.isfinite(g)))
    g_ref = jax.jit(jax.vmap(jax.grad(lambda x: _energy_dense(space, x))))(rs)
    np.testing.assert_allclose(np.asarray(g), np.asarray(g_ref), rtol=1e-10, atol=1e-10)

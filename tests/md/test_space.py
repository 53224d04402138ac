"""The spaces' geometry interface against independent formulas, and the minimum-image
checks it makes possible (issue 18: the cut-off past half the box, degenerate boxes)."""

import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad.md as md

CELL = np.array([[5.0, 0.0, 0.0], [1.5, 5.0, 0.0], [-1.0, 1.0, 9.0]])


def test_triclinic_widths_volume_and_fractional_coordinates():
    """Widths w_a = V / |b × c| (and cyclic), V = |det|, s · cell = r."""
    box = md.TriclinicBox(jnp.asarray(CELL))
    a, b, c = CELL
    vol = abs(np.linalg.det(CELL))
    areas = [np.linalg.norm(np.cross(b, c)), np.linalg.norm(np.cross(c, a))]
    areas.append(np.linalg.norm(np.cross(a, b)))
    np.testing.assert_allclose(box.widths(), vol / np.array(areas), rtol=1e-14)
    np.testing.assert_allclose(box.min_width(), vol / max(areas), rtol=1e-14)
    np.testing.assert_allclose(box.volume(), vol, rtol=1e-14)
    assert box.dimension() == 3 and box.periodic and not md.FreeSpace().periodic
    r = jnp.asarray(np.random.default_rng(0).normal(size=(4, 7, 3)))
    s = box.to_fractional(r)
    np.testing.assert_allclose(s, np.asarray(r) @ np.linalg.inv(CELL), rtol=1e-12)
    np.testing.assert_allclose(box.from_fractional(s), r, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(box.exact_image_reach(), vol / max(areas) / 2, rtol=1e-14)


def test_orthorhombic_box_equals_the_diagonal_triclinic_cell():
    lengths = jnp.array([3.0, 4.0, 5.0])
    box, tri = md.PeriodicBox(lengths), md.TriclinicBox(jnp.diag(lengths))
    r = jnp.asarray(np.random.default_rng(1).uniform(-7.0, 7.0, (5, 3)))
    for f in ("widths", "volume", "cell_matrix", "min_width"):
        np.testing.assert_allclose(getattr(box, f)(), getattr(tri, f)(), rtol=1e-14)
    for f in ("to_fractional", "wrap"):
        np.testing.assert_allclose(getattr(box, f)(r), getattr(tri, f)(r), rtol=1e-13)
    np.testing.assert_allclose(
        jax.vmap(box.displacement)(r, r[::-1]), jax.vmap(tri.displacement)(r, r[::-1]), atol=1e-13
    )
    F = jnp.eye(3).at[0, 1].set(0.1)
    np.testing.assert_allclose(box.deformed(F).cell, tri.deformed(F).cell, rtol=1e-15)
    np.testing.assert_allclose(box.scaled(1.1).lengths, 1.1 * lengths, rtol=1e-15)
    np.testing.assert_allclose(tri.scaled(1.1).cell, 1.1 * jnp.diag(lengths), rtol=1e-15)
    assert md.FreeSpace().scaled(2.0) == md.FreeSpace() == md.FreeSpace().deformed(F)
    assert np.isinf(md.FreeSpace().min_width()) and md.FreeSpace().dimension() is None


def test_fractional_rounding_is_the_nearest_image_only_within_half_the_width():
    """In a skewed cell, rounding fractional coordinates finds the nearest image for every
    pair closer than half the smallest width (why cut-off + skin must stay inside
    `exact_image_reach`), but not beyond it."""
    cell = np.array([[6.0, 0.0, 0.0], [5.5, 2.0, 0.0], [0.0, 0.0, 6.0]])
    box = md.TriclinicBox(jnp.asarray(cell))
    reach = float(box.exact_image_reach())
    images = np.array(list(itertools.product(range(-3, 4), repeat=3))) @ cell
    dr = np.random.default_rng(2).uniform(-6.0, 6.0, (4000, 3))
    nearest = np.min(np.linalg.norm(dr[:, None, :] + images[None], axis=-1), axis=1)
    rounded = np.linalg.norm(jax.vmap(box.displacement)(dr, np.zeros_like(dr)), axis=-1)
    inside = nearest < reach
    assert inside.sum() > 100
    np.testing.assert_allclose(rounded[inside], nearest[inside], rtol=1e-12)
    assert np.any(rounded[~inside] > nearest[~inside] + 1e-6)  # beyond: not always nearest


def test_left_handed_cell_gives_the_energy_of_the_right_handed_one():
    """Swapping two lattice vectors (det < 0) describes the same lattice: accepted, and
    the energy and virial pressure are those of the right-handed cell."""
    q, box = md.lattice("fcc", 3, 1.6)
    q = q + 0.05 * jnp.asarray(np.random.default_rng(3).normal(size=q.shape))
    pot = md.Truncated(md.LennardJones(1.0, 1.0), 2.3)
    right = md.MDSystem(md.TriclinicBox(jnp.diag(box.lengths)), pot, jnp.ones(len(q)))
    left = eqx.tree_at(lambda s: s.space, right, md.TriclinicBox(jnp.diag(box.lengths)[::-1]))
    assert float(jnp.linalg.det(left.space.cell)) < 0
    np.testing.assert_allclose(left.potential_energy(q), right.potential_energy(q), rtol=1e-13)
    p = jnp.zeros_like(q)
    np.testing.assert_allclose(md.pressure(left, (q, p)), md.pressure(right, (q, p)), rtol=1e-12)


def _image_sum(q, L, cutoff):
    """Σ over all images (explicit lattice sum) of the truncated LJ energy, float64."""
    q = np.asarray(q)
    shifts = np.array(list(itertools.product(range(-2, 3), repeat=3))) * L
    r = np.linalg.norm(q[:, None, None, :] - q[None, :, None, :] + shifts[None, None], axis=-1)
    r = r[(r > 1e-9) & (r < cutoff)]
    return 0.5 * np.sum(4 * (r**-12 - r**-6))


def test_issue_18_fcc_cutoff_past_half_the_box():
    """32 fcc atoms in L = 3.2 with r_c = 2.5: the minimum image would sum −217.09 where
    the periodic sum is −245.44; the system is refused, and the same crystal in a box
    twice as wide (r_c < L/2) gives the periodic sum."""
    q, box = md.lattice("fcc", 2, 1.6)
    pot = md.Truncated(md.LennardJones(1.0, 1.0), 2.5)
    with pytest.raises(ValueError, match=r"cut-off = 2.5 must be at most half .* \(3.2"):
        md.MDSystem(box, pot, jnp.ones(32))
    exact = _image_sum(q, 3.2, 2.5)
    np.testing.assert_allclose(exact, -245.43897034762, rtol=1e-11)
    q8, box8 = md.lattice("fcc", 4, 1.6)
    big = md.MDSystem(box8, pot, jnp.ones(len(q8)))
    np.testing.assert_allclose(big.potential_energy(q8) / 8, exact, rtol=1e-12)


def test_degenerate_boxes_are_refused_but_traced_ones_pass():
    with pytest.raises(ValueError, match="PeriodicBox.lengths must be finite and > 0"):
        md.PeriodicBox(jnp.array([5.0, -5.0, 5.0]))
    with pytest.raises(ValueError, match="singular or degenerate"):
        md.TriclinicBox(jnp.array([[1.0, 2.0], [2.0, 4.0]]))
    # Under jit the values are unknown: construction is allowed (checked where it can be).
    vol = jax.jit(lambda L: md.PeriodicBox(L).volume())(jnp.array([2.0, 3.0]))
    assert float(vol) == 6.0


def test_list_reports_a_box_shrunk_past_the_minimum_image():
    """A builder made for a wide box flags a traced box narrower than 2 cutoff."""
    rng = np.random.default_rng(4)
    q = jnp.asarray(rng.uniform(0.0, 6.0, (40, 3)))
    wide = md.PeriodicBox(jnp.full(3, 6.0))
    for method in ("cell", "brute"):
        builder = md.NeighborListBuilder.create(wide, q, cutoff=2.0, skin=0.2, method=method)
        assert not bool(jax.jit(builder.build)(wide, q).did_overflow)
        narrow = md.PeriodicBox(jnp.full(3, 3.9))
        assert bool(jax.jit(builder.build)(narrow, q * 0.65).did_overflow)


def test_rdf_at_half_the_box_is_accepted():
    box = md.PeriodicBox(jnp.full(3, 6.0))
    q = jnp.asarray(np.random.default_rng(5).uniform(0.0, 6.0, (50, 3)))
    r, g = md.radial_distribution(box, q, r_max=3.0, n_bins=6)
    assert r.shape == g.shape == (6,) and bool(jnp.all(jnp.isfinite(g)))

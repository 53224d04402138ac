"""Small dense linear algebra without batched LAPACK kernels (`sciad._core._linalg`):
the closed forms against numpy and jnp.linalg (values and derivatives), the sequential
pseudo-inverse, and the lowered programs of the vmapped collision functions and MD
cells, which must hold no batched LAPACK call (jaxlib 0.10 hangs when two run at once
on a 2-core CPU)."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sciad._core._linalg import sequential_pinv, small_det, small_inv, small_solve
import sciad.md as md
import sciad.rigid as rigid
from sciad.rigid._narrowphase import _COLLIDE


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_closed_forms_match_numpy_and_their_derivatives_jnp_linalg(n):
    """det, inverse and solve of random (5, n, n) matrices to 1e-12 of numpy's (n = 4:
    jnp.linalg itself); their jvp along a random direction to 1e-10 of jnp.linalg's."""
    rng = np.random.default_rng(n)
    a = jnp.asarray(rng.normal(size=(5, n, n)) + 2 * np.eye(n))
    b = jnp.asarray(rng.normal(size=(5, n)))
    np.testing.assert_allclose(small_det(a), np.linalg.det(a), rtol=1e-12)
    np.testing.assert_allclose(small_inv(a), np.linalg.inv(a), rtol=1e-12, atol=1e-12)
    x = np.linalg.solve(a, b[..., None])[..., 0]
    np.testing.assert_allclose(small_solve(a, b), x, rtol=1e-12, atol=1e-12)
    da, db = (jnp.asarray(rng.normal(size=x.shape)) for x in (a, b))
    ours = jax.jvp(small_solve, (a, b), (da, db))[1]
    ref = jax.jvp(lambda a, b: jnp.linalg.solve(a, b[..., None])[..., 0], (a, b), (da, db))[1]
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-10)
    ours = jax.jvp(small_det, (a,), (da,))[1]
    np.testing.assert_allclose(ours, jax.jvp(jnp.linalg.det, (a,), (da,))[1], rtol=1e-10)


def test_small_forms_refuse_non_square_matrices():
    with pytest.raises(ValueError, match="square"):
        small_det(jnp.ones(3))
    with pytest.raises(ValueError, match="square"):
        small_inv(jnp.ones((2, 3)))


def test_sequential_pinv_matches_pinv_batched_and_singular():
    """One matrix and a vmapped batch of singular ones (rank 5 of 8) equal
    jnp.linalg.pinv to 1e-12, and a gradient through it treats it as a constant."""
    rng = np.random.default_rng(0)
    m = jnp.asarray(rng.normal(size=(4, 8, 5)) @ rng.normal(size=(4, 5, 8)))
    ref = np.asarray(jnp.linalg.pinv(m, rtol=1e-10))
    np.testing.assert_allclose(sequential_pinv(m[0], 1e-10), ref[0], atol=1e-12)
    out = jax.jit(jax.vmap(lambda x: sequential_pinv(x, 1e-10)))(m)
    np.testing.assert_allclose(out, ref, atol=1e-12)
    g = jax.grad(lambda x: jnp.sum(sequential_pinv(x, 1e-10) @ x[0]))(m[0])
    np.testing.assert_allclose(g[0], ref[0].sum(axis=0), atol=1e-12)
    assert np.all(np.asarray(g[1:]) == 0)


def _batched_lapack_calls(text: str) -> list[str]:
    """The LAPACK custom calls of a lowered program that take a batch of matrices."""
    calls = [line for line in text.splitlines() if "@lapack_" in line]
    return [c for c in calls if not re.search(r'num_batch_dims = "0"', c)]


def test_vmapped_collisions_and_cells_run_no_batched_lapack_call():
    """Every collision function of the convex kinds (GJK/EPA, clipped polytopes and cylinders, meshes), vmapped
    over 16 pairs, and an MD triclinic cell's fractional coordinates, volume and
    widths vmapped over 16 cells, lower with no batched LAPACK call: the
    pseudo-inverse runs one matrix at a time, the small systems in closed form."""
    shapes = {
        rigid.Sphere: rigid.Sphere(0.1),
        rigid.Capsule: rigid.Capsule(0.1, 0.2),
        rigid.Ellipsoid: rigid.Ellipsoid(jnp.array([0.1, 0.2, 0.3])),
        rigid.Box: rigid.Box(jnp.array([0.1, 0.2, 0.3])),
        rigid.Cylinder: rigid.Cylinder(0.1, 0.2),
        rigid.ConvexMesh: rigid.ConvexMesh(
            jnp.asarray(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]]) * 0.2)
        ),
    }
    n = 16

    def batch(tree):
        return jax.tree.map(lambda x: jnp.broadcast_to(x, (n, *jnp.shape(x))), tree)

    rot = jnp.broadcast_to(jnp.eye(3), (n, 3, 3))
    checked = 0
    for (ka, kb), (fn, _) in _COLLIDE.items():
        if ka not in shapes or kb not in shapes:
            continue
        args = (batch(shapes[ka]), rot, jnp.zeros((n, 3)), batch(shapes[kb]), rot)
        text = jax.jit(jax.vmap(fn)).lower(*args, jnp.full((n, 3), 0.05)).as_text()
        assert not _batched_lapack_calls(text), (ka.__name__, kb.__name__)
        checked += 1
    assert checked >= 10

    def cell(c, r):
        s = md.TriclinicBox(c)
        return s.to_fractional(r), s.volume(), s.widths()

    cells = jnp.broadcast_to(jnp.array([[2.0, 0, 0], [0.3, 2.0, 0], [0.2, 0.1, 2.0]]), (n, 3, 3))
    text = jax.jit(jax.vmap(cell)).lower(cells, jnp.ones((n, 5, 3))).as_text()
    assert not _batched_lapack_calls(text)

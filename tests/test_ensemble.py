"""`sciad.ensemble` on one device: it is `vmap` for every batch size and chunking, its
reductions see only the real members (never the padding), and it composes with `jit`
and `grad`. Several devices and processes: `test_ensemble_scale.py`."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad


def member(x):
    """A PyTree in, a PyTree out, nonlinear in the member."""
    return {"s": jnp.sin(x["a"]) * x["b"][0], "v": x["b"] * jnp.cos(x["a"])}


def batch(n):
    rng = np.random.default_rng(n)
    return {"a": jnp.asarray(rng.normal(size=n)), "b": jnp.asarray(rng.normal(size=(n, 3)))}


@pytest.mark.parametrize("n, chunk_size", [(1, None), (7, None), (7, 1), (7, 3), (10, 4), (5, 9)])
def test_equals_vmap_for_any_batch_and_chunk_size(n, chunk_size):
    b = batch(n)
    got = sciad.ensemble(member, b, chunk_size=chunk_size)
    want = jax.vmap(member)(b)
    assert jax.tree.structure(got) == jax.tree.structure(want)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("chunk_size", [None, 3, 4])
def test_padding_never_enters_a_reduction(chunk_size):
    """10 members in chunks of 3 or 4 need padding (copies of the last member): the sum
    and mean are over the 10 real members only, to rounding."""
    b = {"a": jnp.arange(1.0, 11.0)}
    f = lambda x: x["a"] ** 2  # noqa: E731
    total = sciad.ensemble(f, b, reduce="sum", chunk_size=chunk_size)
    mean = sciad.ensemble(f, b, reduce="mean", chunk_size=chunk_size)
    assert float(total) == 385.0  # Σ k², k = 1..10, exact in float64
    assert float(mean) == 38.5


def test_gradient_with_respect_to_shared_parameters_and_members():
    """`grad` of a mean over members equals `grad` of the vmapped mean, with respect to
    what `fn` closes over and to the batch itself, chunked (11 members in 3 chunks of
    4, one padded slot) and under `jit`."""
    b = batch(11)

    def loss(w, b, **kw):
        f = lambda x: jnp.sum(member(x)["v"] * w) + member(x)["s"] ** 2  # noqa: E731
        if kw.pop("vmap", False):
            return jnp.mean(jax.vmap(f)(b))
        return sciad.ensemble(f, b, reduce="mean", **kw)

    w = jnp.array([0.5, -1.0, 2.0])
    want = jax.grad(loss, argnums=(0, 1))(w, b, vmap=True)
    for kw in ({}, {"chunk_size": 4}):
        got = jax.jit(jax.grad(lambda w, b, kw=kw: loss(w, b, **kw), argnums=(0, 1)))(w, b)
        for g, e in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-14, atol=1e-15)


def test_simulate_ensemble_under_grad_matches_vmap():
    """A pendulum sweep: the mean final angle² and its derivative in the length."""
    import equinox as eqx

    pendulum = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
    theta0 = jnp.linspace(0.1, 1.5, 9)

    def loss(length, **kw):
        model = eqx.tree_at(lambda m: m.length, pendulum, length)
        f = lambda th: sciad.simulate(model, jnp.stack([th, 0.0]), dt=0.01, n_steps=50).y1[0] ** 2  # noqa: E731, E501
        if kw.pop("vmap", False):
            return jnp.mean(jax.vmap(f)(theta0))
        return sciad.ensemble(f, theta0, reduce="mean", **kw)

    want = jax.value_and_grad(lambda p: loss(p, vmap=True))(1.0)
    got = jax.jit(jax.value_and_grad(lambda p: loss(p, chunk_size=4)))(1.0)
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_memory_budget_chooses_a_chunk_that_fits():
    """Each member makes a 200×200 float64 matrix (320 kB): a budget of 2 MB runs the
    members a few at a time, with the same result as one pass, and the chosen chunks
    compile within the budget (XLA's own memory analysis of one chunk)."""
    from sciad._core._ensemble import _bytes_per_member

    f = lambda x: jnp.sum(jnp.tanh(jnp.outer(x, x)), axis=0)  # noqa: E731
    b = jnp.asarray(np.random.default_rng(0).normal(size=(40, 200)))
    per = _bytes_per_member(f, b, 40, None)
    assert 200 * 200 * 8 <= per < 10 * 200 * 200 * 8
    budget = 2_000_000
    chunk = int(budget // per)
    assert 1 <= chunk < 40
    mem = jax.jit(jax.vmap(f)).lower(b[:chunk]).compile().memory_analysis()
    used = mem.argument_size_in_bytes + mem.output_size_in_bytes + mem.temp_size_in_bytes
    assert used <= budget
    np.testing.assert_allclose(
        sciad.ensemble(f, b, memory_budget=budget), jax.vmap(f)(b), rtol=1e-15, atol=0
    )


def test_result_is_sharded_over_the_mesh():
    """On one device the default mesh is that device; a user mesh is honoured."""
    from jax.sharding import Mesh

    mesh = Mesh(np.array(jax.devices()[:1]), ("members",))
    out = sciad.ensemble(member, batch(4), mesh=mesh)
    assert out["v"].sharding.mesh.axis_names == ("members",)

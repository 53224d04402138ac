"""Ensembles: one function mapped over the members of a batch, sharded over every device.

`ensemble(fn, batch)` is `jax.vmap(fn)(batch)` that also runs on many devices and many
processes, in chunks when the batch does not fit at once, and reduces over the members
without letting the padding in. The batch is split over the devices of a mesh with
`jax.shard_map`; inside each shard the members are a plain `vmap` (chunked by
`lax.map`-style scan), so sciad's batching rules (the lazy neighbour-list rebuild, the
compacting Newton loop of the contact solve) act on the shard's members only and never
gather the batch onto one device.
"""

from collections.abc import Callable
from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from jaxtyping import PyTree
import numpy as np

from ._types import Anything
from ._validate import check_int, is_concrete

_REDUCE = (None, "sum", "mean")


def _batch_size(batch: Anything) -> int:
    """The common leading axis of the leaves of `batch` (precise errors otherwise)."""
    leaves = jax.tree_util.tree_flatten_with_path(batch)[0]
    if not leaves:
        raise ValueError("sciad.ensemble: batch has no array leaves; it must hold the members.")
    sizes: dict[int, str] = {}
    for path, leaf in leaves:
        name = "batch" + jax.tree_util.keystr(path)
        if isinstance(leaf, (bool, str, bytes)) or leaf is None:
            raise TypeError(f"sciad.ensemble: {name} must be an array; got {leaf!r}.")
        if not hasattr(leaf, "shape"):
            leaf = np.asarray(leaf)
            if not (np.issubdtype(leaf.dtype, np.number) or np.issubdtype(leaf.dtype, np.bool_)):
                raise TypeError(f"sciad.ensemble: {name} must be an array; got dtype {leaf.dtype}.")
        if len(leaf.shape) == 0:
            raise ValueError(
                f"sciad.ensemble: {name} is a scalar; every leaf of batch needs the leading "
                "member axis."
            )
        sizes.setdefault(int(leaf.shape[0]), name)
    if len(sizes) > 1:
        detail = ", ".join(f"{name} has {n}" for n, name in sizes.items())
        raise ValueError(
            f"sciad.ensemble: the leaves of batch disagree on the number of members "
            f"(leading axis): {detail}."
        )
    (n,) = sizes
    if n == 0:
        raise ValueError("sciad.ensemble: batch has 0 members (leading axis of length 0).")
    return n


def _mesh(mesh: Anything) -> Mesh:
    if mesh is None:
        return Mesh(np.array(jax.devices()), ("ensemble",))
    if not isinstance(mesh, Mesh):
        raise TypeError(f"sciad.ensemble: mesh must be a jax.sharding.Mesh; got {mesh!r}.")
    return mesh


def _layout(per_shard: int, chunk_size: int | None) -> tuple[int, int]:
    """(chunks, members per chunk) for a shard of `per_shard` members: the fewest chunks
    of at most `chunk_size` members, as even as possible."""
    chunk = per_shard if chunk_size is None else min(chunk_size, per_shard)
    n_chunks = -(-per_shard // chunk)
    return n_chunks, -(-per_shard // n_chunks)


def _pad(x: Anything, size: int) -> Anything:
    """`x` grown to `size` members along axis 0 by copies of its last member: valid
    inputs, so no NaN can reach a cotangent through the padding. NumPy stays NumPy."""
    n = x.shape[0]
    if n == size:
        return x
    xp = np if isinstance(x, np.ndarray) else jnp
    return xp.concatenate([x, xp.broadcast_to(x[-1:], (size - n,) + x.shape[1:])])


def _bytes_per_member(fn: Callable, batch: Anything, n: int, reduce: str | None) -> float:
    """XLA's estimate of the memory (arguments, outputs and temporaries) of one chunk of
    `vmap(fn)`, per member: compiled at two sizes, the slope of the two."""
    member = jax.tree.map(lambda x: x[0], batch)
    lo, hi = (min(n, 8), min(n, 16)) if n > 1 else (1, 1)

    def size(k: int) -> int:
        chunk = jax.tree.map(lambda x: jnp.broadcast_to(x, (k,) + jnp.shape(x)), member)
        run, consts = jax.closure_convert(lambda c: _chunk(fn, c, reduce), chunk)
        spec = jax.tree.map(
            lambda x: jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x)), (chunk, consts)
        )
        mem = jax.jit(run).lower(spec[0], *spec[1]).compile().memory_analysis()
        if mem is None:  # pragma: no cover - every backend sciad supports reports it
            raise NotImplementedError("sciad.ensemble: this backend reports no memory use.")
        return mem.argument_size_in_bytes + mem.output_size_in_bytes + mem.temp_size_in_bytes

    small, large = size(lo), size(hi)
    slope = (large - small) / (hi - lo) if hi > lo else 0.0
    return max(slope, large / hi)


def _chunk(fn: Callable, members: Anything, reduce: str | None) -> Anything:
    """`vmap(fn)` over one chunk; summed over the chunk when reducing."""
    out = jax.vmap(fn)(members)
    return jax.tree.map(lambda o: jnp.sum(o, axis=0), out) if reduce else out


def _masked_sum(fn: Callable, mask: Anything, members: Anything) -> Anything:
    """Σ over the chunk's real members of `fn`: padded members are selected out, so
    neither their values nor their cotangents (zero) enter the sum."""
    out = jax.vmap(fn)(members)

    def total(o: Anything) -> Anything:
        m = mask.reshape(mask.shape + (1,) * (o.ndim - 1))
        return jnp.sum(jnp.where(m, o, jnp.zeros_like(o)), axis=0)

    return jax.tree.map(total, out)


@eqx.filter_jit
def _sharded(fn, batch, mask, mesh, n_chunks, chunk, reduce):
    axes = mesh.axis_names
    total = mask.shape[0]
    batch = jax.tree.map(lambda x: _pad(x, total), batch)

    def local(mask, members):
        # Chunks are padded and cut inside the shard: no member changes device.
        per_shard = mask.shape[0]
        if n_chunks > 1 or chunk != per_shard:
            grow = lambda x: _pad(x, n_chunks * chunk).reshape((n_chunks, chunk) + x.shape[1:])  # noqa: E731
            members = jax.tree.map(grow, members)
            mask = jnp.zeros(n_chunks * chunk, bool).at[:per_shard].set(mask)
            mask = mask.reshape(n_chunks, chunk)
        if reduce is None:
            if n_chunks == 1 and chunk == per_shard:
                return jax.vmap(fn)(members)
            out = jax.lax.map(jax.checkpoint(jax.vmap(fn)), members)
            return jax.tree.map(lambda o: o.reshape((-1,) + o.shape[2:])[:per_shard], out)
        body = jax.checkpoint(lambda m, x: _masked_sum(fn, m, x))
        if n_chunks == 1 and chunk == per_shard:
            partial = body(mask, members)
        else:
            first = jax.tree.map(lambda x: x[0], (mask, members))
            rest = jax.tree.map(lambda x: x[1:], (mask, members))

            def step(acc, chunk_in):
                return jax.tree.map(jnp.add, acc, body(*chunk_in)), None

            partial = jax.lax.scan(step, body(*first), rest)[0]
        return jax.lax.psum(partial, axes)

    spec = PartitionSpec(axes)
    # check_vma=False: sciad's loops start their carries unvarying (a step counter), which
    # the varying-axis check rejects inside shard_map; the gradient is tested across devices.
    out = jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(spec, spec),
        out_specs=spec if reduce is None else PartitionSpec(),
        check_vma=False,
    )(mask, batch)
    return out


def ensemble(
    fn: Callable[[Anything], Anything],
    batch: PyTree,
    *,
    reduce: Literal["sum", "mean"] | None = None,
    mesh: Mesh | None = None,
    chunk_size: int | None = None,
    memory_budget: int | None = None,
) -> PyTree:
    """Map `fn` over the members of `batch`, sharded over every device, in chunks.

    `ensemble(fn, batch)` equals `jax.vmap(fn)(batch)`: member `i` is the slice `[i]`
    of every leaf of `batch`. The members are split evenly over the devices of `mesh`
    (by default every device JAX sees: all local devices, and every process's devices
    after `jax.distributed.initialize`), each device runs `vmap(fn)` over its own
    members (in chunks of at most `chunk_size`), and nothing but the reduction crosses
    devices. Any number of members works: the batch is padded (with copies of its last
    member) to a multiple of the shard and chunk sizes, the padding is cut from the
    result and masked out of reductions. Shared parameters are whatever `fn` closes
    over; they are replicated on every device, and `jax.grad` of a reduced loss with
    respect to them sums the devices' contributions. Composes with `jit` and `grad`
    (tested); the same code runs on one CPU, many devices and many processes.

    **Arguments:**

    - `fn`: one member in, a PyTree of arrays out.
    - `batch`: a PyTree of arrays sharing the leading (member) axis.
    - `reduce`: `None` (default) returns every member's output; `"sum"` or `"mean"`
      returns the sum or mean over the real members (replicated on every device).
    - `mesh`: a `jax.sharding.Mesh`; the members are split over all of its axes.
      Default: a one-axis mesh of `jax.devices()`.
    - `chunk_size`: the most members a device runs at once (a positive int). Each
      chunk is checkpointed, so under `grad` the memory also scales with the chunk,
      at the price of recomputing each chunk's forward pass once. Default: all of a
      device's members at once.
    - `memory_budget`: instead of `chunk_size`, bytes a chunk may use on one device;
      the chunk size is chosen from XLA's memory analysis of `vmap(fn)` compiled at
      two small sizes (the forward pass: leave room for gradients).

    **Returns:**

    `vmap(fn)(batch)` (leading axis: the members, sharded over the mesh), or its sum
    or mean over the members.

    **Example:**

    ```python
    pendulum = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
    theta0 = jnp.linspace(0.1, 1.5, 1000)

    def loss(length):
        model = eqx.tree_at(lambda m: m.length, pendulum, length)
        angle = lambda th: sciad.simulate(
            model, jnp.stack([th, 0.0]), dt=0.01, n_steps=100).y1[0]
        return sciad.ensemble(lambda th: angle(th) ** 2, theta0, reduce="mean")

    value, grad = jax.jit(jax.value_and_grad(loss))(1.0)
    ```
    """
    if not callable(fn):
        raise TypeError(f"sciad.ensemble: fn must be callable; got {fn!r}.")
    if reduce not in _REDUCE:
        raise ValueError(f"sciad.ensemble: reduce must be None, 'sum' or 'mean'; got {reduce!r}.")
    if chunk_size is not None and memory_budget is not None:
        raise ValueError("sciad.ensemble: give chunk_size or memory_budget, not both.")
    if chunk_size is not None:
        chunk_size = check_int(chunk_size, "sciad.ensemble: chunk_size")
    if memory_budget is not None:
        memory_budget = check_int(memory_budget, "sciad.ensemble: memory_budget")
    n = _batch_size(batch)
    devices = _mesh(mesh)
    if memory_budget is not None:
        per_member = _bytes_per_member(fn, batch, n, reduce)
        chunk_size = int(memory_budget // per_member)
        if chunk_size < 1:
            raise ValueError(
                f"sciad.ensemble: memory_budget={memory_budget} bytes is below one member's "
                f"estimated use ({per_member:.0f} bytes)."
            )
    total = -(-n // devices.size) * devices.size
    n_chunks, chunk = _layout(total // devices.size, chunk_size)
    mask = np.arange(total) < n
    leaves = jax.tree.leaves(batch)
    if all(is_concrete(x) for x in leaves):
        # Pad on the host and place each device's members on it directly (the same call
        # on every process builds the global array from each process's copy).
        where = NamedSharding(devices, PartitionSpec(devices.axis_names))
        batch = jax.device_put(jax.tree.map(lambda x: _pad(x, total), batch), where)
        mask = jax.device_put(mask, where)
    out = _sharded(fn, batch, mask, devices, n_chunks, chunk, reduce)
    if reduce == "mean":
        return jax.tree.map(lambda o: o / n, out)
    if reduce is None and total > n:
        # jax.Array shards evenly, so a result of n members cannot stay split over the
        # devices: the un-padded result is gathered (a multiple of the device count
        # keeps it sharded).
        return jax.tree.map(lambda o: o[:n], out)
    return out


__all__ = ["ensemble"]

"""How a fixed-step run is differentiated: the loop strategy is an argument of `simulate`."""

import abc
from collections.abc import Callable
import functools
import math

import equinox as eqx
import jax
from jax.custom_derivatives import SymbolicZero
import jax.numpy as jnp
import numpy as np

from ._types import Anything

Carry = Anything


def _scan(body: Callable[[Carry], Carry], carry: Carry, length: int) -> Carry:
    """`length` applications of `body` as one `lax.scan`."""
    if length == 0:
        return carry
    return jax.lax.scan(lambda c, _: (body(c), None), carry, None, length=length)[0]


class AbstractAdjoint(eqx.Module):
    """How `sciad.simulate` runs its loop, and so how reverse mode stores the run.

    Every adjoint here is built from `lax.scan` and `jax.checkpoint`, so every one
    composes with `jit`, `vmap`, `grad`, `jvp`, `jacfwd`, Hessians and grad of grad.
    They differ only in the memory/compute trade-off of reverse mode.

    **Example:**

    ```python
    grad = jax.grad(lambda k: sciad.simulate(model(k), y0, dt=0.01, n_steps=10**5,
                                             adjoint=sciad.CheckpointAdjoint(levels=3)).y1[0])
    ```
    """

    @abc.abstractmethod
    def loop(self, body: Callable[[Carry], Carry], carry: Carry, length: int) -> Carry:
        """Apply `body` `length` times (a static Python int) to `carry`."""

    def save_loop(
        self,
        body: Callable[[Carry, Anything], tuple[Carry, Anything]],
        carry: Carry,
        xs: Anything,
        length: int,
    ) -> tuple[Carry, Anything]:
        """`jax.lax.scan(body, carry, xs, length=length)` over the save intervals of a
        run: each `body` call runs one interval (its steps through
        [`loop`][sciad.AbstractAdjoint.loop]) and returns what is saved at its end. The
        adjoint decides what reverse mode stores of each interval.

        **Arguments:** `body(carry, x) -> (carry, saved)`; `carry`; `xs` (or `None`);
        `length`, a static Python int.

        **Returns:** `(carry, saved values stacked along a new leading axis)`.

        Default: a plain scan (every interval's intermediates are stored).
        """
        return jax.lax.scan(body, carry, xs, length=length)

    def steps(
        self, step: Callable[[Carry], Carry], carry: Carry, length: int, n_blocks: int
    ) -> Carry:
        """`length` applications of `step` to `carry`: one block of steps (a few
        dozen), of at most `n_blocks` in the run. The adjoint decides how derivatives
        see it. Default: a plain scan.

        **Arguments:** `step(carry) -> carry`; `carry`; `length` and `n_blocks`, static
        Python ints.

        **Returns:** the carry after `length` steps.
        """
        return _scan(step, carry, length)


class DirectAdjoint(AbstractAdjoint):
    """Store everything: one `lax.scan`; reverse mode keeps every step's state.

    No recomputation, but memory O(n_steps): for 100,000 velocity-Verlet steps of a
    1,000-dimensional chain (float64) the gradient needs 763 MiB, against 15 MiB for
    `CheckpointAdjoint` — and on a 2-core CPU it was not faster (0.72 s against
    0.57 s; see docs/benchmarks.md). Use it for short runs. Forward mode costs no
    memory either way.

    **Example:** `sciad.simulate(model, y0, dt=0.01, n_steps=100, adjoint=sciad.DirectAdjoint())`
    """

    def loop(self, body: Callable[[Carry], Carry], carry: Carry, length: int) -> Carry:
        """A plain scan."""
        return _scan(body, carry, length)


class CheckpointAdjoint(AbstractAdjoint):
    """Checkpointing: reverse mode stores a few states of the run and recomputes the
    rest, with a schedule chosen from a memory budget or a fixed nesting depth.

    The unit of the schedule is a block of about 32 steps (the non-finite check's
    granularity; a divisor of the step count near 32 where there is one).

    **With `memory`** (bytes), the schedule is chosen, before tracing the loop, from
    the bytes reverse mode would store per block (the residuals of `jax.vjp` of one
    block, measured by tracing it) and per stored state:

    - if storing every block's residuals fits, everything is stored (as
      `DirectAdjoint`: no recomputation);
    - else one level of checkpoints with the smallest chunks of blocks that fit (one
      extra forward pass; short chunks keep their residuals in cache, and were the
      fastest measured: for a pendulum at 100,000 steps in 1 MiB, 2× faster than
      `DirectAdjoint`, docs/benchmarks.md);
    - else the fewest deeper levels whose stored states fit, with the chunk sizes
      that need the least memory at that depth.

    **Small states: Jacobians instead of intermediates.** With `memory`, a run whose
    floats (state and integrator state) and perturbed parameters are few (16 numbers
    or fewer together, e.g. a pendulum and its three parameters) has each block's
    Jacobian accumulated as it runs: the block is run once, keeping its states, every
    step's Jacobian is computed by forward mode at once (vectorised over the block),
    and their product is what reverse mode stores (n_floats × (n_floats + n_params)
    numbers a block, when all blocks' fit the budget), so the transposed run only
    multiplies by it. For such states this is much cheaper than reverse mode through
    the steps: a pendulum's gradient through 100,000 RK4 steps cost 4.0 forward runs
    with 0.25 MiB, against 10.8 with checkpoints alone and 17.7 for `DirectAdjoint` (9.2
    MiB) (docs/benchmarks.md). Forward mode through such a block takes one direction
    per float and parameter; it is a `jax.custom_jvp`, so every transform composes.

    A budget too small for any depth up to 8 is a `ValueError` that names the least
    budget that works. The estimate is conservative (per trajectory; under `vmap`, per
    batch element). So small problems cost about as little as `DirectAdjoint`, and
    large ones stay within the budget.

    **With `levels`** (the default, `levels=2`, when `memory` is not given): nested
    checkpointing, memory O(levels · n^(1/levels)). The run is split into chunks of
    about n^((levels-1)/levels) units; only the chunk boundaries are stored, and each
    chunk is recomputed (recursively) during the backward pass. Reverse mode costs
    about `levels` forward passes. With `levels=2`, 100,000 steps are 3,125 blocks in
    chunks of 56 blocks: a gradient through 100,000 velocity-Verlet steps of a
    1,000-dimensional chain needs 15 MiB instead of `DirectAdjoint`'s 763 MiB
    (measured; docs/benchmarks.md).

    Built on `jax.checkpoint` of `lax.scan` (and, for the Jacobians, a `jax.custom_jvp`
    whose rule is forward mode), so forward mode and every higher order compose
    (unlike diffrax's `RecursiveCheckpointAdjoint`). The nested uniform
    schedules reach about (s/r)^r blocks with s stored states and r recomputations,
    against the binomial C(s + r, r) of Griewank–Walther's revolve, which needs a
    non-uniform, unrolled schedule.
    References: Griewank & Walther, *Evaluating Derivatives* (2008), ch. 12
    (checkpointing) and ch. 10 (Jacobian preaccumulation).

    **Arguments:**

    - `levels`: nesting depth, at least 1 (1 stores every step, like `DirectAdjoint`).
      Default 2 when `memory` is not given.
    - `memory`: a budget in bytes for what reverse mode stores of the run (an int > 0),
      instead of `levels`.

    **Example:**

    ```python
    sciad.simulate(model, y0, dt=0.01, n_steps=10**5, adjoint=sciad.CheckpointAdjoint(levels=3))
    sciad.simulate(model, y0, dt=0.01, n_steps=10**5, adjoint=sciad.CheckpointAdjoint(memory=2**20))
    ```
    """

    levels: int | None = eqx.field(default=None, static=True)
    memory: int | None = eqx.field(default=None, static=True)

    def __check_init__(self):
        if self.levels is not None and (
            isinstance(self.levels, bool) or not isinstance(self.levels, int) or self.levels < 1
        ):
            raise ValueError(
                f"CheckpointAdjoint(levels=...) must be an int >= 1, got {self.levels!r}."
            )
        if self.memory is not None:
            if (
                isinstance(self.memory, bool)
                or not isinstance(self.memory, (int, np.integer))
                or self.memory <= 0
            ):
                raise ValueError(
                    "CheckpointAdjoint(memory=...) must be a positive int (bytes), got "
                    f"{self.memory!r}."
                )
            if self.levels is not None:
                raise ValueError(
                    "CheckpointAdjoint takes levels or memory, not both: with memory the "
                    "schedule (and so the depth) is chosen from the budget."
                )

    def loop(self, body: Callable[[Carry], Carry], carry: Carry, length: int) -> Carry:
        """Checkpointed scans, nested as the budget or `levels` says."""
        if self.memory is None:
            return _checkpointed(body, carry, length, _uniform_chunks(length, self.levels or 2))
        return _checkpointed(body, carry, length, _plan(body, carry, length, self.memory))

    def save_loop(
        self,
        body: Callable[[Carry, Anything], tuple[Carry, Anything]],
        carry: Carry,
        xs: Anything,
        length: int,
    ) -> tuple[Carry, Anything]:
        """A scan over the save intervals. Each interval is checkpointed (reverse mode
        stores its start and its saved values, and recomputes it), unless storing every
        interval fits the `memory` budget."""
        if self.memory is not None and length * _step_bytes(body, carry, xs) <= self.memory:
            return jax.lax.scan(body, carry, xs, length=length)
        return jax.lax.scan(jax.checkpoint(body, prevent_cse=False), carry, xs, length=length)

    def steps(
        self, step: Callable[[Carry], Carry], carry: Carry, length: int, n_blocks: int
    ) -> Carry:
        """With `memory`: the block's Jacobian accumulated by forward mode where its
        state and active inputs are few (`_MAX_COLUMNS`) and `n_blocks` Jacobians fit
        the budget; else a plain scan."""
        n_state = sum(math.prod(jnp.shape(x)) for x in jax.tree.leaves(carry) if _inexact(x))
        if self.memory is None or length < 1 or n_state > _MAX_COLUMNS:
            return _scan(step, carry, length)
        fn, consts = jax.closure_convert(step, carry)
        limits = (_MAX_COLUMNS, int(self.memory) // max(n_blocks, 1), length)
        return _preaccumulated(limits, fn, carry, *consts)


# Forward-mode directions a preaccumulated block may take: its cost grows with them.
_MAX_COLUMNS = 16


def _inexact(x: Anything) -> bool:
    return jnp.issubdtype(jnp.result_type(x), jnp.inexact)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def _preaccumulated(limits: tuple[int, int, int], fn: Callable, carry: Carry, *consts: Anything):
    """`limits[2]` steps `carry = fn(carry, *consts)`, whose derivative is the
    Jacobian of the block with respect to the carry's floats and the perturbed
    `consts`, computed by forward mode, when there are at most `limits[0]` of them
    and the Jacobian takes at most `limits[1]` bytes; else the plain derivative.
    Under reverse mode the Jacobian is what is stored: the transposed run only
    multiplies by it."""
    return _scan(lambda c: fn(c, *consts), carry, limits[2])


def _preaccumulated_jvp(limits, fn, primals, tangents):
    max_columns, max_bytes, length = limits
    carry, consts = primals[0], primals[1:]
    dcarry, dconsts = tangents[0], tangents[1:]
    zero = lambda t: isinstance(t, SymbolicZero)  # noqa: E731
    cflat, ctree = jax.tree.flatten(carry)
    dcflat = jax.tree.leaves(dcarry, is_leaf=zero)
    floats = [i for i, x in enumerate(cflat) if _inexact(x)]
    params = [
        i
        for i, (x, t) in enumerate(zip(consts, dconsts, strict=True))
        if not zero(t) and _inexact(x)
    ]
    dtypes = {jnp.result_type(cflat[i]) for i in floats} | {
        jnp.result_type(consts[i]) for i in params
    }
    n_c = sum(math.prod(jnp.shape(cflat[i])) for i in floats)
    n_p = sum(math.prod(jnp.shape(consts[i])) for i in params)
    dtype = next(iter(dtypes)) if len(dtypes) == 1 else None
    fits = (
        dtype is not None
        and n_c > 0
        and jnp.issubdtype(dtype, jnp.floating)
        and n_c + n_p <= max_columns
        and n_c * (n_c + n_p) * np.dtype(dtype).itemsize <= max_bytes
    )
    if not fits:  # the plain derivative of the block
        dense = [
            jnp.zeros(jnp.shape(x), jnp.result_type(x))
            if zero(t) and _inexact(x)
            else np.zeros(jnp.shape(x), jax.dtypes.float0)
            if zero(t)
            else t
            for x, t in zip(
                jax.tree.leaves(primals), jax.tree.leaves(tangents, is_leaf=zero), strict=True
            )
        ]
        dense_tree = jax.tree.unflatten(jax.tree.structure(primals), dense)
        return jax.jvp(lambda c, *k: _scan(lambda c: fn(c, *k), c, length), primals, dense_tree)

    def ravel(leaves, idx):
        return jnp.concatenate([jnp.ravel(leaves[i]) for i in idx])

    def unravel(z, leaves, idx):
        leaves = list(leaves)
        sizes = [math.prod(jnp.shape(leaves[i])) for i in idx]
        for i, a, b in zip(idx, np.cumsum([0] + sizes)[:-1], np.cumsum(sizes), strict=True):
            leaves[i] = z[a:b].reshape(jnp.shape(leaves[i]))
        return leaves

    def step_floats(z, c):
        """The step's floats after one step, as a function of z = (its floats, the
        perturbed parameters), the rest of the carry `c` held."""
        c = jax.tree.unflatten(ctree, unravel(z[:n_c], jax.tree.leaves(c), floats))
        k = unravel(z[n_c:], consts, params)
        return ravel(jax.tree.leaves(fn(c, *k)), floats)

    # The run itself, keeping each step's carry; then every step's Jacobian at once
    # (vectorised over the block: no sequential dependence), and their product.
    def record(c, _):
        return fn(c, *consts), c

    out, cs = jax.lax.scan(record, carry, None, length=length)
    zp = ravel(consts, params) if params else jnp.zeros((0,), dtype)
    jac = jax.vmap(
        lambda c: jax.jacfwd(step_floats)(
            jnp.concatenate([ravel(jax.tree.leaves(c), floats), zp]), c
        )
    )(cs)  # [length, n_c, n_c + n_p]: each step's (A_k | B_k)

    # The block's [A | B] = Π (A_k | B_k), composed step after step: one product a step.
    def compose(m, jac_k):
        return jac_k[:, :n_c] @ m + jnp.pad(jac_k[:, n_c:], ((0, 0), (n_c, 0))), None

    m0 = jnp.eye(n_c, n_c + n_p, dtype=dtype)
    m, _ = jax.lax.scan(compose, m0, jac)
    dc = jnp.concatenate(
        [
            jnp.zeros(math.prod(jnp.shape(cflat[i])), dtype)
            if zero(dcflat[i])
            else jnp.ravel(dcflat[i])
            for i in floats
        ]
    )
    dout = m @ (jnp.concatenate([dc, ravel(list(dconsts), params)]) if params else dc)
    olv = jax.tree.leaves(out)
    dleaves = unravel(dout, olv, floats)
    douts = [
        dleaves[i] if i in floats else SymbolicZero(jax.typeof(o).to_tangent_aval())
        for i, o in enumerate(olv)
    ]
    return out, jax.tree.unflatten(jax.tree.structure(out), douts)


_preaccumulated.defjvp(_preaccumulated_jvp, symbolic_zeros=True)


def _nbytes(tree: Anything) -> int:
    return sum(
        math.prod(x.shape) * np.dtype(x.dtype).itemsize
        for x in jax.tree.leaves(tree)
        if hasattr(x, "shape") and hasattr(x, "dtype")
    )


def _residual_bytes(body: Callable, *args: Anything) -> int:
    """The bytes reverse mode stores for one call `body(*args)`: the residuals of its
    `jax.vjp`, measured by tracing (nothing runs)."""

    def pullback(*a):
        # Closed-over parameters are differentiated too: their residuals count.
        fn, consts = jax.closure_convert(body, *a)
        return jax.vjp(fn, *a, *consts)[1]

    return _nbytes(jax.eval_shape(pullback, *args))


def _step_bytes(body: Callable, carry: Carry, xs: Anything) -> int:
    """`_residual_bytes` of one iteration of a scan of `body` over `xs`."""
    x = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape[1:], a.dtype), xs)
    return _residual_bytes(body, carry, x)


_MAX_LEVELS = 8


def _uniform_chunks(length: int, levels: int) -> tuple[int, ...]:
    """The chunk sizes of `levels`-deep nesting with chunks of about length^((l-1)/l)
    units: a divisor of `length` within a factor 1.5 where there is one, since a
    padded last chunk puts the step under a `cond` (the gradient of 200 steps of
    dm_control's walker compiled in 14 s with one, 10 s without: docs/benchmarks.md)."""
    chunks = []
    while levels > 1 and length > 2:
        chunk = _near_divisor(length, length ** ((levels - 1) / levels))
        chunks.append(chunk)
        length, levels = chunk, levels - 1
    return tuple(chunks)


def _near_divisor(length: int, target: float) -> int:
    """A divisor of `length` within a factor 1.5 of `target` (the nearest), else
    `ceil(target)`: a divisor needs no padded, skipped units."""
    target = min(max(target, 1.0), float(length))
    lo, hi = max(1, math.floor(target / 1.5)), min(length, math.ceil(target * 1.5))
    found = [d for d in range(lo, hi + 1) if length % d == 0] if hi - lo < 10**6 else []
    return min(found, key=lambda d: abs(math.log(d / target))) if found else math.ceil(target)


def _balanced_chunks(length: int, levels: int, carry_bytes: int, unit_bytes: int) -> tuple:
    """Chunk sizes of `levels`-deep nesting storing the least: with n₁ … n_{l−1} stored
    states per level and n_l units stored with residuals (n₁⋯n_l = length), the memory
    C·Σnᵢ + R·n_l is least when every term is equal, K = (length·C^(l−1)·R)^(1/l)."""
    chunks = []
    while levels > 1 and length > 1:
        k = (length * carry_bytes ** (levels - 1) * unit_bytes) ** (1 / levels)
        chunk = _near_divisor(length, length / max(k / carry_bytes, 1.0))
        chunks.append(chunk)
        length, levels = chunk, levels - 1
    return tuple(chunks)


def _stored_bytes(length: int, chunks: tuple, carry_bytes: int, unit_bytes: int) -> int:
    """What reverse mode stores at most under the schedule `chunks`: each level's
    chunk boundaries, and the innermost chunk's residuals."""
    total = 0
    for chunk in chunks:
        total += -(-length // chunk) * carry_bytes
        length = chunk
    return total + length * unit_bytes


def _smallest_chunk(length: int, memory: int, carry_bytes: int, unit_bytes: int) -> int | None:
    """The smallest chunk c (units recomputed together) with one level of checkpoints
    that fits: ⌈length/c⌉·C + c·R ≤ memory; a divisor of `length` within a factor 2
    of it if there is one (no padded units, each a skipped `cond`). `None` if none fits."""
    fits = [
        c
        for c in range(1, min(length, 10**5) + 1)
        if -(-length // c) * carry_bytes + c * unit_bytes <= memory
    ]
    if not fits:
        return None
    divisors = [c for c in fits if length % c == 0 and c <= 2 * fits[0]]
    return divisors[0] if divisors else fits[0]


def _plan(body: Callable, carry: Carry, length: int, memory: int) -> tuple:
    """The schedule for a `memory` budget: store everything if it fits; else one level
    of checkpoints with the smallest chunks that fit (short recomputed chunks keep their
    residuals in cache: the fastest measured, docs/benchmarks.md); else the fewest
    levels whose least-memory chunking fits."""
    unit, state = _residual_bytes(body, carry), _nbytes(carry)
    if length * unit <= memory:
        return ()
    chunk = _smallest_chunk(length, memory, state, unit)
    if chunk is not None:
        return (chunk,)
    best = None
    for levels in range(3, _MAX_LEVELS + 1):
        chunks = _balanced_chunks(length, levels, state, unit)
        need = _stored_bytes(length, chunks, state, unit)
        if need <= memory:
            return chunks
        best = need if best is None else min(best, need)
    raise ValueError(
        f"CheckpointAdjoint(memory={memory}) is too small for this run: {length} blocks "
        f"of {unit} bytes of residuals each, with {state}-byte states, need at least "
        f"{best} bytes (at {_MAX_LEVELS} levels). Raise the budget."
    )


def _checkpointed(body: Callable, carry: Carry, length: int, chunks: tuple) -> Carry:
    """`length` applications of `body`, checkpointed in nested chunks of `chunks[0]`,
    `chunks[1]`, … units (no chunks: one stored scan)."""
    if not chunks or length <= 2:
        return _scan(body, carry, length)
    chunk = chunks[0]
    n_chunks = -(-length // chunk)
    if n_chunks * chunk == length:
        run = body
    else:
        # The last chunk is padded and its extra units skipped by a `cond` on a
        # counter, rather than run as a shorter chunk: one copy of `body` in the
        # compiled program, not two. The counter is not batched under `vmap`, so the
        # `cond` stays a branch (it is not turned into a select of both sides).
        carry = (carry, jnp.asarray(0, jnp.int32))

        def run(ci):
            c, i = ci
            return jax.lax.cond(i < length, body, lambda c: c, c), i + 1

    def run_chunk(c):
        return _checkpointed(run, c, chunk, chunks[1:])

    carry = _scan(jax.checkpoint(run_chunk, prevent_cse=False), carry, n_chunks)
    return carry if run is body else carry[0]

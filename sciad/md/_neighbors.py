"""Fixed-capacity neighbour lists (Verlet lists built with cell lists) for jit, vmap and grad."""

import itertools
import math
from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float, Int
import numpy as np

from .._core._batching import lazy_update
from .._core._results import RESULTS
from .._core._types import BoolScalar, Positions
from ._space import AbstractSpace

# Relative safety margin between the cell edge and cutoff + skin, so that round-off in a
# float32 box (the widths of a triclinic cell go through an inverse) never flags a box
# that was exactly large enough at `create` time.
_EDGE_MARGIN = 1e-5
# FreeSpace: headroom of the grid over the initial bounding box, as a fraction of it.
_FREE_HEADROOM = 0.25
# FreeSpace: a grid with more cells than this many per particle falls back to brute force.
_FREE_MAX_CELLS_PER_PARTICLE = 8


class NeighborList(eqx.Module):
    """A fixed-capacity list of the pairs closer than `cutoff + skin`, each pair once.

    Pair format: slot `k` holds the pair `(i[k], j[k])` with `i[k] < j[k]`. The first
    `min(count, capacity)` slots are real pairs; the rest are padding with
    `i = j = n`, one past the last particle. Indexing positions with the padding
    clamps to particle `n - 1` in JAX (so `dr = 0` there): mask it with
    [`mask`][sciad.md.NeighborList.mask] *and* use the double-`where` trick before
    any `sqrt` or `1/r`, so that gradients stay finite.

    The list holds indices only; it is built under `jax.lax.stop_gradient`, and
    gradients reach positions (and the box) through the distances you compute from
    it. It stays valid, with `skin` to spare, until some particle has moved more than
    `skin / 2` from `reference` ([`needs_rebuild`][sciad.md.needs_rebuild]).

    **Fields:**

    - `i`, `j`: shape `(capacity,)`, int32 particle indices, `i < j`, padding `n`.
    - `reference`: shape `(n, d)`, the positions the list was built from (length).
    - `count`: shape `()`, int32, the number of pairs within `cutoff + skin` (it may
      exceed `capacity`: then pairs were dropped).
    - `did_overflow`: shape `()`, bool: the pair count exceeded `capacity`, or a cell
      held more than `max_per_cell` particles, or the box (or, in free space, the
      particle cloud) no longer fits the static cell grid, or a periodic box became
      too narrow for the minimum image (width ≤ 2 cutoff, or `cutoff + skin` past its
      [`exact_image_reach`][sciad.md.AbstractSpace.exact_image_reach]). Pairs are then
      missing:
      rebuild with a new [`NeighborListBuilder`][sciad.md.NeighborListBuilder].
    - `cutoff`, `skin` (length) and `capacity` (pairs): static.

    **Example:**

    ```python
    builder = sciad.md.NeighborListBuilder.create(space, r, cutoff=2.5, skin=0.3)
    nbrs = builder.build(space, r)
    dr = jax.vmap(space.displacement)(r[nbrs.i], r[nbrs.j])
    m = nbrs.mask()
    r2 = jnp.where(m, jnp.sum(dr**2, axis=-1), 1.0)       # double-where: safe at padding
    energy = jnp.sum(jnp.where(m & (r2 < 2.5**2), 4 * (r2**-6 - r2**-3), 0.0))
    ```

    **Reference:** L. Verlet, *Phys. Rev.* 159, 98 (1967); M. P. Allen and D. J.
    Tildesley, *Computer Simulation of Liquids*, 2nd ed. (OUP 2017), §5.3.
    """

    i: Int[Array, " capacity"]
    j: Int[Array, " capacity"]
    reference: Float[Array, "n d"]
    count: Int[Array, ""]
    did_overflow: Bool[Array, ""]
    cutoff: float = eqx.field(static=True)
    skin: float = eqx.field(static=True)
    capacity: int = eqx.field(static=True)

    def mask(self) -> Bool[Array, "*batch capacity"]:
        """Which slots hold real pairs.

        **Returns:** shape `(capacity,)` (or `(*batch, capacity)` for a batched list),
        bool: `True` for the real pairs, `False` for the padding.

        **Example:** `n_pairs = jnp.sum(nbrs.mask())`
        """
        return self.i < self.reference.shape[-2]

    def result(self) -> RESULTS:
        """The run-time outcome: `RESULTS.neighbor_overflow` if the list overflowed.

        **Returns:** a [`RESULTS`][sciad.RESULTS] code, `successful` otherwise.

        **Example:** `ok = nbrs.result() == sciad.RESULTS.successful`
        """
        return RESULTS.where(self.did_overflow, RESULTS.neighbor_overflow, RESULTS.successful)


def _check_space(space: AbstractSpace) -> None:
    if not isinstance(space, AbstractSpace):
        raise TypeError(f"space must be a sciad.md space; got {type(space).__name__}.")


def _sq_dist(space: AbstractSpace, ds: Array) -> Array:
    """Squared distances of coordinate differences `ds` (..., d): fractional with
    minimum image in periodic spaces, Cartesian in free space."""
    if space.periodic:
        ds = space.from_fractional(ds - jnp.round(ds))
    return jnp.sum(ds * ds, axis=-1)


def _box_too_small(space: AbstractSpace, cutoff: float, rc: float) -> BoolScalar:
    """Whether the box has become too narrow for the list: two images of a pair within
    `cutoff`, or `cutoff + skin` past the distance up to which minimum image is exact
    (a pair in between could be missed)."""
    return (2 * cutoff > space.min_width()) | (rc > space.exact_image_reach())


def _check_reach(space: AbstractSpace, cutoff: float, rc: float) -> None:
    """At `create`: the cut-off below half the box, and `cutoff + skin` within the
    space's exact minimum-image reach."""
    space.check_range(cutoff, "cutoff")
    reach = float(np.asarray(space.exact_image_reach(), dtype=np.float64))
    if not rc <= reach:
        raise ValueError(
            f"cutoff + skin = {rc:.6g} must be at most {reach:.6g}, the distance up to which "
            f"the {type(space).__name__}'s minimum image is exact (half its smallest "
            "width): a pair between the two could be listed at a farther image and be "
            "missed. Use a smaller skin or cutoff, or a larger box."
        )


def _row_prefix(mask: Bool[Array, "n k"]) -> Int[Array, "n k"]:
    """Inclusive prefix counts along each row, by blocked triangular matmuls.

    XLA's CPU cumsum costs ~10 ns per element; two small float32 matmuls (exact for
    counts below 2^24) cost well under 1 ns.
    """
    n, k = mask.shape
    b = 32
    nb = -(-k // b)
    x = jnp.pad(mask.astype(jnp.float32), ((0, 0), (0, nb * b - k))).reshape(n, nb, b)
    within = x @ jnp.triu(jnp.ones((b, b), jnp.float32))
    before = within[..., -1] @ jnp.triu(jnp.ones((nb, nb), jnp.float32), 1)
    return (within + before[..., None]).reshape(n, nb * b)[:, :k].astype(jnp.int32)


def _compact(
    mask: Bool[Array, "n k"], cand: Int[Array, "n k"], n: int, capacity: int
) -> tuple[Array, Array, Array, Array]:
    """The pairs (row, cand[row, col]) where `mask`, in row-major order, as (i, j) with
    i < j in `capacity` slots (padding n); also the count and whether it overflowed.

    One scatter of the source slot (the costly step), then gathers.
    """
    rows, k = mask.shape
    inrow = _row_prefix(mask)
    row_count = inrow[:, -1]
    row_start = jnp.cumsum(row_count, dtype=jnp.int32) - row_count
    count = jnp.sum(row_count, dtype=jnp.int32)
    pos = row_start[:, None] + inrow - 1
    target = jnp.where(mask & (pos < capacity), pos, capacity).reshape(-1)
    total = rows * k
    src = (
        jnp.full((capacity,), total, jnp.int32)
        .at[target]
        .set(jnp.arange(total, dtype=jnp.int32), mode="drop", unique_indices=True)
    )
    real = src < total
    src = jnp.minimum(src, total - 1)
    a, b = src // k, cand.reshape(-1)[src]
    i = jnp.where(real, jnp.minimum(a, b), n)
    j = jnp.where(real, jnp.maximum(a, b), n)
    return i, j, count, count > capacity


def _stencil(grid: tuple[int, ...], periodic: bool) -> tuple[np.ndarray, bool]:
    """Static cell offsets, shape (S, d), and whether they are a half stencil.

    A half stencil (the offsets after 0 in lexicographic order, the particle's own cell
    handled separately) visits each pair of cells once; it needs ≥ 3 cells along each
    periodic axis, otherwise a cell and its image coincide. Small periodic grids use the
    full stencil with no cell visited twice.
    """
    if not periodic or min(grid) >= 3:
        full = np.array(list(itertools.product((-1, 0, 1), repeat=len(grid))), dtype=np.int32)
        return full[full.shape[0] // 2 + 1 :], True
    per_axis = []
    for nk in grid:
        if nk == 1:
            per_axis.append((0,))
        elif nk == 2:
            per_axis.append((0, 1))  # -1 ≡ +1 (mod 2)
        else:
            per_axis.append((-1, 0, 1))
    return np.array(list(itertools.product(*per_axis)), dtype=np.int32), False


def _np_cell_index(
    space: AbstractSpace, r: np.ndarray, grid: tuple[int, ...], rc: float
) -> np.ndarray:
    """Host-side binning at `create` time (mirrors the traced binning in `build`)."""
    g = np.array(grid)
    if space.periodic:
        s = r @ np.linalg.inv(np.asarray(space.cell_matrix(), dtype=np.float64))
        s = s - np.floor(s)
        idx = np.floor(s * g).astype(np.int64)
    else:
        idx = np.floor((r - r.min(axis=0)) / rc).astype(np.int64)
    idx = np.clip(idx, 0, g - 1)
    return np.asarray(np.ravel_multi_index(tuple(idx.T), grid))


class NeighborListBuilder(eqx.Module):
    """Builds [`NeighborList`][sciad.md.NeighborList]s with a static cell grid.

    Make one with [`create`][sciad.md.NeighborListBuilder.create] from a concrete
    configuration; every field is static (Python ints and floats), so `build` traces
    once and then runs under `jax.jit`, `jax.vmap` and `jax.grad` with traced
    positions *and* a traced box.

    The algorithm (cell list, O(N) work plus one integer sort of N cell indices):
    particles are binned into a grid of cells whose edge is at least `cutoff + skin`
    (in fractional coordinates for periodic boxes: the cell's perpendicular width
    along each lattice direction is split into `grid[k]` slabs), with at most
    `max_per_cell` particles per cell; each particle gathers the candidates from its
    3^d neighbouring cells, keeps those `j > i` with minimum-image distance below
    `cutoff + skin`, and the pairs are compacted into `capacity` slots. On a periodic
    axis with only 1 or 2 cells the stencil is shortened so that no cell is visited
    twice. Any overflow is reported in `NeighborList.did_overflow`, never hidden.

    **Fields (all static):** `cutoff`, `skin` (length), `capacity` (pairs),
    `max_per_cell` (particles), `grid` (cells per axis, or `None` for the O(N²)
    all-pairs build), `space_type` (the space class the grid was made for).

    **Example:**

    ```python
    space = sciad.md.PeriodicBox(jnp.array([10.0, 10.0, 10.0]))
    builder = sciad.md.NeighborListBuilder.create(space, r0, cutoff=2.5, skin=0.3)
    nbrs = jax.jit(builder.build)(space, r0)
    nbrs = sciad.md.update(builder, nbrs, space, r1)   # rebuilds only if needed
    ```

    **Reference:** M. P. Allen and D. J. Tildesley, *Computer Simulation of Liquids*,
    2nd ed. (OUP 2017), §5.3 (Verlet lists) and §5.3.2 (cell structures).
    """

    cutoff: float = eqx.field(static=True)
    skin: float = eqx.field(static=True)
    capacity: int = eqx.field(static=True)
    max_per_cell: int = eqx.field(static=True)
    grid: tuple[int, ...] | None = eqx.field(static=True)
    space_type: type = eqx.field(static=True)

    @classmethod
    def create(
        cls,
        space: AbstractSpace,
        positions: Float[ArrayLike, "n d"],
        *,
        cutoff: float,
        skin: float,
        capacity: int | None = None,
        capacity_factor: float = 1.5,
        max_per_cell: int | None = None,
        method: Literal["auto", "cell", "brute"] = "auto",
    ) -> "NeighborListBuilder":
        """Choose the static configuration from a concrete space and configuration.

        Call it outside `jit` (it reads the values of `space` and `positions`).

        - Periodic boxes: `grid[k] = floor(w_k / (cutoff + skin))` cells along lattice
          direction `k`, where `w_k` is the box's perpendicular width
          ([`widths`][sciad.md.AbstractSpace.widths]; `Lₖ` for a
          [`PeriodicBox`][sciad.md.PeriodicBox]). Needs `cutoff ≤ min_width / 2`
          (minimum image) and `cutoff + skin` within the space's
          [`exact_image_reach`][sciad.md.AbstractSpace.exact_image_reach] (half the
          smallest width of a triclinic cell; no limit for a `PeriodicBox`), or a pair
          could move inside `cutoff` unlisted.
        - [`FreeSpace`][sciad.md.FreeSpace]: cells of edge `cutoff + skin` on a grid
          anchored at the traced minimum corner of the positions, covering their
          initial bounding box plus 25% (and two cells) of headroom; if the cloud
          grows beyond it, `did_overflow` is set. A grid of more than 8 cells per
          particle (a dilute cloud) falls back to the all-pairs build.

        **Arguments:**

        - `space`: any `sciad.md` space (concrete), e.g. `FreeSpace`, `PeriodicBox`,
          `TriclinicBox`.
        - `positions`: shape `(n, d)`, a representative configuration (length).
        - `cutoff`: the interaction range (length).
        - `skin`: the extra range kept in the list (length, ≥ 0); rebuild when a
          particle has moved `skin / 2`.
        - `capacity`: the number of pair slots; default
          `ceil(capacity_factor × pairs within cutoff + skin in `positions`)`.
        - `capacity_factor`: headroom for the default `capacity` and `max_per_cell`.
        - `max_per_cell`: particle slots per cell; default
          `ceil(capacity_factor × the fullest cell in `positions`)`.
        - `method`: `"cell"` (cell list), `"brute"` (all pairs, O(N²)), or `"auto"`:
          the cell list unless it would examine more candidates per particle than
          there are particles (small or very clustered systems).

        **Returns:** a `NeighborListBuilder`.

        **Example:**

        ```python
        builder = sciad.md.NeighborListBuilder.create(
            sciad.md.PeriodicBox(jnp.array([16.8, 16.8, 16.8])), r, cutoff=2.5, skin=0.3
        )
        ```
        """
        _check_space(space)
        try:
            r = np.asarray(positions, dtype=np.float64)
        except jax.errors.ConcretizationTypeError as e:  # pragma: no cover - message only
            raise ValueError("NeighborListBuilder.create needs concrete positions.") from e
        if r.ndim != 2 or r.shape[0] < 1 or r.shape[1] < 1:
            raise ValueError(f"positions must have shape (n, d), got {r.shape}.")
        if not np.all(np.isfinite(r)):
            raise ValueError("positions must be finite.")
        n, d = r.shape
        cutoff, skin = float(cutoff), float(skin)
        if not cutoff > 0.0 or not skin >= 0.0:
            raise ValueError(f"Need cutoff > 0 and skin >= 0, got {cutoff} and {skin}.")
        if not capacity_factor >= 1.0:
            raise ValueError(f"capacity_factor must be >= 1, got {capacity_factor}.")
        if method not in ("auto", "cell", "brute"):
            raise ValueError(f"method must be 'auto', 'cell' or 'brute', got {method!r}.")
        if capacity is not None and (not isinstance(capacity, (int, np.integer)) or capacity < 1):
            raise ValueError(f"capacity must be a positive int, got {capacity!r}.")
        if max_per_cell is not None and (
            not isinstance(max_per_cell, (int, np.integer)) or max_per_cell < 1
        ):
            raise ValueError(f"max_per_cell must be a positive int, got {max_per_cell!r}.")
        rc = cutoff + skin
        space_type = type(space)
        space.check_positions(r, "positions")

        if space.periodic:
            _check_reach(space, cutoff, rc)
            w = np.asarray(space.widths(), dtype=np.float64)
            grid = tuple(max(1, int(np.floor(wk / (rc * (1.0 + _EDGE_MARGIN))))) for wk in w)
            too_big = False
        else:
            ext = np.ptp(r, axis=0)
            grid = tuple(int(np.floor((1.0 + _FREE_HEADROOM) * e / rc)) + 2 for e in ext)
            too_big = math.prod(grid) > _FREE_MAX_CELLS_PER_PARTICLE * n + 64

        occupancy = np.bincount(_np_cell_index(space, r, grid, rc), minlength=math.prod(grid))
        max_occ = int(occupancy.max())
        if max_per_cell is None:
            max_per_cell = max(1, math.ceil(capacity_factor * max_occ))
        offsets, half = _stencil(grid, space.periodic)
        n_stencil = offsets.shape[0] + half
        if method == "brute" or too_big:
            use_grid = None
        elif method == "cell":
            use_grid = grid
        else:
            use_grid = grid if n_stencil * max_per_cell < n else None

        if capacity is None:
            # Measure the pair count with enough cell slots for this configuration.
            probe = cls(cutoff, skin, 1, max(max_per_cell, max_occ), use_grid, space_type)
            count = int(probe.build(space, jnp.asarray(positions)).count)
            capacity = max(1, min(math.ceil(capacity_factor * count), n * (n - 1) // 2))
        return cls(cutoff, skin, int(capacity), int(max_per_cell), use_grid, space_type)

    def _check(self, space: AbstractSpace, positions: Positions) -> None:
        if type(space) is not self.space_type:
            raise TypeError(
                f"This builder was made for {self.space_type.__name__}, got {type(space).__name__}."
            )
        if self.grid is not None and positions.shape[1] != len(self.grid):
            raise ValueError(
                f"positions have d = {positions.shape[1]}, the grid has d = {len(self.grid)}."
            )

    def build(self, space: AbstractSpace, positions: Positions) -> NeighborList:
        """Build the list from scratch with the cell grid (or all pairs if `grid is None`).

        Traceable: `space` (the box) and `positions` may be traced; works under
        `jax.jit`, `jax.vmap` and `jax.grad` (no gradient flows through it).

        **Arguments:**

        - `space`: a space of the same class as at `create` (its box may differ, e.g.
          traced; `did_overflow` is set if a cell edge has become smaller than
          `cutoff + skin`).
        - `positions`: shape `(n, d)`, Cartesian positions (length); need not be
          wrapped into the box.

        **Returns:** a [`NeighborList`][sciad.md.NeighborList].

        **Example:** `nbrs = jax.jit(builder.build)(space, positions)`
        """
        self._check(space, positions)
        if self.grid is None:
            return self.build_brute_force(space, positions)
        space = jax.lax.stop_gradient(space)
        positions = jax.lax.stop_gradient(positions)
        n, d = positions.shape
        rc = self.cutoff + self.skin
        M = self.max_per_cell
        grid = jnp.asarray(self.grid, dtype=jnp.int32)
        n_cells = math.prod(self.grid)
        strides = jnp.asarray(
            [math.prod(self.grid[k + 1 :]) for k in range(d)], dtype=jnp.int32
        )  # row-major
        periodic = space.periodic
        dtype = positions.dtype

        # 1. Bin the particles.
        if periodic:
            s = space.to_fractional(positions)
            s = s - jnp.floor(s)
            idx = jnp.floor(s * grid.astype(dtype)[None, :]).astype(jnp.int32)
            box_overflow = jnp.any(space.widths() < rc * grid.astype(dtype))
            box_overflow = box_overflow | _box_too_small(space, self.cutoff, rc)
        else:
            s = positions
            origin = jnp.min(positions, axis=0, keepdims=True)
            idx = jnp.floor((positions - origin) / rc).astype(jnp.int32)
            box_overflow = jnp.any(idx >= grid[None, :])
        idx = jnp.clip(idx, 0, grid[None, :] - 1)
        cell = jnp.sum(idx * strides[None, :], axis=1, dtype=jnp.int32)

        # 2. Fill the (cells + 1 empty) × max_per_cell table; rank within cell via a sort.
        order = jnp.argsort(cell, stable=True).astype(jnp.int32)
        sorted_cell = cell[order]
        counts = jnp.zeros((n_cells,), jnp.int32).at[cell].add(1)
        starts = jnp.cumsum(counts, dtype=jnp.int32) - counts
        rank = jnp.arange(n, dtype=jnp.int32) - starts[sorted_cell]
        cell_overflow = jnp.max(counts) > M
        slot = jnp.where(rank < M, sorted_cell * M + rank, (n_cells + 1) * M)
        table = jnp.full(((n_cells + 1) * M,), n, jnp.int32).at[slot].set(order, mode="drop")
        table = table.reshape(n_cells + 1, M)

        # 3. Candidates from the stencil of neighbouring cells.
        stencil, half = _stencil(self.grid, periodic)
        nidx = idx[:, None, :] + jnp.asarray(stencil)[None, :, :]
        if periodic:
            nidx = jnp.mod(nidx, grid[None, None, :])
            ncell = jnp.sum(nidx * strides[None, None, :], axis=-1, dtype=jnp.int32)
        else:
            inside = jnp.all((nidx >= 0) & (nidx < grid[None, None, :]), axis=-1)
            ncell = jnp.where(
                inside, jnp.sum(nidx * strides[None, None, :], axis=-1, dtype=jnp.int32), n_cells
            )
        cand = table[ncell].reshape(n, -1)  # (n, S * M)
        me = jnp.arange(n, dtype=jnp.int32)[:, None]
        if half:  # own cell (j > i) + half the neighbouring cells (every j)
            own = table[cell]
            cand = jnp.concatenate([own, cand], axis=1)
            valid = jnp.concatenate([(own > me) & (own < n), cand[:, M:] < n], axis=1)
        else:
            valid = (cand > me) & (cand < n)

        # 4. Distances (minimum image) and compaction.
        d2 = _sq_dist(space, s[:, None, :] - s[cand])  # padding clamps to n − 1; masked
        keep = valid & (d2 < rc * rc)
        i, j, count, pair_overflow = _compact(keep, cand, n, self.capacity)
        return NeighborList(
            i=i,
            j=j,
            reference=positions,
            count=count,
            did_overflow=pair_overflow | cell_overflow | box_overflow,
            cutoff=self.cutoff,
            skin=self.skin,
            capacity=self.capacity,
        )

    def build_brute_force(self, space: AbstractSpace, positions: Positions) -> NeighborList:
        """Build the list by testing all N² pairs (same output format as `build`).

        Faster than the cell list for small systems (a few hundred particles), and an
        independent reference for it. Memory O(N²).

        **Arguments:**

        - `space`: a space of the same class as at `create` (may be traced).
        - `positions`: shape `(n, d)`, Cartesian positions (length).

        **Returns:** a [`NeighborList`][sciad.md.NeighborList]; `did_overflow` only
        reports a pair count above `capacity`.

        **Example:** `nbrs = builder.build_brute_force(space, positions)`
        """
        if type(space) is not self.space_type:
            raise TypeError(
                f"This builder was made for {self.space_type.__name__}, got {type(space).__name__}."
            )
        space = jax.lax.stop_gradient(space)
        positions = jax.lax.stop_gradient(positions)
        n = positions.shape[0]
        rc = self.cutoff + self.skin
        s = space.to_fractional(positions) if space.periodic else positions
        d2 = _sq_dist(space, s[:, None, :] - s[None, :, :])
        ar = jnp.arange(n, dtype=jnp.int32)
        j_all = jnp.broadcast_to(ar[None, :], (n, n))
        keep = (j_all > ar[:, None]) & (d2 < rc * rc)
        i, j, count, overflow = _compact(keep, j_all, n, self.capacity)
        return NeighborList(
            i=i,
            j=j,
            reference=positions,
            count=count,
            did_overflow=overflow | _box_too_small(space, self.cutoff, rc),
            cutoff=self.cutoff,
            skin=self.skin,
            capacity=self.capacity,
        )


def needs_rebuild(nbrs: NeighborList, space: AbstractSpace, positions: Positions) -> BoolScalar:
    """Whether some particle has moved more than `skin / 2` since the list was built.

    Displacements are minimum-image (`space.displacement`), so wrapping positions
    back into the box does not trigger a rebuild. A deformed box is not detected by
    itself: rebuild explicitly after changing the box other than by scaling positions.

    **Arguments:**

    - `nbrs`: the current [`NeighborList`][sciad.md.NeighborList].
    - `space`: the space (may be traced).
    - `positions`: shape `(n, d)`, current positions (length).

    **Returns:** shape `()`, bool.

    **Example:** `jax.jit(sciad.md.needs_rebuild)(nbrs, space, positions)`
    """
    return max_displacement(space, positions, nbrs.reference) > 0.5 * nbrs.skin


def max_displacement(
    space: AbstractSpace, positions: Positions, reference: Positions
) -> Float[Array, ""]:
    """max_i |r_i − r_i^ref|, with minimum-image displacements (length): how far the
    farthest particle has moved from where a list was built."""
    dr = jax.vmap(space.displacement)(positions, reference)
    return jnp.sqrt(jnp.max(jnp.sum(dr * dr, axis=-1)))


def update(
    builder: NeighborListBuilder,
    nbrs: NeighborList,
    space: AbstractSpace,
    positions: Positions,
) -> NeighborList:
    """Rebuild the list if [`needs_rebuild`][sciad.md.needs_rebuild], else keep it.

    The build only runs when needed, also under `jax.vmap`: each batch element
    rebuilds only when it needs to (a plain `jax.lax.cond` with a batched predicate
    would become a `select` that builds every step, for every element). No gradient
    flows through the rebuild (the list is integer data).
    Overflow is sticky until the next rebuild; check `did_overflow` (or `result()`)
    after a run, and make a larger builder if it is set.

    **Arguments:**

    - `builder`: the [`NeighborListBuilder`][sciad.md.NeighborListBuilder] that made
      `nbrs`.
    - `nbrs`: the current list.
    - `space`: the space (may be traced).
    - `positions`: shape `(n, d)`, current positions (length).

    **Returns:** a [`NeighborList`][sciad.md.NeighborList], rebuilt at `positions` or
    unchanged.

    **Example:**

    ```python
    def step(carry, _):
        r, nbrs = carry
        r = r + dt * velocity(r, nbrs)
        return (r, sciad.md.update(builder, nbrs, space, r)), None
    ```
    """
    return lazy_update(
        needs_rebuild(nbrs, space, positions), builder.build, (space, positions), nbrs
    )


__all__ = ["NeighborList", "NeighborListBuilder", "needs_rebuild", "update"]

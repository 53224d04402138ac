"""Spaces: how displacements are measured (free, periodic orthorhombic, periodic triclinic).

Every space answers the same geometric questions (its dimension, whether it is
periodic, its cell, perpendicular widths, volume, fractional coordinates, how it scales
and deforms), so the rest of `sciad.md` asks the space and never tests its type. A new
periodic space is one class: subclass `AbstractPeriodicSpace`, implement `cell_matrix`
and `scaled`.
"""

import abc
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float
import numpy as np

from .._core._linalg import small_det, small_inv
from .._core._types import Anything, FloatScalar, Positions, RealScalarLike
from .._core._validate import check_positive, is_concrete

Vector = Float[Array, " d"]
Cell = Float[Array, "d d"]
Coordinates = Float[Array, "*batch d"]


class AbstractSpace(eqx.Module):
    """Where particles live: the displacement between two points, and the geometry.

    Positions are Cartesian, shape `(n, d)`. Periodic spaces apply the minimum-image
    convention, valid while the interaction range is at most half the box's smallest
    perpendicular width ([`min_width`][sciad.md.AbstractSpace.min_width]);
    [`check_range`][sciad.md.AbstractSpace.check_range] refuses a longer range before
    any tracing. The box is a differentiable parameter.

    The interface: `periodic`, [`dimension`][sciad.md.AbstractSpace.dimension],
    [`displacement`][sciad.md.AbstractSpace.displacement], `wrap`, and for periodic
    spaces [`cell_matrix`][sciad.md.AbstractSpace.cell_matrix],
    [`widths`][sciad.md.AbstractSpace.widths], `volume`, `to_fractional` /
    `from_fractional`, [`scaled`][sciad.md.AbstractSpace.scaled] and
    [`deformed`][sciad.md.AbstractSpace.deformed]. Free space answers the cell
    questions with a precise `TypeError` (it has no cell and no volume).

    **Example:**

    ```python
    space = sciad.md.PeriodicBox(jnp.array([5.0, 5.0, 5.0]))
    dr = space.displacement(jnp.array([4.9, 0.0, 0.0]), jnp.array([0.1, 0.0, 0.0]))  # (-0.2, 0, 0)
    space.min_width(), space.volume(), space.cell_matrix()   # 5.0, 125.0, diag(5, 5, 5)
    ```
    """

    periodic: eqx.AbstractClassVar[bool]

    @abc.abstractmethod
    def dimension(self) -> int | None:
        """The spatial dimension d (a Python int), or `None` for a space of any dimension."""

    @abc.abstractmethod
    def displacement(self, ri: Vector, rj: Vector) -> Vector:
        """ri − rj (minimum image in periodic spaces), shape `(d,)`, in length units."""

    @abc.abstractmethod
    def wrap(self, r: Positions) -> Positions:
        """Positions mapped into the primary cell (identity in free space)."""

    @abc.abstractmethod
    def cell_matrix(self) -> Cell:
        """The lattice vectors as the rows of a `(d, d)` matrix (length units)."""

    @abc.abstractmethod
    def widths(self) -> Vector:
        """The perpendicular widths w_k (distance between the opposite faces normal to
        lattice direction k), shape `(d,)` (length units)."""

    @abc.abstractmethod
    def volume(self) -> FloatScalar:
        """The cell volume (length^d)."""

    @abc.abstractmethod
    def to_fractional(self, r: Coordinates) -> Coordinates:
        """Fractional coordinates s = r · cell⁻¹ (any leading shape)."""

    @abc.abstractmethod
    def from_fractional(self, s: Coordinates) -> Coordinates:
        """Cartesian coordinates r = s · cell (any leading shape)."""

    @abc.abstractmethod
    def scaled(self, factor: RealScalarLike) -> "AbstractSpace":
        """The space with every lattice vector multiplied by `factor` (an isotropic
        barostat move); the same class, differentiable in `factor`."""

    @abc.abstractmethod
    def deformed(self, deformation: Float[Array, "d d"]) -> "AbstractSpace":
        """The space deformed by F: every lattice vector a ↦ F a (the strain virial;
        an orthorhombic box becomes triclinic under shear)."""

    @abc.abstractmethod
    def exact_image_reach(self) -> FloatScalar:
        """The distance below which [`displacement`][sciad.md.AbstractSpace.displacement]
        is exactly the nearest image (length units): `inf` in free space and in an
        orthorhombic box (rounding each axis is exact), half the smallest width in a
        general cell. A neighbour list must keep `cutoff + skin` below it, or a pair
        could be listed at a farther image, or not at all."""

    def min_width(self) -> FloatScalar:
        """The smallest perpendicular width (length units); `inf` in free space.

        **Example:** `sciad.md.PeriodicBox(jnp.array([3.0, 4.0, 5.0])).min_width()  # 3.0`
        """
        return jnp.min(self.widths())

    def check_positions(self, positions: Anything, name: str) -> None:
        """Raise `ValueError` unless `positions` has shape `(n, d)` with this space's d.

        **Arguments:** `positions` (array-like), `name` (how the message names it).

        **Returns:** nothing.

        **Example:** `box.check_positions(q0, "q0")`
        """
        shape = np.shape(positions)
        if len(shape) != 2:
            raise ValueError(f"{name} must have shape (n, d); got {shape}.")
        d = self.dimension()
        if d is not None and shape[1] != d:
            raise ValueError(
                f"{name} has d = {shape[1]} but the space has d = {d} "
                f"({type(self).__name__} of dimension {d})."
            )

    def check_range(self, reach: float, name: str) -> None:
        """Raise `ValueError` if an interaction range exceeds half the smallest width.

        Minimum image finds every pair closer than `reach` exactly once only while
        `reach <= min_width / 2` (cut-offs are strict: r < r_c). Checked when the box is concrete (a traced box is
        checked at run time where it can change: the barostats report
        `RESULTS.box_too_small`). Free space accepts any range.

        **Arguments:** `reach` (length units, may be `inf`); `name`, e.g. `"cutoff"`.

        **Returns:** nothing.

        **Example:** `box.check_range(2.5, "Truncated cutoff")`
        """
        if not self.periodic:
            return
        width = self.min_width()
        if not is_concrete(width):
            return
        w = float(np.asarray(width, dtype=np.float64))
        if not float(reach) <= 0.5 * w:
            raise ValueError(
                f"{name} = {float(reach):.6g} must be at most half the box's smallest width "
                f"({w:.6g}, so at most {0.5 * w:.6g}) for the minimum-image convention of "
                f"the {type(self).__name__}. Use a larger box (more particles) or a "
                "shorter cut-off."
            )


class FreeSpace(AbstractSpace):
    """Open space, no boundaries: displacement = ri − rj, any dimension.

    It has no cell, widths, volume or fractional coordinates: asking for them raises a
    `TypeError` (a pressure or g(r) needs a volume; use a periodic box).

    **Example:** `sciad.md.FreeSpace().displacement(jnp.ones(3), jnp.zeros(3))`
    """

    periodic: ClassVar[bool] = False

    def dimension(self) -> None:
        """`None`: free space takes positions of any dimension."""
        return None

    def displacement(self, ri: Vector, rj: Vector) -> Vector:
        """ri − rj."""
        return ri - rj

    def wrap(self, r: Positions) -> Positions:
        """Identity."""
        return r

    def _no_cell(self, what: str) -> TypeError:
        return TypeError(
            f"FreeSpace has no {what}: it needs a periodic space "
            "(sciad.md.PeriodicBox or sciad.md.TriclinicBox)."
        )

    def cell_matrix(self) -> Cell:
        """Refused: free space has no cell."""
        raise self._no_cell("cell")

    def widths(self) -> Vector:
        """Refused: free space has no cell (its `min_width` is `inf`)."""
        raise self._no_cell("cell widths")

    def min_width(self) -> FloatScalar:
        """`inf`: any range is fine in free space."""
        return jnp.asarray(jnp.inf)

    def exact_image_reach(self) -> FloatScalar:
        """`inf`: displacements are exact."""
        return jnp.asarray(jnp.inf)

    def volume(self) -> FloatScalar:
        """Refused: free space has no volume (a pressure or a density needs one)."""
        raise self._no_cell("volume")

    def to_fractional(self, r: Coordinates) -> Coordinates:
        """Refused: free space has no cell."""
        raise self._no_cell("fractional coordinates")

    def from_fractional(self, s: Coordinates) -> Coordinates:
        """Refused: free space has no cell."""
        raise self._no_cell("fractional coordinates")

    def scaled(self, factor: RealScalarLike) -> "FreeSpace":
        """Unchanged: there is no box to scale."""
        return self

    def deformed(self, deformation: Float[Array, "d d"]) -> "FreeSpace":
        """Unchanged: there is no box to deform."""
        return self


class AbstractPeriodicSpace(AbstractSpace):
    """A periodic space given by its cell: everything follows from `cell_matrix`.

    Fractional coordinates s = r · cell⁻¹; minimum image is taken in fractional
    coordinates, ds = sᵢ − sⱼ − round(sᵢ − sⱼ), dr = ds · cell, which is the true
    minimum image for every pair closer than half the smallest width (the cell
    contains the ball of that radius). A new periodic space implements `cell_matrix`
    and `scaled`; the rest has general implementations (subclasses may specialise
    them for speed).

    **Example:** `sciad.md.TriclinicBox(jnp.array([[4.0, 0.0], [1.0, 4.0]])).widths()`
    """

    periodic: ClassVar[bool] = True

    def dimension(self) -> int:
        """d, from the cell's shape."""
        return int(np.shape(self.cell_matrix())[0])

    def displacement(self, ri: Vector, rj: Vector) -> Vector:
        """Minimum-image ri − rj, taken in fractional coordinates."""
        ds = self.to_fractional(ri - rj)
        return self.from_fractional(ds - jnp.round(ds))

    def wrap(self, r: Positions) -> Positions:
        """Positions mapped into the cell: fractional coordinates mod 1."""
        return self.from_fractional(jnp.mod(self.to_fractional(r), 1.0))

    def exact_image_reach(self) -> FloatScalar:
        """Half the smallest width: the cell contains the ball of that radius, so any
        nearer image has fractional differences in (−½, ½) and rounding finds it."""
        return 0.5 * self.min_width()

    def widths(self) -> Vector:
        """w_k = 1 / |column k of cell⁻¹| (= V / area of the face spanned by the other rows)."""
        return 1.0 / jnp.linalg.norm(small_inv(self.cell_matrix()), axis=0)

    def volume(self) -> FloatScalar:
        """|det cell|."""
        return jnp.abs(small_det(self.cell_matrix()))

    def to_fractional(self, r: Coordinates) -> Coordinates:
        """s = r · cell⁻¹."""
        cell = self.cell_matrix()
        flat = jnp.reshape(r, (-1, cell.shape[0]))
        return jnp.reshape(flat @ small_inv(cell), jnp.shape(r))

    def from_fractional(self, s: Coordinates) -> Coordinates:
        """r = s · cell."""
        return s @ self.cell_matrix()

    def deformed(self, deformation: Float[Array, "d d"]) -> "TriclinicBox":
        """The `TriclinicBox` with cell · Fᵀ (rows are lattice vectors a ↦ F a)."""
        return TriclinicBox(self.cell_matrix() @ deformation.T)


def _check_cell(cell: Anything, owner: str) -> None:
    """A concrete cell must be finite and span d dimensions (not singular or degenerate)."""
    if not is_concrete(cell):
        return
    c = np.asarray(cell, dtype=np.float64)
    if not np.all(np.isfinite(c)):
        raise ValueError(f"{owner} must be finite; got {c.tolist()}.")
    norms = np.linalg.norm(c, axis=1)
    if np.any(norms == 0):
        raise ValueError(
            f"{owner} has a zero lattice vector (row {int(np.argmin(norms))}); every row "
            "must be a nonzero lattice vector."
        )
    det = float(np.linalg.det(c))
    eps = float(np.finfo(np.asarray(cell).dtype).eps) if np.asarray(cell).dtype.kind == "f" else 0
    if not abs(det) > 100 * max(eps, 1e-15) * float(np.prod(norms)):
        raise ValueError(
            f"{owner} is singular or degenerate: its lattice vectors (rows) are linearly "
            f"dependent (det = {det:.6g}), so the cell has no volume. Give {c.shape[0]} "
            "independent rows."
        )


class PeriodicBox(AbstractPeriodicSpace):
    """A periodic orthorhombic box [0, L₁) × … × [0, L_d).

    Minimum image: dr = (ri − rj) − L · round((ri − rj) / L).

    **Arguments:** `lengths`: shape `(d,)`, the box edge lengths (length units, finite
    and > 0); a differentiable parameter.

    **Example:** `sciad.md.PeriodicBox(jnp.array([10.0, 10.0, 10.0]))`
    """

    lengths: Vector = eqx.field(converter=jnp.asarray)

    def __check_init__(self):
        if np.ndim(self.lengths) != 1 or np.shape(self.lengths)[0] < 1:
            raise ValueError(
                f"PeriodicBox.lengths must have shape (d,), got {np.shape(self.lengths)}."
            )
        check_positive(self.lengths, "PeriodicBox.lengths", shape=None)

    def cell_matrix(self) -> Cell:
        """diag(L)."""
        return jnp.diag(self.lengths)

    def dimension(self) -> int:
        """d = len(lengths)."""
        return int(np.shape(self.lengths)[0])

    def displacement(self, ri: Vector, rj: Vector) -> Vector:
        """Minimum-image ri − rj."""
        dr = ri - rj
        return dr - self.lengths * jnp.round(dr / self.lengths)

    def wrap(self, r: Positions) -> Positions:
        """r mod L."""
        return jnp.mod(r, jnp.broadcast_to(self.lengths, jnp.shape(r)))

    def widths(self) -> Vector:
        """The edge lengths L."""
        return self.lengths

    def exact_image_reach(self) -> FloatScalar:
        """`inf`: rounding each axis separately always finds the nearest image."""
        return jnp.asarray(jnp.inf, dtype=self.lengths.dtype)

    def volume(self) -> FloatScalar:
        """Π Lᵢ."""
        return jnp.prod(self.lengths)

    def to_fractional(self, r: Coordinates) -> Coordinates:
        """s = r / L."""
        return r / jnp.broadcast_to(self.lengths, jnp.shape(r))

    def from_fractional(self, s: Coordinates) -> Coordinates:
        """r = s · L."""
        return s * jnp.broadcast_to(self.lengths, jnp.shape(s))

    def scaled(self, factor: RealScalarLike) -> "PeriodicBox":
        """The box with lengths × factor."""
        return eqx.tree_at(lambda sp: sp.lengths, self, self.lengths * factor)


class TriclinicBox(AbstractPeriodicSpace):
    """A periodic triclinic cell spanned by the rows of `cell` (ASE's convention).

    A point r has fractional coordinates s = r · cell⁻¹; minimum image is taken in
    fractional coordinates: ds = sᵢ − sⱼ − round(sᵢ − sⱼ), dr = ds · cell. This is the
    true minimum image for every pair closer than half of
    [`min_width`][sciad.md.AbstractSpace.min_width], whatever the skew. Left- and
    right-handed cells are both accepted (the volume is |det cell|).

    **Arguments:** `cell`: shape `(d, d)`, rows are the lattice vectors (length units;
    finite and linearly independent); a differentiable parameter.

    **Example:** `sciad.md.TriclinicBox(jnp.array([[5.0, 0, 0], [1.0, 5.0, 0], [0.5, 0.5, 5.0]]))`
    """

    cell: Cell = eqx.field(converter=jnp.asarray)

    def __check_init__(self):
        shape = np.shape(self.cell)
        if len(shape) != 2 or shape[0] != shape[1] or shape[0] < 1:
            raise ValueError(f"TriclinicBox.cell must have shape (d, d), got {shape}.")
        _check_cell(self.cell, "TriclinicBox.cell")

    def cell_matrix(self) -> Cell:
        """The cell (rows are lattice vectors)."""
        return self.cell

    def scaled(self, factor: RealScalarLike) -> "TriclinicBox":
        """The cell × factor (its shape kept)."""
        return eqx.tree_at(lambda sp: sp.cell, self, self.cell * factor)

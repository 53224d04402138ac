"""Spaces: how displacements are measured (free, periodic orthorhombic, periodic triclinic)."""

import abc

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float
import numpy as np

from .._core._types import FloatScalar, Positions

Vector = Float[Array, " d"]
Cell = Float[Array, "d d"]


class AbstractSpace(eqx.Module):
    """Where particles live: the displacement between two points, and wrapping.

    Positions are Cartesian, shape `(n, d)`. Periodic spaces apply the minimum-image
    convention, valid while the interaction range is below half the box's smallest
    perpendicular width ([`min_width`][sciad.md.PeriodicBox.min_width]). The box is a
    differentiable parameter.

    **Example:**

    ```python
    space = sciad.md.PeriodicBox(jnp.array([5.0, 5.0, 5.0]))
    dr = space.displacement(jnp.array([4.9, 0.0, 0.0]), jnp.array([0.1, 0.0, 0.0]))  # (-0.2, 0, 0)
    ```
    """

    @abc.abstractmethod
    def displacement(self, ri: Vector, rj: Vector) -> Vector:
        """ri − rj (minimum image in periodic spaces), shape `(d,)`, in length units."""

    @abc.abstractmethod
    def wrap(self, r: Positions) -> Positions:
        """Positions mapped into the primary cell (identity in free space)."""

    @abc.abstractmethod
    def volume(self) -> FloatScalar:
        """The cell volume (length^d); `inf` in free space."""


class FreeSpace(AbstractSpace):
    """Open space, no boundaries: displacement = ri − rj.

    **Example:** `sciad.md.FreeSpace().displacement(jnp.ones(3), jnp.zeros(3))`
    """

    def displacement(self, ri: Vector, rj: Vector) -> Vector:
        """ri − rj."""
        return ri - rj

    def wrap(self, r: Positions) -> Positions:
        """Identity."""
        return r

    def volume(self) -> FloatScalar:
        """Infinite."""
        return jnp.asarray(jnp.inf)


class PeriodicBox(AbstractSpace):
    """A periodic orthorhombic box [0, L₁) × … × [0, L_d).

    Minimum image: dr = (ri − rj) − L · round((ri − rj) / L).

    **Arguments:** `lengths`: shape `(d,)`, the box edge lengths (length units); a
    differentiable parameter.

    **Example:** `sciad.md.PeriodicBox(jnp.array([10.0, 10.0, 10.0]))`
    """

    lengths: Vector = eqx.field(converter=jnp.asarray)

    def __check_init__(self):
        if np.ndim(self.lengths) != 1:
            raise ValueError(f"lengths must have shape (d,), got {np.shape(self.lengths)}.")

    def displacement(self, ri: Vector, rj: Vector) -> Vector:
        """Minimum-image ri − rj."""
        dr = ri - rj
        return dr - self.lengths * jnp.round(dr / self.lengths)

    def wrap(self, r: Positions) -> Positions:
        """r mod L."""
        return jnp.mod(r, jnp.broadcast_to(self.lengths, jnp.shape(r)))

    def volume(self) -> FloatScalar:
        """Π Lᵢ."""
        return jnp.prod(self.lengths)

    def min_width(self) -> FloatScalar:
        """The smallest perpendicular width, min Lᵢ."""
        return jnp.min(self.lengths)


class TriclinicBox(AbstractSpace):
    """A periodic triclinic cell spanned by the rows of `cell` (ASE's convention).

    A point r has fractional coordinates s = r · cell⁻¹; minimum image is taken in
    fractional coordinates: ds = sᵢ − sⱼ − round(sᵢ − sⱼ), dr = ds · cell. This is the
    true minimum image when the interaction range is below half of
    [`min_width`][sciad.md.TriclinicBox.min_width] and the cell is not too skewed
    (reduce it first, e.g. with ASE's `minkowski_reduce`).

    **Arguments:** `cell`: shape `(d, d)`, rows are the lattice vectors (length units);
    a differentiable parameter.

    **Example:** `sciad.md.TriclinicBox(jnp.array([[5.0, 0, 0], [1.0, 5.0, 0], [0.5, 0.5, 5.0]]))`
    """

    cell: Cell = eqx.field(converter=jnp.asarray)

    def __check_init__(self):
        shape = np.shape(self.cell)
        if len(shape) != 2 or shape[0] != shape[1]:
            raise ValueError(f"cell must have shape (d, d), got {shape}.")

    def to_fractional(self, r: Positions) -> Positions:
        """s = r · cell⁻¹."""
        return jnp.linalg.solve(self.cell.T, r.T).T

    def displacement(self, ri: Vector, rj: Vector) -> Vector:
        """Minimum-image ri − rj, taken in fractional coordinates."""
        ds = jnp.linalg.solve(self.cell.T, ri - rj)
        ds = ds - jnp.round(ds)
        return ds @ self.cell

    def wrap(self, r: Positions) -> Positions:
        """Positions mapped into the cell: fractional coordinates mod 1."""
        return jnp.mod(self.to_fractional(r), 1.0) @ self.cell

    def volume(self) -> FloatScalar:
        """|det cell|."""
        return jnp.abs(jnp.linalg.det(self.cell))

    def min_width(self) -> FloatScalar:
        """The smallest distance between opposite faces: V / max |aⱼ × aₖ| (3-D) or V / max |aᵢ| (2-D)."""
        d = self.cell.shape[0]
        if d == 2:
            return self.volume() / jnp.max(jnp.linalg.norm(self.cell, axis=1))
        a, b, c = self.cell
        areas = jnp.stack(
            [
                jnp.linalg.norm(jnp.cross(b, c)),
                jnp.linalg.norm(jnp.cross(c, a)),
                jnp.linalg.norm(jnp.cross(a, b)),
            ]
        )
        return self.volume() / jnp.max(areas)

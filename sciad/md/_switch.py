"""Smooth cut-offs: a pair potential multiplied by a polynomial switch S(r)."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from .._core._types import FloatScalar
from .._core._validate import check_int
from ._pair import AbstractPairPotential, check_static_length

# S(x) = 1 − x^(k+1) P(x) on x = (r − r_on)/(r_c − r_on) ∈ [0, 1], with P's coefficients
# in increasing powers: S = 1 − I_x(k+1, k+1), the regularised incomplete beta function,
# whose first k derivatives vanish at both ends.
_COEFFICIENTS = {2: (10.0, -15.0, 6.0), 3: (35.0, -84.0, 70.0, -20.0)}


class Switched(AbstractPairPotential):
    """A pair potential switched smoothly to zero between r_on and r_c.

    u_s(r) = S(r) u(r), with x = (r − r_on)/(r_c − r_on) and

    - `smoothness=2` (C², the default): S = 1 − 10x³ + 15x⁴ − 6x⁵, the switch of
      GROMACS's `vdw-modifier = potential-switch` and OpenMM's `setUseSwitchingFunction`;
    - `smoothness=3` (C³): S = 1 − 35x⁴ + 84x⁵ − 70x⁶ + 20x⁷;

    S = 1 for r ≤ r_on and S = 0 for r ≥ r_c. Both are S = 1 − I_x(k+1, k+1) (the
    regularised incomplete beta function, k = `smoothness`): S and its first k
    derivatives are continuous at r_on and r_c, so the energy is C^k in r wherever u is.
    Below r_on the potential is exactly u; between r_on and r_c it is changed (use
    `Truncated` if u itself must hold up to r_c).

    Why: with [`Truncated`][sciad.md.Truncated] the energy's derivatives jump at r_c,
    even force-shifted (the second derivative jumps), and derivatives of a trajectory
    with respect to parameters jump whenever a pair crosses r_c: gradients (plain
    truncation) or Hessians (force shift) through a run disagree with finite
    differences. The derivative of order m of a trajectory observable needs the energy
    to be C^(m+1): `smoothness=2` for gradients, `smoothness=3` for Hessians.
    (CHARMM's r²-polynomial switch, JAX-MD's `multiplicative_isotropic_cutoff`, is only
    C¹: its second derivative jumps at both ends.)

    Reference: Steinbach & Brooks, J. Comput. Chem. 15, 667 (1994) (switching
    functions); GROMACS reference manual, "Modified non-bonded interactions".

    **Arguments:**

    - `potential`: an `AbstractPairPotential` (per-species matrices allowed).
    - `r_on`: where the switch starts (length; a Python number, 0 < r_on < r_c).
    - `cutoff`: r_c, where the energy reaches zero (length; a Python number, static:
      it fixes neighbour-list sizes and is the potential's `range()`).
    - `smoothness`: 2 or 3, the order of continuity of S.

    **Example:** `sciad.md.Switched(sciad.md.LennardJones(1.0, 1.0), r_on=2.0, cutoff=2.5, smoothness=3)`
    """

    potential: AbstractPairPotential
    r_on: float = eqx.field(static=True)
    cutoff: float = eqx.field(static=True)
    smoothness: int = eqx.field(static=True, default=2)
    smoothnesses: ClassVar[tuple[int, ...]] = (2, 3)

    def __check_init__(self):
        if not isinstance(self.potential, AbstractPairPotential):
            raise TypeError(
                "Switched.potential must be a sciad.md.AbstractPairPotential; got "
                f"{type(self.potential).__name__}."
            )
        check_static_length(self.r_on, "Switched.r_on")
        check_static_length(self.cutoff, "Switched.cutoff")
        if not self.r_on < self.cutoff:
            raise ValueError(
                f"Switched.r_on must be below Switched.cutoff; got r_on = {self.r_on} and "
                f"cutoff = {self.cutoff}."
            )
        check_int(self.smoothness, "Switched.smoothness", allowed=self.smoothnesses)

    def switch(self, r: FloatScalar) -> FloatScalar:
        """S(r) ∈ [0, 1] at a distance `r` (length units), scalar: 1 for r ≤ r_on, 0 for
        r ≥ r_c, C^`smoothness` everywhere."""
        x = jnp.clip((r - self.r_on) / (self.cutoff - self.r_on), 0.0, 1.0)
        coefficients = _COEFFICIENTS[self.smoothness]
        p = jnp.zeros_like(x) + coefficients[-1]
        for c in coefficients[-2::-1]:
            p = p * x + c
        return 1 - x ** (self.smoothness + 1) * p

    def pair_energy(self, r: FloatScalar) -> FloatScalar:
        """S(r) u(r); zero at and beyond the cut-off."""
        rc = jnp.asarray(self.cutoff, dtype=jnp.result_type(r))
        inside = r < rc
        rs = jnp.where(inside, r, rc)  # double where: no gradient from the far branch
        return jnp.where(inside, self.switch(rs) * self.potential.pair_energy(rs), 0.0)

    def range(self) -> float:
        """The cut-off r_c."""
        return self.cutoff

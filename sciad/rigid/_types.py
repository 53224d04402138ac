"""Type aliases for the rigid pillar's public signatures (checked by jaxtyping in tests),
and the numerical constants its modules share."""

from collections.abc import Sequence
from typing import TypeAlias

from jaxtyping import ArrayLike, Float, Int
import numpy as np

from .._core._types import RealScalarLike

#: A real scalar: a Python number or a 0-d array.
ScalarLike: TypeAlias = RealScalarLike
#: A 3-vector: an array of shape (3,) or a sequence of three numbers.
Vec3Like: TypeAlias = Float[ArrayLike, "3"] | Int[ArrayLike, "3"] | Sequence[float | int]
#: A quaternion (w, x, y, z): an array of shape (4,) or a sequence of four numbers.
QuatLike: TypeAlias = Float[ArrayLike, "4"] | Int[ArrayLike, "4"] | Sequence[float | int]
#: An interval (lower, upper).
RangeLike: TypeAlias = Float[ArrayLike, "2"] | Int[ArrayLike, "2"] | Sequence[float | int]
#: MuJoCo's five contact friction coefficients.
Friction5Like: TypeAlias = Float[ArrayLike, "5"] | Int[ArrayLike, "5"] | Sequence[float | int]

#: MuJoCo's `mjMINVAL`: its floor for divisors and its tie tolerance.
MINVAL = 1e-15


def round_off(dtype) -> float:
    """The narrow phase's relative round-off margin, 1e3·eps of `dtype`. A discrete
    choice that can sit at an exact tie (which feature is nearest, which patch vertex
    is kept, a sign of an axis component) is closed with it, so the forward pass and
    `jax.checkpoint`'s recomputation choose alike (docs/design.md)."""
    return 1e3 * float(np.finfo(dtype).eps)

"""Type aliases for the rigid pillar's public signatures (checked by jaxtyping in tests)."""

from collections.abc import Sequence
from typing import TypeAlias

from jaxtyping import ArrayLike, Float, Int

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

"""Type aliases used on public signatures (checked by jaxtyping in the test suite)."""

from typing import Any, TypeAlias

from jaxtyping import Array, ArrayLike, Bool, Float, Int, PyTree

#: A real scalar that may be a Python float or a JAX/NumPy array of shape ().
RealScalarLike: TypeAlias = float | int | Float[ArrayLike, ""] | Int[ArrayLike, ""]
#: A floating-point scalar array.
FloatScalar: TypeAlias = Float[Array, ""]
#: An integer scalar array.
IntScalar: TypeAlias = Int[Array, ""]
#: A boolean scalar array.
BoolScalar: TypeAlias = Bool[Array, ""]
#: A floating-point vector of length n.
FloatVector: TypeAlias = Float[Array, " n"]
#: Something convertible to a float vector of length n.
FloatVectorLike: TypeAlias = Float[ArrayLike, " n"]
#: The state of a simulation: any PyTree of floating-point arrays.
State: TypeAlias = PyTree[Float[ArrayLike, "..."]]
#: Positions of `n` particles in `d` dimensions.
Positions: TypeAlias = Float[Array, "n d"]
#: Anything: integrator state, saved observables, loss data.
Anything: TypeAlias = Any

__all__ = [
    "Anything",
    "BoolScalar",
    "FloatScalar",
    "FloatVector",
    "FloatVectorLike",
    "IntScalar",
    "Positions",
    "PyTree",
    "RealScalarLike",
    "State",
]

"""The implicit part of a semi-implicit Euler step: which velocity derivatives of the
smooth forces the velocity update takes implicitly, as MuJoCo's integrators do.

A step is v⁺ = v + h H⁻¹ (f + f_c), with f the smooth forces, f_c the constraint
forces (solved with M) and H = M − h D, D a part of ∂f/∂v:

- `"none"`: D = 0 (explicit).
- `"damping"`: D = −diag(joint damping) (MuJoCo's Euler).
- `"fast"`: D = MuJoCo's `qDeriv` without the Coriolis term (its `implicitfast`): the
  actuators' ∂force/∂ℓ̇ (those not at a `force_range` bound), the joint and tendon
  damping and the fluid forces' derivative made symmetric; a free body alone in its
  tree (no children) takes its whole 6×6 block, gyroscopic derivative and unsymmetric
  fluid derivative included, as MuJoCo 4's local solve does.
- `"full"`: the same with the Coriolis forces' derivative and the fluid derivative
  unsymmetric (MuJoCo's `implicit`).

As in MuJoCo, D keeps only the entries of M's sparsity (dofs of one branch: one body
an ancestor of the other), so a tendon or an actuator coupling two sibling branches
has its cross terms dropped (`mju_addToSclSparseInc`).
"""

import jax
import jax.numpy as jnp
import numpy as np

from .._core._types import Anything, RealScalarLike
from ._actuators import actuator_velocity_derivative
from ._dynamics import coriolis_force, fluid_force, Frames, Terms
from ._joints import FreeJoint
from ._tendons import tendon_damping_derivative

IMPLICIT = ("none", "damping", "fast", "full")


def check_implicit(value: object, owner: str) -> None:
    """A `ValueError` unless `value` is one of `IMPLICIT`."""
    if not isinstance(value, str) or value not in IMPLICIT:
        raise ValueError(
            f"{owner}.implicit must be one of {', '.join(map(repr, IMPLICIT))}; got {value!r}."
        )


def standalone_free_dofs(mb: Anything) -> np.ndarray:
    """The dofs (static) of the free joints whose body is alone in its tree: a child
    of the world with no descendants (MuJoCo's `mj_isFreeBody`; `load_mjcf` folds
    massless children into their parent, as MuJoCo's test on the subtree's mass
    ignores them)."""
    topo = mb.topology
    dofs = []
    for i, j in enumerate(mb.joints):
        alone = mb.parents[i] < 0 and not topo.anc_strict[:, i].any()
        if isinstance(j, FreeJoint) and alone:
            dofs.extend(range(topo.dadr[i], topo.dadr[i] + 6))
    return np.asarray(dofs, np.int64)


def step_matrix(
    mb: Anything,
    t: RealScalarLike,
    q: Anything,
    v: Anything,
    f: Frames,
    terms: Terms,
    dt: Anything,
    implicit: str,
    act: Anything = None,
) -> tuple[Anything, bool]:
    """H = M − h D for the mode `implicit` (see the module), shape (nv, nv), and
    whether it is symmetric (Cholesky) or not (LU)."""
    m = terms.mass_matrix
    if implicit == "none":
        return m, True
    if implicit == "damping":
        return m + jnp.diag(dt * terms.damping), True
    topo = mb.topology
    pattern = jnp.asarray(topo.dof_upper | topo.dof_upper.T | topo.dof_same, v.dtype)
    d = -jnp.diag(terms.damping) + actuator_velocity_derivative(mb, t, q, v, f, act, dt)
    if mb.tendons:
        d = d + tendon_damping_derivative(mb, f, v.dtype)
    fluid = jax.jacfwd(lambda w: fluid_force(mb, f, w))(v) if mb.medium is not None else None
    free = standalone_free_dofs(mb) if implicit == "fast" else np.zeros(0, np.int64)
    if implicit == "full" or free.size:
        whole = d - jax.jacfwd(lambda w: coriolis_force(mb, f, w))(v)
        whole = whole if fluid is None else whole + fluid
        if implicit == "full":
            return m - dt * pattern * whole, False
    if fluid is not None:
        d = d + 0.5 * (fluid + fluid.T)
    h = m - dt * pattern * d
    if not free.size:
        return h, True
    rows = np.zeros(mb.nv, bool)
    rows[free] = True
    block = jnp.asarray(rows[:, None] & rows[None, :] & topo.dof_same, v.dtype)
    h_free = m - dt * block * whole
    return jnp.where(jnp.asarray(rows)[:, None], h_free, h), False


def solve(h: Anything, symmetric: bool, rhs: Anything) -> Anything:
    """H⁻¹ rhs: by Cholesky where H is symmetric, by LU otherwise."""
    if symmetric:
        return jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(h), rhs)
    return jax.scipy.linalg.lu_solve(jax.scipy.linalg.lu_factor(h), rhs)

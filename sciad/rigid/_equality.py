"""Constraint rows besides contacts and limits: MuJoCo's tendon equality constraints
(`TendonEquality`) and the joints' friction losses (one row per dof).

Functions of a `MultiBody` `mb` (duck-typed, as in `_tendons.py`)."""

from collections.abc import Sequence

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float
import numpy as np

from .._core._types import Anything, FloatScalar
from .._core._validate import as_float_array
from ._impedance import Impedance, RowBlock
from ._tendons import stacked_impedances

_IDENTITY = (0.0, 1.0, 0.0, 0.0, 0.0)  # MuJoCo's default polycoef: x₁ = x₂


def _polynomial(c: Array, x: Array) -> tuple[Array, Array]:
    """p(x) = c₁x + c₂x² + c₃x³ + c₄x⁴ and p'(x), as MuJoCo's `mj_instantiateEquality`
    writes them (c₀ is added separately)."""
    p = c[1] * x + c[2] * x * x + c[3] * x * x * x + c[4] * x * x * x * x
    dp = c[1] + 2 * c[2] * x + 3 * c[3] * x * x + 4 * c[4] * x * x * x
    return p, dp


class TendonEquality(eqx.Module):
    """An equality constraint on tendon lengths (MuJoCo's `<equality><tendon>`): with
    xᵢ = ℓᵢ − ℓᵢ⁰ a tendon's length less its reference, the bilateral row

        r = x₁ − c₀ − (c₁ x₂ + c₂ x₂² + c₃ x₂³ + c₄ x₂⁴)   (r = x₁ − c₀ without `second`)

    with Jacobian J₁ − p'(x₂) J₂ (p the polynomial, Jᵢ the tendons' Jacobians), force
    unbounded and always active, solved with the contacts and limits (MuJoCo's
    `mj_instantiateEquality`). Its inverse inertia in the regularisation is the sum
    of the two tendons' `InverseWeights.tendon` when the model has them (MuJoCo's
    `diagApprox`), else the exact one. A model with one needs time stepping
    ([`SemiImplicitEuler`][sciad.rigid.SemiImplicitEuler]).

    **Arguments:**

    - `first`, `second`: tendon names of the model (`second` optional: then x₁ = c₀
      holds the first tendon's length).
    - `polycoef`: (c₀, …, c₄), shape `(5,)`; default (0, 1, 0, 0, 0): equal changes
      of the two lengths.
    - `reference`: (ℓ₁⁰,) or (ℓ₁⁰, ℓ₂⁰) (length), the lengths the changes are measured
      from (MuJoCo's `tendon_length0`); `None` (default): the tendons' lengths at the
      model's default state.
    - `impedance`: the row's [`Impedance`][sciad.rigid.Impedance] (MuJoCo's `solref`,
      `solimp` of the equality; `None`: the model's
      [`ContactModel`][sciad.rigid.ContactModel]'s).

    **Example:**

    ```python
    coupling = sciad.rigid.TendonEquality("left", "right", polycoef=(0.0, -1.0, 0, 0, 0))
    model = sciad.rigid.MultiBody(bodies, tendons=tendons, equalities=[coupling])
    ```
    """

    first: str = eqx.field(static=True)
    second: str | None = eqx.field(static=True)
    polycoef: Float[Array, "5"]
    reference: Float[Array, " k"] | None
    impedance: Impedance | None

    def __init__(
        self,
        first: str,
        second: str | None = None,
        *,
        polycoef: Float[ArrayLike, "5"] | Sequence[float | int] = _IDENTITY,
        reference: Float[ArrayLike, " k"] | Sequence[float | int] | None = None,
        impedance: Impedance | None = None,
    ):
        for name, x in (("first", first), ("second", second)):
            if not (isinstance(x, str) and x) and not (name == "second" and x is None):
                what = "a non-empty str" + (" or None" if name == "second" else "")
                raise TypeError(f"TendonEquality {name} must be {what} (a tendon name); got {x!r}.")
        self.first, self.second = first, second
        self.polycoef = as_float_array(polycoef, "TendonEquality polycoef", (5,))
        k = 1 if second is None else 2
        self.reference = (
            None
            if reference is None
            else as_float_array(reference, "TendonEquality reference", (k,))
        )
        if impedance is not None and not isinstance(impedance, Impedance):
            raise TypeError(
                f"TendonEquality impedance must be a sciad.rigid.Impedance or None; got {impedance!r}."
            )
        self.impedance = impedance

    @property
    def names(self) -> tuple[str, ...]:
        """The tendons' names: `(first,)` or `(first, second)`."""
        return (self.first,) if self.second is None else (self.first, self.second)

    def row(self, mb: Anything, f: Anything) -> tuple[FloatScalar, Array]:
        """The row's value r and Jacobian (nv,) in the `MultiBody` `mb` with frames `f`
        (see the class)."""
        length, jac = f.tendons
        names = [t.name for t in mb.tendons]
        idx = np.asarray([names.index(n) for n in self.names])
        if self.reference is None:
            q0, _ = mb.default_state()
            ref = mb._frames(q0.astype(length.dtype)).tendons[0][idx]
        else:
            ref = self.reference.astype(length.dtype)
        x, j = length[idx] - ref, jac[idx]
        c = self.polycoef.astype(length.dtype)
        if self.second is None:
            return x[0] - c[0], j[0]
        p, dp = _polynomial(c, x[1])
        return x[0] - c[0] - p, j[0] - dp * j[1]


# --------------------------------------------------------------------------- the model's


def check_equalities(
    equalities: Sequence[Anything], tendons: Sequence[Anything]
) -> tuple[TendonEquality, ...]:
    """`MultiBody`'s `equalities` checked against its tendons."""
    equalities = tuple(equalities)
    names = [t.name for t in tendons]
    for i, e in enumerate(equalities):
        if not isinstance(e, TendonEquality):
            raise TypeError(
                f"MultiBody equalities must be sciad.rigid.TendonEquality; item {i} is {e!r}."
            )
        for name in e.names:
            if name not in names:
                raise ValueError(
                    f"TendonEquality: no tendon named {name!r}; tendons: {sorted(names)}."
                )
    return equalities


def check_equality_weights(mb: Anything) -> None:
    """A model with `inverse_weights` and tendon equalities must give the tendons'
    weights (shape (n_tendons,))."""
    w = mb.inverse_weights
    if w is None or not mb.equalities:
        return
    if jnp.shape(w.tendon) != (len(mb.tendons),):
        raise ValueError(
            f"MultiBody inverse_weights.tendon must have shape ({len(mb.tendons)},) (one "
            f"per tendon: tendon equalities use it); got {jnp.shape(w.tendon)}."
        )


def equality_rows(mb: Anything, f: Anything) -> list[RowBlock]:
    """The tendon equalities' rows (MuJoCo's `mj_instantiateEquality`): r and J per
    equality, force in (−inf, inf), always active; the diagonal MuJoCo's `diagApprox`
    (the tendons' inverse weights summed) when the model has `inverse_weights`, else
    `None`."""
    if not mb.equalities:
        return []
    rows = [e.row(mb, f) for e in mb.equalities]
    dtype = rows[0][1].dtype
    w = mb.inverse_weights
    diag = None
    if w is not None:
        names = [t.name for t in mb.tendons]
        tendon = w.tendon.astype(dtype)
        diag = jnp.stack([sum(tendon[names.index(n)] for n in e.names) for e in mb.equalities])
    inf = jnp.full(len(rows), jnp.inf, dtype)
    return [
        RowBlock(
            jnp.stack([r for r, _ in rows]),
            jnp.stack([j for _, j in rows]),
            stacked_impedances(mb, [e.impedance for e in mb.equalities], dtype),
            diag,
            -inf,
            inf,
            jnp.ones(len(rows), bool),
            False,
        )
    ]


def friction_joints(mb: Anything) -> list[int]:
    """The bodies whose joints have a friction loss (static)."""
    default = mb.contact.impedance
    return [i for i, j in enumerate(mb.joints) if j.friction_loss(default) is not None]


def joint_friction_rows(mb: Anything, f: Anything) -> list[RowBlock]:
    """The joints' friction losses (MuJoCo's `mj_instantiateFriction` for dofs): one row
    per dof of a joint with friction loss F, Jacobian eᵢ, force in [−F, F], always
    active, a friction row (no stiffness; impedance at r = 0); the diagonal MuJoCo's
    `dof_invweight0` when the model has `inverse_weights`, else `None`."""
    bodies = friction_joints(mb)
    if not bodies:
        return []
    dtype = f.subspace.dtype
    default = mb.contact.impedance
    dofs, loss, imp = [], [], []
    for b in bodies:
        joint = mb.joints[b]
        fl, p = joint.friction_loss(default)
        for k in range(type(joint).nv):
            dofs.append(int(mb.topology.dadr[b]) + k)
            loss.append(jnp.asarray(fl, dtype))
            imp.append(p.stacked())
    d = np.asarray(dofs)
    w = mb.inverse_weights
    bound = jnp.stack(loss)
    return [
        RowBlock(
            jnp.zeros(len(d), dtype),
            jnp.zeros((len(d), mb.nv), dtype).at[np.arange(len(d)), d].set(1.0),
            jnp.stack(imp).astype(dtype),
            None if w is None else w.dof[d].astype(dtype),
            -bound,
            bound,
            jnp.ones(len(d), bool),
            True,
        )
    ]

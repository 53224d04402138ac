"""Constraint rows besides contacts and limits: the equality constraints' interface
(`AbstractEquality`), MuJoCo's joint and tendon equality constraints
(`JointEquality`, `TendonEquality`; connect and weld are in `_equality_bodies.py`) and
the joints' friction losses (one row per dof).

Functions of a `MultiBody` `mb` (duck-typed, as in `_tendons.py`)."""

import abc
from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float
import numpy as np

from .._core._types import Anything, FloatScalar
from .._core._validate import as_float_array
from ._grouped import map_grouped
from ._impedance import Impedance, RowBlock
from ._tendons import stacked_impedances

_IDENTITY = (0.0, 1.0, 0.0, 0.0, 0.0)  # MuJoCo's default polycoef: x₁ = x₂


def _polynomial(c: Array, x: Array) -> tuple[Array, Array]:
    """p(x) = c₁x + c₂x² + c₃x³ + c₄x⁴ and p'(x), as MuJoCo's `mj_instantiateEquality`
    writes them (c₀ is added separately)."""
    p = c[1] * x + c[2] * x * x + c[3] * x * x * x + c[4] * x * x * x * x
    dp = c[1] + 2 * c[2] * x + 3 * c[3] * x * x + 4 * c[4] * x * x * x
    return p, dp


class AbstractEquality(eqx.Module):
    """An equality constraint of a [`MultiBody`][sciad.rigid.MultiBody]: k bilateral
    rows r(q) = 0 (MuJoCo's `<equality>`, `mj_instantiateEquality`), force unbounded
    and always active, solved with the contacts and limits. Their impedance is
    evaluated at the norm of the k residuals (MuJoCo's `getposdim`; |r| for one row);
    their inverse inertia in the regularisation is MuJoCo's `diagApprox` when the
    model has [`InverseWeights`][sciad.rigid.InverseWeights], else the exact
    J M⁻¹ Jᵀ. A model with one needs time stepping
    ([`SemiImplicitEuler`][sciad.rigid.SemiImplicitEuler] or
    [`RKMK4`][sciad.rigid.RKMK4]).

    Concrete: [`TendonEquality`][sciad.rigid.TendonEquality],
    [`JointEquality`][sciad.rigid.JointEquality] (one row, through
    [`AbstractScalarEquality`][sciad.rigid.AbstractScalarEquality]),
    [`ConnectEquality`][sciad.rigid.ConnectEquality] (three rows) and
    [`WeldEquality`][sciad.rigid.WeldEquality] (six rows).

    **Example:** `assert isinstance(sciad.rigid.JointEquality("a", "b"), sciad.rigid.AbstractEquality)`
    """

    impedance: eqx.AbstractVar[Impedance | None]

    @abc.abstractmethod
    def check(self, tendons: Sequence[Anything], joints: dict[str, Anything]) -> None:
        """Raise a `ValueError` unless the objects exist in the model (`tendons`, and
        the bodies' `joints` by body name)."""

    @abc.abstractmethod
    def rows(self, mb: Anything, f: Anything, q: Array) -> tuple[Array, Array]:
        """The residuals r (k,) and their Jacobian dr/dv (k, nv) at configuration `q`
        with frames `f` of the `MultiBody` `mb`."""

    @abc.abstractmethod
    def diagonal(self, mb: Anything, dtype: Anything) -> Array:
        """The rows' constant inverse inertias (k,) from `mb.inverse_weights` (MuJoCo's
        `diagApprox`)."""

    @property
    def accelerating(self) -> bool:
        """Whether the rows' reference acceleration subtracts J̇v (`jdot_v`): MuJoCo 4
        does for connects and welds (`mj_Jdotv`), not for joint and tendon rows."""
        return False

    def jdot_v(self, mb: Anything, q: Array, v: Array) -> Array:
        """J̇v (k,): the rows' acceleration at v̇ = 0, d/dt (J(q) v) along q̇ from v
        (forward-mode differentiation of `rows` along `mb.position_derivative`)."""
        qdot = mb.position_derivative(q, v)
        return jax.jvp(lambda x: self.rows(mb, mb._frames(x), x)[1] @ v, (q,), (qdot,))[1]


class AbstractScalarEquality(AbstractEquality):
    """An [`AbstractEquality`][sciad.rigid.AbstractEquality] of one row coupling two
    scalar positions polynomially (MuJoCo's joint and tendon equalities,
    `mj_instantiateEquality`): with xᵢ an object's position less its reference, the
    row

        r = x₁ − c₀ − (c₁ x₂ + c₂ x₂² + c₃ x₂³ + c₄ x₂⁴)   (r = x₁ − c₀ without `second`)

    with Jacobian J₁ − p'(x₂) J₂ (p the polynomial, Jᵢ the positions' Jacobians). Its
    inverse inertia in the regularisation is the sum of the two objects' inverse
    weights when the model has [`InverseWeights`][sciad.rigid.InverseWeights]
    (MuJoCo's `diagApprox`), else the exact one.

    Concrete: [`TendonEquality`][sciad.rigid.TendonEquality],
    [`JointEquality`][sciad.rigid.JointEquality].

    **Example:** `assert isinstance(sciad.rigid.JointEquality("a", "b"), sciad.rigid.AbstractScalarEquality)`
    """

    first: eqx.AbstractVar[str]
    second: eqx.AbstractVar[str | None]
    polycoef: eqx.AbstractVar[Float[Array, "5"]]
    reference: eqx.AbstractVar[Float[Array, " k"] | None]
    impedance: eqx.AbstractVar[Impedance | None]

    @property
    def names(self) -> tuple[str, ...]:
        """The objects' names: `(first,)` or `(first, second)`."""
        return (self.first,) if self.second is None else (self.first, self.second)

    @abc.abstractmethod
    def positions(self, mb: Anything, f: Anything, q: Array) -> tuple[Array, Array]:
        """The objects' positions (k,), not yet less the reference, and their
        Jacobians (k, nv) at configuration `q` with frames `f` of the `MultiBody` `mb`."""

    @abc.abstractmethod
    def inverse_weights(self, mb: Anything, dtype: Anything) -> Array:
        """The objects' constant inverse weights (k,) from `mb.inverse_weights`."""

    def row(self, mb: Anything, f: Anything, q: Array) -> tuple[FloatScalar, Array]:
        """The row's value r and Jacobian (nv,) (see the class); the reference, when
        `None`, is the positions at the model's default state."""
        pos, jac = self.positions(mb, f, q)
        if self.reference is None:
            q0 = mb.default_state()[0].astype(pos.dtype)
            ref = self.positions(mb, mb._frames(q0), q0)[0]
        else:
            ref = self.reference.astype(pos.dtype)
        x = pos - ref
        c = self.polycoef.astype(pos.dtype)
        if self.second is None:
            return x[0] - c[0], jac[0]
        p, dp = _polynomial(c, x[1])
        return x[0] - c[0] - p, jac[0] - dp * jac[1]

    def rows(self, mb: Anything, f: Anything, q: Array) -> tuple[Array, Array]:
        """The one row (`row`) as r (1,) and J (1, nv)."""
        r, jac = self.row(mb, f, q)
        return r[None], jac[None]

    def diagonal(self, mb: Anything, dtype: Anything) -> Array:
        """The sum of the objects' inverse weights, shape (1,)."""
        return jnp.sum(self.inverse_weights(mb, dtype))[None]


def _set_common(e: Any, owner: str, what: str, kw: dict[str, Any]) -> None:
    """Validate and set the fields every `AbstractEquality` shares."""
    for name in ("first", "second"):
        x = kw[name]
        if not (isinstance(x, str) and x) and not (name == "second" and x is None):
            opt = "a non-empty str" + (" or None" if name == "second" else "")
            raise TypeError(f"{owner} {name} must be {opt} ({what}); got {x!r}.")
    e.first, e.second = kw["first"], kw["second"]
    e.polycoef = as_float_array(kw["polycoef"], f"{owner} polycoef", (5,))
    k = 1 if kw["second"] is None else 2
    ref = kw["reference"]
    e.reference = None if ref is None else as_float_array(ref, f"{owner} reference", (k,))
    imp = kw["impedance"]
    if imp is not None and not isinstance(imp, Impedance):
        raise TypeError(f"{owner} impedance must be a sciad.rigid.Impedance or None; got {imp!r}.")
    e.impedance = imp


class TendonEquality(AbstractScalarEquality):
    """An [`AbstractScalarEquality`][sciad.rigid.AbstractScalarEquality] on tendon lengths
    (MuJoCo's `<equality><tendon>`): xᵢ = ℓᵢ − ℓᵢ⁰, a tendon's length less its
    reference, Jᵢ its Jacobian; the inverse weights the tendons'
    `InverseWeights.tendon`.

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
        _set_common(self, "TendonEquality", "a tendon name", locals())

    def check(self, tendons: Sequence[Anything], joints: dict[str, Anything]) -> None:
        """Each tendon is one of `tendons`."""
        names = [t.name for t in tendons]
        for name in self.names:
            if name not in names:
                raise ValueError(
                    f"TendonEquality: no tendon named {name!r}; tendons: {sorted(names)}."
                )

    def positions(self, mb: Anything, f: Anything, q: Array) -> tuple[Array, Array]:
        """The tendons' lengths and Jacobians."""
        length, jac = f.tendons
        names = [t.name for t in mb.tendons]
        idx = np.asarray([names.index(n) for n in self.names])
        return length[idx], jac[idx]

    def inverse_weights(self, mb: Anything, dtype: Anything) -> Array:
        """`InverseWeights.tendon` of the tendons."""
        names = [t.name for t in mb.tendons]
        idx = np.asarray([names.index(n) for n in self.names])
        return mb.inverse_weights.tendon.astype(dtype)[idx]


class JointEquality(AbstractScalarEquality):
    """An [`AbstractScalarEquality`][sciad.rigid.AbstractScalarEquality] on joint positions
    (MuJoCo's `<equality><joint>`): xᵢ = qᵢ − qᵢ⁰, the coordinate of a hinge or
    slider less its reference, Jᵢ the unit row of its dof; the inverse weights the
    dofs' `InverseWeights.dof`. With the default `polycoef` the two joints move
    together (a gear of ratio c₁ in general; a cubic coupling with c₂, c₃).

    **Arguments:**

    - `first`, `second`: names of bodies whose joints are hinges or sliders
      (`second` optional: then x₁ = c₀ holds the first joint at c₀ from its reference).
    - `polycoef`: (c₀, …, c₄), shape `(5,)`; default (0, 1, 0, 0, 0).
    - `reference`: (q₁⁰,) or (q₁⁰, q₂⁰), the positions the changes are measured from
      (MuJoCo's `qpos0`, which is q = 0 in an MJCF model's sciad coordinates); `None`
      (default): the joints' positions at the model's default state (zero).
    - `impedance`: the row's [`Impedance`][sciad.rigid.Impedance] (MuJoCo's `solref`,
      `solimp`; `None`: the model's [`ContactModel`][sciad.rigid.ContactModel]'s).

    **Example:**

    ```python
    gear = sciad.rigid.JointEquality("wheel1", "wheel2", polycoef=(0.0, -2.0, 0, 0, 0))
    model = sciad.rigid.MultiBody(bodies, equalities=[gear])
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
        _set_common(self, "JointEquality", "a body name", locals())
        if second == first:
            raise ValueError(f"JointEquality first and second must differ; got {first!r} twice.")

    def check(self, tendons: Sequence[Anything], joints: dict[str, Anything]) -> None:
        """Each body exists and has a hinge or slider."""
        for name in self.names:
            if name not in joints:
                raise ValueError(f"JointEquality: no body named {name!r}.")
            j = joints[name]
            if type(j).nq != 1 or type(j).nv != 1:
                raise ValueError(
                    f"JointEquality: body {name!r} has a {type(j).__name__}; joint "
                    "equalities couple hinges and sliders."
                )

    def _dofs(self, mb: Anything) -> tuple[np.ndarray, np.ndarray]:
        b = [mb.body_index(n) for n in self.names]
        return np.asarray(mb.topology.qadr)[b], np.asarray(mb.topology.dadr)[b]

    def positions(self, mb: Anything, f: Anything, q: Array) -> tuple[Array, Array]:
        """The joints' coordinates and unit rows."""
        qadr, dadr = self._dofs(mb)
        jac = jnp.zeros((len(dadr), mb.nv), q.dtype).at[np.arange(len(dadr)), dadr].set(1.0)
        return q[qadr], jac

    def inverse_weights(self, mb: Anything, dtype: Anything) -> Array:
        """`InverseWeights.dof` of the joints' dofs."""
        return mb.inverse_weights.dof.astype(dtype)[self._dofs(mb)[1]]


# --------------------------------------------------------------------------- the model's


def check_equalities(
    equalities: Sequence[Anything], tendons: Sequence[Anything], joints: dict[str, Anything]
) -> tuple[AbstractEquality, ...]:
    """`MultiBody`'s `equalities` checked against its tendons and its bodies' joints
    (by body name)."""
    equalities = tuple(equalities)
    for i, e in enumerate(equalities):
        if not isinstance(e, AbstractEquality):
            raise TypeError(
                "MultiBody equalities must be sciad.rigid.TendonEquality, JointEquality, "
                f"ConnectEquality or WeldEquality; item {i} is {e!r}."
            )
        e.check(tendons, joints)
    return equalities


def check_equality_weights(mb: Anything) -> None:
    """A model with `inverse_weights` and tendon equalities must give the tendons'
    weights (shape (n_tendons,))."""
    w = mb.inverse_weights
    if w is None or not any(isinstance(e, TendonEquality) for e in mb.equalities):
        return
    if jnp.shape(w.tendon) != (len(mb.tendons),):
        raise ValueError(
            f"MultiBody inverse_weights.tendon must have shape ({len(mb.tendons)},) (one "
            f"per tendon: tendon equalities use it); got {jnp.shape(w.tendon)}."
        )


def equality_rows(mb: Anything, f: Anything, q: Array, v: Array | None = None) -> list[RowBlock]:
    """The equalities' rows (MuJoCo's `mj_instantiateEquality`) at configuration `q`
    with frames `f`: r and J of every equality, force in (−inf, inf), always active,
    each equality's impedance evaluated at the norm of its rows (MuJoCo's
    `getposdim`); the diagonal MuJoCo's `diagApprox` when the model has
    `inverse_weights`, else `None`; with the velocity `v`, the equalities' J̇v
    (`AbstractEquality.jdot_v`) as the block's `bias`."""
    if not mb.equalities:
        return []
    rows = [e.rows(mb, f, q) for e in mb.equalities]
    dtype = rows[0][1].dtype
    sizes = np.asarray([r.shape[0] for r, _ in rows])
    per_row = np.repeat(np.arange(len(rows)), sizes)
    diag = None
    if mb.inverse_weights is not None:
        diag = jnp.concatenate([e.diagonal(mb, dtype) for e in mb.equalities])
    # One row: the impedance at |r| (`impedance` takes the absolute value); several:
    # the norm of the equality's residuals (safe at r = 0).
    at = [r if r.shape[0] == 1 else jnp.repeat(_norm(r), r.shape[0]) for r, _ in rows]
    inf = jnp.full(len(per_row), jnp.inf, dtype)
    imp = stacked_impedances(mb, [e.impedance for e in mb.equalities], dtype)
    bias = None
    if v is not None and any(e.accelerating for e in mb.equalities):
        parts = [
            e.jdot_v(mb, q, v) if e.accelerating else jnp.zeros(r.shape, dtype)
            for e, (r, _) in zip(mb.equalities, rows, strict=True)
        ]
        bias = jnp.concatenate(parts)
    return [
        RowBlock(
            jnp.concatenate([r for r, _ in rows]),
            jnp.concatenate([j for _, j in rows]),
            imp[per_row],
            diag,
            -inf,
            inf,
            jnp.ones(len(per_row), bool),
            False,
            jnp.concatenate(at),
            bias,
        )
    ]


def _norm(r: Array) -> Array:
    """‖r‖ with a finite (zero) gradient at r = 0 (the double `where`)."""
    sq = jnp.sum(r * r)
    return jnp.where(sq > 0, jnp.sqrt(jnp.where(sq > 0, sq, 1.0)), 0.0)


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
    losses = [mb.joints[b].friction_loss(default) for b in bodies]
    # One row per dof: each joint's loss and impedance repeated over its dofs.
    counts = np.asarray([type(mb.joints[b]).nv for b in bodies])
    per_row = np.repeat(np.arange(len(bodies)), counts)
    d = np.concatenate([mb.topology.dadr[b] + np.arange(type(mb.joints[b]).nv) for b in bodies])
    w = mb.inverse_weights
    bound = jnp.stack([jnp.asarray(fl, dtype) for fl, _ in losses])[per_row]
    imp = map_grouped([p for _, p in losses], lambda x: x.stacked())[per_row]
    return [
        RowBlock(
            jnp.zeros(len(d), dtype),
            jnp.asarray(np.eye(mb.nv)[d], dtype),
            imp.astype(dtype),
            None if w is None else w.dof[d].astype(dtype),
            -bound,
            bound,
            jnp.ones(len(d), bool),
            True,
        )
    ]

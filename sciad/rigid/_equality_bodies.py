"""MuJoCo's connect and weld equality constraints between two bodies (or a body and the
world): `ConnectEquality` (3 rows: two points coincide) and `WeldEquality` (6 rows:
two frames coincide), as `mj_instantiateEquality` defines them.

Functions of a `MultiBody` `mb` (duck-typed, as in `_equality.py`)."""

from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float
import numpy as np

from .._core._geometry import cross, quat_conjugate, quat_multiply, quat_normalize
from .._core._types import Anything, FloatScalar
from .._core._validate import as_float_array, check_scalar, is_concrete
from ._equality import AbstractEquality
from ._impedance import Impedance

_ORIGIN = (0.0, 0.0, 0.0)
_IDENTITY = (1.0, 0.0, 0.0, 0.0)


def _point(mb: Anything, f: Anything, body: str | None, p: Array) -> tuple[Array, Array, Array]:
    """The world position x (3,) of the point `p` fixed to `body` (the world when
    `None`), its translational Jacobian dx/dv (3, nv) and the body's rotational
    Jacobian ω = J_r v (3, nv)."""
    if body is None:
        zero = jnp.zeros((3, mb.nv), p.dtype)
        return p, zero, zero
    topo = mb.topology
    b = mb.body_index(body)
    x = f.rot[b] @ p + f.pos[b]
    # Dof k moves the body when body(k) is the body or one of its ancestors.
    mask = jnp.asarray(topo.anc[b][topo.dof_body], p.dtype)[:, None]
    s = f.subspace
    jr = mask * s[:, :3]
    jp = mask * s[:, 3:] + cross(jr, x[None])
    return x, jp.T, jr.T


def _orientation(mb: Anything, q: Array, body: str | None) -> Array:
    """The body's world quaternion (MuJoCo's `xquat`, same sign), the identity for the
    world."""
    if body is None:
        return jnp.asarray(_IDENTITY, q.dtype)
    return mb.forward_kinematics(q)[1][mb.body_index(body)]


def _weights(mb: Anything, bodies: tuple[str | None, str | None], dtype: Anything) -> Array:
    """(translational, rotational) inverse weights summed over the two bodies (the
    world's are 0), MuJoCo's `body_invweight0`."""
    w = mb.inverse_weights
    out = jnp.zeros(2, dtype)
    for b in bodies:
        if b is not None:
            i = mb.body_index(b)
            out = out + jnp.stack([w.body_translation[i], w.body_rotation[i]]).astype(dtype)
    return out


def _set_common(e: Any, owner: str, kw: dict[str, Any]) -> None:
    """Validate and set the fields connects and welds share: the bodies, the anchors,
    the impedance and the inverse weights."""
    _check_bodies(owner, kw["body1"], kw["body2"])
    e.body1, e.body2 = kw["body1"], kw["body2"]
    e.anchor1 = as_float_array(kw["anchor1"], f"{owner} anchor1", (3,))
    a2 = kw["anchor2"]
    e.anchor2 = None if a2 is None else as_float_array(a2, f"{owner} anchor2", (3,))
    e.impedance = _impedance(owner, kw["impedance"])
    w = kw["inverse_weights"]
    if w is not None:
        w = as_float_array(w, f"{owner} inverse_weights", (2,))
        if is_concrete(w) and not np.all(np.asarray(w) >= 0):
            raise ValueError(
                f"{owner} inverse_weights must be finite and >= 0 (translational, "
                f"rotational); got {np.asarray(w)}."
            )
    e.inverse_weights = w


def _diagonal(e: Any, mb: Anything, dtype: Anything) -> Array:
    """(translational, rotational) inverse weights of a connect's or weld's rows: its
    own `inverse_weights`, else the two bodies' from the model's, summed."""
    if e.inverse_weights is not None:
        return e.inverse_weights.astype(dtype)
    return _weights(mb, (e.body1, e.body2), dtype)


def _check_bodies(owner: str, body1: Any, body2: Any) -> None:
    if not (isinstance(body1, str) and body1):
        raise TypeError(f"{owner} body1 must be a non-empty str (a body name); got {body1!r}.")
    if body2 is not None and not (isinstance(body2, str) and body2):
        raise TypeError(
            f"{owner} body2 must be a non-empty str (a body name) or None (the world); "
            f"got {body2!r}."
        )
    if body1 == body2:
        raise ValueError(f"{owner} body1 and body2 must differ; got {body1!r} twice.")


def _check_exist(owner: str, bodies: tuple[str | None, ...], joints: dict[str, Any]) -> None:
    for b in bodies:
        if b is not None and b not in joints:
            raise ValueError(f"{owner}: no body named {b!r}; bodies: {sorted(joints)}.")


def _impedance(owner: str, imp: Any) -> Impedance | None:
    if imp is not None and not isinstance(imp, Impedance):
        raise TypeError(f"{owner} impedance must be a sciad.rigid.Impedance or None; got {imp!r}.")
    return imp


def _quat(x: Any, label: str) -> Array:
    q = as_float_array(x, label, (4,))
    if is_concrete(q) and not float(jnp.sum(q * q)) > 0:
        raise ValueError(f"{label} must be a nonzero quaternion (w, x, y, z); got {x!r}.")
    return q


class ConnectEquality(AbstractEquality):
    """Two bodies joined at a point, a ball joint closing a kinematic loop (MuJoCo's
    `<equality><connect>`): the point `anchor1` fixed to `body1` and the point `anchor2`
    fixed to `body2` coincide. Three rows, in the world frame,

        r = x₁ − x₂,   J = J₁ − J₂,

    xᵢ = Rᵢ aᵢ + pᵢ the anchors in the world and Jᵢ their translational Jacobians
    (MuJoCo's `mj_instantiateEquality`). The impedance of the three rows is evaluated at
    ‖r‖; their inverse inertia with [`InverseWeights`][sciad.rigid.InverseWeights] is
    the sum of the two bodies' translational weights (MuJoCo's `diagApprox`).

    **Arguments:**

    - `body1`: the name of a body of the model.
    - `body2`: another body's name, or `None` (default): the world.
    - `anchor1`: the point on `body1`, in its frame (length), shape `(3,)`.
    - `anchor2`: the point on `body2` (in its frame; in the world for `None`), shape
      `(3,)`; `None` (default): where `anchor1` is at the model's default state, so
      that the constraint holds there (MuJoCo computes the same at `qpos0`).
    - `impedance`: the rows' [`Impedance`][sciad.rigid.Impedance] (MuJoCo's `solref`,
      `solimp`; `None`: the model's [`ContactModel`][sciad.rigid.ContactModel]'s).
    - `inverse_weights`: the rows' (translational, rotational) inverse weights (1/mass,
      1/(mass·length²)), shape `(2,)`, used where the model has
      [`InverseWeights`][sciad.rigid.InverseWeights]; `None` (default): the two
      bodies' summed. `load_mjcf` sets them from MuJoCo's `body_invweight0` when a
      body is a massless frame folded into its parent (whose weights differ).

    **Example:**

    ```python
    loop = sciad.rigid.ConnectEquality("link3", "link1", anchor1=(0.0, 0.0, -0.5))
    model = sciad.rigid.MultiBody(bodies, equalities=[loop])
    ```
    """

    body1: str = eqx.field(static=True)
    body2: str | None = eqx.field(static=True)
    anchor1: Float[Array, "3"]
    anchor2: Float[Array, "3"] | None
    impedance: Impedance | None
    inverse_weights: Float[Array, "2"] | None

    def __init__(
        self,
        body1: str,
        body2: str | None = None,
        *,
        anchor1: Float[ArrayLike, "3"] | Sequence[float | int] = _ORIGIN,
        anchor2: Float[ArrayLike, "3"] | Sequence[float | int] | None = None,
        impedance: Impedance | None = None,
        inverse_weights: Float[ArrayLike, "2"] | Sequence[float | int] | None = None,
    ):
        _set_common(self, "ConnectEquality", locals())

    def check(self, tendons: Sequence[Anything], joints: dict[str, Anything]) -> None:
        """Both bodies exist."""
        del tendons
        _check_exist("ConnectEquality", (self.body1, self.body2), joints)

    def _anchor2(self, mb: Anything, dtype: Anything) -> Array:
        if self.anchor2 is not None:
            return self.anchor2.astype(dtype)
        q0 = mb.default_state()[0].astype(dtype)
        return _local(mb, q0, self.body2, _point(mb, mb._frames(q0), self.body1, self.anchor1)[0])

    def rows(self, mb: Anything, f: Anything, q: Array) -> tuple[Array, Array]:
        """r = x₁ − x₂ (3,) and J₁ − J₂ (3, nv)."""
        x1, j1, _ = _point(mb, f, self.body1, self.anchor1.astype(q.dtype))
        x2, j2, _ = _point(mb, f, self.body2, self._anchor2(mb, q.dtype))
        return x1 - x2, j1 - j2

    @property
    def accelerating(self) -> bool:
        """True: MuJoCo subtracts the rows' J̇v from their reference acceleration."""
        return True

    def diagonal(self, mb: Anything, dtype: Anything) -> Array:
        """The bodies' translational inverse weights summed, on each of the 3 rows."""
        return jnp.repeat(_diagonal(self, mb, dtype)[:1], 3)


def _local(mb: Anything, q: Array, body: str | None, x: Array) -> Array:
    """The world point `x` in the frame of `body` at configuration `q`."""
    if body is None:
        return x
    f = mb._frames(q)
    b = mb.body_index(body)
    return f.rot[b].T @ (x - f.pos[b])


class WeldEquality(AbstractEquality):
    """Two bodies welded together (MuJoCo's `<equality><weld>`): the frame
    (`anchor1`, `quat1`) fixed to `body1` and the frame (`anchor2`, `quat2`) fixed to
    `body2` coincide. Six rows, in the world frame,

        r = (x₁ − x₂,  s · vec(Q₂* ⊗ Q₁)),

    xᵢ = Rᵢ aᵢ + pᵢ the frames' origins in the world, Qᵢ = qᵢ ⊗ quatᵢ their world
    orientations (qᵢ the bodies', as MuJoCo's `xquat`), vec the vector part and s the
    `torquescale`; the Jacobian is (J₁ − J₂, ½ s · vec(Q₂* ⊗ (0, ω) ⊗ Q₁)) with ω the
    columns of the two bodies' rotational Jacobians' difference, exactly as MuJoCo's
    `mj_instantiateEquality`. The impedance of the six rows is evaluated at ‖r‖; their
    inverse inertias with [`InverseWeights`][sciad.rigid.InverseWeights] are the sums
    of the bodies' translational (rows 1–3) and rotational (rows 4–6) weights
    (MuJoCo's `diagApprox`).

    MuJoCo's body form `<weld body1 body2 relpose anchor torquescale>` is
    `anchor1` = relpose's position, `quat1` = relpose's quaternion, `anchor2` =
    `anchor`, `quat2` = identity; its site form is each site's position and quaternion
    in its body.

    **Arguments:**

    - `body1`: the name of a body of the model.
    - `body2`: another body's name, or `None` (default): the world.
    - `anchor1`: the frame's origin on `body1`, in its frame (length), shape `(3,)`;
      default the body's origin.
    - `quat1`: the frame's orientation in `body1`'s frame, (w, x, y, z), shape
      `(4,)` (normalised); default the identity.
    - `anchor2`, `quat2`: the frame on `body2` (in the world for `None`); `None`
      (default, both or either): where frame 1 is at the model's default state, so the
      weld holds the default relative pose (as MuJoCo without `relpose`).
    - `torquescale`: s, the weight of the rotational rows against the translational
      ones (length per radian; MuJoCo's default 1).
    - `impedance`: the rows' [`Impedance`][sciad.rigid.Impedance] (MuJoCo's `solref`,
      `solimp`; `None`: the model's [`ContactModel`][sciad.rigid.ContactModel]'s).
    - `inverse_weights`: the rows' (translational, rotational) inverse weights (1/mass,
      1/(mass·length²)), shape `(2,)`, used where the model has
      [`InverseWeights`][sciad.rigid.InverseWeights]; `None` (default): the two
      bodies' summed. `load_mjcf` sets them from MuJoCo's `body_invweight0` when a
      body is a massless frame folded into its parent (whose weights differ).

    **Example:**

    ```python
    grip = sciad.rigid.WeldEquality("hand", "target", anchor1=(0.0, 0.0, 0.1))
    model = sciad.rigid.MultiBody(bodies, equalities=[grip])
    ```
    """

    body1: str = eqx.field(static=True)
    body2: str | None = eqx.field(static=True)
    anchor1: Float[Array, "3"]
    quat1: Float[Array, "4"]
    anchor2: Float[Array, "3"] | None
    quat2: Float[Array, "4"] | None
    torquescale: FloatScalar
    impedance: Impedance | None
    inverse_weights: Float[Array, "2"] | None

    def __init__(
        self,
        body1: str,
        body2: str | None = None,
        *,
        anchor1: Float[ArrayLike, "3"] | Sequence[float | int] = _ORIGIN,
        quat1: Float[ArrayLike, "4"] | Sequence[float | int] = _IDENTITY,
        anchor2: Float[ArrayLike, "3"] | Sequence[float | int] | None = None,
        quat2: Float[ArrayLike, "4"] | Sequence[float | int] | None = None,
        torquescale: Float[ArrayLike, ""] | float = 1.0,
        impedance: Impedance | None = None,
        inverse_weights: Float[ArrayLike, "2"] | Sequence[float | int] | None = None,
    ):
        _set_common(self, "WeldEquality", locals())
        self.quat1 = _quat(quat1, "WeldEquality quat1")
        self.quat2 = None if quat2 is None else _quat(quat2, "WeldEquality quat2")
        check_scalar(torquescale, "WeldEquality torquescale")
        self.torquescale = as_float_array(torquescale, "WeldEquality torquescale", ())

    def check(self, tendons: Sequence[Anything], joints: dict[str, Anything]) -> None:
        """Both bodies exist."""
        del tendons
        _check_exist("WeldEquality", (self.body1, self.body2), joints)

    def _frame2(self, mb: Anything, dtype: Anything) -> tuple[Array, Array]:
        """(anchor2, quat2), those not given at the default state."""
        a2 = None if self.anchor2 is None else self.anchor2.astype(dtype)
        qt2 = None if self.quat2 is None else quat_normalize(self.quat2.astype(dtype))
        if a2 is None or qt2 is None:
            q0 = mb.default_state()[0].astype(dtype)
            x1 = _point(mb, mb._frames(q0), self.body1, self.anchor1.astype(dtype))[0]
            if a2 is None:
                a2 = _local(mb, q0, self.body2, x1)
            if qt2 is None:
                q1 = quat_multiply(_orientation(mb, q0, self.body1), self._quat1(dtype))
                qt2 = quat_multiply(quat_conjugate(_orientation(mb, q0, self.body2)), q1)
        return a2, qt2

    def _quat1(self, dtype: Anything) -> Array:
        return quat_normalize(self.quat1.astype(dtype))

    def rows(self, mb: Anything, f: Anything, q: Array) -> tuple[Array, Array]:
        """r (6,) and J (6, nv) (see the class)."""
        a2, qt2 = self._frame2(mb, q.dtype)
        x1, j1, r1 = _point(mb, f, self.body1, self.anchor1.astype(q.dtype))
        x2, j2, r2 = _point(mb, f, self.body2, a2)
        big1 = quat_multiply(_orientation(mb, q, self.body1), self._quat1(q.dtype))
        neg2 = quat_conjugate(quat_multiply(_orientation(mb, q, self.body2), qt2))
        s = self.torquescale.astype(q.dtype)
        err = quat_multiply(neg2, big1)[1:]
        w = (r1 - r2).T  # (nv, 3)
        pure = jnp.concatenate([jnp.zeros((w.shape[0], 1), q.dtype), w], axis=1)
        jrot = 0.5 * quat_multiply(quat_multiply(neg2[None], pure), big1[None])[:, 1:]
        return (
            jnp.concatenate([x1 - x2, s * err]),
            jnp.concatenate([j1 - j2, s * jrot.T]),
        )

    @property
    def accelerating(self) -> bool:
        """True: MuJoCo subtracts the rows' J̇v from their reference acceleration."""
        return True

    def diagonal(self, mb: Anything, dtype: Anything) -> Array:
        """The bodies' translational (rows 1–3) and rotational (rows 4–6) inverse
        weights summed."""
        return jnp.repeat(_diagonal(self, mb, dtype), 3)

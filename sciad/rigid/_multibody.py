"""`MultiBody`: a kinematic tree of rigid bodies in generalised coordinates."""

from collections.abc import Callable, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float
import numpy as np

from .._core._geometry import cross
from .._core._integrator import AbstractIntegrator
from .._core._model import AbstractModel, expect_shape
from .._core._types import Anything, FloatScalar, RealScalarLike, State
from .._core._validate import as_float_array, is_concrete
from . import _dynamics as _dyn, _step
from ._activation import activation_rate, next_activation, stateful
from ._actuators import (
    AbstractActuator,
    AbstractControl,
    ConstantControl,
    controls,
    JointActuator,
    TendonActuator,
)
from ._body import Body
from ._collision import (
    check_pairs,
    contact_frames,
    contact_jacobian,
    contact_pairs,
    Contacts,
    find_contacts,
    warn_deep_penetration,
)
from ._constraint_solver import body_jacobians
from ._dynamics import Frames, Terms
from ._equality import (
    AbstractEquality,
    check_equalities,
    check_equality_weights,
    equality_rows,
    friction_joints,
    joint_friction_rows,
)
from ._fluid import Medium
from ._geom import ContactModel, ContactPair, Geom
from ._impedance import InverseWeights, RowBlock
from ._implicit import check_implicit, solve, step_matrix
from ._joints import AbstractJoint, FixedJoint, FreeJoint
from ._site_actuator import SiteActuator
from ._spatial import (
    matvec,
)
from ._tendons import (
    AbstractTendon,
    check_tendon_weights,
    check_tendons,
    tendon_energy,
    tendon_rows,
)
from ._topology import Topology, topology
from ._types import Vec3Like

Q = Float[Array, " nq"]
V = Float[Array, " nv"]
A = Float[Array, " na"]


def _check_massless(bodies: tuple[Body, ...], parents: list[int]) -> None:
    """A massless link that moves must carry a body with mass (else its joint has no
    inertia and the mass matrix is singular)."""
    massive = [not b.massless for b in bodies]
    for i in reversed(range(len(bodies))):  # children come after their parents
        if massive[i] and parents[i] >= 0:
            massive[parents[i]] = True
    for b, ok in zip(bodies, massive, strict=True):
        if not ok and type(b.joint).nv > 0:
            raise ValueError(
                f"Body {b.name!r} is massless and moves ({type(b.joint).__name__}) but no "
                "body with mass descends from it: its joint would have no inertia. Give it "
                "a mass and inertia, or attach the bodies it should carry."
            )


def _resolve_pairs(
    geoms: tuple[Geom, ...], geom_body: tuple[int, ...], explicit: tuple[ContactPair, ...]
) -> tuple[tuple[int, int], ...]:
    """The geoms' indices (i, j) of each `ContactPair`, checked: named geoms that exist
    once, not both on the world. A pair may repeat (as in MuJoCo, each makes its own
    contacts)."""
    names: dict[str, int] = {}
    for i, g in enumerate(geoms):
        if g.name is not None:
            names[g.name] = -1 if g.name in names else i
    out = []
    for k, cp in enumerate(explicit):
        if not isinstance(cp, ContactPair):
            raise TypeError(
                f"MultiBody contact_pairs must be sciad.rigid.ContactPair; item {k} is {cp!r}."
            )
        label = f"ContactPair {k} ({cp.geom1!r}, {cp.geom2!r})"
        ij = []
        for name in (cp.geom1, cp.geom2):
            if names.get(name, -1) < 0:
                why = "two geoms have" if name in names else "no geom has"
                raise ValueError(f"{label}: {why} the name {name!r}.")
            ij.append(names[name])
        if geom_body[ij[0]] < 0 and geom_body[ij[1]] < 0:
            raise ValueError(f"{label}: both geoms are fixed to the world.")
        out.append((min(ij), max(ij)))
    return tuple(out)


def _check_weights(w: InverseWeights | None, n: int, nv: int) -> InverseWeights | None:
    if w is None:
        return None
    if not isinstance(w, InverseWeights):
        raise TypeError(f"MultiBody inverse_weights must be sciad.rigid.InverseWeights; got {w!r}.")
    for name, size in (("body_translation", n), ("body_rotation", n), ("dof", nv)):
        if jnp.shape(getattr(w, name)) != (size,):
            raise ValueError(
                f"MultiBody inverse_weights.{name} must have shape ({size},); got "
                f"{jnp.shape(getattr(w, name))}."
            )
    return w


class MultiBody(AbstractModel):
    """A tree of rigid bodies connected by joints: a model for `sciad.simulate`.

    The state is y = (q, v) in generalised coordinates: q stacks the joints' positions
    (shape `(nq,)`, quaternions for ball and free joints) and v their velocities
    (shape `(nv,)`), bodies in the order given. A model whose actuators have
    activation dynamics ([`AbstractActivation`][sciad.rigid.AbstractActivation])
    has the state y = (q, v, act), act of shape `(na,)` holding the activations
    (MuJoCo's `act`) in actuator order; `default_state` gives the right one. The dynamics is
    M(q) v̇ = τ(t, q, v) − b(q, v) with the mass matrix M from the composite-rigid-body
    algorithm (CRBA) and the bias b (Coriolis, centrifugal, gyroscopic and gravity
    forces) from the recursive Newton–Euler algorithm (RNEA), solved by Cholesky.
    Spatial quantities are all expressed in the world frame, so tree sums are static
    ancestor masks and forward kinematics composes poses by pointer jumping
    (⌈log₂ depth⌉ vectorised rounds); joints are grouped by type and `vmap`ped. No
    Python loop runs over bodies in the traced code. See docs/design.md for why.
    Reference: Featherstone, *Rigid Body Dynamics Algorithms* (2008), ch. 5–6.

    Parameters (differentiable arrays): `mass` `(n,)`, `inertia` `(n, 3)` principal
    moments, `com` `(n, 3)`, `inertia_quat` `(n, 4)`, `gravcomp` `(n,)` (the bodies'
    gravity compensation), the placements `pos` `(n, 3)`
    and `quat` `(n, 4)` (link lengths), `gravity` `(3,)`, the joints' damping,
    armature, axes and limits, the actuators' gains, and the `control` and `wrench`
    modules' fields. The topology (`names`, `parents`) is static.

    **Arguments:**

    - `bodies`: a sequence of [`Body`][sciad.rigid.Body], parents before children.
    - `gravity`: shape `(3,)` (length/time²); default (0, 0, −9.81).
    - `actuators`: a sequence of [`JointActuator`][sciad.rigid.JointActuator]s and
      [`TendonActuator`][sciad.rigid.TendonActuator]s. Those with an `activation`
      (MuJoCo's filters and integrators) each add an activation state to y (see
      below).
    - `tendons`: a sequence of [`FixedTendon`][sciad.rigid.FixedTendon]s and
      [`SpatialTendon`][sciad.rigid.SpatialTendon]s: their springs and dampers act as
      passive forces, their limits and friction losses as constraints.
    - `equalities`: a sequence of [`TendonEquality`][sciad.rigid.TendonEquality]s and
      [`JointEquality`][sciad.rigid.JointEquality]s: constraints on the tendons'
      lengths and the joints' positions (MuJoCo's tendon and joint equalities).
    - `control`: an [`AbstractControl`][sciad.rigid.AbstractControl] giving the
      actuators' inputs u(t, q, v), shape `(n_actuators,)`; zero if `None`.
    - `wrench`: applied wrenches, shape `(n, 6)`: (force, torque) per body in the
      world frame, acting at the centre of mass (MuJoCo's `xfrc_applied`); an array
      or an `AbstractControl`.
    - `geoms`: a sequence of [`Geom`][sciad.rigid.Geom]s: collision geometry fixed to
      bodies or to the world (a ground [`Plane`][sciad.rigid.Plane], say).
    - `contact`: a [`ContactModel`][sciad.rigid.ContactModel] (how contacts are
      resolved, and the smoothness parameter); default `ContactModel()`.
    - `inverse_weights`: MuJoCo's constant inverse inertias
      ([`InverseWeights`][sciad.rigid.InverseWeights]) for the constraints'
      regularisation; `None` (default): the exact inverse inertia of each row at the
      current configuration.
    - `exclude`: pairs of body names (`None`: the world) whose geoms never collide.
    - `contact_pairs`: a sequence of [`ContactPair`][sciad.rigid.ContactPair]s:
      explicit pairs of named geoms that collide with their own parameters, besides
      (and instead of) the filtered ones (MuJoCo's `<contact><pair>`).
    - `medium`: a [`Medium`][sciad.rigid.Medium]: the fluid (density, viscosity, wind)
      whose drag acts on every body with mass (MuJoCo's inertia-box model); `None`
      (default): vacuum.

    With contacts, hard joint limits, joint or tendon friction losses, tendon limits
    or equalities (constraints) the model runs with
    [`SemiImplicitEuler`][sciad.rigid.SemiImplicitEuler] (time stepping with a
    converged, implicitly differentiated solve of contacts and limits together); it
    is `sciad.simulate`'s default then, and [`RKMK4`][sciad.rigid.RKMK4] otherwise.

    **Integrators:** [`SemiImplicitEuler`][sciad.rigid.SemiImplicitEuler],
    [`RKMK4`][sciad.rigid.RKMK4] (4th order on the manifold; the default without
    constraints) and, for free bodies, [`FreeBodySplitting`][sciad.rigid.FreeBodySplitting].
    Without constraints `sciad.RK4()` also runs it (quaternions treated as vectors; their
    norm drifts slowly).

    **Example:**

    ```python
    rigid = sciad.rigid
    pendulum = rigid.MultiBody([
        rigid.Body("bob", joint=rigid.HingeJoint(axis=jnp.array([0.0, 1.0, 0.0])),
                   com=jnp.array([0.0, 0.0, -1.0]), mass=1.0, inertia=jnp.full(3, 1e-3)),
    ])
    q0, v0 = pendulum.default_state()
    traj = sciad.simulate(pendulum, (q0 + 0.1, v0), dt=1e-3, n_steps=1000,
                          integrator=rigid.RKMK4())
    ```
    """

    names: tuple[str, ...] = eqx.field(static=True)
    parents: tuple[int, ...] = eqx.field(static=True)
    joints: tuple[AbstractJoint, ...]
    pos: Float[Array, "n 3"]
    quat: Float[Array, "n 4"]
    mass: Float[Array, " n"]
    inertia: Float[Array, "n 3"]
    com: Float[Array, "n 3"]
    inertia_quat: Float[Array, "n 4"]
    gravcomp: Float[Array, " n"]
    has_gravcomp: bool = eqx.field(static=True)
    gravity: Float[Array, "3"]
    actuators: tuple[AbstractActuator, ...]
    tendons: tuple[AbstractTendon, ...]
    equalities: tuple[AbstractEquality, ...]
    control: AbstractControl | None
    wrench: AbstractControl | None
    geoms: tuple[Geom, ...]
    contact: ContactModel
    inverse_weights: InverseWeights | None
    geom_body: tuple[int, ...] = eqx.field(static=True)
    pairs: tuple[tuple[int, int], ...] = eqx.field(static=True)
    contact_pairs: tuple[ContactPair, ...]
    pair_geoms: tuple[tuple[int, int], ...] = eqx.field(static=True)
    medium: Medium | None

    def __init__(
        self,
        bodies: Sequence[Body],
        *,
        gravity: Vec3Like = (0.0, 0.0, -9.81),
        actuators: Sequence[AbstractActuator] = (),
        tendons: Sequence[AbstractTendon] = (),
        equalities: Sequence[AbstractEquality] = (),
        control: AbstractControl | None = None,
        wrench: Float[ArrayLike, "n 6"] | AbstractControl | None = None,
        geoms: Sequence[Geom] = (),
        contact: ContactModel | None = None,
        inverse_weights: InverseWeights | None = None,
        exclude: Sequence[tuple[str | None, str | None]] = (),
        medium: Medium | None = None,
        contact_pairs: Sequence[ContactPair] = (),
    ):
        bodies = tuple(bodies)
        if not bodies:
            raise ValueError("MultiBody needs at least one body.")
        index: dict[str, int] = {}
        parents = []
        for i, b in enumerate(bodies):
            if not isinstance(b, Body):
                raise TypeError(f"MultiBody bodies must be sciad.rigid.Body; item {i} is {b!r}.")
            if b.name in index:
                raise ValueError(f"MultiBody: duplicate body name {b.name!r}.")
            if b.parent is None:
                parents.append(-1)
            elif b.parent in index:
                parents.append(index[b.parent])
            else:
                raise ValueError(
                    f"Body {b.name!r}: parent {b.parent!r} is not a body listed before it "
                    "(list parents before their children)."
                )
            if isinstance(b.joint, FreeJoint) and b.parent is not None:
                raise ValueError(
                    f"Body {b.name!r}: a FreeJoint's parent must be the world (parent=None), "
                    f"not {b.parent!r}."
                )
            index[b.name] = i
        _check_massless(bodies, parents)
        if sum(type(b.joint).nv for b in bodies) == 0:
            raise ValueError("MultiBody has no degrees of freedom (every joint is fixed).")
        self.names = tuple(b.name for b in bodies)
        self.parents = tuple(parents)
        self.joints = tuple(b.joint for b in bodies)
        self.pos = jnp.stack([b.pos for b in bodies])
        self.quat = jnp.stack([b.quat for b in bodies])
        self.mass = jnp.stack([b.mass for b in bodies])
        self.inertia = jnp.stack([b.inertia for b in bodies])
        self.com = jnp.stack([b.com for b in bodies])
        self.inertia_quat = jnp.stack([b.inertia_quat for b in bodies])
        self.gravcomp = jnp.stack([b.gravcomp for b in bodies])
        self.has_gravcomp = any(
            not is_concrete(b.gravcomp) or float(b.gravcomp) != 0 for b in bodies
        )
        self.gravity = as_float_array(gravity, "MultiBody gravity", (3,))
        actuators = tuple(actuators)
        for a in actuators:
            if not isinstance(a, AbstractActuator):
                raise TypeError(
                    "MultiBody actuators must be sciad.rigid.JointActuator, "
                    f"TendonActuator or SiteActuator; got {a!r}."
                )
            if isinstance(a, TendonActuator):  # checked with the tendons
                continue
            if isinstance(a, SiteActuator):
                if a.body not in index:
                    raise ValueError(f"SiteActuator: no body named {a.body!r}.")
                continue
            assert isinstance(a, JointActuator)
            if a.joint not in index:
                raise ValueError(f"JointActuator: no body named {a.joint!r}.")
            joint = bodies[index[a.joint]].joint
            if a.dof >= type(joint).nv:
                raise ValueError(
                    f"JointActuator on {a.joint!r}: dof {a.dof} out of range for "
                    f"{type(joint).__name__} with {type(joint).nv} dofs."
                )
            if (
                type(joint).nq != type(joint).nv
                and is_concrete(a.bias_position)
                and float(a.bias_position) != 0
            ):
                raise ValueError(
                    f"JointActuator on {a.joint!r}: bias_position (a position servo) needs "
                    f"a hinge or slider joint, not {type(joint).__name__}."
                )
        self.actuators = actuators
        self.tendons = check_tendons(tendons, bodies, index, actuators)
        self.equalities = check_equalities(
            equalities, self.tendons, {b.name: b.joint for b in bodies}
        )
        if control is not None and not isinstance(control, AbstractControl):
            raise TypeError(f"control must be a sciad.rigid.AbstractControl; got {control!r}.")
        self.control = control
        if wrench is not None and not isinstance(wrench, AbstractControl):
            wrench = ConstantControl(as_float_array(wrench, "MultiBody wrench"))
        self.wrench = wrench
        self._set_contacts(
            bodies, index, parents, tuple(geoms), contact, tuple(exclude), tuple(contact_pairs)
        )
        self.inverse_weights = _check_weights(inverse_weights, len(bodies), self.nv)
        if medium is not None:
            if not isinstance(medium, Medium):
                raise TypeError(f"MultiBody medium must be a sciad.rigid.Medium; got {medium!r}.")
            medium.check_bodies(self.names)
        self.medium = medium
        self._check_inputs()

    def _set_contacts(
        self,
        bodies: tuple[Body, ...],
        index: dict[str, int],
        parents: list[int],
        geoms: tuple[Geom, ...],
        contact: ContactModel | None,
        exclude: tuple[tuple[str | None, str | None], ...],
        explicit: tuple[ContactPair, ...],
    ) -> None:
        for i, g in enumerate(geoms):
            if not isinstance(g, Geom):
                raise TypeError(f"MultiBody geoms must be sciad.rigid.Geom; item {i} is {g!r}.")
            if g.body is not None and g.body not in index:
                raise ValueError(f"Geom {g.name or i!r}: no body named {g.body!r}.")
        if contact is not None and not isinstance(contact, ContactModel):
            raise TypeError(f"contact must be a sciad.rigid.ContactModel; got {contact!r}.")
        weld_root: list[int] = []
        for i, b in enumerate(bodies):
            p = parents[i]
            fixed = isinstance(b.joint, FixedJoint)
            weld_root.append((-1 if p < 0 else weld_root[p]) if fixed else i)
        ex = set()
        for pair in exclude:
            if not (isinstance(pair, tuple | list) and len(pair) == 2):
                raise ValueError(
                    f"MultiBody exclude items must be (body, body) pairs; got {pair!r}."
                )
            for name in pair:
                if name is not None and name not in index:
                    raise ValueError(f"MultiBody exclude: no body named {name!r}.")
            ex.add(frozenset(-1 if n is None else index[n] for n in pair))
        self.geoms = geoms
        self.contact = ContactModel() if contact is None else contact
        self.geom_body = tuple(-1 if g.body is None else index[g.body] for g in geoms)
        explicit_ij = _resolve_pairs(geoms, self.geom_body, explicit)
        self.pairs = contact_pairs(geoms, self.geom_body, parents, weld_root, ex, explicit_ij)
        # each ContactPair's geoms in the order of `pairs` (shape kind first): the
        # explicit pairs come last, in their order
        self.pair_geoms = self.pairs[len(self.pairs) - len(explicit) :]
        self.contact_pairs = explicit
        check_pairs(geoms, self.pairs, self.explicit_pairs())

    def explicit_pairs(self) -> tuple[tuple[tuple[int, int], ContactPair], ...]:
        """The explicit pairs as ((i, j), `ContactPair`), geoms i and j in the order of
        `pairs`.

        **Example:** `[(model.geoms[i].name, cp.condim) for (i, j), cp in model.explicit_pairs()]`
        """
        return tuple(zip(self.pair_geoms, self.contact_pairs, strict=True))

    def _check_inputs(self) -> None:
        q0, v0 = self.default_state()[:2]
        n_u = len(self.actuators)
        for name, fn, shape in (
            ("control", self.control, (n_u,)),
            ("wrench", self.wrench, (len(self.names), 6)),
        ):
            if fn is None:
                continue
            try:
                out = jax.eval_shape(fn, 0.0, q0, v0)
            except Exception as e:
                raise ValueError(f"MultiBody {name} fails on the default state: {e}") from e
            if getattr(out, "shape", None) != shape:
                what = f"{n_u} actuators" if name == "control" else "(force, torque) per body"
                raise ValueError(
                    f"MultiBody {name} must return shape {shape} ({what}); "
                    f"got {getattr(out, 'shape', out)}."
                )

    # ------------------------------------------------------------------ structure

    @property
    def topology(self) -> Topology:
        """Static index tables (positions, dofs, ancestors) of the tree."""
        return topology(
            self.parents,
            tuple(type(j).nq for j in self.joints),
            tuple(type(j).nv for j in self.joints),
        )

    @property
    def nq(self) -> int:
        """The number of position coordinates."""
        return self.topology.nq

    @property
    def nv(self) -> int:
        """The number of velocity coordinates (degrees of freedom)."""
        return self.topology.nv

    @property
    def na(self) -> int:
        """The number of activation states: actuators with an `activation`."""
        return len(stateful(self))

    @property
    def limited(self) -> np.ndarray:
        """The indices of the bodies whose joints have hard limits (static)."""
        return np.asarray([i for i, j in enumerate(self.joints) if j.hard_limited], np.int64)

    @property
    def constrained(self) -> bool:
        """Whether the model has contacts, hard joint limits, joint friction losses,
        tendon limits or friction losses, or equalities: constraints that only time
        stepping ([`SemiImplicitEuler`][sciad.rigid.SemiImplicitEuler]) solves."""
        tendons = any(t.limited or t.has_friction for t in self.tendons)
        rows = tendons or bool(self.equalities) or bool(friction_joints(self))
        return bool(self.pairs) or self.limited.size > 0 or rows

    def __check_init__(self):
        check_tendon_weights(self)
        check_equality_weights(self)

    def body_index(self, name: str) -> int:
        """The index of the body called `name`."""
        try:
            return self.names.index(name)
        except ValueError:
            raise ValueError(f"no body named {name!r}; bodies: {self.names}.") from None

    def default_state(self) -> tuple[Float[Array, " _"], ...]:
        """(q₀, 0): every joint at its neutral configuration; free bodies at their
        `pos`/`quat`; with activation states also act = 0 (MuJoCo's initial `act`).

        **Returns:** `(q, v)` with shapes `(nq,)` and `(nv,)`, or `(q, v, act)` with
        act of shape `(na,)` when `na > 0`.
        """
        parts = []
        for i, j in enumerate(self.joints):
            if isinstance(j, FreeJoint):
                parts.append(jnp.concatenate([self.pos[i], self.quat[i]]))
            else:
                parts.append(j.neutral().astype(self.pos.dtype))
        q = jnp.concatenate(parts)
        v = jnp.zeros(self.nv, dtype=q.dtype)
        return (q, v, jnp.zeros(self.na, q.dtype)) if self.na else (q, v)

    # ------------------------------------------------------------------ kinematics

    def _frames(self, q: Q, v: V | None = None) -> Frames:
        return _dyn.frames(self, q, v)

    def _map_joints(
        self, fn: Callable, args: tuple, outs: tuple, default: Anything = None
    ) -> tuple:
        return _dyn.map_joints(self, fn, args, outs, default)

    def forward_kinematics(self, q: Q) -> tuple[Float[Array, "n 3"], Float[Array, "n 4"]]:
        """The body frames in the world at configuration q.

        **Arguments:** `q`: shape `(nq,)`.

        **Returns:** `(positions, quaternions)`: shapes `(n, 3)` and `(n, 4)` (w, x, y, z).

        **Example:** `pos, quat = model.forward_kinematics(q)`
        """
        return _dyn.forward_kinematics(self, q)

    def com_positions(self, q: Q) -> Float[Array, "n 3"]:
        """The bodies' centres of mass in the world, shape `(n, 3)`."""
        return self._frames(q).com

    def body_velocities(self, q: Q, v: V) -> Float[Array, "n 6"]:
        """World-frame velocities of the bodies: (ω, velocity of the body origin).

        **Returns:** shape `(n, 6)`: angular velocity (rad/time) then the linear
        velocity of the body frame's origin (length/time), both in the world frame.
        """
        f = self._frames(q)
        vb, _ = _dyn.velocities(self, f, v)
        w, vo = vb[:, :3], vb[:, 3:]
        return jnp.concatenate([w, vo + cross(w, f.pos)], axis=-1)

    # ------------------------------------------------------------------ dynamics

    def _terms(
        self,
        t: RealScalarLike,
        q: Q,
        v: V,
        f: Frames | None = None,
        inertial: bool = True,
        act: A | None = None,
        act_dt: RealScalarLike | None = None,
    ) -> Terms:
        return _dyn.terms(self, t, q, v, f, inertial, act, act_dt)

    def mass_matrix(self, q: Q) -> Float[Array, "nv nv"]:
        """M(q), armature included (CRBA), shape `(nv, nv)`, symmetric positive definite.

        **Example:** `M = model.mass_matrix(q)`
        """
        return self._terms(0.0, q, jnp.zeros(self.nv, q.dtype)).mass_matrix

    def bias_force(self, q: Q, v: V) -> V:
        """b(q, v): Coriolis, centrifugal and gyroscopic forces minus generalised
        gravity (MuJoCo's `qfrc_bias`), shape `(nv,)` (RNEA)."""
        terms = self._terms(0.0, q, v)
        return terms.coriolis - terms.gravity

    def applied_force(
        self,
        t: RealScalarLike,
        q: Q,
        v: V,
        act: A | None = None,
        act_dt: RealScalarLike | None = None,
    ) -> V:
        """τ(t, q, v): actuators, applied wrenches, soft limits, damping (−D v) and
        the medium's fluid forces; everything but gravity and inertia. Shape `(nv,)`.
        `act`, `act_dt`: the activations and step (see `accelerations`)."""
        return self._terms(t, q, v, act=act, act_dt=act_dt).applied

    def accelerations(
        self,
        t: RealScalarLike,
        q: Q,
        v: V,
        implicit_dt: RealScalarLike | None = None,
        *,
        implicit: str = "damping",
        act: A | None = None,
        act_dt: RealScalarLike | None = None,
    ) -> V:
        """v̇ = M⁻¹ (τ − b), by a Cholesky solve.

        **Arguments:**

        - `t`, `q`, `v`: time and state.
        - `implicit_dt`: if given (a step h), solve (M − h D) v̇ = τ − b instead, D
          the velocity derivatives that `implicit` names (see
          [`SemiImplicitEuler`][sciad.rigid.SemiImplicitEuler]): a semi-implicit Euler
          step then integrates them implicitly, as MuJoCo's Euler (`"damping"`: the
          joint damping), `implicitfast` (`"fast"`) and `implicit` (`"full"`) do.
        - `implicit`: `"none"`, `"damping"` (default), `"fast"` or `"full"`.
        - `act`: the activations, shape `(na,)` (needed when `na > 0`).
        - `act_dt`: the step over which actuators with `early` activation advance
          theirs before acting (MuJoCo's `actearly`; needed only by them).

        **Returns:** shape `(nv,)`.

        **Example:** `qacc = model.accelerations(0.0, q, v)`
        """
        check_implicit(implicit, "accelerations")
        f = self._frames(q, v)
        terms = self._terms(t, q, v, f, act=act, act_dt=act_dt)
        rhs = terms.applied + terms.gravity - terms.coriolis
        if implicit_dt is None:
            return solve(terms.mass_matrix, True, rhs)
        h, symmetric = step_matrix(self, t, q, v, f, terms, implicit_dt, implicit, act)
        return solve(h, symmetric, rhs)

    def inverse_dynamics(self, t: RealScalarLike, q: Q, v: V, qacc: V) -> V:
        """The extra generalised force that produces accelerations `qacc`:
        M qacc + b − τ (zero when `qacc = accelerations(t, q, v)`), shape `(nv,)`."""
        terms = self._terms(t, q, v)
        return terms.mass_matrix @ qacc + terms.coriolis - terms.gravity - terms.applied

    def activation_rate(self, t: RealScalarLike, q: Q, v: V, act: A) -> A:
        """act_dot (MuJoCo's `act_dot`): each activation's rate for the actuators'
        clipped controls at (t, q, v), shape `(na,)`.

        **Example:** `act_dot = model.activation_rate(0.0, q, v, act)`
        """
        return activation_rate(self, controls(self, t, q, v), act)

    def next_activation(self, act: A, act_dot: A, dt: RealScalarLike) -> A:
        """The activations after a step `dt` at rates `act_dot`: Euler, or a filter's
        exact exponential, then clamped to each `act_range` (MuJoCo's
        `mj_nextActivation`), shape `(na,)`.

        **Example:** `act1 = model.next_activation(act, model.activation_rate(t, q, v, act), dt)`
        """
        return next_activation(self, act, act_dot, dt)

    def vector_field(self, t: RealScalarLike, y: State) -> State:
        """dy/dt = (q̇, v̇), or (q̇, v̇, act_dot) with activations: q̇ from each joint's
        `position_derivative` (a model with contacts or hard joint limits raises: it
        needs time stepping). The activation ranges' clamps and the filters' exact
        integration are steps of [`SemiImplicitEuler`][sciad.rigid.SemiImplicitEuler]
        and [`RKMK4`][sciad.rigid.RKMK4], not part of the vector field."""
        if self.constrained:
            raise ValueError(
                f"a MultiBody with {self.constraint_names()} has no smooth vector field: "
                "run it with sciad.rigid.SemiImplicitEuler() (sciad.simulate's default "
                "for it)."
            )
        q, v, *act = y
        if not act:
            return self.position_derivative(q, v), self.accelerations(t, q, v)
        acc = self.accelerations(t, q, v, act=act[0])
        return self.position_derivative(q, v), acc, self.activation_rate(t, q, v, act[0])

    def default_integrator(self) -> AbstractIntegrator:
        """`SemiImplicitEuler()` with contacts or hard limits, `RKMK4()` without."""
        from ._integrators import RKMK4, SemiImplicitEuler

        return SemiImplicitEuler() if self.constrained else RKMK4()

    def constraint_names(self) -> str:
        """What makes the model constrained, for error messages."""
        names = [f"joint {self.names[i]!r}" for i in self.limited]
        limits = f"hard limits ({', '.join(names)}; or limit='soft')" if names else ""
        ten = [repr(t.name) for t in self.tendons if t.limited or t.has_friction]
        ten_rows = f"tendon limits or friction losses ({', '.join(ten)})" if ten else ""
        dry = [repr(self.names[i]) for i in friction_joints(self)]
        dry_rows = f"joint friction losses ({', '.join(dry)})" if dry else ""
        eq = "equalities" if self.equalities else ""
        parts = ("contacts" if self.pairs else "", limits, ten_rows, dry_rows, eq)
        return " and ".join(x for x in parts if x)

    def constrained_velocity(
        self,
        t: RealScalarLike,
        dt: RealScalarLike,
        q: Q,
        v: V,
        *,
        implicit: str = "damping",
        act: A | None = None,
    ) -> tuple[V, Array]:
        """The velocity after a step of length `dt` from (t, q, v) with the contacts and
        hard limits solved: the public kernel of time-stepping integrators
        ([`SemiImplicitEuler`][sciad.rigid.SemiImplicitEuler] calls it, then moves q
        with the new velocity).

        One Cholesky factorisation of M gives the free velocity v_free = v + dt M⁻¹(τ − b)
        and M⁻¹Jᵀ for every constraint row; the rows' references and regularisations
        (each row's MuJoCo `Impedance`, its time constant at least 2·dt) then define the convex
        problem of [`ContactModel`][sciad.rigid.ContactModel], solved by Newton's
        method from a warm start at v and differentiated implicitly. The velocity
        derivatives D that `implicit` names are then applied implicitly, as MuJoCo's
        integrators do: v + (M − dt·D)⁻¹ M (v⁺ − v) (`"damping"`, MuJoCo's Euler: the
        joint damping; `"fast"` and `"full"`: MuJoCo's `implicitfast` and `implicit`,
        see [`SemiImplicitEuler`][sciad.rigid.SemiImplicitEuler]; `"none"`: v⁺).

        **Arguments:** `t` (time), `dt` (> 0), `q` shape `(nq,)`, `v` shape `(nv,)`;
        `implicit`: `"none"`, `"damping"` (default), `"fast"` or `"full"`; `act`: the
        activations, shape `(na,)` (needed when `na > 0`).

        **Returns:** `(v⁺, converged)`: shape `(nv,)` and a boolean scalar.

        **Example:** `v1, ok = model.constrained_velocity(0.0, 1e-3, q, v)`
        """
        if not self.constrained:
            raise ValueError(
                "constrained_velocity needs constraints (contacts, hard limits, friction "
                "losses, tendon limits or equalities); this MultiBody has none (use "
                "accelerations)."
            )
        check_implicit(implicit, "constrained_velocity")
        return _step.constrained_velocity(self, t, dt, q, v, implicit, act)

    def _limits(self, f: Frames) -> RowBlock:
        """The hard limits' constraint rows, one per limited joint: values r (L,)
        (negative: violated), Jacobian dr/dv (L, nv), stacked impedances (L, 7), and
        MuJoCo's inverse weight of the joint's first dof if the model has them."""
        assert f.limits is not None
        dist, row, imp = f.limits
        idx = self.limited
        rows = jnp.asarray(self.topology.dof_body[None, :] == idx[:, None], row.dtype)
        diagonal = None
        if self.inverse_weights is not None:
            first = np.asarray([int(np.argmax(self.topology.dof_body == i)) for i in idx])
            diagonal = self.inverse_weights.dof[first].astype(row.dtype)
        zero = jnp.zeros(len(idx), row.dtype)
        return RowBlock(
            dist[idx],
            rows * row[None, :],
            imp[idx],
            diagonal,
            zero,
            zero + jnp.inf,
            dist[idx] < 0,
            False,
        )

    def _extra_rows(self, f: Frames, q: Q, v: V | None = None) -> list[RowBlock]:
        """The scalar constraint rows besides contacts and joint limits at
        configuration q with frames f, as `RowBlock`s: the joints' friction losses,
        the tendons' limits and friction losses, and the equalities (with velocity v,
        the connects' and welds' J̇v in their reference accelerations)."""
        rows = joint_friction_rows(self, f) + tendon_rows(self, f)
        return rows + equality_rows(self, f, q, v)

    # ------------------------------------------------------------------ contacts

    def contacts(self, q: Q) -> Contacts:
        """Every candidate contact point at configuration q (a static number C of
        them: e.g. 8 box corners against a plane, touching or not).

        **Arguments:** `q`: shape `(nq,)`.

        **Returns:** a [`Contacts`][sciad.rigid.Contacts]: signed distances `(C,)`
        (negative: penetrating), normals and points `(C, 3)`, friction,
        restitution and weight (each point's share of the contact stiffness) `(C,)`.

        **Example:** `gap = model.contacts(q).dist.min()`
        """
        f = self._frames(q)
        return self._contacts(f)

    def _contacts(self, f: Frames) -> Contacts:
        if not self.pairs:
            raise ValueError("this MultiBody has no colliding geom pairs.")
        return find_contacts(
            self.geoms,
            self.geom_body,
            self.pairs,
            f.rot,
            f.pos,
            self.contact,
            explicit=self.explicit_pairs(),
        )

    def _contact_jacobian(self, f: Frames, c: Contacts) -> tuple[Array, Array]:
        """The contact frames (C, 3, 3) and the Jacobian J (C, 3, nv)."""
        topo = self.topology
        frames = contact_frames(c.normal, c.tangent)
        jb = body_jacobians(topo.anc, topo.dof_body, f.subspace)
        return frames, contact_jacobian(jb, c, frames)

    # ------------------------------------------------------------------ manifold

    def integrate_positions(self, q: Q, dq: V) -> Q:
        """q ⊕ dq for every joint (quaternions: q ⊗ exp(dq)), then normalised."""
        (out,) = self._map_joints(
            lambda j, qj, dj: (j.normalize(j.integrate(qj, dj)),),
            ((q, "q"), (dq, "v")),
            ("q",),
            (("integrate", "normalize"), lambda a, b: (a + b,)),
        )
        return out

    def position_derivative(self, q: Q, v: V) -> Q:
        """q̇ for velocity v, shape `(nq,)`."""
        (out,) = self._map_joints(
            lambda j, qj, vj: (j.position_derivative(qj, vj),),
            ((q, "q"), (v, "v")),
            ("q",),
            (("position_derivative",), lambda a, b: (b,)),
        )
        return out

    def tangent_correction(self, dq: V, v: V) -> V:
        """d(dq)/dt for q(t) = q₀ ⊕ dq(t) moving with velocity v (dexp⁻¹ per joint)."""
        (out,) = self._map_joints(
            lambda j, dj, vj: (j.tangent_correction(dj, vj),),
            ((dq, "v"), (v, "v")),
            ("v",),
            (("tangent_correction",), lambda a, b: (b,)),
        )
        return out

    def position_difference(self, q1: Q, q0: Q) -> V:
        """The tangent vector dq with q0 ⊕ dq = q1, shape `(nv,)`."""
        (out,) = self._map_joints(
            lambda j, a, b: (j.difference(a, b),),
            ((q1, "q"), (q0, "q")),
            ("v",),
            (("difference",), lambda a, b: (a - b,)),
        )
        return out

    def normalize(self, q: Q) -> Q:
        """q with every quaternion normalised."""
        (out,) = self._map_joints(
            lambda j, qj: (j.normalize(qj),), ((q, "q"),), ("q",), (("normalize",), lambda a: (a,))
        )
        return out

    # ------------------------------------------------------------------ observables

    def kinetic_energy(self, q: Q, v: V) -> FloatScalar:
        """½ Σ_b v_bᵀ I_b v_b + ½ Σ_k a_k v_k² = ½ vᵀ M v: the bodies' kinetic energy
        plus the armatures' (rotor inertias; as MuJoCo's energy) (energy units)."""
        f = self._frames(q, v)
        vb, _ = _dyn.velocities(self, f, v)
        bodies = 0.5 * jnp.sum(vb * matvec(f.inertia, vb))
        return bodies + 0.5 * jnp.sum(f.armature * v**2)

    def potential_energy(self, q: Q) -> FloatScalar:
        """Gravitational potential energy −Σ_b (1 − gravcomp_b) m_b g · c_b (the
        bodies' gravity compensation counted; exact while it is not clamped by a
        joint's `actuator_force_range`) plus the joint springs'
        ½ k (q − springref)² and the tendon springs' ½ k x² (x the stretch beyond
        the dead band)."""
        f = self._frames(q)
        com = f.com
        springs = sum(
            (
                j.spring_energy(q[a : a + type(j).nq])
                for j, a in zip(self.joints, self.topology.qadr, strict=True)
            ),
            jnp.zeros((), q.dtype),
        )
        if self.tendons:
            springs = springs + tendon_energy(self, f)
        weight = self.mass * (1 - self.gravcomp) if self.has_gravcomp else self.mass
        return springs - jnp.sum(weight * (com @ self.gravity))

    def energy(self, y: State) -> FloatScalar:
        """Kinetic plus potential energy (gravity and joint springs) of y = (q, v).

        **Example:** `sciad.SaveAt(steps=10, fn=lambda t, y, m: m.energy(y))`
        """
        q, v = y[:2]
        return self.kinetic_energy(q, v) + self.potential_energy(q)

    def momentum(self, q: Q, v: V) -> Float[Array, "6"]:
        """Total spatial momentum in the world frame: (angular momentum about the world
        origin, linear momentum), shape `(6,)`."""
        f = self._frames(q)
        vb, _ = _dyn.velocities(self, f, v)
        return jnp.sum(matvec(f.inertia, vb), axis=0)

    def check_state(self, y: State) -> None:
        """y = (q, v) with shapes `(nq,)` and `(nv,)` (with activations (q, v, act),
        act of shape `(na,)`), and, when q is concrete, its
        quaternions of unit length (to 1e-3: normalise with `normalize`). A contact
        that starts deeper than a tenth of the smaller geom's
        [`inradius`][sciad.rigid.AbstractShape.inradius] gets a `UserWarning` naming the
        geoms and the depth: it would be pushed out at depth/τ and launch the body."""
        n = 3 if self.na else 2
        if not (isinstance(y, tuple) and len(y) == n):
            what = f"(q, v, act) of shapes ({self.nq},), ({self.nv},), ({self.na},)"
            if not self.na:
                what = f"(q, v) of shapes ({self.nq},), ({self.nv},)"
            got = f"a tuple of {len(y)}" if isinstance(y, tuple) else type(y).__name__
            raise ValueError(f"y0 for this MultiBody must be a tuple {what}; got {got}.")
        expect_shape("y0[0] (q)", y[0], (self.nq,), "joint positions")
        expect_shape("y0[1] (v)", y[1], (self.nv,), "joint velocities")
        if self.na:
            expect_shape("y0[2] (act)", y[2], (self.na,), "actuator activations")
        # Inside an outer jit even operations on concrete values are staged: evaluate
        # these checks on the concrete values now.
        with jax.ensure_compile_time_eval():
            if all(is_concrete(x) for x in jax.tree.leaves((self.joints, y[0]))):
                self._check_manifold(np.asarray(y[0]))
            if self.pairs:
                warn_deep_penetration(self, y[0])

    def _check_manifold(self, q: np.ndarray) -> None:
        """Every joint's q on its manifold: `normalize` moves no coordinate by > 1e-3."""
        qn = np.asarray(self.normalize(jnp.asarray(q)))
        bad = ~np.isfinite(qn) | (np.abs(qn - q) > 1e-3)
        if np.any(bad):
            b = int(np.searchsorted(self.topology.qadr, np.argmax(bad), side="right") - 1)
            a, e = self.topology.qadr[b], self.topology.qadr[b] + type(self.joints[b]).nq
            raise ValueError(
                f"y0[0] (q) of body {self.names[b]!r} ({type(self.joints[b]).__name__}), "
                f"q[{a}:{e}] = {q[a:e]}, is off the joint's manifold: quaternions must have "
                f"unit length (normalised: {qn[a:e]}; model.normalize(q) does it)."
            )

"""MJCF import: a compiled MuJoCo model as a `MultiBody`, refusing what it cannot represent."""

import os
from typing import Any

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float
import numpy as np

from .._core._integrator import AbstractIntegrator
from ._actuators import AbstractControl
from ._body import Body
from ._fluid import FluidEllipsoid, Medium
from ._geom import ContactModel
from ._impedance import InverseWeights
from ._integrators import RKMK4, SemiImplicitEuler
from ._joints import FixedJoint
from ._mjcf_elements import (
    colliding_geoms,
    compose,
    convert_actuator,
    convert_geoms,
    convert_joint,
    convert_pairs,
    disabled,
    Labels,
)
from ._mjcf_tendons import convert_equalities, convert_tendons
from ._multibody import MultiBody


def _import_mujoco() -> Any:
    try:
        import mujoco  # pyright: ignore[reportMissingImports]
    except ImportError as e:
        raise ImportError(
            "MJCF import compiles the file with MuJoCo, which is not installed; install "
            'the `sciad[mjcf]` extra: pip install "sciad[mjcf]".'
        ) from e
    return mujoco


class MJCFModel(eqx.Module):
    """A MuJoCo model converted to sciad: the [`MultiBody`][sciad.rigid.MultiBody], its
    initial state, the file's time step and the matching integrator, and converters
    between MuJoCo's `qpos`/`qvel` and sciad's `(q, v)`.

    Returned by [`load_mjcf`][sciad.rigid.load_mjcf] and
    [`from_mujoco`][sciad.rigid.from_mujoco]; run it with
    `sciad.simulate(mj.model, mj.y0, dt=mj.dt, n_steps=..., integrator=mj.integrator)`.

    **State layout.** sciad's q and v stack the joints body by body in MuJoCo's order,
    with MuJoCo's conventions (free joint: position, quaternion (w, x, y, z); linear
    velocity of the body origin in the world frame, angular velocity in the body
    frame; ball joint: quaternion, body-frame angular velocity), so `qvel` and v are
    the same vector and `qpos` and q differ only for hinges and sliders with a
    reference position: MuJoCo places the body at `qpos − ref` (`ref` is
    `qpos0`), sciad at q, so q = qpos − ref there. Use the converters to compare
    with MuJoCo; they broadcast over leading batch axes.

    **Fields:**

    - `model`: the `MultiBody`.
    - `y0`: `(q0, v0)`: MuJoCo's `qpos0` (keyframes are ignored) in sciad's layout and
      zero velocity, shapes `(nq,)` and `(nv,)`; for a model with activation states
      `(q0, v0, act0)`, act0 = 0 of shape `(na,)` (MuJoCo's `act`, in its order).
    - `dt`: the `<option timestep>` (time units).
    - `integrator`: `SemiImplicitEuler` for MuJoCo's Euler, implicitfast and implicit
      integrators (`implicit="damping"`, `"fast"`, `"full"`), `RKMK4` for RK4 (see
      [`from_mujoco`][sciad.rigid.from_mujoco]).
    - `qpos_offset`: shape `(nq,)`, the hinges' and sliders' `ref` (zero elsewhere).
    - `geom_ids`: the MuJoCo geom id of each of `model.geoms`.

    **Example:**

    ```python
    mj = sciad.rigid.load_mjcf("ant.xml")
    traj = sciad.simulate(mj.model, mj.y0, dt=mj.dt, n_steps=100, integrator=mj.integrator)
    qpos = mj.q_to_qpos(traj.y1[0])
    ```
    """

    model: MultiBody
    y0: (
        tuple[Float[Array, " nq"], Float[Array, " nv"]]
        | tuple[Float[Array, " nq"], Float[Array, " nv"], Float[Array, " na"]]
    )
    dt: float = eqx.field(static=True)
    integrator: AbstractIntegrator
    qpos_offset: Float[Array, " nq"]
    geom_ids: tuple[int, ...] = eqx.field(static=True)

    def _aligned(self, name: str, x: Any) -> tuple[Array, Array]:
        x = jnp.asarray(x)
        nq = self.qpos_offset.shape[0]
        if x.ndim == 0 or x.shape[-1] != nq:
            raise ValueError(f"{name} must have shape (..., {nq}); got {x.shape}.")
        if not jnp.issubdtype(x.dtype, jnp.floating):
            x = x.astype(self.qpos_offset.dtype)
        return x, jnp.broadcast_to(self.qpos_offset.astype(x.dtype), x.shape)

    def qpos_to_q(self, qpos: Float[ArrayLike, "*batch nq"]) -> Float[Array, "*batch nq"]:
        """sciad's q from MuJoCo's `qpos` (q = qpos − ref on hinges and sliders).

        **Example:** `q = mj.qpos_to_q(data.qpos)`
        """
        qpos, offset = self._aligned("qpos", qpos)
        return qpos - offset

    def q_to_qpos(self, q: Float[ArrayLike, "*batch nq"]) -> Float[Array, "*batch nq"]:
        """MuJoCo's `qpos` from sciad's q (qpos = q + ref on hinges and sliders).

        **Example:** `data.qpos[:] = mj.q_to_qpos(q)`
        """
        q, offset = self._aligned("q", q)
        return q + offset

    def qvel_to_v(self, qvel: Float[ArrayLike, "*batch nv"]) -> Float[Array, "*batch nv"]:
        """sciad's v from MuJoCo's `qvel`: the same vector (the conventions agree).

        **Example:** `v = mj.qvel_to_v(data.qvel)`
        """
        return jnp.asarray(qvel)

    def v_to_qvel(self, v: Float[ArrayLike, "*batch nv"]) -> Float[Array, "*batch nv"]:
        """MuJoCo's `qvel` from sciad's v: the same vector.

        **Example:** `data.qvel[:] = mj.v_to_qvel(v)`
        """
        return jnp.asarray(v)


# --------------------------------------------------------------------------- model-level


# Option flags that change MuJoCo's dynamics in ways sciad does not follow (the other
# flags are followed, or change nothing but speed, statistics or sensors).
_FLAGS = (
    ("mjENBL_OVERRIDE", 'override="enable"', "overriding contact parameters is not supported."),
    (
        "mjDSBL_REFSAFE",
        'refsafe="disable"',
        "sciad always keeps time constants at two steps or more (refsafe).",
    ),
    (
        "mjDSBL_NATIVECCD",
        'nativeccd="disable"',
        "libccd's contacts are not reproduced "
        "(sciad follows MuJoCo's default native convex collision).",
    ),
    (
        "mjDSBL_MULTICCD",
        'multiccd="disable"',
        "single-point convex contacts are not "
        "reproduced (sciad follows MuJoCo's default multi-point ones).",
    ),
    ("mjENBL_SLEEP", 'sleep="enable"', "sleeping bodies are not supported."),
    (
        "mjENBL_DIAGEXACT",
        'diagexact="enable"',
        "the exact constraint diagonal for the regularisation is not supported.",
    ),
    ("mjENBL_IPC", 'ipc="enable"', "IPC contacts are not supported."),
    ("mjENBL_SPECULATIVE", 'speculative="enable"', "speculative contacts are not supported."),
)


def _check_model(m: Any, mujoco: Any, label: Labels) -> None:
    """Report the features of the whole model that sciad.rigid cannot represent."""
    for count, obj, what in (
        ("nflex", "flex", "flexible bodies (flex/composite) are not supported"),
        ("nplugin", "plugin", "engine plugins are not supported"),
    ):
        if getattr(m, count) > 0:
            label.block(f"{label(obj, 0)}: {what}.")
    if m.nu > 0 and disabled(m, mujoco, "mjDSBL_ACTUATION"):
        label.block(
            'MJCF <option><flag actuation="disable">: disabled actuators are not supported; '
            "remove them or enable actuation."
        )
    for bit, flag, what in _FLAGS:
        enable = bit.startswith("mjENBL")
        flags, bits = (
            (m.opt.enableflags, mujoco.mjtEnableBit)
            if enable
            else (m.opt.disableflags, mujoco.mjtDisableBit)
        )
        if flags & int(getattr(bits, bit, 0)):  # 0: a flag this MuJoCo lacks
            label.block(f"MJCF <option><flag {flag}>: {what}")
    pyramidal = int(m.opt.cone) == int(mujoco.mjtCone.mjCONE_PYRAMIDAL)
    if m.opt.noslip_iterations > 0 and not pyramidal:
        label.block(
            f'MJCF <option noslip_iterations="{m.opt.noslip_iterations}" cone="elliptic">: '
            "MuJoCo's noslip post-solve for the elliptic cone (its QCQP on each contact's "
            "friction) is not supported; noslip runs with the pyramidal cone."
        )
    if m.opt.noslip_iterations > 0 and disabled(m, mujoco, "mjDSBL_ISLAND"):
        label.block(
            f'MJCF <option noslip_iterations="{m.opt.noslip_iterations}"><flag '
            'island="disable">: MuJoCo\'s noslip over the whole model at once (its stopping '
            "test differs from the per-island one) is not supported; noslip runs per island."
        )
    if m.opt.disableactuator != 0:
        label.block(
            "MJCF <option actuatorgroupdisable>: disabled actuator groups are not supported."
        )
    supported = {
        int(mujoco.mjtIntegrator.mjINT_EULER),
        int(mujoco.mjtIntegrator.mjINT_RK4),
        int(mujoco.mjtIntegrator.mjINT_IMPLICIT),
        int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST),
    }
    if int(m.opt.integrator) not in supported:
        name = mujoco.mjtIntegrator(int(m.opt.integrator)).name
        label.block(
            f"MJCF <option integrator>: {name} has no sciad counterpart (use Euler, RK4, "
            "implicit or implicitfast)."
        )


def _medium(
    m: Any, mujoco: Any, owner: list[str | None], frame: list[tuple[np.ndarray, np.ndarray]]
) -> Medium | None:
    """`<option density viscosity wind>` as a `Medium`, with a `FluidEllipsoid` for
    every geom with `fluidshape="ellipsoid"` on a body with mass (placed in the sciad
    body that body became, `owner`, by its `frame` there); `None` without fluid
    forces (zero density and viscosity, or both springs and dampers disabled, which
    makes MuJoCo skip every passive force)."""
    off = disabled(m, mujoco, "mjDSBL_SPRING") and disabled(m, mujoco, "mjDSBL_DAMPER")
    if off or (m.opt.density == 0 and m.opt.viscosity == 0):
        return None
    G = mujoco.mjtGeom
    ellipsoids = []
    for g in np.flatnonzero(np.asarray(m.geom_fluid)[:, 0] > 0):
        b = int(m.geom_bodyid[g])
        name = owner[b]
        if name is None or m.body_mass[b] < 1e-15:  # MuJoCo skips such a body
            continue
        size, kind = np.asarray(m.geom_size[g], dtype=np.float64), int(m.geom_type[g])
        if kind == int(G.mjGEOM_SPHERE):
            semiaxes = np.full(3, size[0])
        elif kind == int(G.mjGEOM_CAPSULE):
            semiaxes = np.array([size[0], size[0], size[1] + size[0]])
        elif kind == int(G.mjGEOM_CYLINDER):
            semiaxes = np.array([size[0], size[0], size[1]])
        else:
            semiaxes = size
        pos, quat = compose(frame[b], np.asarray(m.geom_pos[g]), np.asarray(m.geom_quat[g]))
        coef = np.asarray(m.geom_fluid[g], dtype=np.float64)
        ellipsoids.append(
            FluidEllipsoid(
                name,
                semiaxes,
                pos=pos,
                quat=quat,
                blunt_drag=coef[1],
                slender_drag=coef[2],
                angular_drag=coef[3],
                kutta_lift=coef[4],
                magnus_lift=coef[5],
                virtual_mass=coef[6:9],
                virtual_inertia=coef[9:12],
            )
        )
    return Medium(
        float(m.opt.density),
        float(m.opt.viscosity),
        np.asarray(m.opt.wind, dtype=np.float64),
        ellipsoids,
    )


def _integrator(m: Any, mujoco: Any) -> AbstractIntegrator:
    """sciad's counterpart of `<option integrator>` (see `from_mujoco`)."""
    if int(m.opt.integrator) == int(mujoco.mjtIntegrator.mjINT_RK4):
        return RKMK4()
    if int(m.opt.integrator) == int(mujoco.mjtIntegrator.mjINT_EULER):
        damped = not disabled(m, mujoco, "mjDSBL_EULERDAMP")
        return SemiImplicitEuler(implicit="damping" if damped else "none")
    if int(m.opt.integrator) == int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST):
        return SemiImplicitEuler(implicit="fast")
    return SemiImplicitEuler(implicit="full")


# --------------------------------------------------------------------------- conversion


def from_mujoco(m: Any, *, control: AbstractControl | None = None) -> MJCFModel:
    """Convert a compiled MuJoCo model (`mujoco.MjModel`) into a sciad
    [`MultiBody`][sciad.rigid.MultiBody], refusing anything it cannot represent
    faithfully.

    The conversion reads the compiled model, so inertias computed from geoms,
    defaults, `fromto`, angle units and `<compiler>` settings are MuJoCo's own:

    - **bodies**: `body_mass`, `body_inertia` (principal moments), `body_ipos`,
      `body_iquat`, `body_pos`, `body_quat`. A body without a joint is welded to its
      parent ([`FixedJoint`][sciad.rigid.FixedJoint]), a point mass (zero inertia)
      included; a massless one (a frame for sites or children) is folded into its
      parent, its children and geoms re-placed.
    - **joints**: free, ball, hinge and slide with `axis`, `pos`, `damping` and
      `armature`. A body with several joints (a planar root `rootx`/`rootz`/`rooty`,
      say) becomes a chain: a massless link (mass and inertia zero) per joint but the
      last, named `"body/joint"`, each at its parent's frame, and the body itself on
      the last joint; MuJoCo composes a body's joints the same way, each in the frame
      the ones before it moved, so the dynamics are MuJoCo's to round-off. A hinge's or slider's `ref` shifts its coordinate (see
      [`MJCFModel`][sciad.rigid.MJCFModel]). `range` with `limited` becomes the joint's
      limit (`range`, or `max_angle = range[1]` for a ball joint), a hard limit as in
      MuJoCo: a constraint solved with the contacts, never a spring. Each limit takes
      its own [`Impedance`][sciad.rigid.Impedance] from its `solreflimit` and
      `solimplimit` (`limit_impedance`), one to one, so a limit is as soft as MuJoCo's
      and trajectories through it agree to round-off (measured in docs/rigid.md).
      A limit `margin` engages the limit that far inside the range, as in MuJoCo
      (the range is narrowed by it). A `solref` may be standard (τ, ζ) or direct
      (negative: −stiffness, −damping), as for every constraint.
    - **actuators** with a joint transmission on a hinge or slider and affine force
      gain·u + bias (`motor`, `position`, `velocity`, `general`):
      [`JointActuator`][sciad.rigid.JointActuator] with the gear folded into its gain
      and biases; `ctrlrange` (when `ctrllimited`) becomes its `ctrl_range`,
      `forcerange` (when `forcelimited`) its `force_range` (gear·forcerange). The
      controls come from `control` (zero if `None`), in MuJoCo's actuator order.
      Actuators with a tendon transmission become
      [`TendonActuator`][sciad.rigid.TendonActuator]s, the gear folded in the same way;
      with a site transmission (no `refsite`),
      [`SiteActuator`][sciad.rigid.SiteActuator]s with the site's pose in its body
      and the 6-vector gear.
      Activation dynamics `filter`, `filterexact` and `integrator` (with `actrange`
      when `actlimited`, and `actearly`) become the actuator's
      [`FilterActivation`][sciad.rigid.FilterActivation] or
      [`IntegratorActivation`][sciad.rigid.IntegratorActivation]: the model's state
      is then (q, v, act), act MuJoCo's `act`, integrated as MuJoCo's Euler and RK4 do.
    - **force clamps and gravity compensation**: a joint's `actuatorfrcrange` (hinges
      and sliders) becomes its `actuator_force_range` and `actuatorgravcomp` its
      `actuator_gravcomp`; a tendon's `actuatorfrcrange` its `actuator_force_range`
      (gear·range; its actuators must share one gear); a body's `gravcomp` its
      `gravcomp` (zero when springs and dampers are both disabled, as MuJoCo's
      `mj_passive` then computes none). Applied as MuJoCo's `mj_fwdActuation` does.
    - **tendons**: fixed tendons ([`FixedTendon`][sciad.rigid.FixedTendon], with the
      offset Σ coef·ref of joints with a `ref`) and spatial tendons through sites,
      around spheres and cylinders ([`TendonWrap`][sciad.rigid.TendonWrap], with
      their side sites) and through pulleys
      ([`TendonPulley`][sciad.rigid.TendonPulley])
      ([`SpatialTendon`][sciad.rigid.SpatialTendon]) with `stiffness`,
      `springlength` (its dead band), `damping`, `range` with `limited` and `margin`
      (a hard limit, `solreflimit`/`solimplimit`), `frictionloss`
      (`solreffriction`/`solimpfriction`), and `tendon_invweight0` for their rows.
      A tendon's damping is explicit under every integrator (as in MuJoCo's Euler and
      RK4; MuJoCo's implicit integrators treat it implicitly).
    - **equality constraints** between tendons (`<equality><tendon>`, active ones):
      [`TendonEquality`][sciad.rigid.TendonEquality] with its `polycoef`, the
      tendons' `tendon_length0` as reference, its `solref`/`solimp`; between hinges
      and sliders (`<equality><joint>`):
      [`JointEquality`][sciad.rigid.JointEquality], measured from `qpos0`;
      connects and welds (`<equality><connect>`, `<weld>`, body and site forms):
      [`ConnectEquality`][sciad.rigid.ConnectEquality] and
      [`WeldEquality`][sciad.rigid.WeldEquality] with `relpose`, `anchor`,
      `torquescale`, `solref`/`solimp`.
    - **mocap bodies**: a body fixed to the world at its pose (MuJoCo's
      `mocap_pos`/`mocap_quat` without user input), kept even when massless; move it
      by changing its row of the model's `pos`/`quat` (a differentiable parameter).
    - **joint friction loss** (`frictionloss` of hinges and sliders): the joint's
      `frictionloss` with `solreffriction`/`solimpfriction`; the dofs' `dof_invweight0`
      for its row.
    - **options**: `gravity`, `timestep` and `integrator`: Euler →
      `SemiImplicitEuler(implicit="damping")` (exactly MuJoCo's Euler, whose joint
      damping is implicit; `implicit="none"` if the `eulerdamp` flag is disabled);
      implicitfast → `SemiImplicitEuler(implicit="fast")` and implicit →
      `SemiImplicitEuler(implicit="full")` (MuJoCo's: the actuators' velocity gains,
      damping, fluid and, for implicit, Coriolis derivatives taken implicitly); RK4 →
      [`RKMK4`][sciad.rigid.RKMK4], which, as MuJoCo's RK4, solves the contacts and
      hard limits at every stage (its stage accelerations are the constrained ones
      over the step), so it is MuJoCo's RK4 to round-off wherever no constraint
      acts. The `gravity`, `damper`, `limit`, `constraint`, `clampctrl` and
      `eulerdamp` disable flags are honoured. `density`, `viscosity` and `wind`
      become the model's [`Medium`][sciad.rigid.Medium], and each geom with
      `fluidshape="ellipsoid"` a [`FluidEllipsoid`][sciad.rigid.FluidEllipsoid] with
      its `fluidcoef` and MuJoCo's added mass (MuJoCo's two fluid models).
    - **geoms** that collide (planes, spheres, capsules, boxes, cylinders) with
      their three `friction` coefficients (sliding, torsional, rolling), `condim` (1,
      3, 4 or 6; a pair takes the larger, as in MuJoCo) and `priority` (a pair of
      different priorities takes the higher one's condim, friction and impedance),
      each with its own `Impedance` from its `solref` (standard or direct) and
      `solimp` (as for the limits; a pair of equal priorities mixes its two geoms' as
      MuJoCo does with equal `solmix`) and its `margin` (a pair acts
      below the sum of its margins apart, as in MuJoCo 4, so a resting body hovers
      there; for the pairs whose separated distance is exact) and `gap` (contacts up
      to margin + gap are listed, inactive).
    - **explicit `<contact><pair>`s** as [`ContactPair`][sciad.rigid.ContactPair]s
      with MuJoCo's compiled `pair_dim`, `pair_friction` (five), `pair_solref`,
      `pair_solimp`, `pair_solreffriction`, `pair_margin` and `pair_gap`; they
      collide whatever the filters and replace the dynamic pair of the same geoms.
    - **ignored** (no effect on the dynamics): sensors, sites, cameras, lights,
      visual assets, keyframes (the initial state is `qpos0`), and solver settings.

    Everything else that changes the physics raises one `ValueError` that lists every
    such feature of the model, each naming the element (by its MuJoCo name, or its
    index when unnamed) and the feature: a tendon's side site inside the sphere or
    cylinder it wraps, tendon armature, polynomial tendon springs and dampers, flex
    equality constraints, flexes, plugins, stiffness and frictionloss of ball
    and free joints, `actuatorgravcomp` on ball and free joints, a tendon
    `actuatorfrcrange` whose actuators have different gears, unequal solmix, actuators
    on ball or free joints, through a site with a reference site, slider-cranks or
    bodies, muscles and user activation dynamics, the discrete integrator, MuJoCo's
    noslip solver with the elliptic cone and the option flags that change contacts
    or the solve (`nativeccd` or `multiccd` disabled; `sleep`, `diagexact` or
    `speculative` enabled).

    **Arguments:**

    - `m`: a compiled `mujoco.MjModel`.
    - `control`: optional [`AbstractControl`][sciad.rigid.AbstractControl] giving the
      actuators' controls (MuJoCo's `ctrl`), shape `(nu,)`.

    **Returns:** an [`MJCFModel`][sciad.rigid.MJCFModel].

    **Raises:** `ImportError` naming the `sciad[mjcf]` extra when MuJoCo is missing;
    `ValueError` for unsupported features.

    **Example:**

    ```python
    import mujoco
    m = mujoco.MjModel.from_xml_path("ant.xml")
    mj = sciad.rigid.from_mujoco(m)
    ```
    """
    mujoco = _import_mujoco()
    if not isinstance(m, mujoco.MjModel):
        raise TypeError(f"from_mujoco needs a compiled mujoco.MjModel; got {type(m).__name__}.")
    label = Labels(mujoco, m)
    if m.nv == 0:
        label.block(
            "MJCF model: no degrees of freedom (no joints): a MultiBody needs a moving "
            "body; MuJoCo only advances the time of such a model (dm_control's lqr.xml "
            "is a template its task fills with a chain)."
        )
    _check_model(m, mujoco, label)
    colliding = colliding_geoms(m, mujoco)

    # Bodies: sciad name, owner (a massless welded body is folded into its parent) and
    # each MuJoCo body's frame in its owner's frame. A body with several joints becomes
    # a chain: one massless link per joint but the last, named "body/joint", each
    # placed at its parent's frame, and the body itself (its mass, geoms and children)
    # on the last joint; MuJoCo composes a body's joints in the same order, each in
    # the frame the previous ones moved.
    identity = (np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]))
    owner: list[str | None] = [None]  # the world
    frame = [identity]
    bodies: list[Body] = []
    mj_body: list[int] = []  # the MuJoCo body each of `bodies` stands for
    joint_body: dict[int, str] = {}
    used: set[str] = set()

    def unique(name: str, where: str) -> str:
        if name in used:
            label.block(f"{where}: its sciad name {name!r} is taken; name the body.")
        used.add(name)
        return name

    # MuJoCo's mj_passive computes no gravity compensation with springs and dampers
    # both disabled (nor does its actuator stage then see any).
    no_passive = disabled(m, mujoco, "mjDSBL_SPRING") and disabled(m, mujoco, "mjDSBL_DAMPER")
    gravcomp = np.zeros(m.nbody) if no_passive else np.asarray(m.body_gravcomp, np.float64)
    for b in range(1, m.nbody):
        where = label("body", b)
        p = int(m.body_parentid[b])
        pos, quat = compose(frame[p], np.asarray(m.body_pos[b]), np.asarray(m.body_quat[b]))
        first, njnt = int(m.body_jntadr[b]), int(m.body_jntnum[b])
        joints = [convert_joint(m, mujoco, label, j) for j in range(first, first + njnt)]
        # A mocap body stays a body (welded to the world at its pose) even when
        # massless, so that its pose is a parameter of the model.
        if not joints and m.body_mass[b] == 0 and m.body_mocapid[b] < 0:
            owner.append(owner[p])
            frame.append((pos, quat))
            continue
        name = label.name("body", b) or f"body{b}"
        parent = owner[p]
        for k, joint in enumerate(joints[:-1]):
            link = unique(f"{name}/{label.name('joint', first + k) or k}", where)
            bodies.append(
                Body(
                    link,
                    parent=parent,
                    joint=joint,
                    pos=pos,
                    quat=quat,
                    mass=0.0,
                    inertia=np.zeros(3),
                )
            )
            joint_body[first + k] = parent = link
            mj_body.append(b)
            pos, quat = identity
        name = unique(name, where)
        try:
            bodies.append(
                Body(
                    name,
                    parent=parent,
                    joint=joints[-1] if joints else FixedJoint(),
                    pos=pos,
                    quat=quat,
                    mass=float(m.body_mass[b]),
                    inertia=np.asarray(m.body_inertia[b], dtype=np.float64),
                    com=np.asarray(m.body_ipos[b], dtype=np.float64),
                    inertia_quat=np.asarray(m.body_iquat[b], dtype=np.float64),
                    gravcomp=gravcomp[b],
                )
            )
            mj_body.append(b)
        except ValueError as e:
            label.block(f"{where}: {e}")
        owner.append(name)
        frame.append(identity)
        if joints:
            joint_body[first + njnt - 1] = name

    def site_of(s: int) -> tuple[str | None, np.ndarray, np.ndarray]:
        b = int(m.site_bodyid[s])
        return (owner[b], *compose(frame[b], np.asarray(m.site_pos[s]), np.asarray(m.site_quat[s])))

    converted = [
        convert_actuator(m, mujoco, label, a, joint_body.__getitem__, site_of) for a in range(m.nu)
    ]
    tendons = convert_tendons(m, mujoco, label, owner, frame, joint_body.__getitem__)
    mj_of: dict[str | None, int] = {None: 0}
    mj_of.update({body.name: b for body, b in zip(bodies, mj_body, strict=True)})
    places = [(o, fr, mj_of.get(o, -1)) for o, fr in zip(owner, frame, strict=True)]
    equalities = convert_equalities(m, mujoco, label, tendons, joint_body.__getitem__, places)
    actuators = [a for a in converted if a is not None]
    gravity = np.zeros(3) if disabled(m, mujoco, "mjDSBL_GRAVITY") else np.asarray(m.opt.gravity)
    geoms, geom_ids, exclude, mj_pairs = convert_geoms(m, mujoco, label, owner, frame, colliding)
    contact_pairs = convert_pairs(m, label, colliding)
    if label.blockers:
        n = len(label.blockers)
        raise ValueError(
            f"MJCF model: sciad.rigid cannot represent {n} feature{'s' if n > 1 else ''} of "
            "this model faithfully:\n" + "\n".join(f"  - {b}" for b in label.blockers)
        )
    # The solver's settings (every geom and limit carries its own impedance).
    pyramidal = int(m.opt.cone) == int(mujoco.mjtCone.mjCONE_PYRAMIDAL)
    noslip = int(m.opt.noslip_iterations) if pyramidal else 0
    contact = ContactModel(
        cone="pyramidal" if pyramidal else "elliptic",
        impratio=float(m.opt.impratio),
        noslip_iterations=noslip,
        noslip_tolerance=float(m.opt.noslip_tolerance),
    )
    # MuJoCo's constant inverse weights, per sciad body from the MuJoCo body it stands for.
    weights = InverseWeights(
        np.asarray(m.body_invweight0)[mj_body, 0],
        np.asarray(m.body_invweight0)[mj_body, 1],
        np.asarray(m.dof_invweight0, dtype=np.float64),
        np.asarray(m.tendon_invweight0, dtype=np.float64),
    )
    try:
        model = MultiBody(
            bodies,
            gravity=np.asarray(gravity, dtype=np.float64),
            actuators=actuators,
            tendons=tendons,
            equalities=equalities,
            control=control,
            geoms=geoms,
            contact=contact,
            inverse_weights=weights,
            exclude=exclude,
            medium=_medium(m, mujoco, owner, frame),
            contact_pairs=contact_pairs,
        )
    except ValueError as e:
        raise ValueError(f"MJCF model: {e}") from e
    ours = {tuple(sorted((geom_ids[i], geom_ids[j]))) for i, j in model.pairs}
    for g1, g2 in sorted(ours ^ mj_pairs):
        where = "in sciad but not in MuJoCo" if (g1, g2) in ours else "in MuJoCo but not in sciad"
        raise ValueError(
            f"{label('geom', g1)} and {label('geom', g2)} collide {where}: sciad's collision filter (no contacts within a welded group or with the "
            "parent body) cannot reproduce MuJoCo's here (e.g. an <exclude> of a massless "
            "body folded into its parent, or a body and its parent welded to the world)."
        )

    offset = np.zeros(m.nq)
    T = mujoco.mjtJoint
    for j in range(m.njnt):
        if int(m.jnt_type[j]) in (int(T.mjJNT_HINGE), int(T.mjJNT_SLIDE)):
            offset[m.jnt_qposadr[j]] = m.qpos0[m.jnt_qposadr[j]]
    qpos_offset = jnp.asarray(offset)
    q0 = jnp.asarray(np.asarray(m.qpos0, dtype=np.float64)) - qpos_offset
    v0 = jnp.zeros(m.nv, dtype=q0.dtype)
    return MJCFModel(
        model=model,
        y0=(q0, v0, jnp.zeros(model.na, q0.dtype)) if model.na else (q0, v0),
        dt=float(m.opt.timestep),
        integrator=_integrator(m, mujoco),
        qpos_offset=qpos_offset,
        geom_ids=tuple(geom_ids),
    )


def load_mjcf(
    source: str | os.PathLike,
    *,
    assets: dict[str, bytes] | None = None,
    control: AbstractControl | None = None,
) -> MJCFModel:
    """Load an MJCF file (or string) with MuJoCo and convert it with
    [`from_mujoco`][sciad.rigid.from_mujoco].

    MuJoCo (`pip install "sciad[mjcf]"`) compiles the model, so every MJCF feature
    MuJoCo accepts is parsed exactly as MuJoCo parses it; the conversion then refuses,
    with a `ValueError` naming the element, what sciad cannot simulate faithfully
    (see [`from_mujoco`][sciad.rigid.from_mujoco] for the full list).

    **Arguments:**

    - `source`: a path to an `.xml` file, or the XML text itself (a string starting
      with `<`).
    - `assets`: optional `{filename: bytes}` of files the XML refers to (MuJoCo's
      `assets` argument).
    - `control`: optional [`AbstractControl`][sciad.rigid.AbstractControl] giving the
      actuators' controls, shape `(nu,)`.

    **Returns:** an [`MJCFModel`][sciad.rigid.MJCFModel]: `model`, `y0`, `dt`,
    `integrator` and the `qpos`/`qvel` converters.

    **Raises:** `ImportError` naming the `sciad[mjcf]` extra when MuJoCo is missing;
    `ValueError` when MuJoCo cannot compile the file or sciad cannot represent it.

    **Example:**

    ```python
    mj = sciad.rigid.load_mjcf(\"\"\"
    <mujoco><worldbody><body name="bob" pos="0 0 1">
      <joint type="hinge" axis="0 1 0"/><geom type="sphere" size="0.1" pos="0 0 -1"/>
    </body></worldbody></mujoco>\"\"\")
    traj = sciad.simulate(mj.model, mj.y0, dt=mj.dt, n_steps=100, integrator=mj.integrator)
    ```
    """
    mujoco = _import_mujoco()
    if isinstance(source, str) and source.lstrip().startswith("<"):
        m = mujoco.MjModel.from_xml_string(source, assets)
    elif isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"load_mjcf: no such file {path!r}.")
        m = mujoco.MjModel.from_xml_path(path, assets)
    else:
        raise TypeError(f"load_mjcf needs a path or an XML string; got {type(source).__name__}.")
    return from_mujoco(m, control=control)

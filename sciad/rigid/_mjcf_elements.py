"""The MJCF converter's parts: one MuJoCo element kind (joint, actuator, geom) to one
sciad part, refusing with a `ValueError` naming the element what sciad cannot represent.

Functions of a compiled `mujoco.MjModel` `m` and the `mujoco` module (imported lazily by
`_mjcf.py`, so this module never imports it).
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from .._core._geometry import _hamilton_np
from ._activation import AbstractActivation, FilterActivation, IntegratorActivation
from ._actuators import JointActuator, TendonActuator
from ._geom import ContactPair, Geom
from ._hfield import HeightField
from ._impedance import Impedance
from ._joints import AbstractJoint, BallJoint, FreeJoint, HingeJoint, SliderJoint
from ._mesh import ConvexMesh, mujoco_graph, mujoco_polygons
from ._shapes import AbstractShape, Box, Capsule, Cylinder, Ellipsoid, Plane, Sphere
from ._site_actuator import SiteActuator

# --------------------------------------------------------------------------- helpers


def _quat_rot(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    return _hamilton_np(_hamilton_np(q, np.concatenate([[0.0], v])), q * np.array([1, -1, -1, -1]))[
        1:
    ]


def compose(
    frame: tuple[np.ndarray, np.ndarray], pos: np.ndarray, quat: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(pos, quat) given in `frame` (a pose in its owner), expressed in the owner."""
    fpos, fquat = frame
    return fpos + _quat_rot(fquat, pos), _hamilton_np(fquat, quat)


class Labels:
    """Labels of a compiled model's elements for error messages, and the blockers found:
    the converter reports every feature it cannot represent with `block` and goes on,
    so that one error lists them all."""

    def __init__(self, mujoco: Any, m: Any):
        self.mujoco, self.m = mujoco, m
        self.blockers: list[str] = []

    def block(self, message: str) -> None:
        """Record a feature that sciad cannot represent faithfully."""
        if message not in self.blockers:
            self.blockers.append(message)

    def name(self, obj: str, i: Any) -> str:
        kind = getattr(self.mujoco.mjtObj, f"mjOBJ_{obj.upper()}")
        return self.mujoco.mj_id2name(self.m, kind, int(i)) or ""

    def __call__(self, obj: str, i: Any) -> str:
        n = self.name(obj, i)
        return f"MJCF {obj} {n!r}" if n else f"MJCF {obj} #{int(i)} (unnamed)"


def disabled(m: Any, mujoco: Any, bit: str) -> bool:
    """Whether `<option><flag>` disables `bit` (an `mjtDisableBit` name)."""
    return bool(m.opt.disableflags & int(getattr(mujoco.mjtDisableBit, bit)))


def nonzero(x: Any) -> bool:
    """Whether any entry of `x` is nonzero."""
    return bool(np.any(np.asarray(x) != 0))


def impedance_of(label: Labels, where: str, solref: Any, solimp: Any) -> Impedance | None:
    """The `Impedance` of a MuJoCo constraint's `solref` (τ, ζ) and `solimp` (d₀,
    d_max, width, midpoint, power), one to one (the step clamps τ ≥ 2·timestep, as
    MuJoCo's `refsafe`), or of the direct `solref` (−stiffness, −damping). A `solref`
    mixing the two formats (which MuJoCo replaces by its default, with a warning) is
    reported to `label.block` for the element `where`, and `None` stands in while the
    conversion goes on."""
    try:
        return Impedance.from_mujoco(np.asarray(solref), np.asarray(solimp))
    except ValueError as e:
        label.block(f"{where}: {e}")
        return None


def convert_joint(m: Any, mujoco: Any, label: Labels, j: int) -> AbstractJoint:
    """MuJoCo joint `j`. A limit is a hard limit (a constraint of the contact solve)
    with its own `Impedance` from its `solreflimit` and `solimplimit`, a hinge's or slider's `frictionloss` a friction row with
    its `solreffriction` and `solimpfriction`. Unsupported features are reported to
    `label.block`; the joint is then built without them."""
    b = int(m.jnt_bodyid[j])
    jt = int(m.jnt_type[j])
    T = mujoco.mjtJoint
    nv = {int(T.mjJNT_FREE): 6, int(T.mjJNT_BALL): 3}.get(jt, 1)
    dof = int(m.jnt_dofadr[j])
    where = label("joint", j)
    no_constraint = disabled(m, mujoco, "mjDSBL_CONSTRAINT")
    dry = not (no_constraint or disabled(m, mujoco, "mjDSBL_FRICTIONLOSS"))
    if dry and nv > 1 and nonzero(m.dof_frictionloss[dof : dof + nv]):
        label.block(f"{where}: frictionloss on a ball or free joint is not supported.")
    springs = not disabled(m, mujoco, "mjDSBL_SPRING")
    stiffness = float(m.jnt_stiffness[j]) if springs else 0.0
    if springs and nonzero(m.jnt_stiffnesspoly[j]):
        label.block(f"{where}: nonlinear joint stiffness (stiffnesspoly) is not supported.")
    if stiffness and jt in (int(T.mjJNT_FREE), int(T.mjJNT_BALL)):
        label.block(f"{where}: stiffness of a ball or free joint is not supported.")
    if nonzero(m.dof_dampingpoly[dof : dof + nv]):
        label.block(f"{where}: nonlinear damping (dampingpoly) is not supported.")
    one_dof_joint = jt in (int(T.mjJNT_HINGE), int(T.mjJNT_SLIDE))
    actuation: dict[str, Any] = {}
    if m.jnt_actfrclimited[j]:
        frc = np.asarray(m.jnt_actfrcrange[j], dtype=np.float64)
        if not one_dof_joint:  # (MuJoCo's compiler leaves it unlimited on these)
            label.block(f"{where}: actuatorfrcrange on a ball or free joint is not supported.")
        else:
            actuation.update(actuator_force_range=frc)
    if m.jnt_actgravcomp[j] and nonzero(m.body_gravcomp):
        if not one_dof_joint:
            label.block(f"{where}: actuatorgravcomp on a ball or free joint is not supported.")
        else:
            actuation.update(actuator_gravcomp=True)
    damping = 0.0 if disabled(m, mujoco, "mjDSBL_DAMPER") else float(m.dof_damping[dof])
    if not disabled(m, mujoco, "mjDSBL_DAMPER") and np.ptp(m.dof_damping[dof : dof + nv]) != 0:
        label.block(f"{where}: different damping on the joint's dofs is not supported.")
    armature = float(m.dof_armature[dof])
    if np.ptp(m.dof_armature[dof : dof + nv]) != 0:
        label.block(f"{where}: different armature on the joint's dofs is not supported.")
    limited = bool(m.jnt_limited[j]) and not (no_constraint or disabled(m, mujoco, "mjDSBL_LIMIT"))
    kw: dict[str, Any] = dict(damping=damping, armature=armature)
    # A hinge's or slider's own: its spring (MuJoCo's pulls qpos towards qpos_spring,
    # sciad's q is qpos − ref) and its friction loss (dof_frictionloss, dof_solref/imp).
    one_dof: dict[str, Any] = dict(
        stiffness=stiffness,
        springref=float(m.qpos_spring[m.jnt_qposadr[j]] - m.qpos0[m.jnt_qposadr[j]]),
        **actuation,
    )
    if limited:
        imp = impedance_of(label, f"{where} (limit)", m.jnt_solref[j], m.jnt_solimp[j])
        kw.update(limit="hard", limit_impedance=imp)
    if dry and nv == 1 and m.dof_frictionloss[dof] != 0:
        one_dof.update(
            frictionloss=float(m.dof_frictionloss[dof]),
            friction_impedance=impedance_of(
                label, f"{where} (friction)", m.dof_solref[dof], m.dof_solimp[dof]
            ),
        )
    # A limit margin acts as MuJoCo's: the limit engages `margin` inside the range
    # (MuJoCo's reference uses the distance less the margin), so the range shrinks by it.
    margin = float(m.jnt_margin[j]) if limited else 0.0
    rng = np.asarray(m.jnt_range[j], dtype=np.float64) + np.array([margin, -margin])
    if limited and margin and not rng[0] < rng[1] and jt != int(T.mjJNT_BALL):
        label.block(f"{where}: its limit margin {margin} closes its range.")
        rng = np.asarray(m.jnt_range[j], dtype=np.float64)
    ref = float(m.qpos0[m.jnt_qposadr[j]])
    if jt == int(T.mjJNT_FREE):
        if m.body_parentid[b] != 0:  # MuJoCo's compiler refuses this too
            label.block(f"{where}: a free joint's body must be a child of the world.")
        return FreeJoint(damping=damping, armature=armature)
    if jt == int(T.mjJNT_BALL):
        return BallJoint(pos=m.jnt_pos[j], max_angle=rng[1] if limited else None, **kw)
    if jt == int(T.mjJNT_SLIDE):
        return SliderJoint(
            axis=m.jnt_axis[j], range=rng - ref if limited else None, **kw, **one_dof
        )
    return HingeJoint(
        axis=m.jnt_axis[j], pos=m.jnt_pos[j], range=rng - ref if limited else None, **kw, **one_dof
    )


# --------------------------------------------------------------------------- actuators


def geared_range(g: float, r: Any) -> np.ndarray:
    """MuJoCo's force range `r` (lower, upper) of an actuator with gear `g`, in sciad's
    units (the force times g): g·r, in increasing order."""
    return np.sort(g * np.asarray(r, dtype=np.float64))


def tendon_name(label: Labels, i: int) -> str:
    """The sciad name of MuJoCo tendon `i`: its MuJoCo name, or `tendon{i}`."""
    return label.name("tendon", i) or f"tendon{i}"


def _activation(m: Any, mujoco: Any, label: Labels, a: int) -> AbstractActivation | None:
    """MuJoCo actuator `a`'s activation dynamics: `None` (`dyntype="none"`), a
    `FilterActivation` (filter, filterexact; τ = `dynprm[0]`) or an
    `IntegratorActivation`, with `actrange` (when `actlimited`) and `actearly`; other
    dynamics are reported to `label.block`."""
    D = mujoco.mjtDyn
    dyn = int(m.actuator_dyntype[a])
    if dyn == int(D.mjDYN_NONE):
        return None
    where = label("actuator", a)
    kw: dict[str, Any] = dict(early=bool(m.actuator_actearly[a]))
    if m.actuator_actlimited[a]:
        kw.update(act_range=np.asarray(m.actuator_actrange[a], dtype=np.float64))
    if int(m.actuator_actnum[a]) != 1:
        label.block(f"{where}: {m.actuator_actnum[a]} activation states (only one).")
        return None
    tau = float(m.actuator_dynprm[a][0])
    if dyn in (int(D.mjDYN_FILTER), int(D.mjDYN_FILTEREXACT)) and tau > 0:
        return FilterActivation(tau, exact=dyn == int(D.mjDYN_FILTEREXACT), **kw)
    if dyn == int(D.mjDYN_INTEGRATOR):
        return IntegratorActivation(**kw)
    if dyn in (int(D.mjDYN_FILTER), int(D.mjDYN_FILTEREXACT)):
        label.block(f"{where}: a filter time constant dynprm[0] = {tau:g} (it must be > 0).")
        return None
    label.block(
        f"{where}: activation dynamics {D(dyn).name} are not supported (filter, "
        "filterexact and integrator are)."
    )
    return None


def convert_actuator(
    m: Any,
    mujoco: Any,
    label: Labels,
    a: int,
    body_of_joint: Callable[[int], str],
    site_of: Callable[[int], tuple[str | None, np.ndarray, np.ndarray]],
) -> JointActuator | TendonActuator | SiteActuator | None:
    """MuJoCo actuator `a` as a `JointActuator` on the body `body_of_joint(j)`, a
    `TendonActuator`, or a `SiteActuator` at `site_of(s)` (its sciad body, or `None`
    for the world, and its pose there); `None` (with the reasons reported to
    `label.block`) if sciad cannot represent it."""
    where = label("actuator", a)
    n_blocked = len(label.blockers)
    trn = int(m.actuator_trntype[a])
    tendon = trn == int(mujoco.mjtTrn.mjTRN_TENDON)
    site = trn == int(mujoco.mjtTrn.mjTRN_SITE)
    if trn != int(mujoco.mjtTrn.mjTRN_JOINT) and not (tendon or site):
        kind = mujoco.mjtTrn(trn).name.removeprefix("mjTRN_").lower()
        label.block(
            f"{where}: a {kind} transmission is not supported (only actuators on a joint, "
            "a tendon or a site)."
        )
        return None
    j = int(m.actuator_trnid[a][0])
    T = mujoco.mjtJoint
    if site and int(m.actuator_trnid[a][1]) >= 0:
        label.block(f"{where}: a site transmission with a reference site is not supported.")
    elif site and site_of(j)[0] is None:
        label.block(f"{where}: a site transmission on a site of the world (it moves nothing).")
    if not (tendon or site) and int(m.jnt_type[j]) not in (
        int(T.mjJNT_HINGE),
        int(T.mjJNT_SLIDE),
    ):
        label.block(
            f"{where}: actuators on {label('joint', j)} (a free or ball joint) are not "
            "supported; only on hinges and sliders."
        )
    activation = _activation(m, mujoco, label, a)
    if int(m.actuator_gaintype[a]) != int(mujoco.mjtGain.mjGAIN_FIXED):
        kind = mujoco.mjtGain(int(m.actuator_gaintype[a])).name
        label.block(f"{where}: gain type {kind} is not supported (only fixed gains).")
    bias = int(m.actuator_biastype[a])
    if bias not in (int(mujoco.mjtBias.mjBIAS_NONE), int(mujoco.mjtBias.mjBIAS_AFFINE)):
        kind = mujoco.mjtBias(bias).name
        label.block(f"{where}: bias type {kind} is not supported (only affine).")
    if int(m.actuator_ctrlnum[a]) != 1:
        label.block(f"{where}: actuators with {m.actuator_ctrlnum[a]} controls.")
    for field, what in (
        ("actuator_damping", "actuator damping"),
        ("actuator_dampingpoly", "actuator damping"),
        ("actuator_armature", "actuator armature"),
        ("actuator_delay", "a control delay"),
        ("actuator_history", "a control history"),
    ):
        if nonzero(getattr(m, field)[a]):
            label.block(f"{where}: {what} is not supported.")
    if len(label.blockers) > n_blocked:
        return None
    g = float(m.actuator_gear[a][0])
    b0, b1, b2 = (float(x) for x in m.actuator_biasprm[a][:3]) if bias else (0.0, 0.0, 0.0)
    clamp = bool(m.actuator_ctrllimited[a]) and not disabled(m, mujoco, "mjDSBL_CLAMPCTRL")
    # MuJoCo clips its force f to forcerange; sciad's force is g·f, clipped to g·forcerange.
    force_range = geared_range(g, m.actuator_forcerange[a]) if m.actuator_forcelimited[a] else None
    if site:  # length 0, the gear in the moment: MuJoCo's force as is
        body, pos, quat = site_of(j)
        assert body is not None
        return SiteActuator(
            body,
            gear=np.asarray(m.actuator_gear[a], dtype=np.float64),
            pos=pos,
            quat=quat,
            activation=activation,
            gain=float(m.actuator_gainprm[a][0]),
            bias_constant=b0,
            bias_velocity=b2,
            ctrl_range=np.asarray(m.actuator_ctrlrange[a], dtype=np.float64) if clamp else None,
            force_range=(
                np.asarray(m.actuator_forcerange[a], dtype=np.float64)
                if m.actuator_forcelimited[a]
                else None
            ),
        )
    if tendon:  # length = g·ℓ, force = gain·u + b0 + b1·g·ℓ + b2·g·ℓ̇, applied as g·Jᵀ force
        return TendonActuator(
            tendon_name(label, j),
            activation=activation,
            gain=g * float(m.actuator_gainprm[a][0]),
            bias_constant=g * b0,
            bias_position=g * g * b1,
            bias_velocity=g * g * b2,
            ctrl_range=np.asarray(m.actuator_ctrlrange[a], dtype=np.float64) if clamp else None,
            force_range=force_range,
        )
    # MuJoCo: length = g·qpos = g·(q + ref), force = gain·u + b0 + b1·length + b2·g·qvel,
    # applied as g·force on the dof.
    ref = float(m.qpos0[m.jnt_qposadr[j]])
    return JointActuator(
        body_of_joint(j),
        activation=activation,
        gain=g * float(m.actuator_gainprm[a][0]),
        bias_constant=g * (b0 + b1 * g * ref),
        bias_position=g * g * b1,
        bias_velocity=g * g * b2,
        ctrl_range=np.asarray(m.actuator_ctrlrange[a], dtype=np.float64) if clamp else None,
        force_range=force_range,
    )


# --------------------------------------------------------------------------- geoms


def _body_filtered(m: Any, b1: int, b2: int, excluded: set[frozenset[int]]) -> bool:
    """MuJoCo's body-level collision filters (mj_collision): bodies welded together, a
    body and its parent's weld group unless that is the world, and <exclude>s."""
    w1, w2 = int(m.body_weldid[b1]), int(m.body_weldid[b2])
    if w1 == w2:
        return True
    p1, p2 = int(m.body_weldid[m.body_parentid[w1]]), int(m.body_weldid[m.body_parentid[w2]])
    if w1 != 0 and w2 != 0 and (w1 == p2 or w2 == p1):
        return True
    return frozenset((b1, b2)) in excluded


def _geoms_match(m: Any, g1: int, g2: int, plane: int) -> bool:
    """MuJoCo's geom-level filters: the contype/conaffinity bitmasks; no pair of planes
    and height fields (MuJoCo has no collision function for them; the height field's
    type is the plane's + 1)."""
    if not (
        (m.geom_contype[g1] & m.geom_conaffinity[g2])
        or (m.geom_contype[g2] & m.geom_conaffinity[g1])
    ):
        return False
    return not (m.geom_type[g1] <= plane + 1 and m.geom_type[g2] <= plane + 1)


def _mujoco_pairs(m: Any, excluded: set[frozenset[int]], plane: int) -> set[tuple[int, int]]:
    """The geom pairs (g1 < g2) MuJoCo's filters let collide."""
    return {
        (g1, g2)
        for g1 in range(m.ngeom)
        for g2 in range(g1 + 1, m.ngeom)
        if _geoms_match(m, g1, g2, plane)
        and not _body_filtered(m, int(m.geom_bodyid[g1]), int(m.geom_bodyid[g2]), excluded)
    }


def _height_field(m: Any, g: int, pairs: set[tuple[int, int]]) -> HeightField:
    """Geom g's height field, MuJoCo's `hfield_data` and `hfield_size`, its window
    wide enough for every geom it collides with (MuJoCo's `geom_rbound`)."""
    h = int(m.geom_dataid[g])
    nrow, ncol = int(m.hfield_nrow[h]), int(m.hfield_ncol[h])
    adr = int(m.hfield_adr[h])
    data = np.asarray(m.hfield_data[adr : adr + nrow * ncol], np.float64).reshape(nrow, ncol)
    size = np.asarray(m.hfield_size[h], np.float64)
    field = HeightField(data, size, window=1)
    partners = [b if a == g else a for a, b in pairs if g in (a, b)]
    need = max([field.cells_needed(float(m.geom_rbound[o])) for o in partners], default=1)
    return HeightField(data, size, window=min(need, nrow - 1, ncol - 1))


def _mesh(m: Any, g: int) -> ConvexMesh:
    """Geom g's mesh: MuJoCo's vertices (in the geom's frame, float32 widened exactly)
    hull polygons and hull graph."""
    k = int(m.geom_dataid[g])
    adr, num = int(m.mesh_vertadr[k]), int(m.mesh_vertnum[k])
    vertices = np.asarray(m.mesh_vert[adr : adr + num], np.float64)
    return ConvexMesh(vertices, mujoco_polygons(m, k), mujoco_graph(m, k))


def _shape(
    m: Any, mujoco: Any, label: Labels, g: int, pairs: set[tuple[int, int]]
) -> AbstractShape | None:
    G = mujoco.mjtGeom
    t, size = int(m.geom_type[g]), np.asarray(m.geom_size[g], dtype=np.float64)
    if t == int(G.mjGEOM_PLANE):
        return Plane()
    if t == int(G.mjGEOM_SPHERE):
        return Sphere(size[0])
    if t == int(G.mjGEOM_CAPSULE):
        return Capsule(size[0], size[1])
    if t == int(G.mjGEOM_CYLINDER):
        return Cylinder(size[0], size[1])
    if t == int(G.mjGEOM_BOX):
        return Box(size)
    if t == int(G.mjGEOM_ELLIPSOID):
        return Ellipsoid(size)
    if t == int(G.mjGEOM_HFIELD):
        return _height_field(m, g, pairs)
    if t == int(G.mjGEOM_MESH):
        return _mesh(m, g)
    kind = mujoco.mjtGeom(t).name.removeprefix("mjGEOM_").lower()
    label.block(
        f"{label('geom', g)}: {kind} geoms cannot collide in sciad.rigid (planes, height "
        "fields, spheres, capsules, ellipsoids, boxes, cylinders and meshes can); make it "
        'visual-only with contype="0" conaffinity="0", or replace it by primitives.'
    )
    return None


def colliding_geoms(m: Any, mujoco: Any) -> tuple[set[tuple[int, int]], list[int], set]:
    """MuJoCo's colliding geom pairs (the filtered ones and the explicit `<pair>`s),
    the geoms in them (sorted) and the excluded body pairs; none when contacts are
    disabled."""
    if (
        m.ngeom == 0
        or disabled(m, mujoco, "mjDSBL_CONTACT")
        or disabled(m, mujoco, "mjDSBL_CONSTRAINT")
    ):
        return set(), [], set()
    sigs = [int(s) for s in m.exclude_signature[: m.nexclude]]
    excluded = {frozenset((s >> 16, s & 0xFFFF)) for s in sigs}
    pairs = _mujoco_pairs(m, excluded, int(mujoco.mjtGeom.mjGEOM_PLANE))
    pairs |= {_explicit(m, k) for k in range(m.npair)}
    return pairs, sorted({g for pair in pairs for g in pair}), excluded


def convert_geoms(
    m: Any,
    mujoco: Any,
    label: Labels,
    owner: list[str | None],
    frame: list[tuple[np.ndarray, np.ndarray]],
    colliding: tuple[set[tuple[int, int]], list[int], set],
) -> tuple[
    list[Geom],
    list[int],
    list[tuple[str | None, str | None]],
    set[tuple[int, int]],
]:
    """The colliding geoms, their MuJoCo ids, the exclusions and MuJoCo's colliding
    geom pairs, from `colliding` (`colliding_geoms`)."""
    pairs, ids, excluded = colliding
    if not ids:
        return [], [], [], pairs
    plane = int(mujoco.mjtGeom.mjGEOM_PLANE)
    if disabled(m, mujoco, "mjDSBL_FILTERPARENT"):
        label.block(
            'MJCF <option><flag filterparent="disable">: parent–child collisions are '
            "not supported (sciad never collides a body with its parent)."
        )
    geoms = []
    for g in ids:
        where = label("geom", g)
        shape = _shape(m, mujoco, label, g, pairs)
        imp = impedance_of(label, where, m.geom_solref[g], m.geom_solimp[g])
        if m.geom_solmix[g] != m.geom_solmix[ids[0]]:
            label.block(
                f"{where}: solmix {m.geom_solmix[g]} differs from {label('geom', ids[0])}'s "
                f"{m.geom_solmix[ids[0]]}; sciad mixes a pair's solref and solimp equally."
            )
        if nonzero(m.geom_adhesion[g]) or nonzero(m.geom_surfacevel[g]):
            label.block(f"{where}: adhesion and surface velocity are not supported.")
        if shape is None:
            continue
        b = int(m.geom_bodyid[g])
        pos, quat = compose(frame[b], np.asarray(m.geom_pos[g]), np.asarray(m.geom_quat[g]))
        slide, spin, roll = (float(x) for x in m.geom_friction[g])
        geoms.append(
            Geom(
                shape,
                body=owner[b],
                pos=pos,
                quat=quat,
                friction=slide,
                torsional_friction=spin,
                rolling_friction=roll,
                restitution=0.0,
                contype=int(m.geom_contype[g]),
                conaffinity=int(m.geom_conaffinity[g]),
                name=geom_name(label, g),
                impedance=imp,
                margin=float(m.geom_margin[g]),
                gap=float(m.geom_gap[g]),
                condim=int(m.geom_condim[g]),
                priority=int(m.geom_priority[g]),
            )
        )
    # Body pairs that MuJoCo's filters keep apart (welds, parents' weld groups,
    # <exclude>s) become sciad exclusions; from_mujoco then checks that the pairs
    # sciad collides are exactly MuJoCo's.
    exclude = set()
    for i, g1 in enumerate(ids):
        for g2 in ids[i + 1 :]:
            b1, b2 = int(m.geom_bodyid[g1]), int(m.geom_bodyid[g2])
            if (
                owner[b1] != owner[b2]
                and _geoms_match(m, g1, g2, plane)
                and _body_filtered(m, b1, b2, excluded)
            ):
                exclude.add((owner[b1], owner[b2]))
    return geoms, ids, sorted(exclude, key=str), pairs


def geom_name(label: Labels, g: int) -> str:
    """The name of MuJoCo's geom g in the converted model (`geom<g>` when unnamed)."""
    return label.name("geom", g) or f"geom{g}"


def _explicit(m: Any, k: int) -> tuple[int, int]:
    """The geoms (g1 < g2) of MuJoCo's explicit pair k."""
    g1, g2 = int(m.pair_geom1[k]), int(m.pair_geom2[k])
    return (min(g1, g2), max(g1, g2))


def convert_pairs(
    m: Any,
    label: Labels,
    colliding: tuple[set[tuple[int, int]], list[int], set],
) -> list[ContactPair]:
    """MuJoCo's explicit `<contact><pair>`s as `ContactPair`s of the geoms that
    `convert_geoms` names, with the compiled parameters; none when contacts are
    disabled (`colliding` empty)."""
    if not colliding[1]:
        return []
    out = []
    for k in range(m.npair):
        where = label("pair", k)
        g1, g2 = int(m.pair_geom1[k]), int(m.pair_geom2[k])
        if g1 == g2:
            label.block(f"{where}: a geom paired with itself.")
            continue
        if nonzero(m.pair_adhesion[k]):
            label.block(f"{where}: adhesion is not supported.")
        imp = impedance_of(label, where, m.pair_solref[k], m.pair_solimp[k])
        try:
            out.append(
                ContactPair(
                    geom_name(label, g1),
                    geom_name(label, g2),
                    condim=int(m.pair_dim[k]),
                    friction=np.asarray(m.pair_friction[k], np.float64),
                    impedance=imp,
                    friction_reference=np.asarray(m.pair_solreffriction[k], np.float64),
                    margin=float(m.pair_margin[k]),
                    gap=float(m.pair_gap[k]),
                    name=label.name("pair", k) or f"pair{k}",
                )
            )
        except ValueError as e:
            label.block(f"{where}: {e}")
    return out

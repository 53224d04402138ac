"""The MJCF converter's tendons: MuJoCo's fixed and spatial tendons as sciad's
`FixedTendon` and `SpatialTendon` (with their wraps and pulleys), and its equality
constraints (`TendonEquality`, `JointEquality`, `ConnectEquality`, `WeldEquality`),
refusing (through `Labels.block`) what sciad cannot represent: a side site inside a
wrapped geom, nonlinear springs and dampers, tendon armature and flex equalities."""

from collections.abc import Callable
from typing import Any

import numpy as np

from ._equality import AbstractEquality, JointEquality, TendonEquality
from ._equality_bodies import ConnectEquality, WeldEquality
from ._mjcf_elements import (
    compose,
    disabled,
    geared_range,
    impedance_of,
    Labels,
    nonzero,
    tendon_name,
)
from ._tendon_wrap import TendonPulley, TendonWrap
from ._tendons import AbstractTendon, FixedTendon, SpatialTendon

# A MuJoCo body's place in sciad: its owner (None: the world), its frame (position,
# quaternion) in the owner, and the owner's MuJoCo body (0: the world).
Place = tuple[str | None, tuple[np.ndarray, np.ndarray], int]
_UNIT = (1.0, 0.0, 0.0, 0.0)


def _actuator_force_range(m: Any, mujoco: Any, label: Labels, i: int) -> np.ndarray | None:
    """Tendon `i`'s `actuatorfrcrange` in sciad's units. MuJoCo clamps the sum of its
    actuators' forces f (before their gears); sciad sums the forces g·f, so the
    actuators on the tendon must share one gear g (`None`, reported to
    `label.block`, otherwise), and the range becomes g·range."""
    where = label("tendon", i)
    frc = np.asarray(m.tendon_actfrcrange[i], dtype=np.float64)  # lower ≤ upper (compiler)
    on = (m.actuator_trntype == int(mujoco.mjtTrn.mjTRN_TENDON)) & (m.actuator_trnid[:, 0] == i)
    gears = {float(g) for g in m.actuator_gear[on, 0]}
    if len(gears) > 1:
        label.block(
            f"{where}: actuatorfrcrange with actuators of different gears {sorted(gears)} "
            "on it is not supported (MuJoCo sums their forces before the gears)."
        )
        return None
    return geared_range(gears.pop() if gears else 1.0, frc)


def _common(m: Any, mujoco: Any, label: Labels, i: int) -> dict[str, Any]:
    """The spring, damper, limit and friction loss of tendon `i` (as MuJoCo's
    `mj_passive` and `mj_instantiateLimit`/`Friction` use them, disable flags
    honoured)."""
    where = label("tendon", i)
    springs = not disabled(m, mujoco, "mjDSBL_SPRING")
    dampers = not disabled(m, mujoco, "mjDSBL_DAMPER")
    if springs and nonzero(m.tendon_stiffnesspoly[i]):
        label.block(f"{where}: nonlinear tendon stiffness (stiffnesspoly) is not supported.")
    if dampers and nonzero(m.tendon_dampingpoly[i]):
        label.block(f"{where}: nonlinear tendon damping (dampingpoly) is not supported.")
    if nonzero(m.tendon_armature[i]):
        label.block(f"{where}: tendon armature is not supported.")
    frc = None
    if m.tendon_actfrclimited[i]:
        frc = _actuator_force_range(m, mujoco, label, i)
    constraints = not disabled(m, mujoco, "mjDSBL_CONSTRAINT")
    kw: dict[str, Any] = dict(
        actuator_force_range=frc,
        stiffness=float(m.tendon_stiffness[i]) if springs else 0.0,
        springlength=np.asarray(m.tendon_lengthspring[i], dtype=np.float64),
        damping=float(m.tendon_damping[i]) if dampers else 0.0,
    )
    if m.tendon_limited[i] and constraints and not disabled(m, mujoco, "mjDSBL_LIMIT"):
        kw.update(
            range=np.asarray(m.tendon_range[i], dtype=np.float64),
            margin=float(m.tendon_margin[i]),
            limit_impedance=impedance_of(
                label, f"{where} (limit)", m.tendon_solref_lim[i], m.tendon_solimp_lim[i]
            ),
        )
    loss = float(m.tendon_frictionloss[i])
    if loss > 0 and constraints and not disabled(m, mujoco, "mjDSBL_FRICTIONLOSS"):
        kw.update(
            frictionloss=loss,
            friction_impedance=impedance_of(
                label, f"{where} (friction)", m.tendon_solref_fri[i], m.tendon_solimp_fri[i]
            ),
        )
    return kw


def _spatial_path(
    m: Any,
    W: Any,
    inside: Callable[[int, int], bool],
    owner: list[str | None],
    frame: list[tuple[np.ndarray, np.ndarray]],
    adr: int,
    num: int,
) -> list[Any]:
    """A spatial tendon's path: its sites, the spheres and cylinders it wraps (with
    their side sites) and its pulleys, re-placed in their owners' frames; a side site
    `inside(geom, site)` its geom raises a `ValueError`."""

    def site(s: int) -> tuple[str | None, np.ndarray]:
        b = int(m.site_bodyid[s])
        pos, _ = compose(frame[b], np.asarray(m.site_pos[s]), np.asarray(m.site_quat[s]))
        return owner[b], pos

    path: list[Any] = []
    for k in range(adr, adr + num):
        kind, obj, prm = int(m.wrap_type[k]), int(m.wrap_objid[k]), float(m.wrap_prm[k])
        if kind == int(W.mjWRAP_PULLEY):
            path.append(TendonPulley(prm))
        elif kind == int(W.mjWRAP_SITE):
            path.append(site(obj))
        else:
            b = int(m.geom_bodyid[obj])
            pos, quat = compose(frame[b], np.asarray(m.geom_pos[obj]), np.asarray(m.geom_quat[obj]))
            side = round(prm)
            if side >= 0 and inside(obj, side):
                raise ValueError(
                    "a side site inside the sphere or cylinder it wraps (MuJoCo 4.0's inside "
                    "wrap) is not supported."
                )
            path.append(
                TendonWrap(
                    owner[b],
                    pos,
                    float(m.geom_size[obj, 0]),
                    cylinder=kind == int(W.mjWRAP_CYLINDER),
                    quat=quat,
                    side=site(side) if side >= 0 else None,
                )
            )
    return path


def convert_tendons(
    m: Any,
    mujoco: Any,
    label: Labels,
    owner: list[str | None],
    frame: list[tuple[np.ndarray, np.ndarray]],
    body_of_joint: Callable[[int], str],
) -> list[AbstractTendon]:
    """MuJoCo's tendons: a fixed tendon's joints on the sciad bodies
    `body_of_joint(j)` with the offset Σ cᵢ refᵢ (sciad's q is qpos − ref), a spatial
    tendon's sites re-placed in their owners' frames (`owner`, `frame` of each MuJoCo
    body). Tendons sciad cannot represent are reported to `label.block` and left out."""
    W = mujoco.mjtWrap
    tendons: list[AbstractTendon] = []
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)

    def inside(geom: int, site: int) -> bool:
        """Whether `site` is inside the sphere or cylinder `geom` at qpos0."""
        local = d.geom_xmat[geom].reshape(3, 3).T @ (d.site_xpos[site] - d.geom_xpos[geom])
        return bool(np.linalg.norm(local) < m.geom_size[geom, 0])

    for i in range(m.ntendon):
        where = label("tendon", i)
        adr, num = int(m.tendon_adr[i]), int(m.tendon_num[i])
        types = [int(t) for t in m.wrap_type[adr : adr + num]]
        ids = [int(x) for x in m.wrap_objid[adr : adr + num]]
        n_blocked = len(label.blockers)
        kw = _common(m, mujoco, label, i)
        if types[0] == int(W.mjWRAP_JOINT):
            coef = [float(c) for c in m.wrap_prm[adr : adr + num]]
            qadr = [int(m.jnt_qposadr[j]) for j in ids]
            offset = float(np.dot(coef, np.asarray(m.qpos0)[qadr]))
            cls, path, extra = (
                FixedTendon,
                [(body_of_joint(j), c) for j, c in zip(ids, coef, strict=True)],
                dict(offset=offset),
            )
        else:
            cls, extra = SpatialTendon, {}
            try:
                path = _spatial_path(m, W, inside, owner, frame, adr, num)
            except ValueError as e:  # a pulley's divisor 0, a side site inside
                label.block(f"{where}: {e}")
                continue
        if len(label.blockers) > n_blocked:
            continue
        try:
            tendons.append(cls(tendon_name(label, i), path, **extra, **kw))
        except ValueError as e:
            label.block(f"{where}: {e}")
    return tendons


def _place(m: Any, b: int, places: list[Place]) -> tuple[str | None, np.ndarray, np.ndarray, bool]:
    """MuJoCo body `b` as (sciad owner, its frame's position and quaternion in the
    owner, whether its inverse weights differ from the owner's: a massless body folded
    into its parent, whose own `body_invweight0` MuJoCo's `diagApprox` uses)."""
    name, (pos, quat), ob = places[b]
    differs = ob != b and not np.array_equal(m.body_invweight0[b], m.body_invweight0[max(ob, 0)])
    return name, np.asarray(pos, np.float64), np.asarray(quat, np.float64), differs


def _body_equality(
    m: Any, mujoco: Any, label: Labels, i: int, places: list[Place], kw: dict[str, Any]
) -> AbstractEquality | None:
    """Connect or weld `i` (body or site form) as a `ConnectEquality` or
    `WeldEquality` between the sciad owners of its bodies, its points and orientations
    re-placed in the owners' frames (`places`)."""
    where = label("equality", i)
    data = np.asarray(m.eq_data[i], dtype=np.float64)
    ids = [int(m.eq_obj1id[i]), int(m.eq_obj2id[i])]
    sites = int(m.eq_objtype[i]) == int(mujoco.mjtObj.mjOBJ_SITE)
    weld = int(m.eq_type[i]) == int(mujoco.mjtEq.mjEQ_WELD)
    if sites:
        bodies = [int(m.site_bodyid[s]) for s in ids]
        points = [np.asarray(m.site_pos[s], np.float64) for s in ids]
        quats = [np.asarray(m.site_quat[s], np.float64) for s in ids]
    elif weld:  # anchor on body 2, relpose (on body 1) in data[3:10]
        bodies, points, quats = ids, [data[3:6], data[0:3]], [data[6:10], np.array(_UNIT)]
    else:
        bodies, points, quats = ids, [data[0:3], data[3:6]], [np.array(_UNIT)] * 2
    (o1, *f1, d1), (o2, *f2, d2) = (_place(m, b, places) for b in bodies)
    if d1 or d2:  # MuJoCo's own bodies' weights, summed (the world's are 0)
        kw = dict(kw, inverse_weights=np.asarray(m.body_invweight0)[bodies].sum(axis=0))
    a1, q1 = compose((f1[0], f1[1]), points[0], quats[0])
    a2, q2 = compose((f2[0], f2[1]), points[1], quats[1])
    if o1 == o2:
        label.block(f"{where}: a connect or weld within one rigid body (sciad's {o1!r}).")
        return None
    if o1 is None:
        # sciad's first body is never the world: swapping the two sides negates r
        # and J together, the same constraint (same norm, impedance and weights).
        (o1, a1, q1), (o2, a2, q2) = (o2, a2, q2), (o1, a1, q1)
        assert o1 is not None
    if weld:
        return WeldEquality(
            o1, o2, anchor1=a1, quat1=q1, anchor2=a2, quat2=q2, torquescale=data[10], **kw
        )
    return ConnectEquality(o1, o2, anchor1=a1, anchor2=a2, **kw)


def convert_equalities(
    m: Any,
    mujoco: Any,
    label: Labels,
    tendons: list[AbstractTendon],
    body_of_joint: Callable[[int], str],
    places: list[Place],
) -> list[AbstractEquality]:
    """MuJoCo's active (`eq_active0`) equalities: tendon equalities as
    `TendonEquality`s (`reference` = `tendon_length0`), joint equalities as
    `JointEquality`s on the sciad bodies `body_of_joint(j)` (`reference` 0: sciad's q
    is qpos − qpos0 on hinges and sliders, MuJoCo's reference), with `polycoef` =
    `eq_data[:5]`; connects and welds as `ConnectEquality` and `WeldEquality` between
    the sciad owners of their bodies (`places`: each MuJoCo body's owner, its frame
    there and the owner's MuJoCo body); each with its `solref` and `solimp`; none when
    equalities or constraints are disabled. Flex equalities are reported to
    `label.block`."""
    if disabled(m, mujoco, "mjDSBL_EQUALITY") or disabled(m, mujoco, "mjDSBL_CONSTRAINT"):
        return []
    E, T = mujoco.mjtEq, mujoco.mjtJoint
    converted = {t.name for t in tendons}
    out: list[AbstractEquality] = []
    for i in range(m.neq):
        where = label("equality", i)
        kind = int(m.eq_type[i])
        supported = (E.mjEQ_TENDON, E.mjEQ_JOINT, E.mjEQ_CONNECT, E.mjEQ_WELD)
        if kind not in {int(k) for k in supported}:
            name = E(kind).name.removeprefix("mjEQ_").lower()
            label.block(
                f"{where}: equality constraints ({name}) are not supported; only joint, "
                "tendon, connect and weld equalities are."
            )
            continue
        if not m.eq_active0[i]:
            continue
        kw: dict[str, Any] = dict(
            impedance=impedance_of(label, where, m.eq_solref[i], m.eq_solimp[i]),
        )
        if kind in (int(E.mjEQ_CONNECT), int(E.mjEQ_WELD)):
            e = _body_equality(m, mujoco, label, i, places, kw)
            if e is not None:
                out.append(e)
            continue
        kw["polycoef"] = np.asarray(m.eq_data[i][:5], dtype=np.float64)
        ids = [int(x) for x in (m.eq_obj1id[i], m.eq_obj2id[i]) if x >= 0]
        if kind == int(E.mjEQ_JOINT):
            scalar = (int(T.mjJNT_HINGE), int(T.mjJNT_SLIDE))
            if any(int(m.jnt_type[j]) not in scalar for j in ids):
                label.block(f"{where}: a joint equality on a ball or free joint.")
                continue
            names = [body_of_joint(j) for j in ids]
            out.append(JointEquality(*names, reference=np.zeros(len(ids)), **kw))
            continue
        names = [tendon_name(label, t) for t in ids]
        if not set(names) <= converted:
            continue  # the tendon itself was refused, with its reason
        reference = np.asarray(m.tendon_length0, dtype=np.float64)[ids]
        out.append(TendonEquality(*names, reference=reference, **kw))
    return out

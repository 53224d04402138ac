"""The MJCF converter's tendons: MuJoCo's fixed and spatial tendons as sciad's
`FixedTendon` and `SpatialTendon`, and its tendon equalities as `TendonEquality`,
and its joint equalities as `JointEquality`, refusing (through `Labels.block`) what
sciad cannot represent: nonlinear springs and dampers, tendon armature, actuator force limits and the other equality constraints."""

from collections.abc import Callable
from typing import Any

import numpy as np

from ._equality import AbstractEquality, JointEquality, TendonEquality
from ._mjcf_elements import compose, disabled, impedance_of, Labels, nonzero, tendon_name
from ._tendon_wrap import TendonPulley, TendonWrap
from ._tendons import AbstractTendon, FixedTendon, SpatialTendon


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
    if m.tendon_actfrclimited[i]:
        label.block(f"{where}: actuatorfrcrange (a tendon force clamp) is not supported.")
    constraints = not disabled(m, mujoco, "mjDSBL_CONSTRAINT")
    kw: dict[str, Any] = dict(
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


def convert_equalities(
    m: Any,
    mujoco: Any,
    label: Labels,
    tendons: list[AbstractTendon],
    body_of_joint: Callable[[int], str],
) -> list[AbstractEquality]:
    """MuJoCo's active (`eq_active0`) tendon and joint equalities as
    `TendonEquality`s (`reference` = `tendon_length0`) and `JointEquality`s on the
    sciad bodies `body_of_joint(j)` (`reference` 0: sciad's q is qpos − qpos0 on
    hinges and sliders, MuJoCo's reference), with `polycoef` = `eq_data[:5]` and the
    `solref` and `solimp`; none when equalities or constraints are disabled. The other
    kinds (connect, weld, flex) are reported to `label.block`."""
    if disabled(m, mujoco, "mjDSBL_EQUALITY") or disabled(m, mujoco, "mjDSBL_CONSTRAINT"):
        return []
    E, T = mujoco.mjtEq, mujoco.mjtJoint
    converted = {t.name for t in tendons}
    out: list[AbstractEquality] = []
    for i in range(m.neq):
        where = label("equality", i)
        kind = int(m.eq_type[i])
        if kind not in (int(E.mjEQ_TENDON), int(E.mjEQ_JOINT)):
            name = E(kind).name.removeprefix("mjEQ_").lower()
            label.block(
                f"{where}: equality constraints ({name}) are not supported; only joint and "
                "tendon equalities are."
            )
            continue
        if not m.eq_active0[i]:
            continue
        ids = [int(x) for x in (m.eq_obj1id[i], m.eq_obj2id[i]) if x >= 0]
        kw: dict[str, Any] = dict(
            polycoef=np.asarray(m.eq_data[i][:5], dtype=np.float64),
            impedance=impedance_of(label, where, m.eq_solref[i], m.eq_solimp[i]),
        )
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

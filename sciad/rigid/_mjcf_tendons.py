"""The MJCF converter's tendons: MuJoCo's fixed and spatial tendons as sciad's
`FixedTendon` and `SpatialTendon`, and its tendon equalities as `TendonEquality`,
and its joint equalities as `JointEquality`, refusing (through `Labels.block`) what
sciad cannot represent: wrapping around geoms, pulleys, nonlinear springs and
dampers, tendon armature and the other equality constraints."""

from collections.abc import Callable
from typing import Any

import numpy as np

from ._equality import AbstractEquality, JointEquality, TendonEquality
from ._mjcf_elements import (
    compose,
    disabled,
    geared_range,
    impedance_of,
    Labels,
    nonzero,
    tendon_name,
)
from ._tendons import AbstractTendon, FixedTendon, SpatialTendon


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
            for t in sorted(set(types) - {int(W.mjWRAP_SITE)}):
                kind = W(t).name.removeprefix("mjWRAP_").lower()
                label.block(
                    f"{where}: a spatial tendon wrapping a {kind} is not supported (only "
                    "straight segments between sites)."
                )
            cls, path, extra = SpatialTendon, [], {}
            for s in ids:
                b = int(m.site_bodyid[s])
                pos, _ = compose(frame[b], np.asarray(m.site_pos[s]), np.asarray(m.site_quat[s]))
                path.append((owner[b], pos))
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

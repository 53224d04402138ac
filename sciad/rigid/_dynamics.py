"""The computational kernels of `MultiBody`: joint passes, forward kinematics, and the
terms of the equations of motion (RNEA and CRBA in the world frame).

Functions of a `MultiBody` `mb` (duck-typed, to keep this module below the model's).
Every spatial vector is in world coordinates (`_spatial.py`), so the tree sums are
contractions with the static ancestor masks of `_topology.py`.
"""

from collections.abc import Callable
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float
import numpy as np

from .._core._geometry import cross, quat_multiply, quat_rotate, quat_to_matrix
from .._core._types import Anything, RealScalarLike
from ._actuators import actuator_force
from ._fluid import fluid_forces
from ._joints import AbstractJoint
from ._spatial import (
    cross_force,
    cross_motion,
    matmul,
    matvec,
    spatial_inertia,
    wrench_at_origin,
)
from ._tendons import tendon_kinematics, tendon_passive_force

Q = Float[Array, " nq"]
V = Float[Array, " nv"]


class Frames(NamedTuple):
    """World-frame kinematics and the joints' per-dof quantities at one configuration."""

    rot: Array  # (n, 3, 3) body frames in the world
    pos: Array  # (n, 3)
    com: Array  # (n, 3) centres of mass in the world
    inertia: Array  # (n, 6, 6) spatial inertias about the world origin
    subspace: Array  # (nv, 6) motion subspaces in the world frame
    passive: Array  # (nv,) joint limit forces
    damping: Array  # (nv,) damping coefficients
    armature: Array  # (nv,)
    # The hard limits' constraint values (n,), their derivatives along each joint's own
    # dofs (nv,) and stacked impedances (n, 7); None without hard limits.
    limits: tuple[Array, Array, Array] | None
    # The tendons' lengths (T,) and Jacobians (T, nv); None without tendons.
    tendons: tuple[Array, Array] | None = None


class Terms(NamedTuple):
    """The terms of M v̇ = applied + gravity − coriolis."""

    mass_matrix: Array  # (nv, nv), armature included
    coriolis: Array  # (nv,) velocity-product (Coriolis, centrifugal, gyroscopic) forces
    gravity: Array  # (nv,) generalised gravity force
    applied: Array  # (nv,) wrenches + actuators + limits − damping·v
    damping: Array  # (nv,) damping coefficients


def _take(a: Array, idx: np.ndarray) -> Array:
    """a[idx] for a static index array; a slice and a reshape when contiguous."""
    flat = idx.reshape(-1)
    if flat.size and np.array_equal(flat, np.arange(flat[0], flat[0] + flat.size)):
        return a[flat[0] : flat[0] + flat.size].reshape(idx.shape + a.shape[1:])
    return a[idx]


def groups(mb: Anything) -> list[np.ndarray]:
    """Body indices grouped by joint structure (type and static fields)."""
    groups: dict[Anything, list[int]] = {}
    for i, j in enumerate(mb.joints):
        groups.setdefault(jax.tree.structure(j), []).append(i)
    return [np.asarray(g, dtype=np.int64) for g in groups.values()]


def map_joints(
    mb: Anything,
    fn: Callable,
    args: tuple[tuple[Array, str], ...],
    outs: tuple[str, ...],
    default: tuple[tuple[str, ...], Callable] | None = None,
) -> tuple:
    """`fn(joint, *args_of_joint)` for every joint: each group of joints of one
    structure is stacked and `vmap`ped (one joint: called directly). `args` are
    `(array, kind)` with kind "q" (a position vector), "v" (a velocity vector, or an
    (nv, ...) array) or "b" (one row per body); `fn` returns a tuple laid out as
    `outs` says ("q", "v" or "b" each) and the results are assembled in order.
    `default = (names, batched_fn)`: groups whose type keeps `AbstractJoint`'s
    implementations of the methods `names` (which use no parameters) get
    `batched_fn(*gathered)` on the whole batch, with no stacking and no `vmap`."""
    topo = mb.topology
    results: list[list] = [[] for _ in outs]
    places: list[list] = [[] for _ in outs]
    for idx in groups(mb):
        jt = type(mb.joints[idx[0]])
        js = [mb.joints[i] for i in idx]
        gathered = []
        for a, kind in args:
            if kind == "q":
                gathered.append(_take(a, topo.qadr[idx][:, None] + np.arange(jt.nq)))
            elif kind == "v":
                gathered.append(_take(a, topo.dadr[idx][:, None] + np.arange(jt.nv)))
            else:
                gathered.append(_take(a, idx))
        if default is not None and all(
            getattr(jt, m) is getattr(AbstractJoint, m) for m in default[0]
        ):
            r = default[1](*gathered)
        elif len(js) == 1:
            r = jax.tree.map(lambda x: x[None], fn(js[0], *[g[0] for g in gathered]))
        else:
            stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *js)
            r = eqx.filter_vmap(fn)(stacked, *gathered)
        for k, (kind, x) in enumerate(zip(outs, r, strict=True)):
            if kind == "b":
                places[k].append(idx)
            else:
                size, adr = (jt.nq, topo.qadr) if kind == "q" else (jt.nv, topo.dadr)
                x = x.reshape((-1,) + x.shape[2:])
                places[k].append((adr[idx][:, None] + np.arange(size)).reshape(-1))
            results[k].append(x)
    assembled = []
    for rs, ps in zip(results, places, strict=True):
        order = np.concatenate(ps)
        x = jnp.concatenate(rs)
        if not np.array_equal(order, np.arange(len(order))):
            x = x[np.argsort(order, kind="stable")]
        assembled.append(x)
    return tuple(assembled)


def local(mb: Anything, q: Q, v: V) -> tuple[tuple[Array, ...], tuple[Array, Array, Array] | None]:
    """One pass over the joints: the joint transforms' quaternions (n, 4) and
    translations (n, 3), the body-frame motion subspaces (nv, 6), the joints'
    passive forces, damping and armature (nv,) each; and, if any joint has a hard
    limit, the limits' constraint values (n,), derivatives (nv,) and stacked
    impedances (n, 7) (else `None`)."""
    limits = bool(mb.limited.size)

    def fn(j, qj, vj):
        quat, trans = j.transform(qj)
        out = (
            quat,
            trans,
            j.motion_subspace(qj),
            j.passive_force(qj, vj),
            j.damping_vector().astype(vj.dtype),
            j.armature_vector().astype(vj.dtype),
        )
        if not limits:
            return out
        imp = j.limit_parameters(mb.contact.impedance).stacked().astype(qj.dtype)
        if j.hard_limited:
            return out + j.limit_constraint(qj) + (imp,)
        return out + AbstractJoint.limit_constraint(j, qj) + (imp,)

    outs = ("b", "b", "v", "v", "v", "v") + (("b", "v", "b") if limits else ())
    out = map_joints(mb, fn, ((q, "q"), (v, "v")), outs)
    return out[:6], (out[6], out[7], out[8]) if limits else None


def compose(mb: Anything, rot_j: Array, r_tree: Array, trans_j: Array) -> tuple[Array, Array]:
    """World rotations (n, 3, 3) and origins (n, 3) of the body frames."""
    topo = mb.topology
    absolute = np.asarray([type(j).absolute for j in mb.joints])
    rot = matmul(r_tree, rot_j)
    pos = mb.pos + matvec(r_tree, trans_j)
    if absolute.any():
        rot = jnp.where(absolute[:, None, None], rot_j, rot)
        pos = jnp.where(absolute[:, None], trans_j, pos)
    eye = jnp.eye(3, dtype=rot.dtype)[None]
    zero = jnp.zeros((1, 3), pos.dtype)
    for anc in topo.jumps:  # ⌈log₂ depth⌉ rounds, each vectorised over all bodies
        ar = jnp.concatenate([rot, eye])[anc]
        ap = jnp.concatenate([pos, zero])[anc]
        pos = ap + matvec(ar, pos)
        rot = matmul(ar, rot)
    return rot, pos


def frames(mb: Anything, q: Q, v: V | None = None) -> Frames:
    n = len(mb.names)
    v = jnp.zeros(mb.nv, q.dtype) if v is None else v
    (quat_j, trans_j, s_body, passive, damping, armature), limits = local(mb, q, v)
    # One conversion for the joint, placement and principal-axes rotations.
    mats = quat_to_matrix(jnp.concatenate([quat_j, mb.quat, mb.inertia_quat]))
    rot, pos = compose(mb, mats[:n], mats[n : 2 * n], trans_j)
    com = pos + matvec(rot, mb.com)
    r_inertia = matmul(rot, mats[2 * n :])
    inertia_com = matmul(r_inertia * mb.inertia[:, None, :], jnp.swapaxes(r_inertia, -1, -2))
    inertia = spatial_inertia(mb.mass, com, inertia_com)
    db = mb.topology.dof_body
    w = matvec(rot[db], s_body[:, :3])
    lin = matvec(rot[db], s_body[:, 3:]) + cross(pos[db], w)
    subspace = jnp.concatenate([w, lin], axis=-1)
    f = Frames(rot, pos, com, inertia, subspace, passive, damping, armature, limits)
    return f._replace(tendons=tendon_kinematics(mb, f, q)) if mb.tendons else f


def forward_kinematics(mb: Anything, q: Q) -> tuple[Array, Array]:
    """Body frames in the world: positions (n, 3) and quaternions (n, 4), composed in
    quaternions by pointer jumping."""
    topo = mb.topology
    quat_j, trans_j = map_joints(mb, lambda j, qj: j.transform(qj), ((q, "q"),), ("b", "b"))
    absolute = np.asarray([type(j).absolute for j in mb.joints])[:, None]
    wq = jnp.where(absolute, quat_j, quat_multiply(mb.quat, quat_j))
    wp = jnp.where(absolute, trans_j, mb.pos + quat_rotate(mb.quat, trans_j))
    one = jnp.concatenate([jnp.ones(1, wq.dtype), jnp.zeros(3, wq.dtype)])[None]
    zero = jnp.zeros((1, 3), wp.dtype)
    for anc in topo.jumps:
        aq = jnp.concatenate([wq, one])[anc]
        ap = jnp.concatenate([wp, zero])[anc]
        wp = ap + quat_rotate(aq, wp)
        wq = quat_multiply(aq, wq)
    return wp, wq


def velocities(mb: Anything, f: Frames, v: V) -> tuple[Array, Array]:
    """Body spatial velocities and each joint's contribution, both (n, 6)."""
    topo = mb.topology
    onehot = jnp.asarray(topo.dof_onehot, v.dtype)
    v_joint = onehot @ (f.subspace * v[:, None])
    return jnp.asarray(topo.anc, v.dtype) @ v_joint, v_joint


def to_dofs(mb: Anything, f: Frames, w: Array) -> Array:
    """Generalised forces (nv,) of body wrenches about the world origin (n, 6)."""
    topo = mb.topology
    anc = jnp.asarray(topo.anc, w.dtype)
    return jnp.sum(f.subspace * (anc.T @ w)[topo.dof_body], axis=-1)


def fluid_force(mb: Anything, f: Frames, v: V) -> V:
    """The medium's fluid forces as generalised forces, shape (nv,)."""
    vb, _ = velocities(mb, f, v)
    return to_dofs(mb, f, fluid_forces(mb, f.rot, f.pos, f.com, vb))


def coriolis_force(mb: Anything, f: Frames, v: V) -> V:
    """The velocity-product (Coriolis, centrifugal, gyroscopic) forces: RNEA with
    zero joint accelerations and no gravity, shape (nv,)."""
    topo = mb.topology
    vb, v_joint = velocities(mb, f, v)
    v_parent = jnp.asarray(topo.anc_strict, v.dtype) @ v_joint
    ab = cross_motion(v_parent, v_joint)
    if any(type(j).bias_acceleration is not AbstractJoint.bias_acceleration for j in mb.joints):
        (extra,) = map_joints(
            mb,
            lambda j, sj, vj: (j.bias_acceleration(sj, vj),),
            ((f.subspace, "v"), (v, "v")),
            ("b",),
        )
        ab = ab + extra
    ab = jnp.asarray(topo.anc, v.dtype) @ ab
    fb = matvec(f.inertia, ab) + cross_force(vb, matvec(f.inertia, vb))
    return to_dofs(mb, f, fb)


def terms(
    mb,
    t: RealScalarLike,
    q: Q,
    v: V,
    f: Frames | None = None,
    inertial: bool = True,
    act: Array | None = None,
    dt: RealScalarLike | None = None,
) -> Terms:
    """Every term of the equations of motion (without `inertial`, only the forces:
    `mass_matrix` and `coriolis` are then zero-size placeholders); `act`, `dt`: the
    actuators' activations and the step (see `_actuators.actuator_force`)."""
    topo = mb.topology
    f = frames(mb, q, v) if f is None else f
    dt_ = v.dtype
    db = topo.dof_body
    s = f.subspace
    passive, damping, armature = f.passive, f.damping, f.armature
    # External forces: gravity, and applied wrenches at the centres of mass.
    weight = mb.mass[:, None] * mb.gravity[None, :]
    gravity = to_dofs(mb, f, wrench_at_origin(f.com, weight, jnp.zeros_like(weight)))
    routed = None
    if mb.has_gravcomp:  # −gravcomp · weight at each centre of mass (MuJoCo's mj_gravcomp)
        lift = -mb.gravcomp[:, None] * weight
        comp = to_dofs(mb, f, wrench_at_origin(f.com, lift, jnp.zeros_like(lift)))
        by_actuators = np.zeros(mb.nv, bool)
        for j, adr in zip(mb.joints, topo.dadr, strict=True):
            by_actuators[adr : adr + type(j).nv] = j.gravcomp_by_actuators
        if by_actuators.any():
            routed = jnp.where(by_actuators, comp, jnp.zeros_like(comp))
            comp = jnp.where(by_actuators, jnp.zeros_like(comp), comp)
        passive = passive + comp
    applied = passive - damping * v + actuator_force(mb, t, q, v, f, act, dt, routed)
    if mb.tendons:  # the tendons' springs and dampers
        applied = applied + tendon_passive_force(mb, f, v)
    if mb.wrench is not None:
        w = mb.wrench(t, q, v)
        applied = applied + to_dofs(mb, f, wrench_at_origin(f.com, w[:, :3], w[:, 3:]))
    if mb.medium is not None:  # fluid forces (drag) at the centres of mass
        applied = applied + fluid_force(mb, f, v)
    if not inertial:
        empty = jnp.zeros((0,), dt_)
        return Terms(empty, empty, gravity, applied, damping)
    coriolis = coriolis_force(mb, f, v)
    # CRBA: M[k, l] = S_k · I^c_{body(l)} S_l when body(k) is an ancestor of body(l)
    # (I^c: the composite inertia of the subtree), mirrored.
    # I^c_{body(l)} S_l = Σ_{i in the subtree of body(l)} I_i S_l: one fused
    # multiply-and-sum over (body, dof) pairs, cheaper under vmap than forming the
    # 6×6 composites.
    in_subtree = jnp.asarray(topo.anc[:, db], dt_)  # [i, l]: body(l) is i or above it
    force = jnp.sum(in_subtree[:, :, None] * matvec(f.inertia[:, None], s[None]), axis=0)
    x = jnp.sum(s[:, None, :] * force[None, :, :], axis=-1)
    upper = x * jnp.asarray(topo.dof_upper, dt_)
    mass_matrix = upper + upper.T + x * jnp.asarray(topo.dof_same, dt_) + jnp.diag(armature)
    return Terms(mass_matrix, coriolis, gravity, applied, damping)

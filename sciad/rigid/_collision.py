"""Collision pairs and contact points: which geoms can touch (MuJoCo's filters), every
candidate point of a configuration with its pair's material, the contact frames and
Jacobians, and the deep-penetration warning."""

import collections
from collections.abc import Callable, Sequence
import sys
from typing import NamedTuple
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float
import numpy as np

from .._core._geometry import cross, quat_to_matrix
from .._core._types import Anything
from .._core._validate import (
    is_concrete,
)
from ._geom import ContactModel, ContactPair, Geom
from ._hfield import HeightField
from ._impedance import mix
from ._mesh import ConvexMesh, pad_meshes
from ._narrowphase import (
    _COLLIDE,
    _CONVEX_EXACT_APART,
    _kind,
    _ORDER,
    BATCHED,
    CLIPPED,
    NEVER_COLLIDE,
    points_per_pair,
    RIM_PAIRS,
    WITH_MARGIN,
)
from ._shapes import Box, Capsule, Cylinder, Plane, Sphere


def _geom_label(geoms: Sequence[Geom], i: int) -> str:
    g = geoms[i]
    where = "the world" if g.body is None else f"body {g.body!r}"
    name = f"{g.name!r}" if g.name else f"#{i}"
    return f"geom {name} ({type(g.shape).__name__} on {where})"


def contact_pairs(
    geoms: Sequence[Geom],
    body_index: Sequence[int],
    parents: Sequence[int],
    weld_root: Sequence[int],
    exclude: set[frozenset[int]],
    explicit: Sequence[tuple[int, int]] = (),
) -> tuple[tuple[int, int], ...]:
    """The static list of colliding geom pairs (i, j), ordered so that geom i's shape
    sorts first; raises for a pair no collision function handles.

    MuJoCo's filter: bodies welded together (same weld group; the world's group is
    −1) never collide, nor a weld group with its parent's group unless either is
    welded to the world. The `explicit` pairs (`ContactPair`s' geoms) follow the
    filtered ones, unfiltered, and replace a filtered pair of the same two geoms."""

    def group(b: int) -> int:
        return -1 if b < 0 else weld_root[b]

    def parent_group(g: int) -> int:
        return -1 if g < 0 else group(parents[g])

    named = {frozenset(p) for p in explicit}
    pairs = []
    for i in range(len(geoms)):
        for j in range(i + 1, len(geoms)):
            gi, gj = geoms[i], geoms[j]
            bi, bj = body_index[i], body_index[j]
            wi, wj = group(bi), group(bj)
            if wi == wj:
                continue
            if wi >= 0 and wj >= 0 and (wi == parent_group(wj) or wj == parent_group(wi)):
                continue
            if frozenset((bi, bj)) in exclude:
                continue
            if not ((gi.contype & gj.conaffinity) or (gj.contype & gi.conaffinity)):
                continue
            if frozenset((i, j)) not in named and (pair := _ordered(geoms, i, j)):
                pairs.append(pair)
    for i, j in explicit:
        pair = _ordered(geoms, i, j, explicit=True)
        if not pair:
            raise ValueError(
                f"ContactPair of {_geom_label(geoms, i)} and {_geom_label(geoms, j)}: "
                "MuJoCo has no collision between these shapes."
            )
        pairs.append(pair)
    return tuple(pairs)


def _ordered(geoms: Sequence[Geom], i: int, j: int, explicit: bool = False) -> tuple[int, ...]:
    """The pair (i, j) ordered by shape kind, () for kinds that never collide; raises
    for a pair no collision function handles."""
    ki, kj = _kind(geoms[i].shape), _kind(geoms[j].shape)
    if _ORDER.index(ki) > _ORDER.index(kj):
        i, j, ki, kj = j, i, kj, ki
    if (ki, kj) in NEVER_COLLIDE:
        return ()
    if (ki, kj) not in _COLLIDE:
        how = (
            "remove the ContactPair"
            if explicit
            else "exclude the pair with MultiBody(exclude=[(body_a, body_b)]) or with "
            "contype/conaffinity"
        )
        raise ValueError(
            f"no collision function for {_geom_label(geoms, i)} against "
            f"{_geom_label(geoms, j)} ({ki.__name__}–{kj.__name__} is not "
            f"supported); {how}."
        )
    if ki is HeightField:
        _check_window(geoms, i, j)
    return (i, j)


def _check_window(geoms: Sequence[Geom], i: int, j: int) -> None:
    """Refuse a height field (geom i) whose window is too small for geom j."""
    field, other = geoms[i].shape, geoms[j].shape
    assert isinstance(field, HeightField)
    if not all(is_concrete(x) for x in jax.tree.leaves((field, other))):
        return
    need = field.cells_needed(float(other.bounding_radius()))
    if need > field.window:
        raise ValueError(
            f"{_geom_label(geoms, i)} examines {field.window} cells per axis around a geom, "
            f"but {_geom_label(geoms, j)} (bounding radius {float(other.bounding_radius()):.4g}) "
            f"can span {need}; give the HeightField window={need} or more."
        )


class Contacts(NamedTuple):
    """Candidate contact points of a configuration (C of them, a static number).

    `dist` (C,) signed distances less the pair's margin (negative: penetrating
    or within the margin, where the contact acts), `normal` (C, 3) unit normals
    from body `body_a` to body `body_b` (world frame), `point` (C, 3) contact points,
    `friction` (C, 5) MuJoCo's contact friction (sliding, sliding, torsional, rolling,
    rolling: the pair's `Geom` coefficients; zero for a frictionless pair),
    `restitution` (C,), `weight` (C,) the share of its stiffness each
    point carries (1, except where a capsule–capsule pair hands over between its
    closest point and its end points as the axes turn parallel), the pair's
    `impedance` (C, 7) (its `Impedance` stacked, see `Geom`), `tangent` (C, 3) the
    first tangent of the contact frame where the pair sets one (MuJoCo's: a
    capsule's axis on a plane; zero elsewhere, see `contact_frames`), and the static
    arrays
    `dim` (C,) (the pair's condim: 1, 3, 4 or 6, MuJoCo's contact dimension) and body
    indices `body_a`, `body_b` (C,) (−1: the world); `friction_reference` (C, 2) the
    pair's reference for the friction rows of an elliptic cone (MuJoCo's
    `solreffriction`, a `ContactPair`'s `friction_reference`; (0, 0): the normal's),
    and `gap` (C,) the pair's gap (length): MuJoCo lists a contact when
    `dist < gap`, and it acts when `dist < 0`.

    **Example:** `touching = model.contacts(q).dist < 0`
    """

    dist: Float[Array, " C"]
    normal: Float[Array, "C 3"]
    point: Float[Array, "C 3"]
    friction: Float[Array, "C 5"]
    restitution: Float[Array, " C"]
    weight: Float[Array, " C"]
    impedance: Float[Array, "C 7"]
    tangent: Float[Array, "C 3"]
    dim: np.ndarray
    body_a: np.ndarray
    body_b: np.ndarray
    friction_reference: Float[Array, "C 2"]
    gap: Float[Array, " C"]

    @property
    def frictional(self) -> np.ndarray:
        """(C,) static: which contacts have friction (dim > 1)."""
        return self.dim > 1

    @property
    def rows(self) -> int:
        """The rows per contact of the contact Jacobian: the largest dim, at least 3."""
        return max(3, int(np.max(self.dim, initial=1)))


def _pair_groups(
    geoms: Sequence[Geom], pairs: Sequence[tuple[int, int]]
) -> list[tuple[Callable, int, np.ndarray, np.ndarray, np.ndarray]]:
    """The pairs grouped by kind and `_batch_key` (meshes of any size together,
    padded by `_stacked_shapes`), in the order of `find_contacts`'s
    points: (collision function, points per pair, first geoms, second geoms, the
    members' indices in `pairs`)."""
    groups: dict[tuple[type, type, Anything], list[int]] = {}
    for p, (i, j) in enumerate(pairs):
        key = (_kind(geoms[i].shape), _kind(geoms[j].shape))
        struct = tuple(_batch_key(s) for s in (geoms[i].shape, geoms[j].shape))
        groups.setdefault((*key, struct), []).append(p)
    out = []
    for (ka, kb, _), members in groups.items():
        ia = np.asarray([pairs[p][0] for p in members])
        fn, k = points_per_pair((ka, kb), geoms[ia[0]].shape)
        out.append((fn, k, ia, np.asarray([pairs[p][1] for p in members]), np.asarray(members)))
    return out


def mujoco_contact_order(
    geoms: Sequence[Geom], geom_body: Sequence[int], pairs: Sequence[tuple[int, int]], explicit: int
) -> np.ndarray:
    """The contact slots of `find_contacts` (static) in the order MuJoCo's
    `mj_collision` lists contacts: by body pair (MuJoCo's signature: the lower body
    first, the world lowest), a body pair's explicit pairs (the last `explicit` of
    `pairs`) before its other geom pairs, those by their geoms' indices, and a pair's
    points in the collision function's order. (The bodies and geoms are numbered as
    MuJoCo numbers them when the model comes from `load_mjcf`.)"""
    keys = []
    first_explicit = len(pairs) - explicit
    for _, k, ia, ib, members in _pair_groups(geoms, pairs):
        for i, j, p in zip(ia.tolist(), ib.tolist(), members.tolist(), strict=True):
            bodies = sorted((geom_body[i] + 1, geom_body[j] + 1))
            own = (0, p) if p >= first_explicit else (1, min(i, j), max(i, j))
            keys += [(*bodies, *own, point) for point in range(k)]
    return np.asarray(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)


def find_contacts(
    geoms: Sequence[Geom],
    geom_body: Sequence[int],
    pairs: Sequence[tuple[int, int]],
    rot: Array,
    pos: Array,
    model: ContactModel,
    explicit: Sequence[tuple[tuple[int, int], ContactPair]] = (),
) -> Contacts:
    """Every candidate contact point: one batched distance function per pair kind.

    `rot` (n, 3, 3) and `pos` (n, 3) are the body frames in the world; `model` gives
    the impedance of geoms and explicit pairs that set none. `explicit`: the
    `ContactPair`s with their geom pairs (i, j) (among `pairs`), whose contacts take
    the pair's parameters.
    """
    dtype = pos.dtype
    gb = np.asarray(geom_body, dtype=np.int64)
    gpos = jnp.stack([g.pos for g in geoms]).astype(dtype)
    grot = quat_to_matrix(jnp.stack([g.quat for g in geoms]).astype(dtype))
    body_rot = jnp.concatenate([rot, jnp.eye(3, dtype=dtype)[None]])[gb]
    body_pos = jnp.concatenate([pos, jnp.zeros((1, 3), dtype)])[gb]
    wrot = body_rot @ grot
    wpos = body_pos + jnp.einsum("gij,gj->gi", body_rot, gpos)
    # Every geom's parameters stacked once and gathered per pair with static indices,
    # so the traced program does not grow with the number of pairs.
    shapes = _stacked_shapes(geoms)
    friction = jnp.stack(
        [jnp.stack([g.friction, g.torsional_friction, g.rolling_friction]) for g in geoms]
    ).astype(dtype)
    priority = np.asarray([g.priority for g in geoms])
    condim = np.asarray([g.condim for g in geoms], np.int64)
    restitution = jnp.stack([g.restitution for g in geoms]).astype(dtype)
    margins = jnp.stack([g.margin for g in geoms])
    gaps = jnp.stack([g.gap for g in geoms])
    own = np.asarray([g.impedance is not None for g in geoms])
    default = model.impedance.stacked()
    impedances = jnp.stack(
        [default if g.impedance is None else g.impedance.stacked() for g in geoms]
    )
    table = _ExplicitTable(explicit, default, dtype)
    parts = []
    for fn, k, ia, ib, _ in _pair_groups(geoms, pairs):
        ea, eb = restitution[ia], restitution[ib]
        imp, fri, dims = _pair_material(ia, ib, priority, condim, friction, own, impedances)
        imp = jnp.where((own[ia] | own[ib])[:, None], imp, default[None]).astype(dtype)
        margin = (margins[ia] + margins[ib]).astype(dtype)
        gap = (gaps[ia] + gaps[ib]).astype(dtype)
        fri = fri[:, np.asarray([0, 0, 1, 2, 2])]
        fref = jnp.zeros((len(ia), 2), dtype)
        mixed = _Material(imp, fri, margin, gap, jnp.maximum(ea, eb), fref)
        (imp, fri, margin, gap, e, fref), dims = table.override(ia, ib, mixed, dims)
        batched = fn if fn in BATCHED else jax.vmap(fn)
        args = (shapes(ia), wrot[ia], wpos[ia], shapes(ib), wrot[ib], wpos[ib])
        # the functions whose points depend on the margin (MuJoCo's keep those within it)
        pts = batched(*args, margin) if fn in WITH_MARGIN else batched(*args)
        weight = jnp.ones_like(pts.dist) if pts.weight is None else pts.weight
        fri = fri * jnp.asarray(dims > 1, dtype)[:, None]
        # MuJoCo aligns a capsule's contacts on a plane with the capsule's axis
        axis = wrot[ib][:, :, 2] if fn is _COLLIDE[(Plane, Capsule)][0] else None
        tangent = jnp.zeros((len(ia), 3), dtype) if axis is None else axis
        parts.append(
            (
                (pts.dist - margin[:, None]).reshape(-1),
                pts.normal.reshape(-1, 3),
                pts.point.reshape(-1, 3),
                jnp.repeat(fri, k, axis=0),
                jnp.repeat(e, k),
                weight.reshape(-1),
                jnp.repeat(imp, k, axis=0),
                jnp.repeat(tangent, k, axis=0),
                np.repeat(dims, k),
                np.repeat(gb[ia], k),
                np.repeat(gb[ib], k),
                jnp.repeat(fref, k, axis=0),
                jnp.repeat(gap, k),
            )
        )
    cols = list(zip(*parts, strict=True))
    dist, normal, point, mu, e, weight, imp, tangent = (jnp.concatenate(x) for x in cols[:8])
    dims, ba, bb = (np.concatenate(x) for x in cols[8:11])
    fref, gap = (jnp.concatenate(x) for x in cols[11:])
    n_bodies = rot.shape[0]
    ba = np.where(ba == n_bodies, -1, ba)
    bb = np.where(bb == n_bodies, -1, bb)
    return Contacts(dist, normal, point, mu, e, weight, imp, tangent, dims, ba, bb, fref, gap)


class _Material(NamedTuple):
    """A group of P pairs' contact parameters: `impedance` (P, 7), `friction` (P, 5),
    `margin`, `gap`, `restitution` (P,) and `friction_reference` (P, 2)."""

    impedance: Array
    friction: Array
    margin: Array
    gap: Array
    restitution: Array
    friction_reference: Array


class _ExplicitTable:
    """The explicit pairs' parameters stacked once (`find_contacts`): `override`
    replaces a group's mixed materials by its explicit pairs' own, by static gathers."""

    def __init__(
        self,
        explicit: Sequence[tuple[tuple[int, int], ContactPair]],
        default: Array,
        dtype: Anything,
    ):
        self.explicit = explicit
        if not explicit:
            return
        cps = [cp for _, cp in explicit]
        self.dims = np.asarray([cp.condim for cp in cps], np.int64)

        def stack(xs: list) -> Array:
            return jnp.stack(xs).astype(dtype)

        self.material = _Material(
            stack([default if cp.impedance is None else cp.impedance.stacked() for cp in cps]),
            stack([cp.friction for cp in cps]),
            stack([cp.margin for cp in cps]),
            stack([cp.gap for cp in cps]),
            stack([cp.restitution for cp in cps]),
            stack([cp.friction_reference for cp in cps]),
        )

    def override(
        self, ia: np.ndarray, ib: np.ndarray, mixed: _Material, dims: np.ndarray
    ) -> tuple[_Material, np.ndarray]:
        """The material and condims (static) of the pairs (ia, ib): the explicit pairs'
        own where a pair is one, else `mixed` and `dims`."""
        k = explicit_slots(self.explicit, ia, ib)
        if not np.any(k >= 0):
            return mixed, dims
        mine, at = k >= 0, np.maximum(k, 0)

        def pick(ours: Array, theirs: Array) -> Array:
            return jnp.where(
                jnp.asarray(mine).reshape((-1,) + (1,) * (theirs.ndim - 1)), ours[at], theirs
            )

        material = _Material(*(pick(o, t) for o, t in zip(self.material, mixed, strict=True)))
        return material, np.where(mine, self.dims[at], dims)


def explicit_slots(
    explicit: Sequence[tuple[tuple[int, int], ContactPair]], ia: Anything, ib: Anything
) -> np.ndarray:
    """The index in `explicit` of each pair (ia[n], ib[n]), −1 for a dynamic pair. A
    pair of geoms repeated in `explicit` (MuJoCo makes contacts for each) appears as
    often among the pairs, in the same order (the n-th time for the n-th `ContactPair`);
    a dynamic pair never shares geoms with an explicit one (`contact_pairs`)."""
    slots: dict[frozenset[int], list[int]] = {}
    for k, (ij, _) in enumerate(explicit):
        slots.setdefault(frozenset(ij), []).append(k)
    seen: collections.Counter = collections.Counter()
    out = []
    for i, j in zip(ia, ib, strict=True):
        key = frozenset((int(i), int(j)))
        out.append(slots[key][seen[key]] if key in slots else -1)
        seen[key] += 1
    return np.asarray(out, np.int64)


# Pair kinds whose distance is exact when the geoms are apart (so a margin is exact).
_EXACT_APART = {
    (Plane, Sphere),
    (Plane, Capsule),
    (Plane, Box),
    (Sphere, Sphere),
    (Sphere, Capsule),
    (Capsule, Capsule),
    (Plane, Cylinder),  # each rim point's height is exact (MuJoCo's points are too)
    (Sphere, Box),  # mjraw_SphereBox's point, to round-off within a margin
    (Capsule, Box),  # mjraw_CapsuleBox's points, to round-off within a margin
    (Sphere, Cylinder),  # the closed form's nearest point (side, cap or rim) apart too
    # mjc_BoxBox's separated contacts (its axis test and face clipping with the margin)
    # are reproduced to round-off within the margin (tests/rigid/test_box_margins.py).
    (Box, Box),
    *_CONVEX_EXACT_APART,
}


def check_pairs(
    geoms: Sequence[Geom],
    pairs: Sequence[tuple[int, int]],
    explicit: Sequence[tuple[tuple[int, int], ContactPair]] = (),
) -> None:
    """Refuse a margin or a gap on a pair whose separated distance is not exact (the
    `explicit` pairs' own, the geoms' for the others); warn, once, about one on a pair
    that MuJoCo 4 clips (`CLIPPED`: a box, a capsule, a cylinder or a mesh against a
    mesh; a capsule, a box or a cylinder against a cylinder), and, once, about
    cylinder–mesh pairs (`RIM_PAIRS`)."""
    slot = explicit_slots(explicit, [i for i, _ in pairs], [j for _, j in pairs])
    clipped, rim = [], []
    for (i, j), k in zip(pairs, slot, strict=True):
        a, b = geoms[i], geoms[j]
        kinds = (_kind(a.shape), _kind(b.shape))
        if kinds in RIM_PAIRS:
            rim.append(f"{_geom_label(geoms, i)} and {_geom_label(geoms, j)}")
        cp = explicit[k][1] if k >= 0 else None
        reach = (a.margin, b.margin, a.gap, b.gap) if cp is None else (cp.margin, cp.gap)
        if all(is_concrete(x) and float(x) == 0 for x in reach):
            continue
        if kinds in CLIPPED:
            clipped.append(f"{_geom_label(geoms, i)} and {_geom_label(geoms, j)}")
        elif kinds not in _EXACT_APART:
            raise ValueError(
                f"{_geom_label(geoms, i)} and {_geom_label(geoms, j)}: a margin or gap "
                f"needs the distance of separated geoms, which the {kinds[0].__name__}–"
                f"{kinds[1].__name__} contact does not compute exactly (planes, spheres "
                "and capsules with each other, boxes and cylinders against planes, boxes "
                "with each other and with spheres and capsules, a sphere and a cylinder, "
                "meshes against planes, and the pairs with an ellipsoid or through the "
                "general convex collision do; a height field's prisms do not)."
            )
    if clipped:
        warnings.warn(
            f"a margin or gap on {len(clipped)} clipped pair(s) (first: {clipped[0]}): "
            "sciad clips them as MuJoCo 4 does, keeping the clipped points within the "
            "margin, but within it MuJoCo runs its EPA on the geoms inflated by the "
            "margin (to its tolerance, 1e-6), whose normal can differ from the exact "
            "separation normal sciad uses by a few hundredths of a radian and then "
            "select an edge where sciad selects a corner, or other faces: the contact "
            "sets of separated geoms within the margin can differ from MuJoCo's "
            "(measured: docs/rigid.md, 'Margins on clipped pairs').",
            UserWarning,
            stacklevel=2,
        )
    if rim:
        warnings.warn(
            f"{len(rim)} cylinder–mesh pair(s) (first: {rim[0]}): sciad clips them as "
            "MuJoCo 4 does, but where a mesh's corner or edge rests on the cylinder's "
            "rim MuJoCo selects the features by its EPA's normal (to its tolerance, "
            "1e-6; a few hundredths of a radian from the exact normal sciad uses there) "
            "and can clip a mesh edge into two points where sciad finds one (measured: "
            "6 of 16 resting poses of a rock near a disc's rim; away from it a "
            "cylinder lying on a mesh and a mesh on a cap give MuJoCo's contacts, "
            "except which four of more clipped corners are kept, as against a box: "
            "docs/rigid.md).",
            UserWarning,
            stacklevel=2,
        )


def _pair_material(
    ia: np.ndarray,
    ib: np.ndarray,
    priority: np.ndarray,
    condim: np.ndarray,
    friction: Array,
    own: np.ndarray,
    impedances: Array,
) -> tuple[Array, Array, np.ndarray]:
    """The pairs' impedances (P, 7), frictions (P, 3: sliding, torsional, rolling) and
    condims (P,) as MuJoCo's `mj_contactParam`: the higher-priority geom's condim,
    impedance and friction when the priorities differ, else the larger condim and
    friction coefficients and the mixed impedance (`mix`: MuJoCo's with equal
    `solmix`; where neither geom sets its own (`own`), the caller puts the model's).
    From the geoms' static `priority` and `condim` and stacked `friction` (G, 3) and
    `impedances` (G, 7), by gathers: the traced program does not grow with the
    number of pairs."""
    first, second = priority[ia] > priority[ib], priority[ib] > priority[ia]
    dims = np.where(
        first, condim[ia], np.where(second, condim[ib], np.maximum(condim[ia], condim[ib]))
    )

    def pick(x: Array, equal: Array) -> Array:
        return jnp.where(first[:, None], x[ia], jnp.where(second[:, None], x[ib], equal))

    fri = pick(friction, jnp.maximum(friction[ia], friction[ib]))
    imp = pick(impedances, mix(impedances[ia], impedances[ib]))
    return imp, fri, dims


def _batch_key(shape: Anything) -> Anything:
    """Shapes with one key batch together: their pytree structure and, but for meshes
    (padded to common sizes: `pad_meshes`), their leaves' shapes."""
    leaves = () if isinstance(shape, ConvexMesh) else jax.tree.leaves(shape)
    return jax.tree.structure(shape), tuple(np.shape(x) for x in leaves)


def _stacked_shapes(geoms: Sequence[Geom]) -> Callable[[np.ndarray], Anything]:
    """The geoms' shapes stacked once per `_batch_key` (meshes padded to common sizes):
    a function of static geom indices (all of one key) giving their shapes batched,
    by a gather."""
    groups: dict[Anything, list[int]] = {}
    for i, g in enumerate(geoms):
        groups.setdefault(_batch_key(g.shape), []).append(i)
    slot = np.zeros(len(geoms), np.int64)
    stacks = {}
    for k, idx in groups.items():
        slot[idx] = np.arange(len(idx))
        members: list[Anything] = [geoms[i].shape for i in idx]
        # numpy for concrete shapes: the traced program does not grow with the geoms
        xp = np if all(is_concrete(x) for x in jax.tree.leaves(members)) else jnp
        if isinstance(members[0], ConvexMesh):
            members = pad_meshes(members, xp)
        stacks[k] = jax.tree.map(lambda *xs, xp=xp: xp.stack([xp.asarray(x) for x in xs]), *members)

    def shapes(idx: np.ndarray) -> Anything:
        return jax.tree.map(lambda x: x[slot[idx]], stacks[_batch_key(geoms[idx[0]].shape)])

    return shapes


# A contact deeper than this fraction of the smaller geom's inradius when a run starts
# is warned about (`warn_deep_penetration`).
DEEP_PENETRATION = 0.1

# The check compiles its two small programs without XLA's optimisations (each runs once
# per `simulate` call: compiling fast matters, not running; filter_jit passes
# `compiler_options` on to jax.jit, which its type stubs omit).
_FAST_COMPILE = {"xla_backend_optimization_level": 0}
_geom_frames = eqx.filter_jit(  # pyright: ignore[reportCallIssue]
    lambda model, q: (lambda f: (f.rot, f.pos))(model._frames(q)), compiler_options=_FAST_COMPILE
)
_distances = eqx.filter_jit(  # pyright: ignore[reportCallIssue]
    lambda geoms, geom_body, pairs, rot, pos, contact, explicit: (lambda c: (c.dist, c.impedance))(
        find_contacts(geoms, geom_body, pairs, rot, pos, contact, explicit)
    ),
    compiler_options=_FAST_COMPILE,
)


def near_pairs(model: Anything, rot: Array, pos: Array) -> tuple[tuple[int, int], ...]:
    """The pairs of `model` (a `MultiBody`) whose geoms' bounding spheres, grown by
    their margins, overlap with the bodies at the concrete world frames `rot` (n, 3, 3),
    `pos` (n, 3) (MuJoCo's broad phase with `geom_rbound`; a plane's or height field's
    sphere is unbounded): the only pairs that can be within their margin, so the only
    ones the deep-penetration check computes."""
    rots = np.concatenate([np.asarray(rot), np.eye(3)[None]])
    poss = np.concatenate([np.asarray(pos), np.zeros((1, 3))])
    gb = np.asarray(model.geom_body)
    centre = np.stack(
        [poss[b] + rots[b] @ np.asarray(g.pos) for b, g in zip(gb, model.geoms, strict=True)]
    )
    unbounded = (Plane, HeightField)
    radius = np.asarray(
        [
            np.inf if isinstance(g.shape, unbounded) else float(g.shape.bounding_radius())
            for g in model.geoms
        ]
    )
    reach = radius + np.asarray([float(g.margin) for g in model.geoms])
    return tuple(
        (i, j)
        for i, j in model.pairs
        if np.linalg.norm(centre[i] - centre[j]) <= reach[i] + reach[j]
    )


# Frames of these packages are skipped when a warning names the user's call.
_LIBRARY = frozenset({"sciad", "equinox", "jax", "jaxtyping", "beartype"})


def warn_deep_penetration(model: Anything, q: Array) -> None:
    """Warn (`UserWarning`) for every geom pair of `model` (a `MultiBody` with contacts)
    that penetrates, at configuration `q`, deeper than `DEEP_PENETRATION` times the
    smaller of the two geoms' inradii (`AbstractShape.inradius`): the contact pushes
    such a pair apart at about depth/τ, which can launch a body into the air. Nothing
    is checked unless `q` and the model are concrete."""
    if not all(is_concrete(x) for x in jax.tree.leaves((model, q))):
        return
    rot, pos = _geom_frames(model, q)
    pairs = near_pairs(model, rot, pos)
    if not pairs:
        return
    geoms = model.geoms
    explicit = model.explicit_pairs()
    out = _distances(geoms, model.geom_body, pairs, rot, pos, model.contact, explicit)
    dist, imps = (np.asarray(x) for x in out)
    groups = _pair_groups(geoms, pairs)
    ia = np.concatenate([np.repeat(a, k) for _, k, a, _, _ in groups])
    ib = np.concatenate([np.repeat(b, k) for _, k, _, b, _ in groups])
    size = np.asarray([float(g.shape.inradius()) for g in geoms])
    limit = DEEP_PENETRATION * np.minimum(size[ia], size[ib])
    deep = -dist > limit
    # The stacklevel of the user's call: the first frame outside sciad and the libraries
    # that wrap its methods (this frame is level 1).
    frame, level = sys._getframe(), 1
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in _LIBRARY:
        frame, level = frame.f_back, level + 1
    for i, j in dict.fromkeys(zip(ia[deep].tolist(), ib[deep].tolist(), strict=True)):
        mine = (ia == i) & (ib == j)
        depth, allowed = float(np.max(-dist[mine])), float(limit[mine][0])
        ref0, ref1, _, dmax = (float(x) for x in imps[mine][0, :4])
        # the standard format's recovery speed depth/τ; the direct one's k d/b (k = −ref0/dmax²,
        # b = −ref1/dmax: the overdamped spring's speed)
        rate = 1 / ref0 if ref0 > 0 else (-ref0 / (-ref1 * dmax) if ref1 < 0 else np.inf)
        how = "depth/time_constant" if ref0 > 0 else "depth·stiffness/damping"
        warnings.warn(
            f"{_geom_label(geoms, i)} and {_geom_label(geoms, j)} start {depth:.3g} deep "
            f"in each other, more than {DEEP_PENETRATION} of the smaller geom's inradius "
            f"({allowed:.3g}): the contact will push them apart at up to "
            f"{how} = {depth * rate:.3g} (length/time), which can launch a "
            "body. Start them touching or apart.",
            UserWarning,
            stacklevel=level,
        )


def contact_frames(
    normal: Float[Array, "C 3"], tangent: Float[Array, "C 3"]
) -> Float[Array, "C 3 3"]:
    """Orthonormal frames (rows: normal n, tangent t₁, tangent t₂ = n × t₁), as
    MuJoCo's `mju_makeFrame` builds them: t₁ is the pair's `tangent` where it sets one
    (|tangent|² ≥ 1/4), else the y axis (the z axis when |n_y| ≥ 1/2), made orthogonal
    to n and normalised (the x axis where that leaves nothing). An elliptic cone with
    equal friction in both tangents does not depend on the tangents; a pyramidal cone
    does (its edges are n ± μ t₁, n ± μ t₂)."""
    dtype = normal.dtype
    given = jnp.sum(tangent * tangent, axis=-1, keepdims=True) >= 0.25
    y_axis = jnp.abs(normal[:, 1:2]) < 0.5
    default = jnp.where(
        y_axis, jnp.asarray([0.0, 1.0, 0.0], dtype), jnp.asarray([0.0, 0.0, 1.0], dtype)
    )
    t = jnp.where(given, tangent, default)
    t = t - jnp.sum(normal * t, axis=-1, keepdims=True) * normal
    norm = jnp.linalg.norm(t, axis=-1, keepdims=True)
    ok = norm > 1e-15
    t1 = jnp.where(ok, t / jnp.where(ok, norm, 1.0), jnp.asarray([1.0, 0.0, 0.0], dtype))
    return jnp.stack([normal, t1, cross(normal, t1)], axis=1)


def contact_jacobian(
    body_jac: Float[Array, "n 6 nv"], c: Contacts, frames: Float[Array, "C 3 3"]
) -> Float[Array, "C D nv"]:
    """J (C, D, nv), D = `c.rows`: v ↦ the velocity of body b's material point at each
    contact point relative to body a's, in the contact frame (normal, tangent,
    tangent), then, as MuJoCo's `mj_instantiateContact` for condim 4 and 6, body b's
    angular velocity relative to body a's along the normal (torsion) and the two
    tangents (rolling); rows beyond a contact's dim are zero (a condim-1 contact keeps
    its two tangent rows, without friction)."""
    nv = body_jac.shape[-1]
    jac = jnp.concatenate([body_jac, jnp.zeros((1, 6, nv), body_jac.dtype)])

    def point_jac(bodies: np.ndarray) -> Array:
        jb = jac[np.where(bodies < 0, body_jac.shape[0], bodies)]  # (C, 6, nv)
        ang, lin = jb[:, :3], jb[:, 3:]
        # v_point = v_o + ω × p = v_o − p × ω
        return lin - jnp.swapaxes(cross(c.point[:, None, :], jnp.swapaxes(ang, 1, 2)), 1, 2)

    rel = point_jac(c.body_b) - point_jac(c.body_a)
    out = jnp.einsum("cij,cjk->cik", frames, rel)
    if c.rows == 3:
        return out

    def ang_jac(bodies: np.ndarray) -> Array:
        return jac[np.where(bodies < 0, body_jac.shape[0], bodies), :3]

    ang = jnp.einsum("cij,cjk->cik", frames, ang_jac(c.body_b) - ang_jac(c.body_a))
    keep = np.arange(3, c.rows)[None, :] < c.dim[:, None]  # (C, D − 3) static
    return jnp.concatenate([out, ang[:, : c.rows - 3] * jnp.asarray(keep, ang.dtype)[..., None]], 1)

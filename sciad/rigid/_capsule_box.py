"""Capsule–box contacts, as MuJoCo's `mjraw_CapsuleBox`.

MuJoCo finds the point of the capsule's segment nearest to the box, then, from the
segment's orientation relative to the nearest box feature, a "sensible" second point
along the segment; each is a sphere of the capsule's radius against the box
(`mjraw_SphereBox`), kept if within the margin. Its choices are discrete and tied to
the box's frame (a capsule lying across a narrow box gets one point or two depending
on which way its axis points), and sciad follows them exactly, so that a model's
contacts are MuJoCo's: over random poses, penetrating and separated within the
margin, the contact sets agree to round-off (`tests/rigid/test_contact.py`).

In the box's frame (half sizes s), with the capsule's centre p and half axis a
(segment p + t a, t ∈ [−1, 1]):

1. The nearest point: the candidates, in MuJoCo's order, are the two segment ends
   whose clamp onto the box moves at most one coordinate (the box's face nearest to
   that end; distance the clamp's length), then the twelve box edges (closest points
   of the edge's line segment and the segment's, clamped as MuJoCo clamps them). A
   candidate replaces the best only if nearer (an edge by more than MuJoCo's
   `mjMINVAL` in squared distance), so ties keep the earlier one.
2. The second point, by the nearest feature: a box corner, the middle of an edge, or
   a face (from an end). Its offset along the segment is clamped where the segment
   leaves the box's extent, with MuJoCo's rules for each case (`_second`); an end
   inside the box, or a segment pointing at a corner or crossing an edge in a T, gets
   none. These rules read the signs of the axis's components, and a component within
   round-off of zero counts as zero: MuJoCo's rule for an exactly level capsule, so
   that one lying across a narrow box rests on its two edges (as MuJoCo's does) also
   where sciad's arithmetic tilted it by 1e-17 (MuJoCo's rule then finds a single
   point, and the capsule slid 0.6 µm in 0.5 s where MuJoCo's stays).
"""

import jax.numpy as jnp
from jaxtyping import Array
import numpy as np

from ._types import MINVAL, round_off

# The twelve box edges in MuJoCo's loop order: along axis j, from the corner i (bit k
# of i set: +s_k), for the corners i with bit j clear.
_EDGE_AXIS = np.array([j for j in range(3) for i in range(8) if not i & (1 << j)])
_EDGE_CORNER = np.array([i for j in range(3) for i in range(8) if not i & (1 << j)])
_CORNER_SIGNS = np.array([[1.0 if i & (1 << k) else -1.0 for k in range(3)] for i in range(8)])


def _ratio(num: Array, den: Array, none: float) -> Array:
    """num / den where den ≠ 0, else `none` (a division MuJoCo leaves infinite or NaN,
    which never wins its comparisons), with finite gradients either way."""
    ok = den != 0
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), none)


def _nearest(pos: Array, halfaxis: Array, size: Array, half_length: Array, far: Array):
    """Step 1: the nearest feature. Returns (segment parameter t, box-edge parameter,
    type, face axis, corner, edge axis, found), MuJoCo's `bestsegmentpos`,
    `bestboxpos`, `cltype` (−3/−1: the end t = ∓1 is nearest a face; 0…8: an edge,
    3·(box end: 0 low, 1 middle, 2 high) + (segment end: likewise)), `clface` (−1:
    the end is inside the box), `clcorner` and `cledge`."""
    dtype = pos.dtype
    ends = pos[None] + jnp.asarray([-1.0, 1.0], dtype)[:, None] * halfaxis[None]  # (2, 3)
    out = (ends < -size[None]) | (ends > size[None])
    face_d2 = jnp.sum((jnp.clip(ends, -size[None], size[None]) - ends) ** 2, axis=-1)
    face_ok = jnp.sum(out, axis=-1) <= 1
    face_axis = jnp.max(jnp.where(out, jnp.arange(3), -1), axis=-1)  # the last clamped

    # The twelve edges: the segment x2 ∈ [−1, 1] against the edge x1 ∈ [−1, 1].
    j = _EDGE_AXIS
    corner = jnp.asarray(_CORNER_SIGNS[_EDGE_CORNER], dtype) * size[None]
    start = corner * jnp.asarray(1.0 - np.eye(3)[j], dtype)  # the edge's middle
    dif = start - pos[None]
    sj, aj = size[j], halfaxis[j]
    ma, mb, mc = sj**2, -sj * aj, half_length**2
    mc = jnp.where(mc > 0, mc, 1.0)  # a capsule of no length has no edge candidates (det 0)
    u, v = -sj * dif[jnp.arange(12), j], dif @ halfaxis
    det = ma * mc - mb * mb
    edge_ok = jnp.abs(det) >= MINVAL
    x1 = (mc * u - mb * v) / jnp.where(edge_ok, det, 1.0)
    x2 = (ma * v - mb * u) / jnp.where(edge_ok, det, 1.0)
    s1 = jnp.where(x1 > 1, 2, jnp.where(x1 < -1, 0, 1))
    x2 = jnp.where(x1 > 1, (v - mb) / mc, jnp.where(x1 < -1, (v + mb) / mc, x2))
    x1 = jnp.clip(x1, -1.0, 1.0)
    s2 = jnp.where(x2 > 1, 2, jnp.where(x2 < -1, 0, 1))
    x1 = jnp.where(
        x2 > 1, (u - mb) / ma, jnp.where(x2 < -1, (u + mb) / ma, x1)
    )  # the edge re-clamped against the segment's end
    s1 = jnp.where(s2 != 1, jnp.where(x1 > 1, 2, jnp.where(x1 < -1, 0, s1)), s1)
    x1, x2 = jnp.clip(x1, -1.0, 1.0), jnp.clip(x2, -1.0, 1.0)
    gap = dif - x2[:, None] * halfaxis[None]
    gap = gap + jnp.asarray(np.eye(3)[j], dtype) * (sj * x1)[:, None]
    edge_d2 = jnp.sum(gap**2, axis=-1)

    # MuJoCo's sequential choice: the faces strictly nearer, the edges by > MINVAL.
    best, pick = far, jnp.asarray(-1)
    for k in range(2):
        better = face_ok[k] & (face_d2[k] < best)
        best, pick = jnp.where(better, face_d2[k], best), jnp.where(better, k, pick)
    for k in range(12):
        better = edge_ok[k] & (edge_d2[k] < best - MINVAL)
        best, pick = jnp.where(better, edge_d2[k], best), jnp.where(better, 2 + k, pick)

    e = jnp.clip(pick - 2, 0, 11)
    on_face = pick < 2
    t = jnp.where(on_face, jnp.where(pick == 0, -1.0, 1.0), x2[e])
    cltype = jnp.where(on_face, jnp.where(pick == 0, -3, -1), s1[e] * 3 + s2[e])
    clcorner = jnp.asarray(_EDGE_CORNER)[e] + jnp.where(s1[e] == 2, 1 << jnp.asarray(j)[e], 0)
    cledge = jnp.asarray(j)[e]
    return t, x1[e], cltype, face_axis[jnp.clip(pick, 0, 1)], clcorner, cledge, pick >= 0


def _second(axis, halfaxis, pos, size, t, boxpos, cltype, clface, clcorner, cledge):
    """Step 2: the second point's offset from t along the segment, and whether there
    is one (MuJoCo's `secondpos`). `axis` (unit) decides the discrete choices, the
    half axis gives the lengths."""
    dtype = pos.dtype
    axisdir = jnp.sum(jnp.where(axis > 0, jnp.asarray([1, 2, 4]), 0))
    reach = _ratio(2 * size, jnp.abs(halfaxis), 4.0)  # 2s/|a|: across the box, per axis
    bit = jnp.asarray([0, 0, 1, 0, 2, 0, 0, 0])  # the axis of a one-bit pattern
    rows = jnp.arange(3)

    # A corner is nearest: along the edge (the segment steep to it) or over a face.
    c = axisdir ^ clcorner
    toward = (c == 1) | (c == 2) | (c == 4)
    mul = jnp.where(toward, 1.0, -1.0)
    ax = bit[jnp.where(toward, c, 7 - c)]
    de, dp = 1 - mul * t, 1 + mul * t
    others = jnp.where((rows != ax), reach, 4.0)
    corner = jnp.where(
        axis[ax] ** 2 > 0.5,
        jnp.minimum(de, reach[ax]) * mul,
        jnp.minimum(dp, jnp.min(others)) * -mul,
    )
    corner_ok = (c != 0) & (c != 7)

    # The middle of an edge is nearest: the segment crosses it (an X; a T has none).
    c = (axisdir ^ clcorner) & (7 - (1 << cledge))
    cross_ok = (c == 1) | (c == 2) | (c == 4)
    ax = cledge
    ax1, ax2 = (ax + 1) % 3, (ax + 2) % 3
    ax1 = jnp.where(jnp.abs(axis[ax1]) > jnp.abs(axis[ax2]), ax2, ax1)
    ax2 = 3 - ax - ax1
    up = (c >> ax2) & 1 == 1
    mul = jnp.where(up, 1.0, -1.0)
    along = (((axisdir >> ax) & 1) == 1) == up
    e2 = jnp.where(along, 1 - boxpos, 1 + boxpos)
    edge = jnp.minimum(
        jnp.minimum(1 - mul * t, reach[ax2]), _ratio(size[ax] * e2, jnp.abs(halfaxis[ax]), 4.0)
    )
    edge = edge * mul

    # An end is nearest a face: the other end, or where the segment leaves the box's
    # extent across the face's sides.
    mul = jnp.where(cltype == -3, 1.0, -1.0)
    start = pos - mul * halfaxis
    leave = jnp.stack(
        [
            _ratio(mul * (size - start), halfaxis, -1.0),
            _ratio(mul * (-size - start), halfaxis, -1.0),
        ]
    )
    leave = jnp.where((leave > 0) & (rows != clface)[None], leave, 2.0)
    face = jnp.minimum(jnp.min(leave), 2.0) * mul
    face_ok = clface != -1

    on_edge = cltype >= 0
    middle = cltype // 3 == 1
    offset = jnp.where(on_edge, jnp.where(middle, edge, corner), face)
    ok = jnp.where(on_edge, jnp.where(middle, cross_ok, corner_ok), face_ok)
    return offset.astype(dtype), ok


def capsule_box_centres(
    pos1: Array,
    mat1: Array,
    radius: Array,
    half_length: Array,
    pos2: Array,
    mat2: Array,
    size: Array,
    margin: Array | float,
) -> tuple[Array, Array]:
    """The centres (2, 3) of MuJoCo's spheres of the capsule's radius for a capsule
    (centre `pos1`, rotation `mat1` with its axis along the third column, `radius`,
    `half_length`) against a box (`pos2`, `mat2`, half sizes `size` (3,)), and which
    of the two MuJoCo collides (2,) bool; each is then a sphere–box contact, kept
    within `margin`."""
    pos = (pos1 - pos2) @ mat2
    axis = mat1[:, 2] @ mat2
    halfaxis = axis * half_length
    far = margin + 2 * (radius + half_length + jnp.sum(size))
    t, boxpos, cltype, clface, clcorner, cledge, found = _nearest(
        pos, halfaxis, size, half_length, far
    )
    # MuJoCo's choices test the signs of the axis's components: one within round-off
    # of zero (a capsule lying exactly level, as MuJoCo sees it from the model's
    # exact quaternion, but tilted by 1e-17 in sciad's arithmetic) counts as zero.
    level = jnp.where(jnp.abs(axis) > round_off(axis.dtype), axis, 0.0)
    offset, second = _second(
        level, halfaxis, pos, size, t, boxpos, cltype, clface, clcorner, cledge
    )
    s = jnp.stack([t, t + offset])
    centres = pos2[None] + (pos[None] + s[:, None] * halfaxis[None]) @ mat2.T
    return centres, jnp.stack([found, found & second])

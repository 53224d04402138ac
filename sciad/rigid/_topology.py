"""Static tables of a kinematic tree (NumPy, computed once per topology)."""

import functools
import math
from typing import NamedTuple

import numpy as np


class Topology(NamedTuple):
    """Index tables of a tree of `n` bodies with `nq` positions and `nv` velocities.

    Bodies are numbered parents-first; the world is index `n` in gathers.
    """

    n: int
    nq: int
    nv: int
    qadr: np.ndarray  # (n,) first position index of each body's joint
    dadr: np.ndarray  # (n,) first velocity index
    dof_body: np.ndarray  # (nv,) body of each dof
    anc: np.ndarray  # (n, n) bool: anc[i, j] = j is i or an ancestor of i
    anc_strict: np.ndarray  # (n, n) bool: j is a proper ancestor of i
    dof_onehot: np.ndarray  # (n, nv) bool: dof k belongs to body i
    dof_upper: np.ndarray  # (nv, nv) bool: body(k) is a proper ancestor of body(l)
    dof_same: np.ndarray  # (nv, nv) bool: body(k) == body(l)
    jumps: tuple[np.ndarray, ...]  # pointer-jumping ancestor tables, world = n
    depth: int  # longest root-to-leaf path (bodies)


@functools.lru_cache(maxsize=512)
def topology(parents: tuple[int, ...], nqs: tuple[int, ...], nvs: tuple[int, ...]) -> Topology:
    """The tables for bodies with these parents (−1: world) and joint sizes."""
    n = len(parents)
    qadr = np.concatenate([[0], np.cumsum(nqs)[:-1]]).astype(np.int64) if n else np.zeros(0, int)
    dadr = np.concatenate([[0], np.cumsum(nvs)[:-1]]).astype(np.int64) if n else np.zeros(0, int)
    nq, nv = int(sum(nqs)), int(sum(nvs))
    dof_body = np.repeat(np.arange(n), nvs).astype(np.int64)
    anc = np.zeros((n, n), dtype=bool)
    depth_of = np.zeros(n, dtype=np.int64)
    for i, p in enumerate(parents):
        anc[i, i] = True
        if p >= 0:
            anc[i] |= anc[p]
            depth_of[i] = depth_of[p] + 1
        else:
            depth_of[i] = 1
    anc_strict = anc & ~np.eye(n, dtype=bool)
    dof_onehot = np.zeros((n, nv), dtype=bool)
    dof_onehot[dof_body, np.arange(nv)] = True
    dof_upper = anc_strict[dof_body][:, dof_body].T  # [k, l]: body(k) ancestor of body(l)
    dof_same = dof_body[:, None] == dof_body[None, :]
    depth = int(depth_of.max()) if n else 0
    # Pointer jumping (Hillis–Steele scan on a tree): after round r every body has
    # composed 2^r − 1 ancestors; ceil(log2(depth)) rounds reach the root.
    up = np.array([p if p >= 0 else n for p in parents] + [n], dtype=np.int64)
    jumps = []
    cur = up.copy()
    for _ in range(math.ceil(math.log2(depth)) if depth > 1 else 0):
        jumps.append(cur[:n].copy())
        cur = cur[cur]
    return Topology(
        n,
        nq,
        nv,
        qadr,
        dadr,
        dof_body,
        anc,
        anc_strict,
        dof_onehot,
        dof_upper,
        dof_same,
        tuple(jumps),
        depth,
    )

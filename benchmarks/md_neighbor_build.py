"""Time to build a neighbour list: `sciad.md` (jitted, cell list / all pairs) vs scipy cKDTree.

Measures: one full neighbour-list build for Lennard-Jones-fluid-like configurations
(density 0.84, cutoff 2.5, skin 0.3, so pairs within 2.8; N = 1,000 and 4,000 in a
periodic cubic box; a jittered fcc lattice with random vacancies), in float32 and
float64, with `NeighborListBuilder.build` (cell list and all-pairs, jitted, compiled
first), against the anchor `scipy.spatial.cKDTree(r, boxsize=L).query_pairs(2.8)`
on the host (tree construction + query, the same pair set). Each figure is the
minimum over `--repeats` interleaved runs (other processes may share the CPU).
Checks that every variant finds the same number of pairs as the anchor, and prints
the ratio sciad / cKDTree (< 1: sciad is faster). There is no bar: this records
where the jitted build stands against a tuned host-side code.

Run:  .venv/bin/python benchmarks/md_neighbor_build.py           (N = 1,000 and 4,000)
      .venv/bin/python benchmarks/md_neighbor_build.py --quick   (smoke test)
"""

import argparse

from _common import block, interleaved, machine
import jax
import jax.numpy as jnp
import numpy as np
from scipy.spatial import cKDTree

from sciad.md._neighbors import NeighborListBuilder
from sciad.md._space import PeriodicBox

DENSITY, CUTOFF, SKIN = 0.84, 2.5, 0.3


def lj_fluid_like(n: int, seed: int = 0) -> tuple[np.ndarray, float]:
    """`n` particles at density 0.84: fcc sites (random vacancies), jittered, wrapped."""
    rng = np.random.default_rng(seed)
    L = (n / DENSITY) ** (1 / 3)
    m = int(np.ceil((n / 4) ** (1 / 3)))
    base = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    cells = np.stack(np.meshgrid(*[np.arange(m)] * 3, indexing="ij"), -1).reshape(-1, 1, 3)
    sites = ((cells + base[None]) / m).reshape(-1, 3)
    sites = sites[rng.choice(len(sites), n, replace=False)]
    r = sites * L + rng.normal(0.0, 0.1, (n, 3))
    return np.mod(r, L), L


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one small size, float32: a smoke test")
    ap.add_argument("--sizes", type=int, nargs="*", default=None)
    ap.add_argument("--repeats", type=int, default=None)
    a = ap.parse_args()
    sizes = a.sizes or ([500] if a.quick else [1000, 4000])
    reps = a.repeats or (1 if a.quick else 20)
    dtypes = (jnp.float32,) if a.quick else (jnp.float32, jnp.float64)
    rc = CUTOFF + SKIN

    print(machine())
    print(
        f"density {DENSITY}, cutoff {CUTOFF}, skin {SKIN}, periodic cube; "
        f"min wall time over {reps} runs; ratio = sciad / cKDTree"
    )
    print(
        f"\n{'N':>6s} {'dtype':8s} {'variant':22s} {'grid':>10s} {'M':>4s} {'pairs':>7s} "
        f"{'min wall (ms)':>13s} {'ratio':>6s}"
    )
    for n in sizes:
        r_np, L = lj_fluid_like(n)
        tree = lambda r_np=r_np, L=L: cKDTree(r_np, boxsize=L).query_pairs(
            rc, output_type="ndarray"
        )
        n_ref = len(tree())
        for dtype in dtypes:
            space = PeriodicBox(jnp.full((3,), L, dtype=dtype))
            r = jnp.asarray(r_np, dtype=dtype)
            builders = {
                method: NeighborListBuilder.create(
                    space, r, cutoff=CUTOFF, skin=SKIN, method=method
                )
                for method in ("cell", "brute", "auto")
            }
            builders = {
                f"sciad {k}" + (f" (={'cell' if b.grid else 'brute'})" if k == "auto" else ""): b
                for k, b in builders.items()
            }
            fns = {k: jax.jit(b.build) for k, b in builders.items()}
            variants = {"cKDTree (anchor)": tree}
            for k, f in fns.items():
                out = block(f(space, r))  # compile + check
                assert not bool(out.did_overflow), k
                assert int(out.count) == n_ref, (k, int(out.count), n_ref)
                variants[k] = lambda f=f, space=space, r=r: f(space, r)
            res = interleaved(variants, reps)
            anchor = res["cKDTree (anchor)"]["wall"]
            for k in variants:
                b = builders.get(k)
                grid = "x".join(map(str, b.grid)) if b is not None and b.grid else "-"
                mpc = str(b.max_per_cell) if b is not None and b.grid else "-"
                print(
                    f"{n:6d} {jnp.dtype(dtype).name:8s} {k:22s} {grid:>10s} {mpc:>4s} "
                    f"{n_ref:7d} {1e3 * res[k]['wall']:13.2f} {res[k]['wall'] / anchor:6.2f}"
                )


if __name__ == "__main__":
    main()

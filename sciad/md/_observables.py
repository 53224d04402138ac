"""Observables of MD configurations and trajectories: pressure, stress, g(r), MSD.

Like `MDSystem`'s methods, an observable of the whole state takes the state
`y = (q, p)` as a run carries it (`pressure`, `stress_tensor`); one of a part takes
that part (`virial_tensor(system, q)`).
"""

import math

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._core._types import FloatScalar, Positions, State
from .._core._validate import check_int, check_positive, is_concrete
from ._potential import all_pairs
from ._space import AbstractSpace
from ._system import MDSystem


def virial_tensor(system: MDSystem, q: Positions) -> Float[Array, "d d"]:
    """The configurational virial W_ab = −∂U/∂ε_ab for a homogeneous strain ε.

    Under the strain, positions map to (I + ε) q and the box's lattice vectors to
    (I + ε) a. For pair potentials this is the analytic W_ab = −Σ_{i<j} r_a r_b u′(r)/r
    over the interacting pairs (masked pairs contribute exactly zero); for any other
    term (bonded terms, [`Ewald`][sciad.md.Ewald], user terms) it is the strain
    derivative by autodiff ([`AbstractPotential.virial`][sciad.md.AbstractPotential.virial]),
    so the pressure is correct for every potential.

    **Arguments:** `system` (an `MDSystem`), `q`: positions, shape `(n, d)`.

    **Returns:** shape `(d, d)` (energy units), symmetric for rotation-invariant
    potentials.

    **Example:** `W = sciad.md.virial_tensor(system, q)`
    """
    q = system.positions_array(q, "virial_tensor")
    return system.potential.virial(
        system.space, q, system.pairs(q), system.species, system.exclusions
    )


def _needs_volume(space: AbstractSpace, what: str) -> None:
    if not space.periodic:
        raise TypeError(
            f"{what} needs a volume, so a periodic space (sciad.md.PeriodicBox or "
            f"sciad.md.TriclinicBox); got {type(space).__name__}. In free space the "
            "pressure is not defined (the virial alone is sciad.md.virial_tensor)."
        )


def stress_tensor(system: MDSystem, y: State) -> Float[Array, "d d"]:
    """The pressure tensor P_ab = (Σᵢ p_a p_b / mᵢ + W_ab) / V (virial route).

    **Arguments:** `system`, and the state `y = (q, p)`, positions and momenta, each
    shape `(n, d)`, as a run carries it (a `TypeError` for one array alone).

    **Returns:** shape `(d, d)` (energy/length^d); its trace over d is the pressure.
    Reference: Allen & Tildesley (2017), §2.4. Refused (`TypeError`) in free space,
    which has no volume.

    **Example:** `P = sciad.md.stress_tensor(system, traj.y1)`
    """
    _needs_volume(system.space, "stress_tensor")
    q, p = system.split_state(y, "stress_tensor")
    kinetic = jnp.einsum("na,nb->ab", p / system.masses[:, None], p)
    return (kinetic + virial_tensor(system, q)) / system.space.volume()


def pressure(system: MDSystem, y: State) -> FloatScalar:
    """The instantaneous pressure tr(P)/d = (2K + tr W)/(d V) of the state `y = (q, p)`.

    **Arguments:** `system`, and the state `y = (q, p)`, positions and momenta, each
    shape `(n, d)`, as a run carries it (a `TypeError` for one array alone).

    **Returns:** a scalar (energy/length^d). Add `lj_tail_corrections` for a truncated
    LJ fluid. Refused (`TypeError`) in free space, which has no volume.

    **Example:** `sciad.SaveAt(steps=100, fn=lambda t, y, m: sciad.md.pressure(m, y))`
    """
    _needs_volume(system.space, "pressure")
    stress = stress_tensor(system, system.split_state(y, "pressure"))
    return jnp.trace(stress) / stress.shape[0]


def _shell_volume(r_lo: Array, r_hi: Array, d: int) -> Array:
    c = math.pi ** (d / 2) / math.gamma(d / 2 + 1)  # volume of the unit d-ball
    return c * (r_hi**d - r_lo**d)


def radial_distribution(
    space: AbstractSpace,
    q: Positions,
    r_max: float,
    n_bins: int,
    smoothing: float | None = None,
) -> tuple[Float[Array, " bins"], Float[Array, " bins"]]:
    """The radial distribution function g(r) of one configuration (all pairs).

    g(r) = V / (N(N−1)/2) · (pairs in the shell at r) / (shell volume), so an ideal
    gas gives g = 1 exactly; the coordination number is then ((N−1)/V) ∫ g dV. With
    `smoothing` = s, each pair adds a Gaussian of width s instead of a histogram count,
    so g is differentiable in the positions (and in potential parameters through a
    trajectory).

    **Arguments:** `space` (a periodic space: it sets the volume), `q`: shape `(n, d)`,
    `r_max` (> 0 and ≤ half the box's smallest width: a shell beyond it is cut by the
    cell's faces and would be under-counted), `n_bins` (int ≥ 1), `smoothing` (length,
    > 0) or `None`. Each is checked before tracing.

    **Returns:** `(r, g)`: bin centres and g(r), each shape `(n_bins,)`.

    **Example:** `r, g = sciad.md.radial_distribution(space, q, r_max=3.0, n_bins=150)`
    """
    _needs_volume(space, "radial_distribution")
    space.check_positions(q, "radial_distribution positions q")
    check_positive(r_max, "radial_distribution r_max")
    check_int(n_bins, "radial_distribution n_bins")
    if smoothing is not None:
        check_positive(smoothing, "radial_distribution smoothing")
    width = space.min_width()
    if is_concrete(width) and is_concrete(r_max) and not float(r_max) <= 0.5 * float(width):
        raise ValueError(
            f"radial_distribution r_max = {float(r_max):.6g} must be at most half the box's "
            f"smallest width ({float(width):.6g}, so r_max <= {0.5 * float(width):.6g}): "
            "beyond it the shells are cut by the cell's faces and g(r) is under-counted."
        )
    n, d = q.shape
    i, j, _ = all_pairs(n)
    dist = jnp.linalg.norm(jax.vmap(space.displacement)(q[i], q[j]), axis=-1)
    edges = jnp.linspace(0.0, r_max, n_bins + 1, dtype=q.dtype)
    centres = 0.5 * (edges[1:] + edges[:-1])
    if smoothing is None:
        counts = jnp.histogram(dist, bins=edges)[0].astype(q.dtype)
    else:
        width = edges[1] - edges[0]
        z = (centres[None, :] - dist[:, None]) / smoothing
        counts = (
            jnp.sum(jnp.exp(-0.5 * z**2), axis=0) * width / (smoothing * math.sqrt(2 * math.pi))
        )
    ideal = (n * (n - 1) / 2) / space.volume() * _shell_volume(edges[:-1], edges[1:], d)
    return centres, counts / ideal


def mean_squared_displacement(positions: Float[Array, "frames n d"]) -> Float[Array, " frames"]:
    """MSD(t_k) = ⟨|q(t_k) − q(t_0)|²⟩ over particles, from saved unwrapped positions.

    `MDSystem` never wraps positions, so saved positions are unwrapped. The diffusion
    coefficient is the long-time slope over 2d (Einstein relation).

    **Arguments:** `positions`: shape `(frames, n, d)`, e.g. `traj.ys[0]` when saving
    the state.

    **Returns:** shape `(frames,)` (length²).

    **Example:** `msd = sciad.md.mean_squared_displacement(traj.ys[0])`
    """
    return jnp.mean(jnp.sum((positions - positions[:1]) ** 2, axis=-1), axis=-1)

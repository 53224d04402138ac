"""The molecular-dynamics pillar: spaces, pair, bonded and Ewald potentials, MD
systems, certified neighbour lists, NVE/NVT/NPT/Brownian integrators, minimisation,
observables and transport coefficients, reweighting, lattices and Maxwell–Boltzmann
velocities, extended-XYZ I/O.
"""

from ._barostat import (
    CellRescaling as CellRescaling,
    CellRescalingState as CellRescalingState,
)
from ._bonded import (
    AbstractBondedTerm as AbstractBondedTerm,
    HarmonicAngle as HarmonicAngle,
    HarmonicBond as HarmonicBond,
    PeriodicDihedral as PeriodicDihedral,
)
from ._brownian import BrownianDynamics as BrownianDynamics, BrownianState as BrownianState
from ._ewald import Ewald as Ewald
from ._fire import FIRE as FIRE
from ._growing import run_growing as run_growing
from ._init import (
    lattice as lattice,
    lattice_for_density as lattice_for_density,
    maxwell_boltzmann as maxwell_boltzmann,
    random_positions as random_positions,
)
from ._io import (
    from_ase as from_ase,
    read_extxyz as read_extxyz,
    to_ase as to_ase,
    write_extxyz as write_extxyz,
    XYZFrame as XYZFrame,
)
from ._minimize import minimize as minimize, MinimizeResult as MinimizeResult
from ._neighbors import (
    needs_rebuild as needs_rebuild,
    NeighborList as NeighborList,
    NeighborListBuilder as NeighborListBuilder,
    update as update,
)
from ._nose_hoover import (
    NoseHooverChain as NoseHooverChain,
    NoseHooverState as NoseHooverState,
)
from ._observables import (
    mean_squared_displacement as mean_squared_displacement,
    pressure as pressure,
    radial_distribution as radial_distribution,
    stress_tensor as stress_tensor,
    virial_tensor as virial_tensor,
)
from ._pair import (
    AbstractPairPotential as AbstractPairPotential,
    GaussianCore as GaussianCore,
    LennardJones as LennardJones,
    lj_tail_corrections as lj_tail_corrections,
    lorentz_berthelot as lorentz_berthelot,
    Morse as Morse,
    PairSum as PairSum,
    SoftSphere as SoftSphere,
    Truncated as Truncated,
    wca as wca,
    Yukawa as Yukawa,
)
from ._potential import (
    AbstractPotential as AbstractPotential,
    Exclusions as Exclusions,
    PotentialSum as PotentialSum,
    strain_space as strain_space,
)
from ._reweight import reweighted_average as reweighted_average
from ._run import (
    NeighborListIntegrator as NeighborListIntegrator,
    NeighborListState as NeighborListState,
)
from ._space import (
    AbstractPeriodicSpace as AbstractPeriodicSpace,
    AbstractSpace as AbstractSpace,
    FreeSpace as FreeSpace,
    PeriodicBox as PeriodicBox,
    TriclinicBox as TriclinicBox,
)
from ._switch import Switched as Switched
from ._system import (
    all_pairs as all_pairs,
    MDSystem as MDSystem,
    pair_energy_sum as pair_energy_sum,
)
from ._thermostat import (
    AbstractThermostat as AbstractThermostat,
    LangevinBAOAB as LangevinBAOAB,
    LangevinState as LangevinState,
)
from ._transport import (
    einstein_diffusion as einstein_diffusion,
    green_kubo_diffusion as green_kubo_diffusion,
    velocity_autocorrelation as velocity_autocorrelation,
)

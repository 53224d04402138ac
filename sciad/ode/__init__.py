"""The ODE pillar: models as Equinox modules, and adaptive solving on diffrax."""

from ._hamiltonian import (
    HamiltonianSystem as HamiltonianSystem,
    LagrangianSystem as LagrangianSystem,
    SeparableHamiltonian as SeparableHamiltonian,
)
from ._mechanics import (
    DoublePendulum as DoublePendulum,
    HarmonicOscillator as HarmonicOscillator,
    Kepler as Kepler,
    NBody as NBody,
    Pendulum as Pendulum,
)
from ._models import (
    ExponentialDecay as ExponentialDecay,
    FitzHughNagumo as FitzHughNagumo,
    Lorenz as Lorenz,
    LotkaVolterra as LotkaVolterra,
    Robertson as Robertson,
    SIR as SIR,
    VanDerPol as VanDerPol,
)
from ._sensitivity import ForwardSensitivity as ForwardSensitivity
from ._solve import solve as solve

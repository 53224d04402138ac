"""sciad: differentiable scientific computing on JAX.

One entry point, `sciad.simulate`, runs every model; batches are `jax.vmap`, and
`sciad.ensemble` shards them over every device and process;
gradients, forward mode and higher orders compose. Pillars: `sciad.ode`, `sciad.fit`,
`sciad.md` (molecular dynamics) and `sciad.rigid` (rigid bodies with contacts).
"""

from . import md as md, ode as ode, rigid as rigid
from ._core._adjoint import (
    AbstractAdjoint as AbstractAdjoint,
    CheckpointAdjoint as CheckpointAdjoint,
    DirectAdjoint as DirectAdjoint,
)
from ._core._checkpoint import (
    load_checkpoint as load_checkpoint,
    save_checkpoint as save_checkpoint,
)
from ._core._compile_cache import enable_compilation_cache as enable_compilation_cache
from ._core._ensemble import ensemble as ensemble
from ._core._integrator import (
    AbstractExplicitRK as AbstractExplicitRK,
    AbstractIntegrator as AbstractIntegrator,
    AbstractSplittingIntegrator as AbstractSplittingIntegrator,
    AbstractWrappedIntegrator as AbstractWrappedIntegrator,
    AbstractWrappedState as AbstractWrappedState,
    Leapfrog as Leapfrog,
    RK4 as RK4,
    SplittingState as SplittingState,
    SymplecticEuler as SymplecticEuler,
    VelocityVerlet as VelocityVerlet,
    Yoshida4 as Yoshida4,
    Yoshida6 as Yoshida6,
)
from ._core._model import (
    AbstractModel as AbstractModel,
    AbstractSeparableModel as AbstractSeparableModel,
)
from ._core._progress import (
    AbstractProgressMeter as AbstractProgressMeter,
    TextProgressMeter as TextProgressMeter,
    TqdmProgressMeter as TqdmProgressMeter,
)
from ._core._results import check_result as check_result, RESULTS as RESULTS, RunError as RunError
from ._core._simulate import simulate as simulate
from ._core._trajectory import SaveAt as SaveAt, Trajectory as Trajectory
from ._core._windowed import windowed_average as windowed_average
from .fit import (
    fit as fit,
    FitResult as FitResult,
    Identifiability as Identifiability,
    meta_fit as meta_fit,
    MetaResult as MetaResult,
)

__version__ = "0.1.0"

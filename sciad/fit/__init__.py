"""The fitting pillar: parameter fitting, implicit differentiation, meta-optimisation.

`sciad.fit` (the function), `sciad.FitResult`, `sciad.Identifiability`,
`sciad.meta_fit` and `sciad.MetaResult` are re-exported at the top level; the outer
loop's solver parts are `sciad.fit.NoiseTolerantBFGS` and `sciad.fit.NoiseTolerantArmijo`
(import them with `from sciad.fit import NoiseTolerantBFGS`: `sciad.fit` itself is the
function).
"""

from ._fit import fit as fit
from ._identifiability import Identifiability as Identifiability
from ._meta import meta_fit as meta_fit, MetaResult as MetaResult
from ._noisy import (
    NoiseTolerantArmijo as NoiseTolerantArmijo,
    NoiseTolerantBFGS as NoiseTolerantBFGS,
)
from ._result import FitResult as FitResult

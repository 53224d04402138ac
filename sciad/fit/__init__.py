"""The fitting pillar: parameter fitting, implicit differentiation, meta-optimisation.

`sciad.fit` (the function), `sciad.FitResult` and `sciad.Identifiability` are re-exported
at the top level.
"""

from ._fit import fit as fit
from ._identifiability import Identifiability as Identifiability
from ._result import FitResult as FitResult

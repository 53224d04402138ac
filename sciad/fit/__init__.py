"""The fitting pillar: parameter fitting, implicit differentiation, meta-optimisation.

`sciad.fit` (the function) and `sciad.FitResult` are re-exported at the top level.
"""

from ._fit import fit as fit, FitResult as FitResult

"""The classical stiff test problems as sciad models, with their reference solutions.

Shared by `tests/test_stiff.py` and `benchmarks/stiff.py`. Van der Pol and Robertson
are sciad's public models; HIRES, the Oregonator and the pollution problem are test
problems and live here. Published reference values are from the IVP test set:
F. Mazzia and C. Magherini, *Test Set for Initial Value Problem Solvers*, release 2.4,
University of Bari (2008), https://archimede.uniba.it/~testset/ (computed there with
RADAU5 in quadruple-like precision), and for the Oregonator from Hairer & Wanner,
*Solving Ordinary Differential Equations II*, 2nd ed., §IV.10.
"""

from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np

import sciad


class Hires(sciad.AbstractModel):
    """HIRES: high irradiance responses of photomorphogenesis, 8 species (Schäfer 1975).

    Mazzia & Magherini's test set, problem HIRES; Hairer & Wanner II, §IV.10.
    """

    stiff = True

    def vector_field(self, t, y):
        y1, y2, y3, y4, y5, y6, y7, y8 = (y[i] for i in range(8))
        r = 280.0 * y6 * y8
        return jnp.stack(
            [
                -1.71 * y1 + 0.43 * y2 + 8.32 * y3 + 0.0007,
                1.71 * y1 - 8.75 * y2,
                -10.03 * y3 + 0.43 * y4 + 0.035 * y5,
                8.32 * y2 + 1.71 * y3 - 1.12 * y4,
                -1.745 * y5 + 0.43 * y6 + 0.43 * y7,
                -r + 0.69 * y4 + 1.71 * y5 - 0.43 * y6 + 0.69 * y7,
                r - 1.81 * y7,
                -r + 1.81 * y7,
            ]
        )


class Oregonator(sciad.AbstractModel):
    """The Field–Noyes Oregonator (Belousov–Zhabotinsky reaction), scaled form.

    dy₁/dt = s(y₂ + y₁(1 − q y₁ − y₂)), dy₂/dt = (y₃ − (1 + y₁)y₂)/s,
    dy₃/dt = w(y₁ − y₃); s = 77.27, q = 8.375e-6, w = 0.161 (Hairer & Wanner II, OREGO).
    """

    stiff = True

    def vector_field(self, t, y):
        y1, y2, y3 = y[0], y[1], y[2]
        s, q, w = 77.27, 8.375e-6, 0.161
        return jnp.stack(
            [s * (y2 + y1 * (1.0 - q * y1 - y2)), (y3 - (1.0 + y1) * y2) / s, w * (y1 - y3)]
        )


_POLL_K = (
    0.35, 26.6, 1.23e4, 8.6e-4, 8.2e-4, 1.5e4, 1.3e-4, 2.4e4, 1.65e4, 9.0e3, 0.022, 1.2e4,
    1.88, 1.63e4, 4.8e6, 3.5e-4, 0.0175, 1.0e8, 4.44e11, 1240.0, 2.1, 5.78, 0.0474, 1780.0,
    3.12,
)  # fmt: skip


class Pollution(sciad.AbstractModel):
    """POLL: the chemistry of the RIVM air pollution model, 20 species, 25 reactions.

    Verwer, SIAM J. Sci. Comput. 15, 1243 (1994); Mazzia & Magherini's test set, POLLU.
    Rate constants from 1e-4 to 4e11 (concentrations in ppm, time in minutes).
    """

    stiff = True

    def vector_field(self, t, y):
        k = _POLL_K
        y = [y[i] for i in range(20)]
        r = [
            k[0] * y[0], k[1] * y[1] * y[3], k[2] * y[4] * y[1], k[3] * y[6], k[4] * y[6],
            k[5] * y[6] * y[5], k[6] * y[8], k[7] * y[8] * y[5], k[8] * y[10] * y[1],
            k[9] * y[10] * y[0], k[10] * y[12], k[11] * y[9] * y[1], k[12] * y[13],
            k[13] * y[0] * y[5], k[14] * y[2], k[15] * y[3], k[16] * y[3], k[17] * y[15],
            k[18] * y[15], k[19] * y[16] * y[5], k[20] * y[18], k[21] * y[18],
            k[22] * y[0] * y[3], k[23] * y[18] * y[0], k[24] * y[19],
        ]  # fmt: skip
        r = [None, *r]  # r[1] .. r[25], as in the paper
        return jnp.stack(
            [
                -r[1] - r[10] - r[14] - r[23] - r[24] + r[2] + r[3] + r[9] + r[11] + r[12]
                + r[22] + r[25],
                -r[2] - r[3] - r[9] - r[12] + r[1] + r[21],
                -r[15] + r[1] + r[17] + r[19] + r[22],
                -r[2] - r[16] - r[17] - r[23] + r[15],
                -r[3] + 2 * r[4] + r[6] + r[7] + r[13] + r[20],
                -r[6] - r[8] - r[14] - r[20] + r[3] + 2 * r[18],
                -r[4] - r[5] - r[6] + r[13],
                r[4] + r[5] + r[6] + r[7],
                -r[7] - r[8],
                -r[12] + r[7] + r[9],
                -r[9] - r[10] + r[8] + r[11],
                r[9],
                -r[11] + r[10],
                -r[13] + r[12],
                r[14],
                -r[18] - r[19] + r[16],
                -r[20],
                r[20],
                -r[21] - r[22] - r[24] + r[23] + r[25],
                -r[25] + r[24],
            ]
        )  # fmt: skip


@dataclass(frozen=True)
class StiffProblem:
    """One test problem: model, start state, end time, tolerance scale and reference.

    `scale` is the size below which a component counts absolutely rather than
    relatively: solvers get `atol = scale * rtol`, and the error is the mixed
    relative error max_i |y_i − ref_i| / (|ref_i| + scale).
    """

    name: str
    model: Any
    y0: np.ndarray
    t1: float
    scale: float
    reference: np.ndarray | None  # published value at t1, or None (computed)
    source: str

    def error(self, y1: Any, reference: Any) -> float:
        """The mixed relative error of `y1` against `reference`."""
        y1, ref = np.asarray(y1), np.asarray(reference)
        return float(np.max(np.abs(y1 - ref) / (np.abs(ref) + self.scale)))


def _y0(n: int, values: dict[int, float]) -> np.ndarray:
    y = np.zeros(n)
    for i, v in values.items():
        y[i] = v
    return y


# The test set's VDPOL is sciad's form x'' − μ(1 − x²)x' + x = 0 at μ = 1000, t ∈ [0, 2000].
PROBLEMS = {
    "vdp": StiffProblem(
        "Van der Pol μ=1000",
        sciad.ode.VanDerPol(mu=1000.0),
        np.array([2.0, 0.0]),
        2000.0,
        1e-3,
        np.array([0.1706167732170469e1, -0.8928097010248125e-3]),
        "test set VDPOL",
    ),
    "rober": StiffProblem(
        "Robertson",
        sciad.ode.Robertson(),
        np.array([1.0, 0.0, 0.0]),
        1e11,
        1e-6,
        np.array([0.2083340149701255e-7, 0.8333360770334713e-13, 0.9999999791665050]),
        "test set ROBER",
    ),
    "hires": StiffProblem(
        "HIRES",
        Hires(),
        _y0(8, {0: 1.0, 7: 0.0057}),
        321.8122,
        1e-4,
        np.array(
            [
                0.7371312573325668e-3,
                0.1442485726316185e-3,
                0.5888729740967575e-4,
                0.1175651343283149e-2,
                0.2386356198831331e-2,
                0.6238968252742796e-2,
                0.2849998395185769e-2,
                0.2850001604814231e-2,
            ]
        ),  # fmt: skip
        "test set HIRES",
    ),
    "orego": StiffProblem(
        "Oregonator",
        Oregonator(),
        np.array([1.0, 2.0, 3.0]),
        360.0,
        1.0,
        np.array([0.1000814870318523e1, 0.1228178521549917e4, 0.1320554942846706e3]),
        "Hairer & Wanner II, OREGO",
    ),
    "poll": StiffProblem(
        "Pollution (POLL)",
        Pollution(),
        _y0(20, {1: 0.2, 3: 0.04, 6: 0.1, 7: 0.3, 8: 0.01, 16: 0.007}),
        60.0,
        1e-4,
        None,
        "scipy Radau at rtol 1e-13",
    ),
}

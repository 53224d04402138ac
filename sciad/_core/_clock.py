"""Step times t_k = t0 + k·dt, exact whatever the number of steps and the dtype.

Accumulating `t + dt` in the state's dtype drifts: 200,000 float32 steps of 1e-3 end at
t = 200.45 instead of 200, and at t0 = 1e7 the clock does not move at all. `StepClock`
computes each step time from the step counter instead. t0 and dt are split once into
pieces (on the host, from their float64 values, when they are concrete): dt into pieces
short enough that each times a digit of k is exact in the working dtype, t0 into a high
and a low part. The sum of those exact products and t0's parts is accumulated with
error-free transformations (TwoSum, Knuth 1969) and rounded once to the time dtype, so
t_k is t0 + k·dt correctly rounded (to within a relative n·u² of the exact sum, for a
few dozen terms n and unit round-off u). Only exact products, sums and bit operations
appear, so fused multiply-adds cannot spoil it.

Reference: D. E. Knuth, *The Art of Computer Programming* vol. 2, §4.2.2 (TwoSum);
T. J. Dekker, Numer. Math. 18, 224 (1971) (double-length arithmetic).
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._types import Anything
from ._validate import is_concrete


def _two_sum(a: Anything, b: Anything) -> tuple[Anything, Anything]:
    """s + e == a + b exactly, with s = fl(a + b) (Knuth's TwoSum, any order)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _mantissa_bits(dtype: Anything) -> int:
    return int(jnp.finfo(dtype).nmant) + 1


def _plan(n_steps: int, work_bits: int, source_bits: int) -> tuple[int, int, int]:
    """(digits, digit_bits, pieces): k is split into `digits` digits of `digit_bits` bits
    and dt into `pieces` pieces of `work_bits - digit_bits` bits, so that every
    digit×piece product is exact; the plan with the fewest products."""
    k_bits = max(1, int(n_steps).bit_length())
    need = min(source_bits, 2 * work_bits + 2)
    best = None
    for digits in range(1, k_bits + 1):
        digit_bits = -(-k_bits // digits)
        width = work_bits - digit_bits
        if width < 1:
            continue
        pieces = -(-need // width)
        if best is None or digits * pieces < best[0] * best[2]:
            best = (digits, digit_bits, pieces)
    assert best is not None
    return best


def _pieces_host(x: float, width: int, count: int) -> list[float]:
    """`x` as `count` float64 pieces of at most `width` significant bits (truncated, so
    each remainder is exact); their sum is `x` when `count·width` covers its bits."""
    out = []
    for _ in range(count):
        m, e = math.frexp(x)
        piece = math.ldexp(math.trunc(math.ldexp(m, width)), e - width)
        out.append(piece)
        x -= piece
    return out


def _pieces_traced(x: Anything, width: int, count: int) -> list[Anything]:
    """`_pieces_host` on a traced array. The first piece carries the derivative of `x`
    (the truncations have none), so d t_k / d dt = k."""
    out, rest = [], jax.lax.stop_gradient(x)
    for _ in range(count):
        m, e = jnp.frexp(rest)
        piece = jnp.ldexp(jnp.trunc(jnp.ldexp(m, width)), e - width)
        out.append(piece)
        rest = rest - piece
    out[0] = out[0] + (x - jax.lax.stop_gradient(x))
    return out


class StepClock(eqx.Module):
    """t_k = t0 + k·dt in `dtype`, exact (see the module docstring).

    **Example:**

    ```python
    clock = StepClock.create(1e7, 0.75, jnp.float32, n_steps=1000)
    clock(jnp.asarray(999))  # 10000749.0 (float32); accumulating t + dt gives 10000999.
    ```
    """

    t0_hi: Anything
    t0_lo: Anything
    pieces: Anything  # (digits, pieces) in the working dtype; row i is scaled by 2^(i·bits)
    digit_bits: int = eqx.field(static=True)
    dtype: Anything = eqx.field(static=True)

    @classmethod
    def create(cls, t0: Anything, dt: Anything, dtype: Anything, n_steps: int) -> "StepClock":
        """The clock of a run of `n_steps` steps of `dt` from `t0`, in `dtype`.

        **Arguments:** `t0`, `dt`: real scalars (concrete values are read in float64);
        `dtype`: the time dtype; `n_steps`: the largest step index k it is asked for.

        **Returns:** a `StepClock`.
        """
        dtype = jnp.dtype(dtype)
        # float16/bfloat16 times are computed in float32 and rounded once at the end.
        work = dtype if _mantissa_bits(dtype) >= 24 else jnp.dtype(jnp.float32)
        w_bits = _mantissa_bits(work)
        src_bits = 53 if is_concrete(dt) else _mantissa_bits(jnp.result_type(dt))
        digits, digit_bits, count = _plan(n_steps, w_bits, src_bits)
        width = w_bits - digit_bits
        if is_concrete(dt):
            base = _pieces_host(float(np.asarray(dt, np.float64)), width, count)
            rows = [[math.ldexp(p, i * digit_bits) for p in base] for i in range(digits)]
            pieces = jnp.asarray(np.asarray(rows, np.float64).astype(work))
        else:
            base = _pieces_traced(jnp.asarray(dt), width, count)
            pieces = jnp.stack(
                [
                    jnp.stack([(p * 2.0 ** (i * digit_bits)).astype(work) for p in base])
                    for i in range(digits)
                ]
            )
        if is_concrete(t0):
            t = float(np.asarray(t0, np.float64))
            hi = np.asarray(t).astype(work)
            lo = np.asarray(t - float(hi)).astype(work)
            t0_hi, t0_lo = jnp.asarray(hi), jnp.asarray(lo)
        else:
            t = jnp.asarray(t0)
            t0_hi = t.astype(work)
            t0_lo = jax.lax.stop_gradient(t - t0_hi.astype(t.dtype)).astype(work)
        return cls(t0_hi, t0_lo, pieces, digit_bits, dtype)

    def __call__(self, k: Anything) -> jax.Array:
        """The time of step `k` (an int32 scalar), in `dtype`."""
        digits, count = self.pieces.shape
        width = _mantissa_bits(self.pieces.dtype) - self.digit_bits
        mask = (1 << self.digit_bits) - 1
        k = jnp.asarray(k, jnp.int32)
        # Smallest terms first: piece j of digit i has scale 2^(i·bits − j·width).
        order = sorted(
            ((i, j) for i in range(digits) for j in range(count)),
            key=lambda ij: ij[0] * self.digit_bits - ij[1] * width,
        )
        s = e = jnp.zeros((), self.pieces.dtype)
        for i, j in order:
            d = ((k >> (i * self.digit_bits)) & mask).astype(self.pieces.dtype)
            s, err = _two_sum(s, d * self.pieces[i, j])
            e = e + err
        hi, err = _two_sum(self.t0_hi, s)
        return (hi + (err + (e + self.t0_lo))).astype(self.dtype)

    def checked(self, t0: Anything, dt: Anything, n_steps: int) -> "StepClock":
        """This clock, after checking that `dt` is above the time dtype's resolution
        everywhere in [t0, t_n] (t + dt == t would freeze the clock): a `ValueError`
        before tracing when t0 and dt are concrete (checked on the host, so that nothing
        of it enters the compiled program), else an `eqx.error_if` at run time."""
        if n_steps == 0:
            return self
        if is_concrete(t0) and is_concrete(dt):
            start = float(np.asarray(t0, np.float64))
            step = np.asarray(np.asarray(dt, np.float64), self.dtype)
            for end in (start, start + n_steps * float(np.asarray(dt, np.float64))):
                t = np.asarray(end, self.dtype)
                if t + step == t:
                    raise ValueError(
                        f"dt = {float(step)} is below the resolution of the time dtype "
                        f"{self.dtype} at t = {float(t)} (there t + dt == t, so time would "
                        "stand still for a time-dependent model). Use a larger dt, a time "
                        "origin nearer 0 (shift t0), or a float64 state."
                    )
            return self
        step = jnp.asarray(dt).astype(self.dtype)
        ends = (self(jnp.asarray(0)), self(jnp.asarray(n_steps)))
        frozen = jnp.any(jnp.stack([t + step == t for t in ends]))
        t0_hi = eqx.error_if(
            self.t0_hi, frozen, "dt is below the resolution of the time dtype in [t0, t1]."
        )
        return eqx.tree_at(lambda c: c.t0_hi, self, t0_hi)

"""Time correlations and transport coefficients: velocity autocorrelation, diffusion."""

import jax.numpy as jnp
from jaxtyping import Array, Float

from .._core._types import FloatScalar, RealScalarLike
from .._core._validate import check_int, check_positive


def velocity_autocorrelation(
    velocities: Float[Array, "frames n d"], max_lag: int | None = None
) -> Float[Array, " lags"]:
    """The velocity autocorrelation C(τ_k) = ⟨v_i(t) · v_i(t + τ_k)⟩, averaged over
    particles and over every time origin t.

    Computed with zero-padded FFTs (Wiener–Khinchin), O(F log F) for F frames; each lag
    k is averaged over its F − k origins, exactly as the direct double sum. It is
    differentiable (the FFT is linear), so it can enter a loss.

    **Arguments:**

    - `velocities`: shape `(frames, n, d)`, equally spaced in time (length/time), e.g.
      saved with `SaveAt(steps=k, fn=lambda t, y, m: m.velocity(t, y[1]))`.
    - `max_lag`: the number of lags returned (a Python int ≤ frames); default all.

    **Returns:** shape `(max_lag,)` (length²/time²); `C[0]` is ⟨|v|²⟩ = d kT/m at
    equilibrium.

    **Example:** `vacf = sciad.md.velocity_autocorrelation(traj.ys, max_lag=200)`

    **Reference:** Allen & Tildesley, *Computer Simulation of Liquids*, 2nd ed. (2017),
    §8.1–8.2.
    """
    frames = velocities.shape[0]
    max_lag = frames if max_lag is None else max_lag
    if not isinstance(max_lag, int) or not 1 <= max_lag <= frames:
        raise ValueError(f"max_lag must be an int in [1, {frames}], got {max_lag!r}.")
    size = 1 << (2 * frames - 1).bit_length()
    spec = jnp.fft.rfft(velocities, n=size, axis=0)
    corr = jnp.fft.irfft(spec * jnp.conj(spec), n=size, axis=0)[:max_lag]
    per_lag = jnp.sum(corr, axis=-1).mean(axis=-1)  # Σ over d, mean over particles
    origins = jnp.arange(frames, frames - max_lag, -1).astype(per_lag.dtype)
    return per_lag / origins


def green_kubo_diffusion(vacf: Float[Array, " lags"], dt: RealScalarLike, d: int) -> FloatScalar:
    """The self-diffusion coefficient D = (1/d) ∫₀^∞ C(τ) dτ (Green–Kubo), trapezoid rule.

    Truncate `vacf` where it has decayed into noise: the integral's error grows like the
    square root of the number of noisy lags.

    **Arguments:**

    - `vacf`: shape `(lags,)`, from
      [`velocity_autocorrelation`][sciad.md.velocity_autocorrelation].
    - `dt`: the time between lags (time).
    - `d`: the dimension.

    **Returns:** D (length²/time), a scalar.

    **Example:** `D = sciad.md.green_kubo_diffusion(vacf, dt=10 * 0.005, d=3)`
    """
    check_int(d, "green_kubo_diffusion d (the dimension)")
    check_positive(dt, "green_kubo_diffusion dt")
    integral = dt * (jnp.sum(vacf) - 0.5 * (vacf[0] + vacf[-1]))
    return jnp.asarray(integral / d)


def einstein_diffusion(
    msd: Float[Array, " frames"], times: Float[Array, " frames"], d: int, start: int = 0
) -> FloatScalar:
    """The self-diffusion coefficient from the mean-squared displacement's slope,
    D = slope / (2d), by least squares on `times[start:]` (Einstein relation).

    Start the fit after the ballistic regime (a few velocity relaxation times).

    **Arguments:**

    - `msd`: shape `(frames,)`, from
      [`mean_squared_displacement`][sciad.md.mean_squared_displacement] (length²).
    - `times`: shape `(frames,)`, the save times (time), e.g. `traj.ts`.
    - `d`: the dimension.
    - `start`: the first frame of the fit.

    **Returns:** D (length²/time), a scalar.

    **Example:** `D = sciad.md.einstein_diffusion(msd, traj.ts, d=3, start=20)`
    """
    check_int(d, "einstein_diffusion d (the dimension)")
    if jnp.shape(times) != jnp.shape(msd):
        raise ValueError(
            f"einstein_diffusion times must have the shape of msd {jnp.shape(msd)}; "
            f"got {jnp.shape(times)}."
        )
    check_int(start, "einstein_diffusion start", minimum=0)
    if not start <= jnp.shape(msd)[0] - 2:
        raise ValueError(
            f"einstein_diffusion start = {start} leaves fewer than 2 of the "
            f"{jnp.shape(msd)[0]} frames to fit a slope."
        )
    t, y = times[start:], msd[start:]
    tc = t - jnp.mean(t)
    slope = jnp.sum(tc * (y - jnp.mean(y))) / jnp.sum(tc * tc)
    return slope / (2 * d)

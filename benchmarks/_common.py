"""Shared pieces of the benchmark scripts: the harmonic chain, the anchor loop, timing.

Not a benchmark itself. Every script in this folder imports it as a sibling module
(`python benchmarks/<script>.py` puts this folder on `sys.path`).
"""

from collections.abc import Callable
import os
import platform
import sys
import time
from typing import Any

# A `--quick` run is a smoke test whose timings are not figures: compile with XLA's
# cheapest CPU code generation (compiles are most of a quick run). XLA reads the flags
# when the backend starts, so the scripts import this module before computing anything;
# their subprocesses inherit the environment (compile_time.py's children, which time
# compilation, do not import it).
QUICK_XLA_FLAGS = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
if "--quick" in sys.argv:
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {QUICK_XLA_FLAGS}".strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import sciad  # noqa: E402


class Chain(sciad.AbstractSeparableModel):
    """A harmonic chain of unit masses with fixed ends: F_i = k (q_{i+1} - 2 q_i + q_{i-1})."""

    k: Any

    def velocity(self, t, p):
        return p

    def force(self, t, q):
        qp = jnp.pad(q, 1)
        return self.k * (qp[2:] - 2.0 * q + qp[:-2])


def chain_problem(dim: int, k: float = 1.0) -> tuple[Chain, tuple[jax.Array, jax.Array]]:
    """The chain and a smooth, non-trivial initial state (a few standing modes)."""
    i = np.arange(1, dim + 1)
    q0 = np.sin(np.pi * i / (dim + 1)) + 0.3 * np.sin(7 * np.pi * i / (dim + 1))
    p0 = 0.1 * np.sin(3 * np.pi * i / (dim + 1))
    return Chain(jnp.asarray(k, jnp.float64)), (jnp.asarray(q0), jnp.asarray(p0))


def verlet_step(model: Chain, carry, dt: float):
    """One hand-written velocity-Verlet step on (q, p, cached force)."""
    q, p, f = carry
    p = p + (0.5 * dt) * f
    q = q + dt * p
    f = model.force(0.0, q)
    p = p + (0.5 * dt) * f
    return q, p, f


def verlet_scan_carry(model: Chain, carry, dt: float, n_steps: int):
    """`n_steps` hand-written velocity-Verlet steps on the carry (q, p, cached force)."""
    body = lambda c, _: (verlet_step(model, c, dt), None)
    return jax.lax.scan(body, carry, None, length=n_steps)[0]


def verlet_scan(model: Chain, y0, dt: float, n_steps: int):
    """The anchor: a hand-written velocity-Verlet `lax.scan` (force cached in the carry)."""
    q0, p0 = y0
    q, p, _ = verlet_scan_carry(model, (q0, p0, model.force(0.0, q0)), dt, n_steps)
    return q, p


def verlet_scan_checkpointed(model: Chain, y0, dt: float, n_steps: int, chunk: int):
    """The same scan, as a scan of `jax.checkpoint`-ed chunks of `chunk` steps (two levels)."""
    assert n_steps % chunk == 0
    q0, p0 = y0

    @jax.checkpoint
    def run_chunk(c, _):
        return verlet_scan_carry(model, c, dt, chunk), None

    c0 = (q0, p0, model.force(0.0, q0))
    (q, p, _), _ = jax.lax.scan(run_chunk, c0, None, length=n_steps // chunk)
    return q, p


def block(x):
    return jax.block_until_ready(x)


def best_time(fn: Callable[[], Any], repeats: int) -> tuple[float, list[float]]:
    """Minimum wall time (s) of `fn()` over `repeats` runs (fn must already be compiled)."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        block(fn())
        times.append(time.perf_counter() - t)
    return min(times), times


def interleaved(variants: dict[str, Callable[[], Any]], repeats: int) -> dict[str, dict]:
    """Time every (compiled) variant `repeats` times, round-robin.

    Round-robin spreads bursts of load from other processes over all variants.
    Returns, per variant, the minimum wall time (`time.perf_counter`, the headline
    figure) and the minimum process CPU time (`time.process_time`, all threads; less
    sensitive to other processes taking the CPU), and the median wall time.
    """
    wall: dict[str, list[float]] = {k: [] for k in variants}
    cpu: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(repeats):
        for k, fn in variants.items():
            c, t = time.process_time(), time.perf_counter()
            block(fn())
            wall[k].append(time.perf_counter() - t)
            cpu[k].append(time.process_time() - c)
    return {
        k: {"wall": min(wall[k]), "cpu": min(cpu[k]), "median": float(np.median(wall[k]))}
        for k in variants
    }


def compiled_memory(jitted, *args) -> dict[str, int]:
    """XLA's compiled memory analysis of `jitted(*args)`, in bytes."""
    ma = jitted.lower(*args).compile().memory_analysis()
    out = {
        "temp": int(ma.temp_size_in_bytes),
        "argument": int(ma.argument_size_in_bytes),
        "output": int(ma.output_size_in_bytes),
        "alias": int(getattr(ma, "alias_size_in_bytes", 0)),
        "generated_code": int(getattr(ma, "generated_code_size_in_bytes", 0)),
    }
    out["total"] = out["temp"] + out["argument"] + out["output"] - out["alias"]
    return out


def mib(n: float) -> str:
    return f"{n / 2**20:.2f} MiB"


def package_version(dist: str) -> str:
    """The installed version of distribution `dist` (e.g. "jax-md"), or "unknown"."""
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:  # pragma: no cover - metadata only
        return "unknown"


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import diffrax

    try:
        load = "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "load average unknown"
    return (
        f"{cpu}, {os.cpu_count()} cores, backend={jax.default_backend()}, "
        f"jax {jax.__version__}, diffrax {diffrax.__version__}, "
        f"x64={jax.config.jax_enable_x64}, {load}"
    )

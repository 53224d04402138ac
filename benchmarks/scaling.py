"""Weak and strong scaling of `sciad.ensemble` (issue 19), and a 10⁶-member ODE ensemble.

Ensembles (float64, value and gradient of the mean loss w.r.t. a shared parameter, as
in `tests/test_ensemble_scale.py`):

- rigid: boxes sliding on a plane with contacts (100 steps of 1 ms), d/dμ;
- md: 27 LJ particles with a lazily rebuilt neighbour list (40 NVE steps), d/dε.

Each runs on 1 and 2 forced host devices (`XLA_FLAGS=--xla_force_host_platform_device_count`)
and on 2 processes of one CPU device each (`jax.distributed.initialize` on the loopback
address, gloo collectives), every configuration in its own subprocess. One CPU device
runs its program on every core it may use (XLA's thread pool), so on a 2-core machine a
second device adds no cores; `--pin` gives each device one core (the 1-device run on one
core, 2 devices on two, process i on core i), which is what the efficiency over devices
measures. Strong scaling:
the same batch B on k devices, efficiency T₁(B) / (k T_k(B)). Weak scaling: b members
per device, efficiency T₁(b) / T_k(k b). The defaults (b = 32, B = 64 = 2b) need four
compilations per ensemble. Times are the minimum over `--repeats` runs after
compilation; the CPU's load average is printed with them.

`--million`: 10⁶ pendulums (RK4, 100 steps, every step saved and averaged in the
member: 1.6 GB of trajectories if unchunked) chunked on one CPU device; prints the wall
time, XLA's memory estimate of one chunk and the process's peak resident memory.

Run:  .venv/bin/python benchmarks/scaling.py [--pin]    (scaling)
      .venv/bin/python benchmarks/scaling.py --million  (10⁶ members)
      .venv/bin/python benchmarks/scaling.py --quick    (smoke test: 1-2 pendulums)
"""

import argparse
import json
import os
from pathlib import Path
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def worker(args) -> None:
    import jax

    jax.config.update("jax_enable_x64", True)
    if args.process is not None:
        jax.distributed.initialize(
            f"127.0.0.1:{args.port}", num_processes=2, process_id=args.process
        )
    sys.path.insert(0, str(ROOT))
    from tests.test_ensemble_scale import problems, together

    fns, params, batches = problems()
    out = {}
    for name in args.ensembles:
        for b in args.batch:
            fn, p, batch = fns[name], params[name], batches(b)[name]
            run = jax.jit(jax.value_and_grad(lambda p, x, fn=fn: fn(p, x)[0]))
            t = time.perf_counter()
            run = run.lower(p, batch).compile()
            compile_s = time.perf_counter() - t
            together(f"{name}/{b}")  # 2 processes: both compiled before gloo connects
            jax.block_until_ready(run(p, batch))
            best = float("inf")
            for _ in range(args.repeats):
                t = time.perf_counter()
                jax.block_until_ready(run(p, batch))
                best = min(best, time.perf_counter() - t)
            out[f"{name}/{b}"] = {"time": best, "compile": compile_s}
    if jax.process_index() == 0:
        print("RESULT " + json.dumps(out), flush=True)


def spawn(args, devices: int, processes: int, batch: list[int]) -> dict:
    """Run the workers of one configuration. With `--pin`, a one-device process is
    pinned to one core (process i of several to core i), and a k-device one to k cores."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    if args.quick:
        from _common import QUICK_XLA_FLAGS  # noqa: PLC0415

        env["XLA_FLAGS"] += f" {QUICK_XLA_FLAGS}"
    base = [sys.executable, __file__, "--worker", "--repeats", str(args.repeats)]
    base += ["--ensembles", *args.ensembles, "--batch", *map(str, batch)]

    def pinned(cores: set[int]):
        return (lambda: os.sched_setaffinity(0, cores)) if args.pin else None

    if processes == 1:
        procs = [
            subprocess.Popen(
                base,
                env=env,
                stdout=subprocess.PIPE,
                text=True,
                preexec_fn=pinned(set(range(devices))),
            )
        ]
    else:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        barrier = tempfile.mkdtemp(prefix="sciad-barrier-")  # where `together` meets
        env["SCIAD_TEST_BARRIER"] = barrier
        procs = [
            subprocess.Popen(
                base + ["--process", str(i), "--port", str(port)],
                env=env,
                stdout=subprocess.PIPE,
                text=True,
                preexec_fn=pinned({i}),
            )
            for i in range(processes)
        ]
    outs = [p.communicate()[0] for p in procs]
    if processes > 1:
        shutil.rmtree(barrier, ignore_errors=True)
    if any(p.returncode for p in procs):
        raise RuntimeError(f"a worker failed: {[p.returncode for p in procs]}")
    line = [ln for o in outs for ln in o.splitlines() if ln.startswith("RESULT ")][0]
    return json.loads(line[len("RESULT ") :])


def scaling(args) -> None:
    b, B = args.per_device, args.total
    configs = {"1 device": (1, 1), "2 devices": (2, 1), "2 processes": (1, 2)}
    res = {}
    for label, (devices, processes) in configs.items():
        batch = sorted({b, B} if label == "1 device" else {2 * b, B})
        res[label] = spawn(args, devices, processes, batch)
        print(f"{label}: {json.dumps(res[label])}", flush=True)
    from _common import machine  # noqa: PLC0415  (enables float64 in this process)

    pin = "each device pinned to its own core" if args.pin else "not pinned"
    print(
        f"\n{machine()}; os.cpu_count() = {os.cpu_count()}; {pin} (times under load are indicative)"
    )
    print(
        "| ensemble | config | strong: B | time (s) | efficiency | weak: b/device | time | efficiency |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in args.ensembles:
        t1_strong = res["1 device"][f"{name}/{B}"]["time"]
        t1_weak = res["1 device"][f"{name}/{b}"]["time"]
        print(f"| {name} | 1 device | {B} | {t1_strong:.3f} | 1 | {b} | {t1_weak:.3f} | 1 |")
        for label in ("2 devices", "2 processes"):
            ts = res[label][f"{name}/{B}"]["time"]
            tw = res[label][f"{name}/{2 * b}"]["time"]
            print(
                f"| {name} | {label} | {B} | {ts:.3f} | {t1_strong / (2 * ts):.2f} "
                f"| {b} | {tw:.3f} | {t1_weak / tw:.2f} |"
            )


def million(args) -> None:
    import resource

    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    sys.path.insert(0, str(ROOT))
    import sciad

    n = args.members
    pendulum = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
    save = sciad.SaveAt(steps=1)

    def member(theta):
        ys = sciad.simulate(pendulum, jnp.stack([theta, 0.0]), dt=0.01, n_steps=100, saveat=save).ys
        return jnp.mean(ys[:, 0] ** 2)

    theta0 = jnp.linspace(-1.5, 1.5, n)
    chunk = args.chunk
    one = jax.jit(jax.vmap(member)).lower(theta0[:chunk]).compile().memory_analysis()
    chunk_bytes = one.argument_size_in_bytes + one.output_size_in_bytes + one.temp_size_in_bytes
    run = jax.jit(lambda th: sciad.ensemble(member, th, chunk_size=chunk, reduce="mean"))
    t = time.perf_counter()
    value = float(run(theta0))
    first = time.perf_counter() - t
    t = time.perf_counter()
    value = float(run(theta0))
    wall = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    from _common import machine  # noqa: PLC0415

    print(machine())
    print(
        f"{n:,} pendulums (RK4, 100 steps, 101 saved states each), chunk {chunk:,}: "
        f"mean <theta^2> = {value:.6f}; {wall:.1f} s ({n * 100 / wall:,.0f} member-steps/s), "
        f"first call {first:.1f} s with compilation; XLA estimate of one chunk "
        f"{chunk_bytes / 2**20:.0f} MiB (unchunked trajectories would be "
        f"{n * 101 * 2 * 8 / 2**30:.1f} GiB); peak RSS {rss:.0f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--ensembles", nargs="+", default=["rigid", "md"])
    parser.add_argument("--per-device", type=int, default=32, help="weak scaling: b")
    parser.add_argument("--total", type=int, default=64, help="strong scaling: B")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--million", action="store_true")
    parser.add_argument("--members", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=2**15)
    parser.add_argument(
        "--pin",
        action="store_true",
        help="give each device one core (taskset-like affinity): 1 device on 1 core",
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--batch", nargs="+", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--process", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:  # the cheapest ensemble (pendulums, the same code path), 1 and 2 members
        args.ensembles, args.per_device, args.total, args.repeats = ["ode"], 1, 2, 1
    if args.worker:
        worker(args)
    elif args.million:
        million(args)
    else:
        scaling(args)


if __name__ == "__main__":
    main()

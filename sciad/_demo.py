# pyright: reportArgumentType=false
# Model fields are annotated with their stored type (arrays); their converters accept floats.
"""`python -m sciad demo`: simulate a damped pendulum, observe it noisily, fit it back."""

import argparse
import time


def main(argv: list[str] | None = None) -> int:
    """Run the demo; returns a process exit code.

    **Arguments:** `argv`: command-line arguments after `demo` (`--out PATH`,
    `--seed N`, `--noise SIGMA`).

    **Returns:** 0 on success.
    """
    parser = argparse.ArgumentParser(prog="python -m sciad demo")
    parser.add_argument("--out", default="pendulum_fit.png", help="where to write the plot")
    parser.add_argument("--seed", type=int, default=0, help="noise seed")
    parser.add_argument("--noise", type=float, default=0.02, help="noise std (rad)")
    args = parser.parse_args(argv)

    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    import sciad

    true = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
    y0 = jnp.array([1.0, 0.0])  # released from 1 rad at rest
    ts = jnp.linspace(0.0, 10.0, 101)
    saveat = sciad.SaveAt(ts=ts)

    def angles(model):
        return sciad.simulate(model, y0, t1=10.0, dt=0.01, saveat=saveat).ys[:, 0]

    print("sciad demo: fit a damped pendulum's length and damping to noisy angles")
    observed = angles(true) + args.noise * jax.random.normal(jax.random.key(args.seed), ts.shape)

    def residuals(model, data):
        return angles(model) - data

    guess = sciad.ode.Pendulum(length=0.7, gravity=9.81, damping=0.3)
    start = time.perf_counter()
    res = sciad.fit(
        guess,
        residuals,
        observed,
        free=lambda m: (m.length, m.damping),
        positive=lambda m: (m.length, m.damping),
        progress=True,
    )
    elapsed = time.perf_counter() - start
    print(f"\n{'parameter':<12}{'true':>10}{'initial':>10}{'fitted':>10}")
    for name in ("length", "damping"):
        vals = [float(getattr(m, name)) for m in (true, guess, res.model)]
        print(f"{name:<12}{vals[0]:>10.4f}{vals[1]:>10.4f}{vals[2]:>10.4f}")
    print(
        f"\nfinal loss {float(res.loss):.4e} after {int(res.num_steps)} steps "
        f"({elapsed:.1f} s, compile included); result: "
        f"{'successful' if res.result == sciad.RESULTS.successful else res.result}"
    )

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fine = sciad.SaveAt(ts=jnp.linspace(0.0, 10.0, 1001))
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(ts, observed, "k.", ms=4, label="noisy observations")
    for model, style, label in (
        (true, "-", "true"),
        (guess, ":", "initial guess"),
        (res.model, "--", "fitted"),
    ):
        traj = sciad.simulate(model, y0, t1=10.0, dt=0.01, saveat=fine)
        ax.plot(traj.ts, traj.ys[:, 0], style, label=label)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("angle (rad)")
    ax.set_title("sciad: fitting a damped pendulum")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"plot written to {args.out}")
    return 0

# pyright: reportArgumentType=false
# Model fields are annotated with their stored type (arrays); their converters accept floats.
"""`python -m sciad demo`: fit a damped pendulum to noisy data, run a small
Lennard-Jones liquid (NVE with a neighbour list, a truncated-backprop gradient, g(r)),
then throw a box onto the ground (contact with friction, and a gradient through it)."""

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
    r, g = _lennard_jones_liquid()
    t_box, x_box, vx_box = _box_thrown_onto_the_ground()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fine = sciad.SaveAt(ts=jnp.linspace(0.0, 10.0, 1001))
    fig, (ax, ax_md, ax_box) = plt.subplots(1, 3, figsize=(18, 4), width_ratios=(3, 2, 2))
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
    ax_md.plot(r, g, "C0")
    ax_md.axhline(1.0, color="k", lw=0.5)
    ax_md.set_xlabel("r (σ)")
    ax_md.set_ylabel("g(r)")
    ax_md.set_title("LJ liquid (108 atoms, NVE): radial distribution")
    ax_box.plot(t_box, x_box, "C0", label="x (m)")
    ax_box.plot(t_box, vx_box, "C1", label="vₓ (m/s)")
    ax_box.set_xlabel("time (s)")
    ax_box.set_title("box thrown onto the ground (μ = 0.5)")
    ax_box.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"plot written to {args.out}")
    return 0


def _lennard_jones_liquid():
    """The MD part: melt 108 LJ atoms, run NVE with a neighbour list, differentiate.

    Prints the temperature and the energy drift of the NVE run, and d⟨U⟩/dε by
    truncated backpropagation through the simulation (`sciad.windowed_average`).
    Returns the bin centres and the mean g(r) of the NVE run (for the plot).
    """
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    import sciad
    import sciad.md as md

    print("\nsciad demo: a Lennard-Jones liquid, 108 atoms at density 0.8 (reduced units)")
    start = time.perf_counter()
    q0, box = md.lattice_for_density("fcc", 108, 0.8)
    potential = md.Truncated(md.LennardJones(sigma=1.0, epsilon=1.0), cutoff=2.5, shift="force")
    system = md.MDSystem(box, potential, masses=jnp.ones(q0.shape[0]))
    p0 = md.maxwell_boltzmann(jax.random.key(0), system.masses, 2.0, exact=True)
    dt = 0.005

    # Melt the fcc start: 1000 Langevin steps (5 time units) at kT = 1.
    nvt = md.LangevinBAOAB(friction=1.0, kT=1.0, key=jax.random.key(1))
    melt = sciad.simulate(system, (q0, p0), dt=dt, n_steps=1000, integrator=nvt)

    # NVE: velocity Verlet with a neighbour list (cut-off 2.5 + skin 0.3; in a box this
    # small the list is built from all pairs, larger boxes use cell lists).
    builder = md.NeighborListBuilder.create(box, melt.y1[0], cutoff=2.5, skin=0.3)
    nve = md.NeighborListIntegrator(sciad.VelocityVerlet(), builder)

    def observe(t, y, m):
        return {
            "energy": m.energy(y),
            "kT": m.temperature(y, integrator=nve),
            "g": md.radial_distribution(m.space, y[0], 2.5, 100)[1],
        }

    traj = sciad.simulate(
        system,
        melt.y1,
        dt=dt,
        n_steps=4000,
        integrator=nve,
        saveat=sciad.SaveAt(steps=40, fn=observe),
    )
    energy = traj.ys["energy"]
    drift = float(jnp.max(jnp.abs(energy - energy[0])) / jnp.abs(energy[0]))
    print(
        f"NVE with a neighbour list, 4000 steps of {dt} "
        f"({int(nve.rebuilds(traj.integrator_state))} list rebuilds): "
        f"mean temperature {float(jnp.mean(traj.ys['kT'])):.3f}, "
        f"max |ΔE/E| {drift:.1e}"
    )

    # d<U>/dε over 1000 steps. The liquid is chaotic, so the exact gradient of a long run
    # explodes; windows of 100 steps truncate the backpropagation.
    def potential_energy(t, y, m):
        return m.potential_energy(y[0])

    def mean_potential_energy(epsilon):
        liquid = eqx.tree_at(lambda s: s.potential.potential.epsilon, system, epsilon)
        avg = sciad.windowed_average(
            liquid,
            melt.y1,
            potential_energy,
            dt=dt,
            n_steps=1000,
            window=100,
            save_every=10,
        )
        return jnp.mean(avg.ys)

    u, du = jax.jit(jax.value_and_grad(mean_potential_energy))(jnp.asarray(1.0))
    print(
        f"mean potential energy <U> = {float(u):.2f} over 1000 steps; d<U>/dε = {float(du):.2f} "
        f"by truncated backprop through the run (windows of 100 steps; <U>/ε = {float(u):.2f} "
        "is the part at fixed configurations, the rest is the liquid's response)"
    )
    print(f"MD part: {time.perf_counter() - start:.1f} s, compilation included")
    r = md.radial_distribution(box, q0, 2.5, 100)[0]
    return r, jnp.mean(traj.ys["g"], axis=0)


def _box_thrown_onto_the_ground():
    """The rigid-body part: a box thrown onto the ground lands, slides and stops.

    Prints the landing against ballistic flight, the mean sliding deceleration against
    μg and the slide against v²/(2μg) (MuJoCo's soft contact, sciad's default, lets the
    box hop on its corners, so friction acts only part of the time: the deceleration is
    a little below μg and the slide a little longer), and d(stop x)/d(vx) through every
    contact solve by reverse and by forward mode.
    Returns the times, x and vₓ of the run (for the plot).
    """
    import jax
    import jax.numpy as jnp
    import numpy as np

    import sciad
    from sciad import rigid

    half, mu, g, z0, dt, n_steps = 0.1, 0.5, 9.81, 0.15, 2e-3, 448
    print(
        f"\nsciad demo: a box (20 cm cube, 8 kg) thrown onto the ground, friction μ = {mu}; "
        f"{n_steps} steps of {dt * 1e3:.0f} ms, every contact solved to convergence"
    )
    start = time.perf_counter()
    cube = rigid.Box(jnp.full(3, half))
    world = rigid.MultiBody(
        [
            rigid.Body(
                "box", joint=rigid.FreeJoint(), pos=(0.0, 0.0, z0), shape=cube, density=1000.0
            )
        ],
        geoms=[rigid.Geom(rigid.Plane(), friction=mu), rigid.Geom(cube, body="box", friction=mu)],
    )
    q0, v0 = world.default_state()

    def run(vx, saveat=sciad.SaveAt(t1=True), adjoint=sciad.CheckpointAdjoint()):
        y0 = (q0, v0.at[0].set(vx))
        return sciad.simulate(world, y0, dt=dt, n_steps=n_steps, saveat=saveat, adjoint=adjoint)

    def stop_x(vx):  # where the box comes to rest (it is at rest long before the end)
        return run(vx, adjoint=sciad.DirectAdjoint()).y1[0][0]

    # Forward mode carries the whole trajectory along; reverse mode differentiates the end.
    # (Saving t0 too makes the saves tile the run evenly: a smaller program to compile.)
    every_step = sciad.SaveAt(t0=True, steps=1)
    vx0 = jnp.asarray(4.0)
    traj, tangent = jax.jit(
        lambda v: jax.jvp(lambda u: run(u, saveat=every_step), (v,), (jnp.ones_like(v),))
    )(vx0)
    dx_forward = float(tangent.y1[0][0])
    dx_reverse = float(jax.jit(jax.grad(stop_x))(vx0))
    t = np.asarray(traj.ts)
    q, v = (np.asarray(a) for a in traj.ys)
    x, vx = q[:, 0], v[:, 0]

    a = mu * g
    land = int(np.argmax(q[:, 2] < half))  # first state in contact with the ground
    t_fall = np.sqrt(2 * (z0 - half) / g)
    ref = land + int(np.argmax(vx[land:] <= 2.0))  # the landing transient has decayed by here
    last = ref + int(np.argmax(vx[ref:] < a * dt))  # the next step brings it to rest
    decel = -np.diff(vx[ref : last + 1]) / dt
    slid = x[last + 1] - x[ref]
    s = float(vx0) - mu * np.sqrt(2 * g * (z0 - half))  # slide speed after an ideal impact
    print(
        f"thrown at {float(vx0):.0f} m/s from {(z0 - half) * 100:.0f} cm up: lands at "
        f"t = {t[land]:.3f} s (ballistic {t_fall:.3f} s), slides off at {vx[land + 5]:.2f} m/s, "
        f"stops at x = {x[-1]:.4f} m (t = {t[last + 1]:.3f} s)"
    )
    print(
        f"mean sliding deceleration {np.mean(decel):.6f} m/s² against μg = {a:.6f} m/s² "
        f"(from {vx[ref]:.2f} m/s to rest; the box hops on its corners in the soft contact)"
    )
    print(
        f"from {vx[ref]:.4f} m/s it slides {slid:.6f} m: v²/(2μg) = {vx[ref] ** 2 / (2 * a):.6f} m "
        "for unbroken contact"
    )
    print(
        f"d(stop x)/d(vx) through {n_steps} contact solves: reverse mode {dx_reverse:.12f}, "
        f"forward mode {dx_forward:.12f} (relative difference "
        f"{abs(dx_reverse / dx_forward - 1):.1e}; flight time + slide speed/μg = "
        f"{t_fall + s / a:.4f})"
    )
    print(f"rigid part: {time.perf_counter() - start:.1f} s, compilation included")
    return t, x, vx

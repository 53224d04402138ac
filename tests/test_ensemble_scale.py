"""`sciad.ensemble` across devices and processes: one ensemble per pillar (a pendulum
sweep, LJ replicas with neighbour lists, sliding boxes with contacts) gives the same
values and gradients on 1, 2 and 8 forced host devices and on 2 processes, and its
compiled program moves no batch-sized buffer between devices.

Several devices need `XLA_FLAGS=--xla_force_host_platform_device_count=N` before JAX
starts, and several processes need `jax.distributed.initialize`, so both run in
subprocesses executing `main` below; one subprocess covers all device counts (meshes of
the first 1, 2 and 8 of 8 forced devices).
"""

import json
import os
from pathlib import Path
import re
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
# One worker runs the module: the subprocess fixture below is module-scoped, and under
# xdist every worker that ran one of its tests would start its own (measured: 108 s each).
pytestmark = pytest.mark.xdist_group("ensemble-scale")

# A multiple of 8 (every device count keeps the result sharded), and 16 members per
# device on 2 devices: the contact solve's compacting loop compacts (from 16 worlds).
N_MEMBERS = 32


# --- the three ensembles (imported by the subprocesses) ---------------------------------


def problems():
    """name -> (loss(param, batch, **ensemble_kw) -> (mean, per-member), param, batch(n))."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    import sciad
    from sciad import md, rigid

    pendulum = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)

    def ode(length, theta0, **kw):
        model = eqx.tree_at(lambda m: m.length, pendulum, length)

        def member(th):
            return sciad.simulate(model, jnp.stack([th, 0.0]), dt=0.01, n_steps=100).y1

        return per_member_and_mean(member, theta0, **kw)

    # 27 LJ particles on a jittered cubic lattice in a periodic box of side 3.5,
    # cut-off 1.5, skin 0.1: several lazy rebuilds in 40 steps of NVE.
    side, n_side = 3.5, 3
    grid = jnp.stack(jnp.meshgrid(*[jnp.arange(n_side)] * 3, indexing="ij"), -1).reshape(-1, 3)
    q0 = (grid + 0.5) * (side / n_side)
    q0 = q0 + 0.05 * jax.random.normal(jax.random.key(0), q0.shape, jnp.float64)
    space = md.PeriodicBox(jnp.full((3,), side))
    builder = md.NeighborListBuilder.create(space, q0, cutoff=1.5, skin=0.1)
    integrator = md.NeighborListIntegrator(sciad.VelocityVerlet(), builder)

    def lj(epsilon, p0s, **kw):
        pot = md.Truncated(md.LennardJones(jnp.asarray(1.0), epsilon), 1.5, shift="energy")
        system = md.MDSystem(space, pot, jnp.ones(q0.shape[0]))

        def member(p0):
            y1 = sciad.simulate(system, (q0, p0), dt=0.005, n_steps=40, integrator=integrator).y1
            return jnp.stack([system.potential_energy(y1[0]), y1[0][0, 0]])

        return per_member_and_mean(member, p0s, **kw)

    def rigid_box(mu, vx0, **kw):
        half = jnp.array([0.1, 0.1, 0.1])
        body = rigid.Body(
            "box",
            joint=rigid.FreeJoint(),
            pos=(0.0, 0.0, 0.1),
            shape=rigid.Box(half),
            density=1000.0,
        )
        geoms = [
            rigid.Geom(rigid.Plane(), friction=mu),
            rigid.Geom(rigid.Box(half), body="box", friction=0.0),  # the floor's μ acts
        ]
        model = rigid.MultiBody([body], geoms=geoms)
        q, v = model.default_state()

        def member(vx):
            y1 = sciad.simulate(model, (q, v.at[0].set(vx)), dt=1e-3, n_steps=100).y1
            return y1[0][:3]

        return per_member_and_mean(member, vx0, **kw)

    def batches(n):
        k = jax.random.key(1)
        return {
            "ode": jnp.linspace(0.1, 1.5, n),
            "md": 1.0 * jax.random.normal(k, (n,) + q0.shape, jnp.float64),
            "rigid": jnp.linspace(0.2, 1.7, n),
        }

    params = {"ode": 1.0, "md": 1.0, "rigid": 0.5}
    return {"ode": ode, "md": lj, "rigid": rigid_box}, params, batches


def per_member_and_mean(member, batch, **kw):
    """(mean over members of Σ member(x), every member's output): with `ensemble` when
    `kw` holds its options, with a plain `jax.vmap` when `kw` is `{"vmap": True}`. The
    members run once; the mean is a second, reducing `ensemble` over their outputs
    (sharded, padded and chunked as the first), so the reduction and its gradient
    cross the devices as in a user's loss."""
    import jax
    import jax.numpy as jnp

    import sciad

    if kw.pop("vmap", False):
        ys = jax.vmap(member)(batch)
        return jnp.mean(jax.vmap(jnp.sum)(ys)), ys
    ys = sciad.ensemble(member, batch, **kw)
    return sciad.ensemble(jnp.sum, ys, reduce="mean", **kw), ys


COLLECTIVE = re.compile(
    r"= (.+?) (all-gather|all-to-all|collective-permute|all-reduce)(?:-start)?\("
)


def collectives(hlo: str) -> list[tuple[str, str]]:
    """(op, result shape) of every cross-device collective in compiled HLO text."""
    return [(op, shape) for shape, op in COLLECTIVE.findall(hlo)]


def together(name: str, timeout: float = 1800.0) -> None:
    """Wait until every process gets here (no-op in one process). Gloo connects the
    processes at their first collective and gives up after a short timeout, so under
    load a process that compiles faster than the other would fail: meet first, through
    files in the directory `$SCIAD_TEST_BARRIER` that the test gives both processes (a
    collective barrier such as `multihost_utils.sync_global_devices` would itself be
    a gloo collective, with the same timeout)."""
    import jax

    if jax.process_count() == 1:
        return
    folder = Path(os.environ["SCIAD_TEST_BARRIER"])
    tag = re.sub(r"\W", "_", name)
    (folder / f"{tag}.{jax.process_index()}").touch()
    deadline = time.monotonic() + timeout
    while len(list(folder.glob(f"{tag}.*"))) < jax.process_count():
        if time.monotonic() > deadline:
            raise TimeoutError(f"process {jax.process_index()} waited {timeout} s at {name!r}")
        time.sleep(0.05)


def main(mode: str) -> None:
    import jax

    jax.config.update("jax_enable_x64", True)
    if mode == "processes":
        port, pid = sys.argv[2], int(sys.argv[3])
        jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=pid)
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh

    fns, params, batches = problems()
    out: dict = {"devices": len(jax.devices()), "processes": jax.process_count()}

    def value_and_grad(fn, p, batch, hlo=None, **kw):
        run = jax.jit(jax.value_and_grad(lambda p, b: fn(p, b, **kw), has_aux=True))
        run = run.lower(p, batch).compile()
        if hlo is not None:  # keep the compiled program's collectives
            out[hlo] = collectives(run.as_text())
        together(f"compiled {len(out)}")
        (loss, ys), g = run(p, batch)
        gathered = multihost_utils.process_allgather(ys, tiled=True)
        return ys, [float(loss), np.asarray(gathered).tolist(), float(g)]

    for name, fn in fns.items():
        p, batch = params[name], batches(N_MEMBERS)[name]
        if mode == "processes":
            out[f"{name}/2p"] = value_and_grad(fn, p, batch)[1]
            continue
        for k in (1, 2, 8):
            mesh = Mesh(np.array(jax.devices()[:k]), ("members",))
            hlo = f"{name}/hlo" if k == 2 else None
            ys, out[f"{name}/{k}"] = value_and_grad(fn, p, batch, hlo=hlo, mesh=mesh)
            assert len(ys.sharding.device_set) == k
            print(name, k, "devices done", time.strftime("%H:%M:%S"), file=sys.stderr, flush=True)
        if name == "ode":  # plain vmap, and 13 members on 2 devices in chunks of 3
            out[f"{name}/vmap"] = value_and_grad(fn, p, batch, vmap=True)[1]
            out[f"{name}/chunked"] = value_and_grad(fn, p, batch[:13], mesh=mesh, chunk_size=3)[1]
    print("RESULT " + json.dumps(out), flush=True)


# --- the tests -------------------------------------------------------------------------


def _env(devices: int | None) -> dict:
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    env.pop("XLA_FLAGS", None)
    if devices:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    return env


def _result(stdout: str) -> dict:
    lines = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")]
    return json.loads(lines[-1][len("RESULT ") :])


CMD = "import sys; from tests.test_ensemble_scale import main; main(sys.argv[1])"


@pytest.fixture(scope="module")
def on_devices() -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CMD, "devices"],
        cwd=ROOT,
        env=_env(8),
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return _result(proc.stdout)


def assert_same(a, b, rtol=1e-13, what=""):
    """Loss, per-member outputs and gradient agree to `rtol` (relative to each scale)."""
    for x, y, part in zip(a, b, ("loss", "members", "gradient"), strict=True):
        x, y = np.asarray(x), np.asarray(y)
        scale = np.max(np.abs(y))
        assert np.max(np.abs(x - y)) <= rtol * scale, (what, part, x, y)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ode", "md", "rigid"])
def test_same_values_and_gradients_on_1_2_and_8_devices(on_devices, name):
    r = on_devices
    assert r["devices"] == 8
    ref = r[f"{name}/1"]
    assert np.isfinite(ref[2]) and ref[2] != 0.0
    for k in (2, 8):
        assert_same(r[f"{name}/{k}"], ref, what=f"{name} on {k} devices")


@pytest.mark.slow
def test_one_device_equals_vmap_and_chunks_pad_correctly(on_devices):
    """The pendulum sweep on one device equals plain `jax.vmap`; 13 members on 2 devices
    (padded to 14, then 7 per device in chunks 3 + 3 + 1) give the first 13 members'
    values, and the mean and its gradient over those 13 only."""
    r = on_devices
    assert_same(r["ode/1"], r["ode/vmap"], what="ode against vmap")
    loss, members, grad = r["ode/chunked"]
    want = np.asarray(r["ode/vmap"][1])[:13]
    np.testing.assert_allclose(members, want, rtol=1e-13, atol=0)
    np.testing.assert_allclose(loss, np.mean(np.sum(want, axis=1)), rtol=1e-13)
    assert np.isfinite(grad) and grad != r["ode/vmap"][2]  # 13 members, not 32


@pytest.mark.slow
@pytest.mark.parametrize("name", ["md", "rigid"])
def test_batched_control_flow_stays_on_each_device(on_devices, name):
    """The compiled value-and-gradient of 32 members on 2 devices (16 each: the
    compacting Newton loop and the lazy rebuild run per device) holds no all-gather,
    all-to-all or collective-permute, and its all-reduces carry only the reduced loss
    and the shared parameter's gradient (scalars), never a batch-sized buffer."""
    ops = [tuple(op) for op in on_devices[f"{name}/hlo"]]
    assert ops, "the reduction must cross the devices"
    for op, shape in ops:
        assert op == "all-reduce", ops
        dims = re.findall(r"\[([\d,]*)\]", shape)
        sizes = [int(np.prod([int(d) for d in s.split(",") if d])) for s in dims]
        assert max(sizes) < N_MEMBERS // 2, ops


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_processes_match_one_process(on_devices, tmp_path):
    """Two processes on this machine (one CPU device each, gloo collectives over the
    loopback address) run each ensemble across both: the same numbers as one device."""
    port = str(_free_port())
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CMD, "processes", port, str(i)],
            cwd=ROOT,
            env={**_env(None), "SCIAD_TEST_BARRIER": str(tmp_path)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    outs = []
    for p in procs:
        try:
            stdout, stderr = p.communicate(timeout=900)
        finally:
            if p.poll() is None:
                p.kill()
        assert p.returncode == 0, stdout[-3000:] + stderr[-6000:]
        outs.append(_result(stdout))
    for r in outs:
        assert r["devices"] == 2 and r["processes"] == 2
        for name in ("ode", "md", "rigid"):
            assert_same(r[f"{name}/2p"], on_devices[f"{name}/1"], what=f"{name} on 2 processes")

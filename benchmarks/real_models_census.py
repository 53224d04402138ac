"""Census of the real-model corpus (issue 17): which of the 33 MuJoCo models shipped by
Gymnasium and dm_control MuJoCo C loads, which `sciad.rigid.load_mjcf` loads, and for
each model sciad refuses, the exact error message; then the blockers (the refused
feature, the message without the element's name) with how many models each blocks.

Only the first refusal of a model is seen (the conversion stops there), so a model
counted under one blocker may hide others behind it.

The corpus comes from `tests/rigid/real_models.py` (the installed packages, else the
pinned wheels downloaded once into `tests/.cache/real_models`).

Run:  .venv/bin/python benchmarks/real_models_census.py [--markdown]
"""

import argparse
import collections
from pathlib import Path
import re
import sys

import jax

jax.config.update("jax_enable_x64", True)

sys.path.append(str(Path(__file__).resolve().parent.parent))

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

import sciad.rigid as rigid  # noqa: E402
from tests.rigid.real_models import compile_model, corpus, quiet_mujoco  # noqa: E402


def blocker(message: str) -> str:
    """The refused feature: the message without the element's name, index and values."""
    text = message.split("\n")[0]
    # "MJCF joint 'x' (body 'y'): what" -> "what"
    text = re.sub(r"^MJCF [a-z<>/ ]+ ('[^']*'|#?\d+)( \([^)]*\))?:? ", "", text)
    text = re.sub(r"^MJCF [^']*?: ", "", text)
    text = re.sub(r"'[^']*'", "'…'", text)
    text = re.sub(r"\('…'(, '…')*\)", "(…)", text)
    text = re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "#", text)
    return text


def _disabled(m, flag: str) -> bool:
    return bool(m.opt.disableflags & int(getattr(mujoco.mjtDisableBit, flag)))


def _colliding(m) -> list[int]:
    """Geoms with a partner on another body whose contype/conaffinity bits match
    (MuJoCo's parent and weld filters are not applied: an over-estimate)."""
    if _disabled(m, "mjDSBL_CONTACT") or _disabled(m, "mjDSBL_CONSTRAINT"):
        return []
    ct, ca, body = m.geom_contype, m.geom_conaffinity, m.geom_bodyid
    return [
        g
        for g in range(m.ngeom)
        if any(body[g] != body[h] and ((ct[g] & ca[h]) or (ct[h] & ca[g])) for h in range(m.ngeom))
    ]


def features(m) -> set[str]:
    """Every feature in a compiled model that `from_mujoco` (at the time of writing)
    refuses, read from MuJoCo's model alone: unlike the first refusal, this sees all of a
    model's blockers."""
    T, G = mujoco.mjtJoint, mujoco.mjtGeom
    found = set()
    for count, what in (
        ("ntendon", "tendons"),
        ("neq", "equality constraints"),
        ("nflex", "flexes"),
        ("nplugin", "plugins"),
        ("npair", "explicit contact pairs"),
        ("nmocap", "mocap bodies"),
    ):
        if getattr(m, count) > 0:
            found.add(what)
    if m.nbody == 1:
        found.add("no bodies (world only)")
    if m.opt.density != 0 or m.opt.viscosity != 0:
        found.add("fluid forces (option density/viscosity)")
    if np.any(m.geom_fluid[:, 0] != 0):
        found.add("fluid forces (geom fluidshape)")
    if np.any(m.body_gravcomp != 0):
        found.add("gravity compensation")
    integrators = (mujoco.mjtIntegrator.mjINT_EULER, mujoco.mjtIntegrator.mjINT_RK4)
    integrators += (mujoco.mjtIntegrator.mjINT_IMPLICIT, mujoco.mjtIntegrator.mjINT_IMPLICITFAST)
    if int(m.opt.integrator) not in {int(i) for i in integrators}:
        found.add("unsupported integrator")
    if np.any(m.body_jntnum > 1):
        found.add("several joints in one body")
    if np.any(m.dof_frictionloss != 0) and not _disabled(m, "mjDSBL_FRICTIONLOSS"):
        found.add("joint frictionloss")
    if np.any(m.jnt_stiffness != 0) and not _disabled(m, "mjDSBL_SPRING"):
        found.add("joint stiffness")
    if np.any(m.jnt_actfrclimited != 0):
        found.add("joint actuatorfrcrange")
    limited = (m.jnt_limited != 0) & ~_disabled(m, "mjDSBL_LIMIT")
    if np.any(limited & (m.jnt_margin != 0)):
        found.add("joint limit margin")
    for a in range(m.nu):
        if int(m.actuator_trntype[a]) != int(mujoco.mjtTrn.mjTRN_JOINT):
            found.add(f"actuator transmission {mujoco.mjtTrn(int(m.actuator_trntype[a])).name}")
        elif int(m.jnt_type[m.actuator_trnid[a][0]]) in (int(T.mjJNT_FREE), int(T.mjJNT_BALL)):
            found.add("actuator on a free/ball joint")
        if int(m.actuator_dyntype[a]) != int(mujoco.mjtDyn.mjDYN_NONE):
            found.add(f"actuator dynamics {mujoco.mjtDyn(int(m.actuator_dyntype[a])).name}")
        if int(m.actuator_gaintype[a]) != int(mujoco.mjtGain.mjGAIN_FIXED):
            found.add(f"actuator gain {mujoco.mjtGain(int(m.actuator_gaintype[a])).name}")
        if int(m.actuator_biastype[a]) not in (
            int(mujoco.mjtBias.mjBIAS_NONE),
            int(mujoco.mjtBias.mjBIAS_AFFINE),
        ):
            found.add(f"actuator bias {mujoco.mjtBias(int(m.actuator_biastype[a])).name}")
        if m.actuator_forcelimited[a]:
            found.add("actuator forcerange")
    ids = _colliding(m)
    solrefs = {float(m.geom_solref[g][0]) for g in ids}
    if len(solrefs) > 1:
        found.add("contact solref differs between geoms")
    for g in ids:
        t = int(m.geom_type[g])
        if t not in {int(G.mjGEOM_PLANE), int(G.mjGEOM_SPHERE), int(G.mjGEOM_CAPSULE)} | {
            int(G.mjGEOM_CYLINDER),
            int(G.mjGEOM_BOX),
        }:
            found.add(f"colliding {G(t).name.removeprefix('mjGEOM_').lower()} geoms")
        if not (m.geom_solref[g][0] > 0 and m.geom_solref[g][1] == 1.0):
            found.add("contact solref other than (τ, 1)")
        if not np.allclose(m.geom_solimp[g], [0.9, 0.95, 0.001, 0.5, 2.0], rtol=1e-12, atol=0):
            found.add("contact solimp other than the default")
        if m.geom_margin[g] != 0 or m.geom_gap[g] != 0:
            found.add("contact margin/gap")
        if m.geom_priority[g] != 0:
            found.add("contact priority")
        if m.geom_condim[g] not in (1, 3):
            found.add(f"contact condim {m.geom_condim[g]}")
    return found


def cell(text: str) -> str:
    """Text for a Markdown table cell."""
    return text.replace("|", "\\|")


def census() -> list[dict]:
    rows = []
    for name, path in corpus():
        row = {"name": name, "mujoco": None, "sciad": None, "error": None, "features": []}
        try:
            m = compile_model(path)
            row["mujoco"] = f"nq={m.nq} nv={m.nv} nbody={m.nbody} ngeom={m.ngeom} nu={m.nu}"
            row["features"] = sorted(features(m))
        except Exception as e:  # noqa: BLE001 - the census records any failure
            row["error"] = f"MuJoCo: {type(e).__name__}: {e}"
            rows.append(row)
            continue
        try:
            with quiet_mujoco():
                mj = rigid.load_mjcf(path)
            row["sciad"] = f"{len(mj.model.names)} bodies, {len(mj.model.pairs)} contact pairs"
        except Exception as e:  # noqa: BLE001
            row["error"] = f"{type(e).__name__}: {e}"
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    args = parser.parse_args()
    rows = census()
    n_mj = sum(r["mujoco"] is not None for r in rows)
    n_sciad = sum(r["sciad"] is not None for r in rows)
    print(
        f"mujoco {mujoco.__version__}: {n_mj}/{len(rows)} load; sciad: {n_sciad}/{len(rows)} load"
    )
    print()
    if args.markdown:
        print("| model | MuJoCo | sciad | error |")
        print("|---|---|---|---|")
        for r in rows:
            sciad_ok = "yes" if r["sciad"] else "no"
            print(
                f"| {r['name']} | {r['mujoco'] or 'no'} | {sciad_ok} | {cell(r['error'] or '')} |"
            )
    else:
        for r in rows:
            status = "LOADS  " if r["sciad"] else "REFUSED"
            print(f"{status} {r['name']:32s} {r['mujoco'] or ''}")
            if r["error"]:
                print(f"        {r['error']}")
    blocked = collections.defaultdict(list)
    for r in rows:
        if r["error"]:
            blocked[blocker(r["error"].split(": ", 1)[1])].append(r["name"])
    print()
    if args.markdown:
        print("| blocker (first refusal) | models | which |")
        print("|---|---|---|")
    for key, names in sorted(blocked.items(), key=lambda kv: -len(kv[1])):
        if args.markdown:
            print(f"| {cell(key)} | {len(names)} | {', '.join(names)} |")
        else:
            print(f"{len(names):3d}  {key}\n     {', '.join(names)}")
    # Every blocker (static scan): how many models each appears in, and how many it
    # alone blocks (the models that load once that one feature lands).
    every = collections.Counter(f for r in rows for f in r["features"])
    alone = collections.Counter(r["features"][0] for r in rows if len(r["features"]) == 1)
    print()
    print("| feature (all a model has) | models with it | models it alone blocks |")
    print("|---|---|---|")
    for f, n in every.most_common():
        print(f"| {cell(f)} | {n} | {alone.get(f, 0)} |")
    print()
    print("| model | every refused feature |")
    print("|---|---|")
    for r in rows:
        print(f"| {r['name']} | {cell(', '.join(r['features'])) or '(none)'} |")


if __name__ == "__main__":
    main()

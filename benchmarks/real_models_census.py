"""Census of the real-model corpus (issue 17): which of the 33 MuJoCo models shipped by
Gymnasium and dm_control MuJoCo C loads, which `sciad.rigid.load_mjcf` loads, and for
each model sciad refuses, its error; then the blockers (each refused feature, the
message without the element's name and values) with how many models have it and how
many it alone blocks (the models that load once that one feature lands).

Prints Markdown tables. The corpus comes from `tests/rigid/real_models.py` (the
installed packages, else the pinned wheels downloaded once into
`tests/.cache/real_models`).

Run:  .venv/bin/python benchmarks/real_models_census.py
"""

import argparse
import collections
from pathlib import Path
import re
import sys

import jax

jax.config.update("jax_enable_x64", True)

sys.path.append(str(Path(__file__).resolve().parent.parent))

from _common import machine  # noqa: E402
import mujoco  # noqa: E402

import sciad.rigid as rigid  # noqa: E402
from tests.rigid.real_models import compile_model, corpus, quiet_mujoco  # noqa: E402


def refusals(message: str) -> list[str]:
    """The refused features in load_mjcf's message: one, or a list of `  - ` lines."""
    items = [line[4:] for line in message.split("\n") if line.startswith("  - ")]
    return items or [message.split("\n")[0]]


def blocker(message: str) -> str:
    """The refused feature: the message without the element's name, index and values."""
    text = message
    # "MJCF joint 'x' (body 'y'): what" -> "what"
    text = re.sub(r"^MJCF [a-z<>/ ]+ ('[^']*'|#?\d+)( \([^)]*\))?:? ", "", text)
    text = re.sub(r"^MJCF [^']*?: ", "", text)
    text = re.sub(r"(?<![A-Za-z])'[^']*'", "'…'", text)
    text = re.sub(r"\('…'(, '…')*\)", "(…)", text)
    text = re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "#", text)
    return text.split("; ")[0]  # without the advice


def cell(text: str) -> str:
    """Text for a Markdown table cell."""
    return text.replace("|", "\\|")


def census(limit: int | None = None) -> list[dict]:
    rows = []
    for name, path in corpus()[:limit]:
        row = {"name": name, "mujoco": None, "sciad": None, "error": None, "features": []}
        try:
            m = compile_model(path)
            row["mujoco"] = f"nq={m.nq} nv={m.nv} nbody={m.nbody} ngeom={m.ngeom} nu={m.nu}"
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
            row["features"] = sorted({blocker(x) for x in refusals(str(e))})
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="the first 4 models only (a smoke run)"
    )
    rows = census(4 if parser.parse_args().quick else None)
    print(machine())
    n_mj = sum(r["mujoco"] is not None for r in rows)
    n_sciad = sum(r["sciad"] is not None for r in rows)
    print(
        f"mujoco {mujoco.__version__}: {n_mj}/{len(rows)} load; sciad: {n_sciad}/{len(rows)} load"
    )
    print()
    print("| model | MuJoCo | sciad | error (first line) |")
    print("|---|---|---|---|")
    for r in rows:
        error = (r["error"] or "").split("\n")[0]
        print(f"| {r['name']} | {r['mujoco'] or 'no'} | {r['sciad'] or 'no'} | {cell(error)} |")
    # Every refused feature: how many models it appears in, and how many it alone
    # blocks (the models that load once that one feature lands).
    every = collections.Counter(f for r in rows for f in r["features"])
    alone = collections.Counter(r["features"][0] for r in rows if len(r["features"]) == 1)
    print()
    print("| refused feature | models with it | models it alone blocks | which |")
    print("|---|---|---|---|")
    for f, n in every.most_common():
        which = ", ".join(r["name"] for r in rows if f in r["features"])
        print(f"| {cell(f)} | {n} | {alone.get(f, 0)} | {which} |")
    print()
    print("| model | every refused feature |")
    print("|---|---|")
    for r in rows:
        print(f"| {r['name']} | {cell('; '.join(r['features'])) or '(loads)'} |")


if __name__ == "__main__":
    main()

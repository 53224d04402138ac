"""The real-model corpus: the MuJoCo models shipped by Gymnasium and dm_control.

Researchers load the models they already have, so sciad's MJCF import is measured on
the 33 models of two packages everyone has (issue 17):

- Gymnasium: the 14 files `gymnasium/envs/mujoco/assets/*.xml`;
- dm_control: the 19 domain models `dm_control/suite/*.xml` with the `common/`
  includes and the dog's meshes. Three are templates that `dm_control.suite` edits in
  Python before use, taken as shipped: `lqr.xml` (no degrees of freedom; the task adds
  the chain), `swimmer.xml` (the task adds links) and `stacker.xml` (the task removes
  boxes).

MuJoCo C compiles all 33 straight from the extracted files with
`mujoco.MjModel.from_xml_path`. The files come from the installed packages when they
import, else from the two pinned wheels, downloaded once with pip into
`tests/.cache/real_models` (git-ignored) and extracted there; the model files never
enter the repository. Offline, `corpus()` skips the calling test with the reason.
"""

from collections.abc import Callable
import contextlib
import importlib.util
import os
from pathlib import Path
import subprocess
import sys
import tempfile
import zipfile

import pytest

# Pinned so that the corpus, and the counts tested on it, do not move under the tests.
WHEELS = {"gymnasium": "1.4.0", "dm_control": "1.0.50"}
CACHE = Path(__file__).resolve().parent.parent / ".cache" / "real_models"
GYMNASIUM = ("gymnasium", "envs", "mujoco", "assets")
DM_CONTROL = ("dm_control", "suite")
N_MODELS = 33


def _installed_root(package: str) -> Path | None:
    """The directory holding the installed `package`, if it imports (found without
    importing it: dm_control's import pulls in rendering libraries)."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent.parent


def download_wheels(pins: dict[str, str], cache: Path, keep: Callable[[str], bool]) -> Path:
    """The folder under `cache` (named after the pins) holding the members of the wheels
    `pins` (name -> version) for which `keep(member)` holds, downloaded once with pip;
    atomic, so concurrent test workers (or a benchmark beside them) never see half a
    corpus. Raises `OSError` when pip fails."""
    dest = cache / "-".join(f"{name}-{version}" for name, version in pins.items())
    if dest.is_dir():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        args = [f"{name}=={version}" for name, version in pins.items()]
        run = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "--retries", "1"]
            + ["--timeout", "15", "-d", tmp, *args],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if run.returncode != 0:
            last = (run.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise OSError(f"pip download {' '.join(args)} failed: {last}")
        out = Path(tmp) / "corpus"
        for wheel in Path(tmp).glob("*.whl"):
            with zipfile.ZipFile(wheel) as z:
                z.extractall(out, [m for m in z.namelist() if keep(m)])
        with contextlib.suppress(OSError):  # another worker finished first: keep theirs
            out.rename(dest)
    return dest


def _in_corpus(member: str) -> bool:
    """Whether a wheel member is a model file or asset of the 33-model corpus."""
    parts = tuple(member.split("/"))
    return not member.endswith(".py") and (
        parts[: len(GYMNASIUM)] == GYMNASIUM or parts[: len(DM_CONTROL)] == DM_CONTROL
    )


_unavailable: list[str] = []


def _root() -> Path:
    """A directory with `gymnasium/...` and `dm_control/...` below it."""
    roots = {p: _installed_root(p) for p in WHEELS}
    if all(root is not None for root in roots.values()):
        gym, dmc = roots["gymnasium"], roots["dm_control"]
        if gym == dmc:
            return gym  # pyright: ignore[reportReturnType]
    if not _unavailable:
        try:
            return download_wheels(WHEELS, CACHE, _in_corpus)
        except (OSError, subprocess.SubprocessError) as e:
            _unavailable.append(f"the real-model corpus is not available (offline?): {e}")
    pytest.skip(_unavailable[0])  # one failed download per process, not one per test


def corpus() -> list[tuple[str, Path]]:
    """The 33 corpus models as `(name, path)`, named `gymnasium/<file>` and
    `dm_control/<file>` (without `.xml`); skips the calling test when the files cannot
    be had."""
    root = _root()
    gym = sorted((root.joinpath(*GYMNASIUM)).glob("*.xml"))
    dmc = sorted(root.joinpath(*DM_CONTROL).glob("*.xml"))
    models = [(f"gymnasium/{p.stem}", p) for p in gym] + [(f"dm_control/{p.stem}", p) for p in dmc]
    if len(models) != N_MODELS:
        raise AssertionError(
            f"expected {N_MODELS} corpus models under {root}; found {len(models)}: "
            f"{[n for n, _ in models]}"
        )
    return models


@contextlib.contextmanager
def quiet_mujoco():
    """Collect MuJoCo's compiler warnings (e.g. dm_control's deprecated `settotalmass`)
    instead of letting MuJoCo append them to `MUJOCO_LOG.TXT` in the working directory."""
    import mujoco

    caught: list[str] = []
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(caught.append)
    try:
        yield caught
    finally:
        mujoco.set_mju_user_warning(previous)


def compile_model(path: Path):
    """MuJoCo's compiled `MjModel` of a corpus file (includes resolved from its folder)."""
    import mujoco

    with quiet_mujoco():
        return mujoco.MjModel.from_xml_path(os.fspath(path))

"""The examples and the notebooks run, and their own assertions on the mathematics pass.

Each `examples/*.py` runs in a fresh interpreter (no jaxtyping hook, float64 enabled by
the script itself) in a temporary directory, so the plots it writes land there. Each
notebook runs through nbclient on a kernel that is this interpreter, whatever other
`python3` kernelspecs the machine has. All of these share one xdist group, so that they run one
after another on one worker rather than loading both cores at once.
"""

import ast
import os
from pathlib import Path
import subprocess
import sys

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

# Examples whose run (compile included) takes more than about 10 s on 2 CPU cores.
SLOW_EXAMPLES = {"adaptive_solve.py", "fit_pendulum.py", "gradients.py"}
EXAMPLE_TIMEOUT_S = 300
NOTEBOOK_TIMEOUT_S = 600

pytestmark = pytest.mark.xdist_group("examples")


def _extra_env() -> dict[str, str]:
    """What the examples and the notebook's kernel get on top of this environment."""
    extra = {"MPLBACKEND": "Agg"}
    for key, value in (
        ("XLA_PYTHON_CLIENT_PREALLOCATE", "false"),  # share a GPU politely
        ("PYDEVD_DISABLE_FILE_VALIDATION", "1"),  # quiet ipykernel's debugger warning
    ):
        if key not in os.environ:
            extra[key] = value
    return extra


def _example_params():
    return [
        pytest.param(
            path, id=path.stem, marks=[pytest.mark.slow] if path.name in SLOW_EXAMPLES else []
        )
        for path in EXAMPLES
    ]


def test_examples_exist():
    names = {p.name for p in EXAMPLES}
    assert {
        "simulate_and_vmap.py",
        "gradients.py",
        "fit_pendulum.py",
        "adaptive_solve.py",
    } <= names
    assert SLOW_EXAMPLES <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_is_a_documented_percent_script(path):
    source = path.read_text(encoding="utf-8")
    assert ast.get_docstring(ast.parse(source)), f"{path.name} needs a module docstring"
    assert source.startswith("# %%"), f"{path.name} should open with a `# %%` cell"
    assert "# %% [markdown]" in source
    assert "assert" in source, f"{path.name} should check its mathematics"


@pytest.mark.xdist_group("examples")
@pytest.mark.parametrize("path", _example_params())
def test_example_runs(path, tmp_path):
    proc = subprocess.run(
        [sys.executable, str(path)],
        cwd=tmp_path,
        env={**os.environ, **_extra_env()},
        capture_output=True,
        text=True,
        timeout=EXAMPLE_TIMEOUT_S,
    )
    assert proc.returncode == 0, (
        f"{path.name} exited with {proc.returncode}\n"
        f"--- stdout ---\n{proc.stdout[-5000:]}\n--- stderr ---\n{proc.stderr[-5000:]}"
    )


def test_notebooks_exist():
    assert {p.name for p in NOTEBOOKS} >= {
        "01_fit_a_pendulum.ipynb",
        "02_md_learn_a_potential.ipynb",
        "03_rigid_throw_to_target.ipynb",
        "04_rigid_walker_gradients.ipynb",
        "05_meta_optimisation.ipynb",
    }


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_saved_without_outputs(notebook):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(notebook, as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code
    for cell in code:
        assert cell.outputs == [] and cell.execution_count is None, (
            "save the notebook with its outputs cleared"
        )


def _kernelspec_for_this_interpreter(root: Path) -> Path:
    """A `python3` kernelspec under `root` that runs `sys.executable`; returns its data dir."""
    from ipykernel.kernelspec import write_kernel_spec

    data_dir = root / "jupyter"
    write_kernel_spec(
        path=data_dir / "kernels" / "python3",
        overrides={"display_name": "Python 3 (sciad tests)"},
    )
    return data_dir


@pytest.mark.slow
@pytest.mark.xdist_group("examples")
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(notebook, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")

    data_dir = _kernelspec_for_this_interpreter(tmp_path)
    for key, value in _extra_env().items():
        monkeypatch.setenv(key, value)
    # JUPYTER_PATH comes first in the kernelspec search, before user and system dirs.
    jupyter_path = os.pathsep.join(filter(None, [str(data_dir), os.environ.get("JUPYTER_PATH")]))
    monkeypatch.setenv("JUPYTER_PATH", jupyter_path)
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    assert Path(spec.argv[0]) == Path(sys.executable), spec.argv

    work = tmp_path / "run"
    work.mkdir()
    nb = nbformat.read(notebook, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=NOTEBOOK_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(work)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell

    errors = [
        f"cell {i}: {out.get('ename')}: {out.get('evalue')}"
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert not errors, "\n".join(errors)
    assert all(cell.execution_count is not None for cell in nb.cells if cell.cell_type == "code"), (
        "every code cell should have run"
    )

"""Project checks run by the test command (and so by CI): lint, types, architecture, docs,
the README's set-up commands, the demo, and docstrings on every public name."""

import inspect
import os
from pathlib import Path
import re
import shutil
import subprocess
import sys

import pytest

import sciad

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _tool(name):
    path = BIN / name
    return str(path) if path.exists() else shutil.which(name)


def _run(args, timeout=600, **kw):
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=timeout, **kw)
    assert proc.returncode == 0, f"{' '.join(args)}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


@pytest.mark.xdist_group("tools")
def test_ruff_lint_and_format():
    _run([_tool("ruff"), "check", "sciad", "tests", "benchmarks", "examples"])
    _run([_tool("ruff"), "format", "--check", "sciad", "tests", "benchmarks", "examples"])


@pytest.mark.xdist_group("tools")
def test_pyright():
    _run([_tool("pyright")])


@pytest.mark.xdist_group("tools")
def test_import_linter_pillar_independence():
    out = _run([_tool("lint-imports")]).stdout
    assert "broken" in out and "0 broken" in out


@pytest.mark.xdist_group("tools")
def test_mkdocs_build_strict(tmp_path):
    _run([_tool("mkdocs"), "build", "--strict", "--site-dir", str(tmp_path / "site")])


def test_readme_commands_and_ci_agree():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^    (python3 -m venv .venv .*)$", readme, flags=re.M)
    assert len(commands) >= 2
    demo, tests = commands[0], commands[1]
    assert "python -m sciad demo" in demo and '".[demo]"' in demo
    assert "pytest" in tests and '".[test]"' in tests
    ci = (ROOT / ".ci" / "run").read_text()
    assert "README.md" in ci and os.access(ROOT / ".ci" / "run", os.X_OK)
    # .ci/run extracts exactly the README's test command.
    out = subprocess.run(
        ["bash", ".ci/run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "SCIAD_CI_PRINT": "1"},
    ).stdout
    assert out == tests


@pytest.mark.slow
@pytest.mark.xdist_group("tools")
def test_demo_runs_and_recovers_parameters(tmp_path):
    out = tmp_path / "fit.png"
    proc = _run(
        [sys.executable, "-m", "sciad", "demo", "--out", str(out)],
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    assert out.exists() and out.stat().st_size > 10_000
    rows = dict(re.findall(r"^(length|damping)\s+\S+\s+\S+\s+(\S+)$", proc.stdout, flags=re.M))
    assert abs(float(rows["length"]) - 1.0) < 0.01
    assert abs(float(rows["damping"]) - 0.1) < 0.01
    assert "fit step" in proc.stdout and "result: successful" in proc.stdout
    drift = float(re.search(r"max \|ΔE/E\| (\S+)", proc.stdout).group(1))
    assert drift < 1e-3
    u = float(re.search(r"<U> = (\S+) over", proc.stdout).group(1))
    du = float(re.search(r"d<U>/dε = (\S+) by", proc.stdout).group(1))
    assert 2 * u < du < 0  # ≈ <U>/ε (fixed configurations) plus a smaller response
    # The rigid part: a box thrown onto the ground lands, slides at μg and stops.
    land, fall = (
        float(x)
        for x in re.search(r"lands at t = (\S+) s \(ballistic (\S+) s\)", proc.stdout).groups()
    )
    assert abs(land - fall) <= 2e-3 + 1e-9  # within one 2 ms step
    mean, mu_g = (
        float(x)
        for x in re.search(r"deceleration (\S+) m/s² against μg = (\S+) m/s²", proc.stdout).groups()
    )
    # MuJoCo's soft contact: the box hops on its corners, friction acts part of the time
    # (measured: 4.537 against 4.905, a slide of 0.456 m against 0.402 m)
    assert 0.85 * mu_g < mean < mu_g
    slid, continuous = (
        float(x) for x in re.search(r"slides (\S+) m: v²/\(2μg\) = (\S+) m", proc.stdout).groups()
    )
    assert continuous < slid < 1.25 * continuous
    grads = re.search(
        r"reverse mode (\S+), forward mode (\S+) \(relative difference (\S+);.* = (\S+)\)",
        proc.stdout,
    )
    reverse, forward, rel, model = (float(x) for x in grads.groups())
    assert rel < 1e-9 and abs(reverse - forward) <= 1e-9 * abs(forward)
    assert abs(reverse - model) < 0.03 * model  # flight time + slide speed/μg (measured 1.4%)


def _public(module):
    return [
        (f"{module.__name__}.{name}", getattr(module, name))
        for name in dir(module)
        if not name.startswith("_") and not inspect.ismodule(getattr(module, name))
    ]


PUBLIC = _public(sciad) + _public(sciad.ode) + _public(sciad.md) + _public(sciad.rigid)


@pytest.mark.parametrize("name, obj", PUBLIC, ids=[p[0] for p in PUBLIC])
def test_public_names_have_docstrings_with_examples(name, obj):
    doc = inspect.getdoc(obj) or ""
    assert len(doc) > 60, f"{name} has no real docstring"
    if callable(obj) and not isinstance(obj, type(sciad.RESULTS.successful)):
        assert "Example" in doc, f"{name}'s docstring has no example"
    if inspect.isclass(obj):
        for meth, fn in vars(obj).items():
            if callable(fn) and not meth.startswith("_"):
                assert inspect.getdoc(fn), f"{name}.{meth} has no docstring"


def test_public_surface_is_explicit():
    for name in (
        "simulate",
        "SaveAt",
        "Trajectory",
        "RESULTS",
        "fit",
        "FitResult",
        "CheckpointAdjoint",
        "DirectAdjoint",
        "VelocityVerlet",
        "Yoshida4",
        "Yoshida6",
        "SymplecticEuler",
        "RK4",
        "AbstractModel",
        "AbstractSeparableModel",
    ):
        assert hasattr(sciad, name), name
    assert callable(sciad.fit) and sciad.fit.__module__ == "sciad.fit._fit"


BENCHMARKS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_"))


@pytest.mark.slow
@pytest.mark.xdist_group("tools")
@pytest.mark.parametrize("script", BENCHMARKS, ids=[p.stem for p in BENCHMARKS])
def test_benchmark_runs_quick(script):
    """Each benchmark still runs end to end (small sizes; no timing is asserted)."""
    proc = subprocess.run(
        [sys.executable, str(script), "--quick"],
        cwd=ROOT / "benchmarks",
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "backend=cpu" in proc.stdout or "backend=gpu" in proc.stdout  # the machine line

"""Random input to `simulate`, `MDSystem`, `load_mjcf` and `fit` (issue 18): every call
either runs to a finite, checked result or raises sciad's own `ValueError`/`TypeError`,
never an internal JAX/NumPy/equinox error and never a non-finite "successful" result.

The examples (hypothesis, derandomised: the same on every machine) run in a helper
process without the suite's jaxtyping hook, as users see them; see `fuzz_runner.py` for
the strategies and for how an error is told to be sciad's. `SCIAD_FUZZ_EXAMPLES=200`
runs more examples per target locally.
"""

import json
import os
from pathlib import Path
import subprocess
import sys

import pytest

pytest.importorskip("hypothesis")
ROOT = Path(__file__).resolve().parents[1]

# examples per target: compilation dominates (about 0.5-2 s an example on 2 cores)
BUDGET = {"simulate_ode": 40, "simulate_rigid": 30, "md_system": 40, "load_mjcf": 30, "fit": 30}


@pytest.mark.parametrize("target", sorted(BUDGET))
def test_fuzz(target, tmp_path):
    if target == "load_mjcf":
        pytest.importorskip("mujoco")
    examples = int(os.environ.get("SCIAD_FUZZ_EXAMPLES", BUDGET[target]))
    env = {
        **os.environ,
        "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    # run in tmp_path: MuJoCo writes MUJOCO_LOG.TXT and hypothesis `.hypothesis/` there
    proc = subprocess.run(
        [sys.executable, "-m", "tests.fuzz_runner", target, str(examples)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    if proc.returncode != 0:
        pytest.fail(f"the fuzz runner failed:\n{proc.stderr[-4000:]}", pytrace=False)
    report = json.loads(proc.stdout.splitlines()[-1])
    assert report["examples"] >= examples // 2, report  # hypothesis ran them
    assert report["outcomes"].get("ok", 0) > 0, report  # some examples reach a run
    assert report["outcomes"].get("refused", 0) > 0, report  # and some are refused
    failures = report["failures"]
    if failures:
        lines = [f"{len(failures)} of {report['examples']} examples failed:"]
        for f in failures[:5]:
            lines += [f"input: {f['input']}", f"  {f['detail']}"]
        pytest.fail("\n".join(lines), pytrace=False)


def test_fuzz_classifier_tells_sciad_errors_from_internal_ones():
    """The runner's verdicts: sciad's own refusal passes; an internal JAX error, an error
    raised inside sciad by a library call, and a non-finite "successful" result fail."""
    from types import SimpleNamespace

    import jax.numpy as jnp

    import sciad

    from .fuzz_runner import check_trajectory, outcome, SCIAD_DIR

    ok = lambda out: ("ok", "")
    assert outcome(lambda: sciad.ode.Pendulum(length=-1.0), ok)[0] == "refused"
    assert outcome(lambda: jnp.ones(2) + jnp.ones(3), ok)[0] == "bad"
    # a ValueError raised by a library call (`float("x")`) on a sciad line that is not a
    # `raise` statement
    in_sciad = compile('float("x")', f"{SCIAD_DIR}/_not_a_raise.py", "exec")
    assert outcome(lambda: exec(in_sciad), ok)[0] == "bad"
    nan = SimpleNamespace(
        result=sciad.RESULTS.successful, ys=jnp.array([jnp.nan]), y1=jnp.array([0.0])
    )
    assert check_trajectory(nan)[0] == "bad"
    failed = SimpleNamespace(
        result=sciad.RESULTS.nonfinite_state, ys=jnp.array([jnp.nan]), y1=jnp.array([0.0])
    )
    assert check_trajectory(failed)[0] == "reported"

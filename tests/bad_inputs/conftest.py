"""One bad-input runner process per pytest worker (see `__init__.py`)."""

import os
from pathlib import Path
import subprocess
import sys

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def bad_input_runner():
    env = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.bad_inputs._runner"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    yield proc
    proc.stdin.close()
    proc.wait(timeout=60)

"""Bad inputs and the precise error each must raise, as users see them.

One file per pillar (`test_core.py`, `test_ode.py`, `test_fit.py`, `test_md.py`,
`test_rigid.py`), each with a list `CASES` of `(name, call, exception type, message
pattern)` and one parametrised test, so every case is its own pytest item
(`pytest tests/bad_inputs -k "dt negative"`).

The calls run in a helper process without the jaxtyping import hook of the test suite
(`_runner.py`), as in a user's session: the hook would pre-empt sciad's own messages
with its type-check errors. The process is started once per pytest worker
(`conftest.py`) and serves every case of that worker.
"""

import json
from typing import Any

import pytest


def case_names(cases: list) -> list[str]:
    """The names of `cases`, which must be distinct."""
    names = [c[0] for c in cases]
    dupes = sorted({n for n in names if names.count(n) > 1})
    assert not dupes, f"duplicate bad-input case names: {dupes}"
    return names


def run_case(runner: Any, module: str, name: str) -> None:
    """Run case `name` of `module` in the runner process; fail with its report."""
    runner.stdin.write(json.dumps([module, name]) + "\n")
    runner.stdin.flush()
    line = runner.stdout.readline()
    if not line:
        pytest.fail(f"the bad-input runner died (exit code {runner.poll()}); see its stderr.")
    report = json.loads(line)
    if not report["ok"]:
        pytest.fail(report["detail"], pytrace=False)

"""Documentation runs: each page's Python blocks, concatenated, execute as one script."""

import os
from pathlib import Path
import re
import subprocess
import sys

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(
    p for p in (ROOT / "docs").glob("*.md") if re.search(r"^```python", p.read_text(), re.M)
)


@pytest.mark.slow
@pytest.mark.xdist_group("examples")
@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_docs_page_code_runs(page, tmp_path):
    blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M)
    script = tmp_path / f"{page.stem}.py"
    script.write_text("import jax\njax.config.update('jax_enable_x64', True)\n" + "\n".join(blocks))
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

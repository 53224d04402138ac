"""The bad-input runner: reads `[module, case name]` JSON lines on stdin, runs that case
and writes `{"ok": bool, "detail": str}` JSON lines, in a process without the test
suite's jaxtyping hook (see `__init__.py`). Anything a case prints goes to stderr."""

import importlib
import json
import os
import re
import sys
import traceback

import jax


def check(call, exc, match) -> tuple[bool, str]:
    """Whether `call()` raises `exc` with a message matching `match`, and why not."""
    try:
        call()
    except exc as e:
        if re.search(match, str(e)):
            return True, ""
        return False, f"message {str(e)[:600]!r} does not match {match!r}"
    except Exception as e:  # noqa: BLE001 - report the wrong type with its traceback
        tb = "".join(traceback.format_exception(e))[-4000:]
        return False, f"raised {type(e).__name__}, expected {exc.__name__}:\n{tb}"
    return False, f"no error raised (expected {exc.__name__} matching {match!r})"


def main() -> None:
    jax.config.update("jax_enable_x64", True)
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # prints from the cases go to stderr, not into the protocol
    sys.stdout = sys.stderr
    for line in sys.stdin:
        module, name = json.loads(line)
        try:
            cases = {c[0]: c for c in importlib.import_module(module).CASES}
            _, call, exc, match = cases[name]
            ok, detail = check(call, exc, match)
        except Exception as e:  # noqa: BLE001 - a broken case file is a failure too
            ok, detail = False, "".join(traceback.format_exception(e))[-4000:]
        out.write(json.dumps({"ok": ok, "detail": detail}) + "\n")
        out.flush()


if __name__ == "__main__":
    main()

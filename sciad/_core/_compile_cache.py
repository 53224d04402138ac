"""JAX's persistent compilation cache, switched on in one call: the second run of a
script loads its compiled programs from disk instead of compiling them again."""

import os
import pathlib

import jax
from jax.experimental.compilation_cache import compilation_cache as _jax_cache

from ._validate import check_positive


def _default_path() -> pathlib.Path:
    base = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
    return pathlib.Path(base) / "sciad" / "jax"


def enable_compilation_cache(
    path: "str | os.PathLike[str] | None" = None, *, min_compile_time: float = 1.0
) -> pathlib.Path:
    """Keep compiled programs on disk so that the next process that compiles the same
    program (the same model structure, shapes, dtypes, integrator and transforms, on
    the same JAX version and device) loads it instead of compiling.

    This is JAX's persistent compilation cache
    (`jax_compilation_cache_dir`, see JAX's "Persistent compilation cache" page)
    with sciad's defaults: a per-user directory, every program that took at least
    `min_compile_time` seconds to compile, whatever its size. Call it once at the
    top of a script or notebook, before the first `simulate`; calling it again
    with another path moves the cache there. The same effect without code: set
    `JAX_COMPILATION_CACHE_DIR` (and `JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS`)
    in the environment.

    What it saves is measured in `docs/benchmarks.md` ("Compile time"): a rigid
    gradient that compiles for tens of seconds loads in well under a second.
    Programs whose compile took less than `min_compile_time` are not written (reading
    small entries costs about as much as compiling them). New parameter *values* never
    compile again within a process anyway (`jax.jit` caches by structure); the disk
    cache is for new processes.

    **Arguments:**

    - `path`: the cache directory; created if missing. Default
      `$XDG_CACHE_HOME/sciad/jax` (`~/.cache/sciad/jax`).
    - `min_compile_time`: seconds; programs that compiled faster are not cached.
      Must be ≥ 0.

    **Returns:** the cache directory (a `pathlib.Path`).

    **Example:**

    ```python
    import sciad
    sciad.enable_compilation_cache()    # the second run of this script skips compiling
    ```
    """
    check_positive(min_compile_time, "enable_compilation_cache's min_compile_time", zero_ok=True)
    directory = pathlib.Path(path) if path is not None else _default_path()
    if directory.exists() and not directory.is_dir():
        raise ValueError(
            f"enable_compilation_cache's path must be a directory; {str(directory)!r} is a file."
        )
    directory.mkdir(parents=True, exist_ok=True)
    previous = jax.config.jax_compilation_cache_dir  # pyright: ignore[reportAttributeAccessIssue]
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_time))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    if previous is not None and previous != str(directory):
        _jax_cache.reset_cache()  # JAX opened the old directory already: reopen here
    return directory

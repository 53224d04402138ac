"""Checkpoint files: any PyTree of a run (PRNG keys included), saved and loaded exactly."""

import pathlib

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._types import Anything


def _is_key(x: Anything) -> bool:
    return isinstance(x, (jax.Array, jax.ShapeDtypeStruct)) and jnp.issubdtype(
        x.dtype, jax.dtypes.prng_key
    )


def _write(f: Anything, x: Anything) -> None:
    if _is_key(x):
        np.save(f, np.asarray(jax.random.key_data(x)))
    else:
        eqx.default_serialise_filter_spec(f, x)


def _read(f: Anything, like: Anything) -> Anything:
    if _is_key(like):
        impl = jax.random.key_impl(like) if isinstance(like, jax.Array) else None
        return jax.random.wrap_key_data(jnp.asarray(np.load(f)), impl=impl)
    return eqx.default_deserialise_filter_spec(f, like)


def save_checkpoint(path: str | pathlib.Path, tree: Anything) -> None:
    """Write the arrays of `tree` (a state, a `Trajectory`, an integrator state...) to
    `path`, bit for bit, typed PRNG keys included (equinox's serialiser rejects them).

    **Arguments:** `path`: a file path; `tree`: any PyTree.

    **Example:**

    ```python
    sciad.save_checkpoint("run.eqx", (traj.y1, traj.t1, traj.integrator_state))
    ```
    """
    eqx.tree_serialise_leaves(path, tree, filter_spec=_write)


def load_checkpoint(path: str | pathlib.Path, like: Anything) -> Anything:
    """Read a tree written by [`save_checkpoint`][sciad.save_checkpoint]; `like` gives
    its structure, shapes and dtypes (e.g. a fresh `integrator.init(...)`, or
    `jax.eval_shape` of it).

    **Arguments:** `path`: the file; `like`: a PyTree of the same structure.

    **Returns:** the saved tree.

    **Example:**

    ```python
    like = (y0, jnp.asarray(0.0), integrator.init(model, 0.0, y0))
    y, t, state = sciad.load_checkpoint("run.eqx", like)
    traj = sciad.simulate(model, y, t0=t, dt=dt, n_steps=n, integrator=integrator,
                          integrator_state=state)
    ```
    """
    return eqx.tree_deserialise_leaves(path, like, filter_spec=_read)

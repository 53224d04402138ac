"""Checkpoint files: any PyTree of a run (PRNG keys included), saved and loaded exactly,
with a format version, a SHA-256 checksum and the model they came from.

A file is `MAGIC`, one line of JSON (the header) and the payload, equinox's
`tree_serialise_leaves` of the tree. The header holds the format version, the payload's
length and SHA-256, a fingerprint of the tree's structure (tree definition, every leaf's
shape and dtype) and, when given, the model's type and a fingerprint of its structure.
`load_checkpoint` checks all of them before it reads a leaf: a corrupt, truncated or
foreign file, a template of another structure or another model is refused with a
`ValueError` that says which.
"""

import hashlib
import io
import json
import pathlib

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._types import Anything

MAGIC = b"SCIAD-CHECKPOINT\n"
FORMAT_VERSION = 1


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
        return jax.random.wrap_key_data(jnp.asarray(np.load(f)), impl=jax.random.key_impl(like))
    return eqx.default_deserialise_filter_spec(f, like)


def _concrete_key(x: Anything) -> Anything:
    """A key array for a key `ShapeDtypeStruct` (a `jax.eval_shape` template), which
    equinox's deserialiser would refuse to replace by a key."""
    if not (isinstance(x, jax.ShapeDtypeStruct) and _is_key(x)):
        return x
    impls = []

    def data_of(k: Anything) -> Anything:
        impls.append(jax.random.key_impl(k))
        return jax.random.key_data(k)

    data = jax.eval_shape(data_of, x)
    return jax.random.wrap_key_data(jnp.zeros(data.shape, data.dtype), impl=impls[0])


def _leaf_summary(x: Anything) -> str:
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return f"{tuple(x.shape)} {x.dtype}"
    return type(x).__name__


def _describe(tree: Anything) -> dict:
    """The tree's structure: its definition and each leaf's shape and dtype."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return {"treedef": str(treedef), "leaves": [_leaf_summary(x) for x in leaves]}


def _fingerprint(description: dict) -> str:
    return hashlib.sha256(json.dumps(description, sort_keys=True).encode()).hexdigest()[:16]


def _model_info(model: Anything) -> dict:
    kind = type(model)
    return {
        "name": kind.__name__,
        "type": f"{kind.__module__}.{kind.__qualname__}",
        "fingerprint": _fingerprint(_describe(model)),
    }


def save_checkpoint(path: str | pathlib.Path, tree: Anything, model: Anything = None) -> None:
    """Write the arrays of `tree` (a state, a `Trajectory`, an integrator state...) to
    `path`, bit for bit, typed PRNG keys included (equinox's serialiser rejects them),
    with a format version, a SHA-256 checksum of the data, the structure of `tree` and
    the model it came from.

    **Arguments:**

    - `path`: a file path.
    - `tree`: any PyTree of arrays.
    - `model`: the model of the run (recommended): its type and structure are stored, and
      [`load_checkpoint`][sciad.load_checkpoint] refuses the file for another model.

    **Example:**

    ```python
    sciad.save_checkpoint("run.eqx", (traj.y1, traj.t1, traj.integrator_state), model)
    ```
    """
    buffer = io.BytesIO()
    eqx.tree_serialise_leaves(buffer, tree, filter_spec=_write)
    payload = buffer.getvalue()
    header = {
        "format": FORMAT_VERSION,
        "payload_bytes": len(payload),
        "sha256": hashlib.sha256(payload).hexdigest(),
        "tree": _fingerprint(_describe(tree)),
        "tree_leaves": _describe(tree)["leaves"],
        "model": None if model is None else _model_info(model),
    }
    with open(path, "wb") as f:
        f.write(MAGIC + json.dumps(header).encode() + b"\n" + payload)


def _read_file(path: str | pathlib.Path) -> tuple[dict, bytes]:
    """The header and the checked payload of a checkpoint file."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(MAGIC):
        raise ValueError(
            f"{path} is not a sciad checkpoint (no {MAGIC[:-1].decode()} header): it was "
            "written by something else, or by sciad before checkpoints carried a version."
        )
    end = data.find(b"\n", len(MAGIC))
    try:
        header = json.loads(data[len(MAGIC) : end]) if end >= 0 else None
    except ValueError:
        header = None
    if not isinstance(header, dict) or not isinstance(header.get("payload_bytes"), int):
        raise ValueError(f"checkpoint {path} is corrupt: its header cannot be read.")
    if header.get("format") != FORMAT_VERSION:
        raise ValueError(
            f"checkpoint {path} has format version {header.get('format')}; this sciad "
            f"reads version {FORMAT_VERSION}."
        )
    payload = data[end + 1 :]
    if len(payload) != header["payload_bytes"]:
        raise ValueError(
            f"checkpoint {path} is truncated or padded: {len(payload)} bytes of data, "
            f"its header says {header['payload_bytes']}."
        )
    if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        raise ValueError(
            f"checkpoint {path} is corrupt: the SHA-256 checksum of its data does not "
            "match the one written with it."
        )
    return header, payload


def load_checkpoint(path: str | pathlib.Path, like: Anything, model: Anything = None) -> Anything:
    """Read a tree written by [`save_checkpoint`][sciad.save_checkpoint]; `like` gives
    its structure, shapes and dtypes (e.g. a fresh `integrator.init(...)`, or
    `jax.eval_shape` of it; a PRNG key is matched by any key of the same kind).

    The file is checked before anything is read: its format version, its length and
    SHA-256 checksum (a truncated or corrupted file), the structure of `like` against the
    saved tree's, and, if `model` is given and the file names one, the model's type and
    structure. Each mismatch is a `ValueError` saying which.

    **Arguments:**

    - `path`: the file.
    - `like`: a PyTree of the saved tree's structure, shapes and dtypes.
    - `model`: the model the run continues with (checked against the saved one).

    **Returns:** the saved tree.

    **Example:**

    ```python
    like = (y0, jnp.asarray(0.0, y0.dtype), integrator.init(model, 0.0, y0))
    y, t, state = sciad.load_checkpoint("run.eqx", like, model)
    traj = sciad.simulate(model, y, t0=t, dt=dt, n_steps=n, integrator=integrator,
                          integrator_state=state)
    ```
    """
    header, payload = _read_file(path)
    saved = header.get("model")
    if model is not None and saved is not None:
        mine = _model_info(model)
        if mine["type"] != saved.get("type"):
            raise ValueError(
                f"checkpoint {path} was written for a {saved.get('type')}, not a {mine['type']}."
            )
        if mine["fingerprint"] != saved.get("fingerprint"):
            raise ValueError(
                f"checkpoint {path} was written for a {saved.get('name')} of another "
                "structure (other sizes, static fields or parameter shapes) than this one."
            )
    want = _describe(like)
    if _fingerprint(want) != header.get("tree"):
        got = header.get("tree_leaves")
        detail = ""
        if isinstance(got, list) and len(got) == len(want["leaves"]):
            diffs = [
                (i, a, b)
                for i, (a, b) in enumerate(zip(got, want["leaves"], strict=True))
                if a != b
            ]
            if diffs:
                i, a, b = diffs[0]
                detail = f" Leaf {i} was saved as {a}; the template has {b}."
        elif isinstance(got, list):
            detail = f" It holds {len(got)} leaves; the template has {len(want['leaves'])}."
        raise ValueError(
            f"the template `like` does not have the structure of the tree saved in "
            f"{path} (tree definition, leaf shapes and dtypes).{detail}"
        )
    like = jax.tree.map(_concrete_key, like)
    return eqx.tree_deserialise_leaves(io.BytesIO(payload), like, filter_spec=_read)

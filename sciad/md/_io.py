"""Extended-XYZ trajectories (read and written by ASE and OVITO) and ASE conversion."""

from collections.abc import Sequence
import dataclasses
import io
import os
import re
from typing import Any

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int
import numpy as np

from ._space import AbstractSpace, FreeSpace, PeriodicBox, TriclinicBox

PathOrFile = str | os.PathLike | io.TextIOBase

_TRUE = {"T", "True", "true", "TRUE"}
_FALSE = {"F", "False", "false", "FALSE"}
# key=value, key="quoted value", key={braced} or [bracketed], or a bare key.
_TOKEN = re.compile(
    r"""\s*([A-Za-z_][A-Za-z0-9_\-]*)\s*
        (?:=\s*(?:"((?:[^"\\]|\\.)*)"|\{([^}]*)\}|\[([^\]]*)\]|(\S+)))?""",
    re.VERBOSE,
)


@dataclasses.dataclass(frozen=True)
class XYZFrame:
    """One frame of an extended-XYZ file, as returned by [`read_extxyz`][sciad.md.read_extxyz].

    Host-side NumPy data (convert with `jnp.asarray`); lengths, momenta and masses are
    in whatever units the file was written in (ASE: Å, amu·Å/(ASE time unit), amu).

    **Fields:**

    - `positions`: shape `(n, 3)`, Cartesian positions.
    - `species`: a list of `n` strings (the `species` column) or, for files with only a
      `Z` column, an int array of shape `(n,)`.
    - `cell`: shape `(3, 3)`, rows are the lattice vectors, or `None` without `Lattice`.
    - `pbc`: three booleans.
    - `momenta`: shape `(n, 3)` or `None`.
    - `masses`: shape `(n,)` or `None`.
    - `info`: the other key=value pairs of the comment line (ints, floats, bools,
      strings, or 1-D arrays).
    - `arrays`: any other per-atom columns, by name (e.g. ASE's `forces`).

    **Example:**

    ```python
    frame = sciad.md.read_extxyz("traj.xyz")[-1]
    positions, space = jnp.asarray(frame.positions), frame.space()
    ```
    """

    positions: Float[np.ndarray, "n 3"]
    species: list[str] | Int[np.ndarray, " n"]
    cell: Float[np.ndarray, "3 3"] | None = None
    pbc: tuple[bool, bool, bool] = (False, False, False)
    momenta: Float[np.ndarray, "n 3"] | None = None
    masses: Float[np.ndarray, " n"] | None = None
    info: dict[str, Any] = dataclasses.field(default_factory=dict)
    arrays: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)

    def space(self) -> AbstractSpace:
        """The frame's space: `FreeSpace` without periodicity, `PeriodicBox` for a
        diagonal periodic cell, else `TriclinicBox`. Raises `ValueError` for mixed `pbc`.
        """
        if not any(self.pbc):
            return FreeSpace()
        if not all(self.pbc) or self.cell is None:
            raise ValueError(f"pbc={self.pbc}: sciad spaces are periodic along all axes or none.")
        return _cell_to_space(self.cell)


def _cell_to_space(cell: np.ndarray) -> AbstractSpace:
    cell = np.asarray(cell, dtype=np.float64)
    if np.count_nonzero(cell - np.diag(np.diag(cell))) == 0:
        return PeriodicBox(jnp.asarray(np.diag(cell).copy()))
    return TriclinicBox(jnp.asarray(cell))


def _space_to_cell(box: AbstractSpace | None) -> np.ndarray | None:
    if box is None:
        return None
    if not isinstance(box, AbstractSpace):
        raise TypeError(
            "box must be a sciad.md space (PeriodicBox, TriclinicBox, FreeSpace) or None; "
            f"got {type(box).__name__}."
        )
    if not box.periodic:
        return None
    cell = np.asarray(box.cell_matrix(), dtype=np.float64)
    if cell.shape != (3, 3):
        raise ValueError(f"extended XYZ is 3-D; the cell has shape {cell.shape}.")
    return cell


def _fmt(x: Any) -> str:
    """repr-exact text of a number (shortest string that reads back to the same float)."""
    if isinstance(x, (bool, np.bool_)):
        return "T" if x else "F"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    return repr(float(x))


def _quote(s: str) -> str:
    if s and not re.search(r'[\s"=\[\]{}\\]', s):
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _info_value(key: str, value: Any) -> str:
    if isinstance(value, str):
        return _quote(value)
    arr = np.asarray(value)
    if arr.ndim == 0 and arr.dtype.kind in "biuf":
        return _fmt(arr.item())
    if arr.ndim == 1 and arr.size > 0 and arr.dtype.kind in "biuf":
        return '"' + " ".join(_fmt(v) for v in arr.tolist()) + '"'
    raise TypeError(
        f"info[{key!r}] must be a bool, int, float, str or 1-D numeric array; got {value!r}."
    )


def _looks_numeric(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _as_frames(x: Any, name: str, n_frames: int, shape: tuple[int, ...]) -> list:
    """Split a per-frame array (frames, *shape) or a shared array shape into a list."""
    if x is None:
        return [None] * n_frames
    arr = np.asarray(x)
    if arr.shape == shape:
        return [arr] * n_frames
    if arr.shape == (n_frames, *shape):
        return list(arr)
    raise ValueError(f"{name} must have shape {shape} or {(n_frames, *shape)}; got {arr.shape}.")


def write_extxyz(
    path: PathOrFile,
    positions: Float[ArrayLike, "n 3"] | Float[ArrayLike, "frames n 3"],
    *,
    species: Sequence[str] | Int[ArrayLike, " n"] | None = None,
    box: AbstractSpace | Sequence[AbstractSpace | None] | None = None,
    momenta: Float[ArrayLike, "n 3"] | Float[ArrayLike, "frames n 3"] | None = None,
    masses: Float[ArrayLike, " n"] | None = None,
    info: dict[str, Any] | Sequence[dict[str, Any]] | None = None,
    append: bool = False,
) -> None:
    """Write one frame or a trajectory as extended XYZ (readable by ASE, OVITO, and [`read_extxyz`][sciad.md.read_extxyz]).

    Each frame is the atom count, a comment line
    `Lattice="ax ay az bx by bz cx cy cz" Properties=species:S:1:pos:R:3[:momenta:R:3][:masses:R:1] pbc="T T T" key=value …`
    and one row per atom. Numbers are written repr-exact (the shortest text that
    reads back to the same float), so a round trip is bit-for-bit. Without a box the
    frame has `pbc="F F F"` and no `Lattice`. Values are written as given: use
    consistent units (ASE expects Å, amu and momenta in amu·Å/(ASE time unit)).

    **Arguments:**

    - `path`: a file name, or an open text file.
    - `positions`: shape `(n, 3)` for one frame or `(frames, n, 3)` for a trajectory.
    - `species`: `n` names (`["Ar", …]`, written as the `species:S:1` column) or an int
      array of atomic numbers (written as a `Z:I:1` column, which ASE maps to elements);
      default `"X"` (ASE's dummy element) for every atom.
    - `box`: a `PeriodicBox` or `TriclinicBox` (3-D), `FreeSpace`/`None` for no
      periodicity, or a sequence of those, one per frame (NPT trajectories).
    - `momenta`: shape `(n, 3)` or `(frames, n, 3)`; written as the `momenta:R:3` column.
    - `masses`: shape `(n,)`; written as the `masses:R:1` column.
    - `info`: a dict of scalar, string or 1-D numeric values for the comment line (e.g.
      `{"step": 100, "time": 0.5}`), or a sequence of dicts, one per frame. As in
      ASE, strings that look like numbers or `T`/`F` read back as numbers or bools,
      and a one-element array reads back as a scalar.
    - `append`: add the frames to the end of an existing file.

    **Returns:** nothing.

    **Example:**

    ```python
    positions, box = sciad.md.lattice("fcc", 3, 1.6)
    sciad.md.write_extxyz("start.xyz", positions, species=["Ar"] * 108, box=box)
    ```

    Reference: the extended XYZ specification, https://github.com/libAtoms/extxyz.
    """
    pos = np.asarray(positions)
    if pos.ndim == 2:
        pos = pos[None]
    if pos.ndim != 3 or pos.shape[-1] != 3:
        raise ValueError(f"positions must have shape (n, 3) or (frames, n, 3); got {pos.shape}.")
    n_frames, n = pos.shape[0], pos.shape[1]

    if species is None:
        names: list[str] | None = ["X"] * n
        numbers = None
    elif np.asarray(species).dtype.kind in "iu":
        names, numbers = None, np.asarray(species).reshape(-1)
    else:
        names, numbers = [str(s) for s in np.asarray(species).reshape(-1).tolist()], None
        if any(not s or re.search(r"\s", s) for s in names):
            raise ValueError("species names must be non-empty and contain no whitespace.")
    n_species = len(names) if names is not None else numbers.shape[0]  # type: ignore[union-attr]
    if n_species != n:
        raise ValueError(f"species has {n_species} entries for {n} atoms.")

    boxes = list(box) if isinstance(box, Sequence) else [box] * n_frames
    if len(boxes) != n_frames:
        raise ValueError(f"box has {len(boxes)} entries for {n_frames} frames.")
    cells = [_space_to_cell(b) for b in boxes]
    moms = _as_frames(momenta, "momenta", n_frames, (n, 3))
    mass = None if masses is None else np.asarray(masses)
    if mass is not None and mass.shape != (n,):
        raise ValueError(f"masses must have shape ({n},); got {mass.shape}.")
    infos = list(info) if isinstance(info, Sequence) else [info or {}] * n_frames
    if len(infos) != n_frames:
        raise ValueError(f"info has {len(infos)} entries for {n_frames} frames.")
    reserved = {"Lattice", "Properties", "pbc"}

    lines: list[str] = []
    for f in range(n_frames):
        props = ["species:S:1" if names is not None else "Z:I:1", "pos:R:3"]
        columns: list[list[str]] = [
            list(names) if names is not None else [str(int(z)) for z in numbers.tolist()]  # type: ignore[union-attr]
        ]
        columns.append([" ".join(map(repr, row)) for row in pos[f].astype(float).tolist()])
        if moms[f] is not None:
            props.append("momenta:R:3")
            columns.append([" ".join(map(repr, row)) for row in moms[f].astype(float).tolist()])
        if mass is not None:
            props.append("masses:R:1")
            columns.append([repr(x) for x in mass.astype(float).tolist()])
        header = []
        if cells[f] is not None:
            lattice = " ".join(repr(x) for x in cells[f].reshape(-1).tolist())  # type: ignore[union-attr]
            header.append(f'Lattice="{lattice}"')
        header.append("Properties=" + ":".join(props))
        header.append('pbc="T T T"' if cells[f] is not None else 'pbc="F F F"')
        for key, value in (infos[f] or {}).items():
            if key in reserved or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]*", key):
                raise ValueError(f"invalid info key {key!r} (reserved or not an identifier).")
            header.append(f"{key}={_info_value(key, value)}")
        lines.append(str(n))
        lines.append(" ".join(header))
        lines.extend(" ".join(cols) for cols in zip(*columns, strict=True))
    text = "\n".join(lines) + "\n"

    if isinstance(path, io.TextIOBase):
        path.write(text)
        return
    with open(path, "a" if append else "w", encoding="utf-8") as fh:
        fh.write(text)


def _parse_value(raw: str, quoted: bool) -> Any:
    if not quoted:
        if raw in _TRUE:
            return True
        if raw in _FALSE:
            return False
        for conv in (int, float):
            try:
                return conv(raw)
            except ValueError:
                pass
        return raw
    parts = raw.split()
    if parts and all(p in _TRUE | _FALSE for p in parts) and len(parts) > 1:
        return np.array([p in _TRUE for p in parts])
    if parts and all(_looks_numeric(p) for p in parts) and len(parts) > 1:
        try:
            return np.array([int(p) for p in parts])
        except ValueError:
            return np.array([float(p) for p in parts])
    if len(parts) == 1 and _looks_numeric(parts[0]):
        return _parse_value(parts[0], quoted=False)
    return raw


def _parse_comment(line: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    pos = 0
    line = line.strip()
    while pos < len(line):
        m = _TOKEN.match(line, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"cannot parse the extended-XYZ comment line near: {line[pos:]!r}")
        key, dq, brace, bracket, bare = m.groups()
        if dq is not None:
            value = _parse_value(re.sub(r"\\(.)", r"\1", dq), quoted=True)
        elif brace is not None or bracket is not None:
            value = _parse_value((brace or bracket or "").replace(",", " "), quoted=True)
        elif bare is not None:
            value = _parse_value(bare, quoted=False)
        else:
            value = True
        out[key] = value
        pos = m.end()
    return out


def _parse_properties(spec: str) -> list[tuple[str, str, int]]:
    fields = spec.split(":")
    if len(fields) % 3:
        raise ValueError(f"malformed Properties={spec!r}.")
    return [(fields[i], fields[i + 1], int(fields[i + 2])) for i in range(0, len(fields), 3)]


def read_extxyz(path: PathOrFile) -> list[XYZFrame]:
    """Read every frame of an extended-XYZ file (as written by ASE, OVITO or [`write_extxyz`][sciad.md.write_extxyz]).

    Parses the comment line's `Lattice`, `Properties` and `pbc` and any other
    key=value pairs (into `info`), and the per-atom columns: `species` (or `Z`), `pos`,
    `momenta`, `masses`; other columns go to `arrays`. A plain XYZ comment line
    (no `Properties`) is read as `species pos` columns with `info = {"comment": line}`.
    A `Lattice` without `pbc` means periodic along all axes (the specification's rule).

    **Arguments:**

    - `path`: a file name, or an open text file.

    **Returns:** a list of [`XYZFrame`][sciad.md.XYZFrame], one per frame, with float64
    positions of shape `(n, 3)`.

    **Example:**

    ```python
    frames = sciad.md.read_extxyz("traj.xyz")
    trajectory = jnp.stack([jnp.asarray(f.positions) for f in frames])  # (frames, n, 3)
    ```

    Reference: the extended XYZ specification, https://github.com/libAtoms/extxyz.
    """
    if isinstance(path, io.TextIOBase):
        text = path.read()
    else:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    lines = text.splitlines()
    frames: list[XYZFrame] = []
    i = 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        try:
            n = int(lines[i].split()[0])
        except ValueError as e:
            raise ValueError(f"line {i + 1}: expected an atom count, got {lines[i]!r}.") from e
        if i + 2 + n > len(lines):
            raise ValueError(f"line {i + 1}: the file ends inside a frame of {n} atoms.")
        comment = lines[i + 1]
        try:
            info = _parse_comment(comment)
        except ValueError:
            info = {}
        if "Properties" in info:
            props = _parse_properties(str(info.pop("Properties")))
        else:
            props = [("species", "S", 1), ("pos", "R", 3)]
            info = {"comment": comment.strip()}
        rows = [lines[j].split() for j in range(i + 2, i + 2 + n)]
        n_cols = sum(c for _, _, c in props)
        for j, row in enumerate(rows):
            if len(row) < n_cols:
                raise ValueError(f"line {i + 3 + j}: expected {n_cols} columns, got {len(row)}.")
        columns: dict[str, np.ndarray] = {}
        start = 0
        for name, kind, ncol in props:
            block = [r[start : start + ncol] for r in rows]
            start += ncol
            if kind == "S":
                arr = np.array(block, dtype=object).reshape(n, ncol)
            elif kind == "R":
                arr = np.array(block, dtype=np.float64).reshape(n, ncol)
            elif kind == "I":
                arr = np.array(block, dtype=np.int64).reshape(n, ncol)
            elif kind == "L":
                arr = np.isin(np.array(block).reshape(n, ncol), list(_TRUE))
            else:
                raise ValueError(f"unknown property type {kind!r} for {name!r}.")
            columns[name] = arr[:, 0] if ncol == 1 else arr
        cell = None
        if "Lattice" in info:
            cell = np.asarray(info.pop("Lattice"), dtype=np.float64).reshape(3, 3)
        pbc_raw = info.pop("pbc", None)
        if pbc_raw is None:
            pbc = (True, True, True) if cell is not None else (False, False, False)
        else:
            flags = np.atleast_1d(np.asarray(pbc_raw, dtype=bool))
            if flags.size == 1:
                flags = np.repeat(flags, 3)
            pbc = (bool(flags[0]), bool(flags[1]), bool(flags[2]))
        if "pos" not in columns:
            raise ValueError(f"frame {len(frames)}: no pos column in Properties.")
        positions = columns.pop("pos")
        if "species" in columns:
            species: list[str] | np.ndarray = [str(s) for s in columns.pop("species")]
            columns.pop("Z", None)
        elif "Z" in columns:
            species = columns.pop("Z").astype(np.int64)
        else:
            species = ["X"] * n
        momenta = columns.pop("momenta", None)
        masses = columns.pop("masses", None)
        frames.append(
            XYZFrame(
                positions=positions,
                species=species,
                cell=cell,
                pbc=pbc,
                momenta=momenta,
                masses=masses,
                info=info,
                arrays=columns,
            )
        )
        i += 2 + n
    return frames


def _import_ase() -> Any:
    try:
        import ase  # pyright: ignore[reportMissingImports]
    except ImportError as e:
        raise ImportError(
            "this function needs ASE (the Atomic Simulation Environment), which is not "
            "installed; install the `sciad[ase]` extra: pip install 'sciad[ase]'."
        ) from e
    return ase


def from_ase(
    atoms: Any,
) -> tuple[Float[Array, "n 3"], AbstractSpace, list[str], Float[Array, " n"]]:
    """Positions, space, species and masses of an `ase.Atoms` object.

    **Arguments:** `atoms`: an `ase.Atoms`, periodic along all three axes or none.

    **Returns:** `(positions, space, species, masses)`: positions of shape `(n, 3)`
    (Å), a `FreeSpace` (no pbc), `PeriodicBox` (diagonal cell) or `TriclinicBox` (the
    cell rows, ASE's convention), the chemical symbols, and masses of shape `(n,)`
    (amu). Arrays are in JAX's default float dtype (float64 with x64 enabled).

    **Raises:** `ImportError` naming the `sciad[ase]` extra when ASE is missing;
    `ValueError` for mixed periodicity.

    **Example:**

    ```python
    import ase.build
    positions, space, species, masses = sciad.md.from_ase(ase.build.bulk("Cu", cubic=True))
    ```
    """
    _import_ase()
    pbc = tuple(bool(p) for p in atoms.pbc)
    if any(pbc) and not all(pbc):
        raise ValueError(f"pbc={pbc}: sciad spaces are periodic along all axes or none.")
    space = _cell_to_space(np.asarray(atoms.cell)) if all(pbc) else FreeSpace()
    positions = jnp.asarray(np.asarray(atoms.positions, dtype=np.float64))
    masses = jnp.asarray(np.asarray(atoms.get_masses(), dtype=np.float64))
    return positions, space, list(atoms.get_chemical_symbols()), masses


def to_ase(
    positions: Float[ArrayLike, "n 3"],
    space: AbstractSpace | None = None,
    species: Sequence[str] | Int[ArrayLike, " n"] | None = None,
    masses: Float[ArrayLike, " n"] | None = None,
    momenta: Float[ArrayLike, "n 3"] | None = None,
) -> Any:
    """An `ase.Atoms` object from positions, a space, species, masses and momenta.

    **Arguments:**

    - `positions`: shape `(n, 3)` (Å for ASE's units).
    - `space`: `PeriodicBox`/`TriclinicBox` (3-D; periodic along all axes) or
      `FreeSpace`/`None` (no periodicity, no cell).
    - `species`: chemical symbols or atomic numbers (default `"X"`, ASE's dummy atom).
    - `masses`: shape `(n,)` (amu); default ASE's element masses.
    - `momenta`: shape `(n, 3)` (amu·Å/(ASE time unit)).

    **Returns:** an `ase.Atoms`.

    **Raises:** `ImportError` naming the `sciad[ase]` extra when ASE is missing.

    **Example:**

    ```python
    positions, box = sciad.md.lattice("fcc", 2, 3.61)
    atoms = sciad.md.to_ase(positions, box, ["Cu"] * 32)
    ```
    """
    ase = _import_ase()
    pos = np.asarray(positions, dtype=np.float64)
    n = pos.shape[0]
    cell = _space_to_cell(space)
    if species is None:
        symbols: Any = ["X"] * n
    else:
        symbols = np.asarray(species).reshape(-1).tolist()
    atoms = ase.Atoms(
        symbols,
        positions=pos,
        cell=cell if cell is not None else np.zeros((3, 3)),
        pbc=cell is not None,
    )
    if masses is not None:
        atoms.set_masses(np.asarray(masses, dtype=np.float64))
    if momenta is not None:
        atoms.set_momenta(np.asarray(momenta, dtype=np.float64))
    return atoms


__all__ = ["XYZFrame", "from_ase", "read_extxyz", "to_ase", "write_extxyz"]

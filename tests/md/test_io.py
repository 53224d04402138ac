"""Extended-XYZ reading and writing, and ASE conversion."""

import io

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sciad.md._init import lattice, maxwell_boltzmann
from sciad.md._io import from_ase, read_extxyz, to_ase, write_extxyz, XYZFrame
from sciad.md._space import FreeSpace, PeriodicBox, TriclinicBox

CELL = np.array([[5.0, 0.0, 0.0], [1.25, 4.5, 0.0], [0.5, -0.75, 6.125]])


def _system(n=7, seed=0):
    rng = np.random.default_rng(seed)
    positions = rng.uniform(0, 5, (n, 3))
    momenta = rng.normal(size=(n, 3))
    masses = rng.uniform(1, 40, n)
    species = ["Ar" if i % 2 else "He" for i in range(n)]
    return positions, momenta, masses, species


def test_round_trip_orthorhombic(tmp_path):
    positions, momenta, masses, species = _system()
    box = PeriodicBox(jnp.array([5.0, 6.0, 7.5]))
    info = {"step": 12, "time": 0.1, "label": "two words", "ok": True, "v": np.array([1.5, 2.0])}
    path = tmp_path / "a.xyz"
    write_extxyz(
        path, positions, species=species, box=box, momenta=momenta, masses=masses, info=info
    )
    lines = path.read_text().splitlines()
    assert lines[0] == "7"
    assert lines[1].startswith('Lattice="5.0 0.0 0.0 0.0 6.0 0.0 0.0 0.0 7.5" ')
    assert "Properties=species:S:1:pos:R:3:momenta:R:3:masses:R:1" in lines[1]
    assert 'pbc="T T T"' in lines[1]
    (frame,) = read_extxyz(path)
    # repr-exact floats: the round trip is bit-for-bit.
    np.testing.assert_array_equal(frame.positions, positions)
    np.testing.assert_array_equal(frame.momenta, momenta)
    np.testing.assert_array_equal(frame.masses, masses)
    np.testing.assert_array_equal(frame.cell, np.diag([5.0, 6.0, 7.5]))
    assert frame.species == species and frame.pbc == (True, True, True)
    assert frame.info["step"] == 12 and isinstance(frame.info["step"], int)
    assert frame.info["time"] == 0.1 and frame.info["label"] == "two words"
    assert frame.info["ok"] is True
    np.testing.assert_array_equal(frame.info["v"], [1.5, 2.0])
    space = frame.space()
    assert isinstance(space, PeriodicBox)
    np.testing.assert_array_equal(space.lengths, box.lengths)


def test_round_trip_trajectory_triclinic_float32(tmp_path):
    positions, momenta, _, species = _system(5)
    traj = np.stack([positions, positions + 0.1, positions - 0.2]).astype(np.float32)
    boxes = [TriclinicBox(jnp.asarray(CELL * s)) for s in (1.0, 1.01, 1.02)]
    infos = [{"step": i} for i in range(3)]
    path = tmp_path / "t.xyz"
    write_extxyz(path, traj, species=species, box=boxes, info=infos)
    write_extxyz(path, traj[:1], species=species, box=boxes[0], append=True)
    frames = read_extxyz(path)
    assert len(frames) == 4
    for i, frame in enumerate(frames[:3]):
        assert frame.positions.dtype == np.float64
        np.testing.assert_array_equal(frame.positions.astype(np.float32), traj[i])
        np.testing.assert_array_equal(frame.cell, CELL * (1.0 + 0.01 * i))
        assert frame.info == {"step": i} and frame.momenta is None and frame.masses is None
        assert isinstance(frame.space(), TriclinicBox)
    np.testing.assert_array_equal(frames[3].positions, frames[0].positions)


def test_no_box_and_int_species():
    positions, _, _, _ = _system(4)
    buf = io.StringIO()
    write_extxyz(buf, positions, species=jnp.array([1, 8, 8, 6]), box=None)
    text = buf.getvalue()
    assert "Lattice" not in text.splitlines()[1] and 'pbc="F F F"' in text
    assert "Properties=Z:I:1:pos:R:3" in text
    (frame,) = read_extxyz(io.StringIO(text))
    assert frame.cell is None and frame.pbc == (False, False, False)
    np.testing.assert_array_equal(frame.species, [1, 8, 8, 6])
    np.testing.assert_array_equal(frame.positions, positions)
    assert isinstance(frame.space(), FreeSpace)
    buf = io.StringIO()
    write_extxyz(buf, positions, box=FreeSpace())
    assert read_extxyz(io.StringIO(buf.getvalue()))[0].species == ["X"] * 4


def test_write_sciad_state(tmp_path):
    positions, box = lattice("fcc", 2, 1.6)
    masses = jnp.ones(32)
    momenta = maxwell_boltzmann(jax.random.key(0), masses, 1.0)
    path = tmp_path / "lj.xyz"
    write_extxyz(path, positions, species=["Ar"] * 32, box=box, momenta=momenta, masses=masses)
    (frame,) = read_extxyz(path)
    np.testing.assert_array_equal(frame.positions, positions)
    np.testing.assert_array_equal(frame.momenta, momenta)


def test_read_plain_xyz_and_other_columns():
    text = (
        "2\nwater fragment\nO 0.0 0.0 0.0\nH 0.0 0.75 0.5\n"
        "1\nProperties=species:S:1:pos:R:3:forces:R:3:fixed:L:1 energy=-1.5 flag\n"
        "C 1 2 3 0.5 0.25 -1 T\n"
    )
    first, second = read_extxyz(io.StringIO(text))
    assert first.species == ["O", "H"] and first.info == {"comment": "water fragment"}
    np.testing.assert_array_equal(first.positions, [[0, 0, 0], [0, 0.75, 0.5]])
    assert second.info == {"energy": -1.5, "flag": True}
    np.testing.assert_array_equal(second.arrays["forces"], [[0.5, 0.25, -1.0]])
    np.testing.assert_array_equal(second.arrays["fixed"], [True])


def test_errors(tmp_path):
    positions, _, _, _ = _system(3)
    with pytest.raises(ValueError, match="species has 2 entries"):
        write_extxyz(tmp_path / "x.xyz", positions, species=["A", "B"])
    with pytest.raises(ValueError, match="3-D"):
        write_extxyz(tmp_path / "x.xyz", positions, box=PeriodicBox(jnp.array([1.0, 2.0])))
    with pytest.raises(ValueError, match="info key"):
        write_extxyz(tmp_path / "x.xyz", positions, info={"pbc": 1})
    with pytest.raises(ValueError, match="ends inside a frame"):
        read_extxyz(io.StringIO("3\ncomment\nH 0 0 0\n"))
    frame = XYZFrame(positions=positions, species=["H"] * 3, cell=CELL, pbc=(True, False, True))
    with pytest.raises(ValueError, match="periodic along all axes or none"):
        frame.space()


# ---------------------------------------------------------------- ASE cross-checks


def test_ase_reads_our_file(tmp_path):
    ase_io = pytest.importorskip("ase.io")
    positions, momenta, masses, species = _system()
    path = tmp_path / "ours.xyz"
    info = {"step": 3, "label": "hello"}
    traj = np.stack([positions, positions + 0.5])
    write_extxyz(
        path,
        traj,
        species=species,
        box=TriclinicBox(jnp.asarray(CELL)),
        momenta=momenta,
        masses=masses,
        info=info,
    )
    frames = ase_io.read(path, index=":", format="extxyz")
    assert len(frames) == 2
    for atoms, pos in zip(frames, traj, strict=True):
        assert atoms.get_chemical_symbols() == species
        np.testing.assert_array_equal(atoms.positions, pos)
        np.testing.assert_array_equal(atoms.cell[:], CELL)
        assert list(atoms.pbc) == [True, True, True]
        np.testing.assert_array_equal(atoms.get_momenta(), momenta)
        np.testing.assert_array_equal(atoms.get_masses(), masses)
        assert atoms.info["step"] == 3 and atoms.info["label"] == "hello"


def test_we_read_ase_file(tmp_path):
    ase = pytest.importorskip("ase")
    ase_io = pytest.importorskip("ase.io")
    positions, momenta, masses, species = _system()
    atoms = ase.Atoms(species, positions=positions, cell=CELL, pbc=True)
    atoms.set_momenta(momenta)
    atoms.set_masses(masses)
    atoms.info["step"] = 5
    free = ase.Atoms(species[:3], positions=positions[:3])
    path = tmp_path / "ase.xyz"
    ase_io.write(path, [atoms, free], format="extxyz")
    frame, free_frame = read_extxyz(path)
    # ASE prints 8 decimals.
    np.testing.assert_allclose(frame.positions, positions, atol=1e-8)
    np.testing.assert_allclose(frame.momenta, momenta, atol=1e-8)
    np.testing.assert_allclose(frame.masses, masses, atol=1e-8)
    np.testing.assert_allclose(frame.cell, CELL, atol=1e-8)
    assert frame.species == species and frame.pbc == (True, True, True)
    assert frame.info["step"] == 5
    assert free_frame.pbc == (False, False, False) and isinstance(free_frame.space(), FreeSpace)
    np.testing.assert_allclose(free_frame.positions, positions[:3], atol=1e-8)


def test_from_and_to_ase():
    ase_build = pytest.importorskip("ase.build")
    atoms = ase_build.bulk("Cu", "fcc", a=3.61, cubic=True).repeat(2)
    positions, space, species, masses = from_ase(atoms)
    assert isinstance(space, PeriodicBox) and species == ["Cu"] * 32
    np.testing.assert_array_equal(positions, atoms.positions)
    np.testing.assert_array_equal(masses, atoms.get_masses())
    back = to_ase(positions, space, species, masses=masses, momenta=jnp.ones((32, 3)))
    np.testing.assert_array_equal(back.positions, atoms.positions)
    np.testing.assert_array_equal(back.cell[:], atoms.cell[:])
    np.testing.assert_array_equal(back.get_momenta(), np.ones((32, 3)))
    _, prim_space, _, _ = from_ase(ase_build.bulk("Cu", "fcc", a=3.61))
    assert isinstance(prim_space, TriclinicBox)
    _, free_space, _, _ = from_ase(ase_build.molecule("H2O"))
    assert isinstance(free_space, FreeSpace)


def test_ase_missing_message(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "ase" or name.startswith("ase."):
            raise ImportError("No module named 'ase'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(ImportError, match=r"sciad\[ase\]"):
        to_ase(jnp.zeros((1, 3)))

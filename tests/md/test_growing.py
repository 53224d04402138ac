"""run_growing: a run that overflows its neighbour list is regrown and rerun chunk by
chunk, and equals a run that had enough capacity from the start."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.md as md

from ..helpers import xfail_bitwise_on_gpu
from .test_run import liquid

# The tests share compiled chunks (one Langevin integrator, 50-step chunks saving every
# 25 steps, one reference run): kept on one worker so that they compile once.
pytestmark = pytest.mark.xdist_group("md-growing")
DT, CHUNK, EVERY = 0.005, 50, 25


def _energy(t, y, model):
    return model.energy(y)


@pytest.fixture(scope="module")
def setup():
    system, y0 = liquid(m=4)
    big = md.NeighborListBuilder.create(system.space, y0[0], cutoff=2.5, skin=0.3)
    return system, y0, big


@pytest.fixture(scope="module")
def nvt():
    return md.LangevinBAOAB(friction=1.0, kT=1.0, key=jax.random.key(3))


def _growing(system, y, n_steps, builder, nvt, **kw):
    """run_growing in the shared configuration (one compiled chunk per builder)."""
    return md.run_growing(
        system,
        y,
        dt=DT,
        n_steps=n_steps,
        builder=builder,
        integrator=nvt,
        chunk_steps=CHUNK,
        save_every=EVERY,
        fn=_energy,
        **kw,
    )


def _reference(system, y0, big, nvt, n_steps=150):
    """The uninterrupted run with a big enough list from the start."""
    return sciad.simulate(
        system,
        y0,
        dt=DT,
        n_steps=n_steps,
        integrator=md.NeighborListIntegrator(nvt, big),
        saveat=sciad.SaveAt(steps=EVERY, fn=_energy),
    )


def test_regrows_and_matches_a_large_enough_run(setup, nvt):
    system, y0, big = setup
    small = md.NeighborListBuilder.create(
        system.space, y0[0], cutoff=2.5, skin=0.3, capacity=big.capacity // 3
    )
    chunks = []
    traj, grown = _growing(system, y0, 150, small, nvt, on_chunk=lambda k, tr: chunks.append(k))
    ref = _reference(system, y0, big, nvt)
    assert traj.stats["regrowths"] >= 1 and grown.capacity > small.capacity
    assert chunks == [0, 1, 2]
    assert traj.ys.shape == (6,) and np.allclose(traj.ts, ref.ts)
    assert np.allclose(traj.ys, ref.ys, rtol=1e-10)
    assert np.allclose(traj.y1[0], ref.y1[0], atol=1e-9)
    assert traj.result == sciad.RESULTS.successful


def test_keeps_the_thermostat_key_across_a_regrowth(setup, nvt):
    """A Langevin run regrown mid-way equals the run with a big list from the start."""
    system, y0, big = setup
    first, _ = _growing(system, y0, 50, big, nvt)
    small = dataclasses.replace(big, capacity=big.capacity // 3)
    resumed, grown = _growing(
        system,
        first.y1,
        100,
        small,
        nvt,
        integrator_state=first.integrator_state,
        t0=first.t1,
    )
    ref = _reference(system, y0, big, nvt)
    assert resumed.stats["regrowths"] >= 1
    assert np.allclose(resumed.y1[0], ref.y1[0], atol=1e-9)
    assert np.isclose(float(resumed.t1), 0.75)


def test_other_failures_raise_with_the_message_first(setup, nvt):
    system, (q, p), big = setup
    with pytest.raises(sciad.RunError, match=r"^sciad.md.run_growing: the state became non-fin"):
        _growing(system, (q, p.at[0, 0].set(jnp.inf)), 50, big, nvt)


def test_giving_up_on_regrowth_says_so_first(setup, nvt):
    """Past `max_regrowths` the error is a `sciad.RunError` (a `RuntimeError`, as
    before) whose first line names the call, the failure and where it stopped."""
    system, y0, big = setup
    small = md.NeighborListBuilder.create(
        system.space, y0[0], cutoff=2.5, skin=0.3, capacity=big.capacity // 3
    )
    with pytest.raises(sciad.RunError) as info:
        _growing(system, y0, 50, small, nvt, max_regrowths=0)
    assert str(info.value).splitlines()[0] == (
        "sciad.md.run_growing: the neighbour list still overflowed after 0 regrowths (in "
        "the chunk from step 0); check the system (is it collapsing?), or raise max_regrowths."
    )
    assert info.value.result == sciad.RESULTS.neighbor_overflow
    assert isinstance(info.value, RuntimeError)


def test_equal_chunks_compile_once(setup, monkeypatch):
    """The first chunk starts from the same state type and time dtype as the later ones,
    so three equal chunks trace `simulate` once (a fresh dt keeps the cache cold)."""
    system, y0, big = setup
    import sciad.md._growing as growing

    traced = []

    def counting(*args, **kwargs):
        traced.append(1)
        return sciad.simulate(*args, **kwargs)

    monkeypatch.setattr(growing, "simulate", counting)
    traj, _ = md.run_growing(system, y0, dt=0.00491, n_steps=90, builder=big, chunk_steps=30)
    assert len(traced) == 1 and int(traj.stats["num_steps"]) == 90


@xfail_bitwise_on_gpu
def test_checkpoint_to_file_and_resume_exactly(setup, nvt, tmp_path):
    """A Langevin run with a neighbour list, checkpointed to disk (sciad.save_checkpoint) by
    `on_chunk`, resumes from the file bit for bit (PRNG key included)."""
    system, y0, big = setup
    path = tmp_path / "state.eqx"

    def save(k, traj):
        if k == 0:
            sciad.save_checkpoint(path, (traj.y1, traj.t1, traj.integrator_state))

    full, _ = _growing(system, y0, 2 * CHUNK, big, nvt, on_chunk=save)
    like = md.NeighborListIntegrator(nvt, big).init(system, 0.0, y0)
    y, t, state = sciad.load_checkpoint(path, (y0, jnp.asarray(0.0), like))
    rest, _ = _growing(system, y, CHUNK, big, nvt, integrator_state=state, t0=t)
    assert bool(jnp.all(rest.y1[0] == full.y1[0])) and bool(jnp.all(rest.y1[1] == full.y1[1]))

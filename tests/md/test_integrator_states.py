"""The MD integrator protocol: every state is a named module, wrappers delegate to the
integrator they wrap, thermostats answer their temperature through `AbstractThermostat`."""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.md as md

from .test_barostat import npt_of, small_npt

KEY = jax.random.key(0)


def _builder(system, y0):
    return md.NeighborListBuilder.create(system.space, y0[0], cutoff=1.5, skin=0.3)


def _cases():
    system, y0 = small_npt()
    nl = md.NeighborListIntegrator(sciad.VelocityVerlet(), _builder(system, y0))
    return (
        system,
        y0,
        {
            "langevin": (md.LangevinBAOAB(1.0, 1.0, KEY), md.LangevinState, ("force", "key")),
            "brownian": (
                md.BrownianDynamics(10.0, 1.0, KEY),
                md.BrownianState,
                ("force", "noise", "key"),
            ),
            "nose-hoover": (
                md.NoseHooverChain(1.0, 0.5),
                md.NoseHooverState,
                ("inner", "eta", "p_eta"),
            ),
            "cell-rescaling": (
                npt_of(KEY),
                md.CellRescalingState,
                ("inner", "space", "key", "too_small"),
            ),
            "neighbour-list": (
                nl,
                md.NeighborListState,
                ("inner", "neighbors", "overflow", "n_builds", "stale"),
            ),
        },
    )


# The neighbour-list case runs the 200 steps of `test_fields_hold_what_they_name`: one
# compiled program for both tests (kept on one worker).
NL_STEPS = 200


@pytest.mark.parametrize(
    "name",
    [
        "langevin",
        "brownian",
        "nose-hoover",
        "cell-rescaling",
        pytest.param("neighbour-list", marks=pytest.mark.xdist_group("md-states-nl")),
    ],
)
def test_state_is_a_named_module(name):
    """`init` and a run's final state are the integrator's named state type, with these
    fields in this order, and a step keeps the type."""
    system, y0, cases = _cases()
    integ, kind, fields = cases[name]
    state = integ.init(system, 0.0, y0)
    assert type(state) is kind and isinstance(state, eqx.Module)
    assert tuple(f.name for f in dataclasses.fields(state)) == fields
    n_steps = NL_STEPS if name == "neighbour-list" else 3
    traj = sciad.simulate(system, y0, dt=0.005, n_steps=n_steps, integrator=integ)
    assert type(traj.integrator_state) is kind
    if isinstance(integ, sciad.AbstractWrappedIntegrator):
        assert isinstance(state, sciad.AbstractWrappedState)


@pytest.mark.xdist_group("md-states-nl")
def test_fields_hold_what_they_name():
    """The named fields carry the quantities: a Langevin state's force is the system's
    force; a Nosé–Hoover state's `inner` is velocity Verlet's cached force; a
    neighbour-list state counts its rebuilds in `n_builds`."""
    system, y0, cases = _cases()
    lang = cases["langevin"][0].init(system, 0.0, y0)
    assert np.allclose(lang.force, system.force(0.0, y0[0]), rtol=0, atol=0)
    nhc = cases["nose-hoover"][0].init(system, 0.0, y0)
    assert type(nhc.inner) is sciad.SplittingState
    assert np.array_equal(nhc.inner.force, system.force(0.0, y0[0]))
    assert nhc.eta.shape == nhc.p_eta.shape == (3,)
    integ = cases["neighbour-list"][0]
    traj = sciad.simulate(system, y0, dt=0.005, n_steps=NL_STEPS, integrator=integ)
    assert int(traj.integrator_state.n_builds) == int(integ.rebuilds(traj.integrator_state)) > 0


@pytest.mark.parametrize("inner, order", [(sciad.VelocityVerlet(), 2), (sciad.Yoshida4(), 4)])
def test_wrappers_delegate_order(inner, order):
    """A neighbour list runs its inner integrator's order; Nosé–Hoover caps it at 2 (its
    Trotter splitting), cell rescaling at 1 (its Euler–Maruyama volume move)."""
    system, y0 = small_npt()
    nl = md.NeighborListIntegrator(inner, _builder(system, y0))
    assert nl.order() == order
    assert md.NoseHooverChain(1.0, 0.5, integrator=inner).order() == min(2, order)
    assert (
        md.NeighborListIntegrator(
            md.NoseHooverChain(1.0, 0.5, integrator=inner), nl.builder
        ).order()
        == 2
    )
    assert npt_of(KEY).order() == 1
    assert nl.drift_fractions() == inner.drift_fractions()
    assert (
        md.NoseHooverChain(1.0, 0.5, integrator=inner).drift_fractions() == inner.drift_fractions()
    )


def test_wrapped_status_and_model_at_delegate():
    """A neighbour list around a barostat reports the barostat's box in `model_at`, and the
    inner integrator's failure first in `status`."""
    system, y0 = small_npt()
    integ = md.NeighborListIntegrator(npt_of(KEY), _builder(system, y0))
    traj = sciad.simulate(system, y0, dt=0.005, n_steps=20, integrator=integ)
    state = traj.integrator_state
    seen = integ.model_at(system, state)
    assert float(seen.space.volume()) == float(state.inner.space.volume())
    assert float(seen.space.volume()) != float(system.space.volume())
    broken = dataclasses.replace(
        state,
        overflow=jnp.asarray(True),
        inner=dataclasses.replace(state.inner, too_small=jnp.asarray(True)),
    )
    assert integ.status(broken) == sciad.RESULTS.box_too_small
    only_list = dataclasses.replace(state, overflow=jnp.asarray(True))
    assert integ.status(only_list) == sciad.RESULTS.neighbor_overflow
    assert integ.status(state) == sciad.RESULTS.successful


@pytest.mark.parametrize(
    "thermostat, momenta",
    [
        (md.LangevinBAOAB(1.0, 1.25, KEY), True),
        (md.NoseHooverChain(1.25, 0.5), True),
        (md.BrownianDynamics(10.0, 1.25, KEY), False),
    ],
)
def test_thermostats_answer_kT_through_the_interface(thermostat, momenta):
    assert isinstance(thermostat, md.AbstractThermostat)
    assert float(thermostat.kT) == 1.25
    assert thermostat.has_momenta is momenta


def test_barostat_needs_a_thermostat():
    """A barostat asks its thermostat for `kT`: an integrator that is not an
    `AbstractThermostat` is refused, one without momenta too."""
    with pytest.raises(TypeError, match="AbstractThermostat"):
        md.CellRescaling(sciad.VelocityVerlet(), 1.0, 0.1, 1.0, KEY)
    with pytest.raises(TypeError, match="BrownianDynamics has none"):
        md.CellRescaling(md.BrownianDynamics(1.0, 1.0, KEY), 1.0, 0.1, 1.0, KEY)

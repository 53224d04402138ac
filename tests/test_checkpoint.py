"""Checkpoint files: exact round trips (PRNG keys included) and refusal of anything else."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad

from .helpers import tree_equal_bits

PENDULUM = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
KEPLER = sciad.ode.Kepler(mu=1.0)


class NoisyEuler(sciad.AbstractIntegrator):
    """Euler–Maruyama for dy = f dt + σ dW: its state is a PRNG key (as a thermostat's)."""

    requires_separable = False
    sigma: float = 0.1

    def order(self):
        return 1

    def init(self, model, t0, y0):
        return jax.random.key(3)

    def step(self, model, t, dt, y, state):
        key, sub = jax.random.split(state)
        noise = jax.random.normal(sub, y.shape, y.dtype)
        return y + dt * model.vector_field(t, y) + self.sigma * jnp.sqrt(dt) * noise, key


@pytest.fixture
def saved(tmp_path):
    """A Kepler run's (y1, t1, integrator state), saved with its model."""
    y0 = KEPLER.initial_state(eccentricity=0.5)
    traj = sciad.simulate(KEPLER, y0, dt=0.01, n_steps=50)
    path = tmp_path / "run.ckpt"
    sciad.save_checkpoint(path, (traj.y1, traj.t1, traj.integrator_state), KEPLER)
    like = (y0, jnp.asarray(0.0), sciad.VelocityVerlet().init(KEPLER, 0.0, y0))
    return path, like, traj


def test_round_trip_and_resume_bit_for_bit(saved):
    path, like, traj = saved
    y, t, state = sciad.load_checkpoint(path, like, KEPLER)
    assert tree_equal_bits((y, t, state), (traj.y1, traj.t1, traj.integrator_state))
    whole = sciad.simulate(KEPLER, KEPLER.initial_state(eccentricity=0.5), dt=0.01, n_steps=100)
    rest = sciad.simulate(KEPLER, y, t0=t, dt=0.01, n_steps=50, integrator_state=state)
    assert tree_equal_bits(rest.y1, whole.y1)


def test_eval_shape_template(saved):
    path, like, traj = saved
    y, _, _ = sciad.load_checkpoint(path, jax.eval_shape(lambda: like))
    assert tree_equal_bits(y, traj.y1)


def test_prng_key_state_round_trips_with_the_documented_template(tmp_path):
    """The template of load_checkpoint's docstring, for a state holding a typed key."""
    integ, y0 = NoisyEuler(), jnp.array([1.0, 0.0])
    whole = sciad.simulate(PENDULUM, y0, dt=0.01, n_steps=40, integrator=integ)
    half = sciad.simulate(PENDULUM, y0, dt=0.01, n_steps=20, integrator=integ)
    path = tmp_path / "key.ckpt"
    sciad.save_checkpoint(path, (half.y1, half.t1, half.integrator_state), PENDULUM)
    like = (y0, jnp.asarray(0.0, y0.dtype), integ.init(PENDULUM, 0.0, y0))
    y, t, state = sciad.load_checkpoint(path, like, PENDULUM)
    assert jnp.issubdtype(state.dtype, jax.dtypes.prng_key)
    assert np.array_equal(jax.random.key_data(state), jax.random.key_data(half.integrator_state))
    rest = sciad.simulate(
        PENDULUM, y, t0=t, dt=0.01, n_steps=20, integrator=integ, integrator_state=state
    )
    assert tree_equal_bits(rest.y1, whole.y1)
    # a jax.eval_shape template (the docstring's other suggestion) holds a key too
    _, _, state2 = sciad.load_checkpoint(path, jax.eval_shape(lambda: like), PENDULUM)
    assert np.array_equal(jax.random.key_data(state2), jax.random.key_data(state))
    assert not np.array_equal(rest.y1, sciad.simulate(PENDULUM, y0, dt=0.01, n_steps=40).y1)


def test_flipped_bytes_are_refused(saved):
    path, like, _ = saved
    data = bytearray(path.read_bytes())
    start = len(data) - 200  # inside the payload: the arrays
    data[start : start + 64] = bytes(b ^ 0xFF for b in data[start : start + 64])
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="corrupt: the SHA-256 checksum"):
        sciad.load_checkpoint(path, like)


def test_truncated_file_is_refused(saved):
    path, like, _ = saved
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 10])
    with pytest.raises(ValueError, match="truncated"):
        sciad.load_checkpoint(path, like)
    path.write_bytes(data[:10])
    with pytest.raises(ValueError, match="not a sciad checkpoint"):
        sciad.load_checkpoint(path, like)
    path.write_bytes(data[:30])
    with pytest.raises(ValueError, match="header cannot be read"):
        sciad.load_checkpoint(path, like)


def test_other_model_is_refused(saved):
    path, like, _ = saved
    with pytest.raises(ValueError, match="written for a sciad.ode.*Kepler, not a .*Pendulum"):
        sciad.load_checkpoint(path, like, PENDULUM)
    other = sciad.ode.Kepler(mu=jnp.float32(1.0))  # same type, other structure
    with pytest.raises(ValueError, match="of another structure"):
        sciad.load_checkpoint(path, like, other)


def test_wrong_template_is_refused(saved):
    path, like, _ = saved
    y0, t, state = like
    with pytest.raises(
        ValueError, match=r"Leaf 2 was saved as \(\) float64; the template has \(\) float32"
    ):
        sciad.load_checkpoint(path, (y0, t.astype(jnp.float32), state))
    with pytest.raises(ValueError, match="It holds 4 leaves; the template has 3"):
        sciad.load_checkpoint(path, (y0, state))


def test_other_version_and_foreign_files_are_refused(saved, tmp_path):
    path, like, _ = saved
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"format": 1', b'"format": 99', 1))
    with pytest.raises(ValueError, match="format version 99"):
        sciad.load_checkpoint(path, like)
    import equinox as eqx

    old = tmp_path / "old.eqx"
    eqx.tree_serialise_leaves(old, like)
    with pytest.raises(ValueError, match="not a sciad checkpoint"):
        sciad.load_checkpoint(old, like)

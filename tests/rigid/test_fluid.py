"""Fluid forces (`Medium`: MuJoCo's inertia-box model, and its ellipsoid model through
`FluidEllipsoid`): the generalised force against MuJoCo C's `qfrc_fluid`, a terminal
velocity and added masses against their closed forms, and gradients through a
simulation against finite differences."""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid

from .scenes import chain, chain_mjcf, random_state

mujoco = pytest.importorskip("mujoco")

DENSITY, VISCOSITY, WIND = 1300.0, 0.7, (0.3, -0.5, 0.2)
MASS, INERTIA = 2.0, (0.05, 0.08, 0.11)
COM, IQUAT = (0.1, -0.2, 0.05), (0.9, 0.3, -0.2, 0.25)


def _unit(q):
    q = np.asarray(q, dtype=np.float64)
    return q / np.linalg.norm(q)


def _option(density=DENSITY, viscosity=VISCOSITY, wind=WIND):
    w = " ".join(map(str, wind))
    return f'<option density="{density}" viscosity="{viscosity}" wind="{w}">'


def _box_mjcf():
    pos, quat = " ".join(map(str, COM)), " ".join(map(str, _unit(IQUAT)))
    return (
        f'<mujoco>{_option()}<flag contact="disable"/></option><worldbody><body name="box">'
        f'<freejoint/><inertial pos="{pos}" quat="{quat}" mass="{MASS}" '
        f'diaginertia="{" ".join(map(str, INERTIA))}"/>'
        '<geom type="box" size="0.1 0.2 0.3" mass="0" contype="0" conaffinity="0"/>'
        "</body></worldbody></mujoco>"
    )


def _box(medium):
    body = rigid.Body(
        "box",
        joint=rigid.FreeJoint(),
        mass=MASS,
        inertia=jnp.asarray(INERTIA),
        com=jnp.asarray(COM),
        inertia_quat=jnp.asarray(_unit(IQUAT)),
    )
    return rigid.MultiBody([body], medium=medium)


def _fluid_force(model, q, v):
    """The medium's share of the applied force: with it minus without it."""
    vacuum = eqx.tree_at(lambda m: m.medium, model, None)
    return model.applied_force(0.0, q, v) - vacuum.applied_force(0.0, q, v)


def _mujoco_fluid(m, qpos, qvel):
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(m, d)
    return d.qfrc_fluid.copy(), d.qfrc_passive.copy()


@pytest.mark.parametrize("seed", range(3))
def test_free_body_matches_mujoco(seed):
    """A free body with an off-centre, rotated principal frame, at a random orientation
    and velocity, in a medium with density, viscosity and wind: the generalised fluid
    force equals MuJoCo's `qfrc_fluid` to 1e-12 relative to its scale, for the body
    built directly and for the same body loaded from MJCF."""
    m = mujoco.MjModel.from_xml_string(_box_mjcf())
    direct = _box(rigid.Medium(DENSITY, VISCOSITY, WIND))
    loaded = rigid.from_mujoco(m)
    assert loaded.model.medium is not None
    rng = np.random.default_rng(seed)
    q = np.concatenate([rng.normal(size=3), _unit(rng.normal(size=4))])
    v = 2.0 * rng.normal(size=6)
    want, _ = _mujoco_fluid(m, q, v)
    scale = np.abs(want).max()
    assert scale > 1.0  # the test has teeth: the force is not negligible
    for model in (direct, loaded.model):
        got = np.asarray(_fluid_force(model, jnp.asarray(q), jnp.asarray(v)))
        assert np.abs(got - want).max() <= 1e-12 * scale, (got, want)


@pytest.mark.parametrize("seed", range(2))
def test_hinge_chain_matches_mujoco(seed):
    """A 5-link hinge chain with joint damping (bodies whose centres of mass lie off
    their joints, each moving with its parents): the fluid force equals MuJoCo's
    `qfrc_fluid` and the whole applied force its `qfrc_passive` (damping plus fluid),
    to 1e-12 relative; the chain built in sciad with the same medium agrees too."""
    xml = chain_mjcf(5, damping=0.1).replace("<option ", _option()[:-1] + " ", 1)
    m = mujoco.MjModel.from_xml_string(xml)
    mj = rigid.from_mujoco(m)
    built = chain(5, damping=0.1, medium=rigid.Medium(DENSITY, VISCOSITY, WIND))
    q, v = random_state(mj.model, seed, scale=2.0)
    fluid, passive = _mujoco_fluid(m, np.asarray(mj.q_to_qpos(q)), np.asarray(v))
    scale = np.abs(fluid).max()
    assert scale > 1.0
    for model in (mj.model, built):
        got = np.asarray(_fluid_force(model, q, v))
        assert np.abs(got - fluid).max() <= 1e-12 * scale, (got, fluid)
    applied = np.asarray(mj.model.applied_force(0.0, q, v))
    assert np.abs(applied - passive).max() <= 1e-12 * np.abs(passive).max()


def test_terminal_velocity():
    """A solid box (sides 0.1, 0.2, 0.3 m, 1 kg) falling along its longest side through
    a viscous, dense medium reaches the speed where its weight balances the drag,
    m g = 3π d μ u + ½ ρ b₁ b₂ u² with d the mean side: the positive root of that
    quadratic, to 1e-9 relative, after 5 s of RKMK4 (the approach is exponential at
    rate (3π d μ + ρ b₁ b₂ u)/m ≈ 6 /s). The box does not turn."""
    sides, mass, g = np.array([0.1, 0.2, 0.3]), 1.0, 9.81
    density, viscosity = 100.0, 0.5
    inertia = mass / 12.0 * (np.sum(sides**2) - sides**2)
    body = rigid.Body("box", joint=rigid.FreeJoint(), mass=mass, inertia=jnp.asarray(inertia))
    model = rigid.MultiBody([body], gravity=(0.0, 0.0, -g), medium=rigid.Medium(density, viscosity))
    traj = sciad.simulate(
        model, model.default_state(), dt=1e-2, n_steps=500, integrator=rigid.RKMK4()
    )
    a = 3.0 * np.pi * sides.mean() * viscosity
    c = 0.5 * density * sides[0] * sides[1]
    terminal = (-a + np.sqrt(a**2 + 4.0 * c * mass * g)) / (2.0 * c)
    v = np.asarray(traj.y1[1])
    assert abs(-v[2] - terminal) <= 1e-9 * terminal, (v, terminal)
    assert np.abs(v[[0, 1, 3, 4, 5]]).max() <= 1e-12


# An ellipsoid off the centre of mass and turned: every term of the ellipsoid model
# (added mass, Magnus and Kutta lift, drag) acts on the body.
FIN = rigid.FluidEllipsoid("box", (0.3, 0.1, 0.2), pos=(0.1, 0.05, -0.1), quat=(0.9, 0.2, 0.1, 0.3))


def _swept(p, v0, ellipsoids):
    """The final position and velocity of a free body pushed through a medium with
    parameters p = (density, viscosity, wind) for 100 RKMK4 steps, as one scalar."""
    model = _box(rigid.Medium(p[0], p[1], p[2:], ellipsoids))
    q0, _ = model.default_state()
    traj = sciad.simulate(model, (q0, v0), dt=1e-2, n_steps=100, integrator=rigid.RKMK4())
    q1, v1 = traj.y1
    return jnp.sum(q1[:3] * jnp.array([1.0, -2.0, 0.5])) + jnp.sum(v1 * jnp.arange(6.0))


@functools.cache
def _programs(model):
    """The compiled gradient and forward-mode programs of `_swept` for one fluid
    model, shared by both starts: reverse mode, and (value, directional derivative),
    whose values give the central differences."""
    ellipsoids = [FIN] if model == "ellipsoid" else []

    def f(x):
        return _swept(x[:5], x[5:], ellipsoids)

    return jax.jit(jax.grad(f)), jax.jit(lambda x, d: jax.jvp(f, (x,), (d,)))


@pytest.mark.parametrize("model", ["inertia box", "ellipsoid"])
@pytest.mark.parametrize("start", ["moving", "at rest"])
def test_gradients_match_finite_differences(start, model):
    """d/d(density, viscosity, wind, initial velocity) of a loss through 100 steps of
    each fluid model: reverse mode and forward mode agree with each other to 1e-10 and
    with central differences to 1e-7, also from rest (no wind there: every velocity
    component starts at exactly zero, where |u| u and the norms of the ellipsoid model
    are not smooth; their derivatives there are zero, not NaN)."""
    grad, jvp = _programs(model)
    rng = np.random.default_rng(5)
    p = np.array([DENSITY / 1000, VISCOSITY, *WIND])
    v0 = rng.normal(size=6)
    if start == "at rest":
        p[2:], v0 = 0.0, np.zeros(6)
    x = jnp.asarray(np.concatenate([p, v0]))
    reverse = np.asarray(grad(x))
    assert np.all(np.isfinite(reverse))
    direction = jnp.asarray(rng.normal(size=x.shape))
    forward = float(jvp(x, direction)[1])
    assert abs(forward - reverse @ np.asarray(direction)) <= 1e-10 * max(1.0, abs(forward))
    h = 1e-5
    for i in range(x.shape[0]):
        e = jnp.zeros_like(x).at[i].set(h)
        central = (float(jvp(x + e, direction)[0]) - float(jvp(x - e, direction)[0])) / (2 * h)
        assert abs(reverse[i] - central) <= 1e-7 * max(1.0, abs(central)), (i, reverse, central)


def test_zero_medium_is_vacuum():
    """A medium of zero density and viscosity exerts nothing, wind or not."""
    model = _box(rigid.Medium(0.0, 0.0, (1.0, 2.0, 3.0)))
    q, v = random_state(model, 0)
    assert np.abs(np.asarray(_fluid_force(model, q, v))).max() == 0.0


ELLIPSOIDS_MJCF = """<mujoco>{option}<flag contact="disable"/></option><worldbody>
<body name="a" pos="0 0 1" quat="0.9 0.1 0.3 -0.2"><freejoint/>
 <geom type="box" size="0.1 0.2 0.3" pos="0.1 0 0" quat="0.8 0.2 0.1 0.3" fluidshape="ellipsoid"/>
 <geom type="capsule" size="0.05 0.2" pos="0 0.2 0.1" euler="30 10 0" fluidshape="ellipsoid"
       fluidcoef="0.4 0.3 1.2 0.9 1.1"/>
 <geom type="sphere" size="0.1" pos="0 0 -0.2"/>
 <body name="b" pos="0.3 0 0"><joint type="hinge" axis="0 1 1"/>
  <geom type="ellipsoid" size="0.2 0.05 0.1" fluidshape="ellipsoid"/>
  <body name="frame" pos="0.1 0 0" euler="0 20 0">
   <geom type="cylinder" size="0.03 0.1" mass="0.2" fluidshape="ellipsoid"/>
  </body>
  <body name="c" pos="0.3 0 0"><joint type="hinge" axis="1 0 0"/>
   <geom type="cylinder" size="0.05 0.2"/>
  </body>
 </body>
</body></worldbody></mujoco>"""


@pytest.mark.parametrize("seed", range(3))
def test_ellipsoid_model_matches_mujoco(seed):
    """MuJoCo's ellipsoid model (`fluidshape="ellipsoid"`) through `load_mjcf`: a free
    body with two turned, off-centre ellipsoids (a box's and a capsule's, with its own
    `fluidcoef`) and a geom without one, a hinged child with an ellipsoid, a massive
    welded grandchild with a cylinder's ellipsoid, and a hinged body using the inertia
    box, at random states: the fluid force equals MuJoCo's `qfrc_fluid` to 1e-12
    relative to its scale."""
    m = mujoco.MjModel.from_xml_string(ELLIPSOIDS_MJCF.format(option=_option()))
    mj = rigid.from_mujoco(m)
    assert mj.model.medium is not None
    assert [e.body for e in mj.model.medium.ellipsoids] == ["a", "a", "b", "frame"]
    rng = np.random.default_rng(seed)
    qpos = m.qpos0.copy()
    qpos[3:7] = _unit(rng.normal(size=4))
    qpos[7:] = rng.normal(size=2)
    qvel = 2.0 * rng.normal(size=m.nv)
    want, _ = _mujoco_fluid(m, qpos, qvel)
    scale = np.abs(want).max()
    assert scale > 1.0
    got = np.asarray(_fluid_force(mj.model, mj.qpos_to_q(qpos), jnp.asarray(qvel)))
    assert np.abs(got - want).max() <= 1e-12 * scale, (got, want)


def test_added_mass_closed_forms():
    """`FluidEllipsoid`'s default added mass: a sphere's is half its volume (and no
    added inertia), to 1e-12; a prolate spheroid's along and across its axis are
    Lamb's closed forms α/(2 − α) V (Lamb, Hydrodynamics §373), to 1e-10; and a
    general ellipsoid's agree with MuJoCo's compiler (which integrates with 8-digit
    15-point weights) to 1e-5."""
    r = 0.1
    sphere = rigid.FluidEllipsoid("b", (r, r, r))
    volume = 4.0 / 3.0 * np.pi * r**3
    assert np.allclose(np.asarray(sphere.virtual_mass), volume / 2, rtol=1e-12, atol=0)
    assert np.abs(np.asarray(sphere.virtual_inertia)).max() <= 1e-12 * volume * r**2
    a, b = 0.3, 0.1
    e = np.sqrt(1.0 - b**2 / a**2)
    log = np.log((1 + e) / (1 - e))
    alpha = 2 * (1 - e**2) / e**3 * (0.5 * log - e)
    beta = 1 / e**2 - (1 - e**2) / (2 * e**3) * log
    volume = 4.0 / 3.0 * np.pi * a * b * b
    want = volume * np.array([alpha / (2 - alpha), beta / (2 - beta), beta / (2 - beta)])
    spheroid = rigid.FluidEllipsoid("b", (a, b, b))
    assert np.allclose(np.asarray(spheroid.virtual_mass), want, rtol=1e-10, atol=0)
    m = mujoco.MjModel.from_xml_string(ELLIPSOIDS_MJCF.format(option=_option()))
    medium = rigid.from_mujoco(m).model.medium
    assert medium is not None
    geoms = np.flatnonzero(m.geom_fluid[:, 0] > 0)  # in the order of the ellipsoids
    for g, loaded in zip(geoms, medium.ellipsoids, strict=True):
        ours = rigid.FluidEllipsoid("b", loaded.semiaxes)
        for x, y in (
            (ours.virtual_mass, m.geom_fluid[g, 6:9]),
            (ours.virtual_inertia, m.geom_fluid[g, 9:12]),
        ):
            assert np.allclose(np.asarray(x), y, rtol=1e-5, atol=1e-12 * np.abs(y).max()), (g, x, y)

"""MuJoCo's noslip post-solve (`ContactModel(noslip_iterations=...)`, MJCF
`noslip_iterations`) with MuJoCo C as the reference: a scene with three constraint
islands (a box landing and sticking on a slope, a condim-6 ball rolling down it, a
two-hinge arm with friction losses swinging onto it) beside `mj_step`; static friction
holding where the soft solve creeps; gradients through the sweeps in both modes
against central differences; and the refusals."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid

from ..helpers import fd_directional

mujoco = pytest.importorskip("mujoco")

TIGHT = 'tolerance="1e-15" iterations="500" ls_tolerance="1e-12"'


def scene(noslip: int, tilt: float = 12.0) -> str:
    return f"""<mujoco><option timestep="0.002" cone="pyramidal" noslip_iterations="{noslip}"
    {TIGHT}/><worldbody>
<geom name="floor" type="plane" size="3 3 .1" euler="0 {tilt} 0" friction="0.5 0.01 0.001"/>
<body name="box" pos="0 0 0.3"><freejoint/><geom type="box" size="0.05 0.05 0.05" mass="1"/>
</body>
<body name="ball" pos="0.4 0 0.3"><freejoint/><geom size="0.05" mass="1" condim="6"
    friction="0.7 0.02 0.01"/></body>
<body name="arm" pos="-0.5 0 0.6"><joint type="hinge" axis="0 1 0" frictionloss="0.3"
    damping="0.01"/><geom type="capsule" fromto="0 0 0 0.2 0 -0.1" size="0.03" mass="0.5"/>
  <body pos="0.2 0 -0.1"><joint type="hinge" axis="1 0 0" frictionloss="0.05"/>
    <geom size="0.04" pos="0 0 -0.1" mass="0.3" condim="4"/></body></body>
</worldbody></mujoco>"""


def mujoco_run(xml: str, n: int) -> np.ndarray:
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    out = []
    for _ in range(n):
        mujoco.mj_step(m, d)
        out.append(d.qpos.copy())
    return np.asarray(out)


def sciad_run(mj, n: int) -> np.ndarray:
    run = eqx.filter_jit(
        lambda model: sciad.simulate(
            model,
            mj.y0,
            dt=mj.dt,
            n_steps=n,
            integrator=mj.integrator,
            saveat=sciad.SaveAt(steps=1),
        ).ys[0]
    )
    return np.asarray(jax.vmap(mj.q_to_qpos)(run(mj.model)))


def test_three_islands_match_mj_step():
    """300 steps (0.6 s) beside mj_step with 10 noslip sweeps: the box lands at step
    ~115 and sticks, the ball rolls, the arm's friction losses hold and slip; MuJoCo
    runs the sweeps per island, each stopping on its own improvement, which sciad
    reproduces: max |Δqpos| over the run below 1e-12 (measured 1.1e-15). Without
    noslip MuJoCo's run differs from this one by 1.2e-3, so the test sees the sweeps."""
    xml = scene(10)
    mj = rigid.load_mjcf(xml)
    assert mj.model.contact.noslip_iterations == 10
    ref = mujoco_run(xml, 300)
    soft = mujoco_run(scene(0), 300)
    assert np.abs(soft - ref).max() > 1e-4
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qpos[:] = ref[-1]
    mujoco.mj_forward(m, d)
    assert d.nisland == 3 and d.ncon == 5  # the three islands are in contact at the end
    ours = sciad_run(mj, 300)
    assert np.abs(ours - ref).max() < 1e-12, np.abs(ours - ref).max()


def test_static_friction_holds_where_the_soft_solve_creeps():
    """The box set resting on a 12° slope (its friction 1, tan 12° = 0.21): over the
    0.4 s after it settles the soft solve lets it creep down the slope; the noslip
    sweeps remove almost all of it (measured: 3.9e-7 m against 4.2e-4 m without them,
    each within 2e-15 of MuJoCo's)."""
    creep = {}
    for n in (0, 10):
        mj = rigid.load_mjcf(scene(n).replace('pos="0 0 0.3"', 'pos="0 0 0.0512" euler="0 12 0"'))
        x = sciad_run(mj, 300)[:, 0]  # the box's x
        creep[n] = abs(x[-1] - x[99])
    assert creep[10] < 0.01 * creep[0], creep


def test_gradients_through_the_sweeps_match_finite_differences():
    """d(final state)/d(box friction scale, arm angle weight) through 40 steps in which
    the box slides and decelerates on the slope with 4 noslip sweeps: reverse
    mode, forward mode and a central difference in float64 agree (the sweeps are
    differentiated as they run), the reverse-mode gradients `vmap`ped over two
    starting speeds, each checked against its own forward mode and differences."""
    xml = scene(4).replace('pos="0 0 0.3"', 'pos="0 0 0.0512" euler="0 12 0"')
    mj = rigid.load_mjcf(xml)
    # the box–floor contacts take the larger friction: the box's (0.8 here, the floor's 0.5)
    box = next(i for i, g in enumerate(mj.model.geoms) if g.body == "box")

    def loss(theta, speed):
        model = eqx.tree_at(
            lambda m: m.geoms[box].friction, mj.model, mj.model.geoms[box].friction * theta[0]
        )
        v0 = mj.y0[1].at[0].set(speed)
        y1 = sciad.simulate(model, (mj.y0[0], v0), dt=mj.dt, n_steps=40, integrator=mj.integrator)
        q = mj.q_to_qpos(y1.y1[0])
        return q[0] + 0.3 * q[2] + q[7] * theta[1]

    theta = jnp.asarray([0.8, 1.0])
    direction = jnp.asarray([0.6, 0.8])
    speeds = jnp.asarray([0.8, 0.6])
    value = eqx.filter_jit(loss)
    forward = eqx.filter_jit(lambda t, s: jax.jvp(lambda t: loss(t, s), (t,), (direction,))[1])
    grads = eqx.filter_jit(jax.vmap(jax.grad(loss), in_axes=(None, 0)))(theta, speeds)
    assert abs(float(grads[0, 0])) > 1e-3  # the slide depends on the friction
    for g, speed in zip(grads, speeds, strict=True):
        fwd = forward(theta, speed)
        fd = fd_directional(lambda t, s=speed: value(t, s), theta, direction, eps=1e-6)
        np.testing.assert_allclose(float(g @ direction), float(fwd), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(float(fwd), fd, rtol=1e-6, atol=1e-9)

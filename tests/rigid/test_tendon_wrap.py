"""Spatial tendons wrapping around spheres and cylinders (`TendonWrap`, with and
without side sites) and through pulleys (`TendonPulley`): lengths, Jacobians,
velocities and wrap points against MuJoCo C (`ten_length`, `ten_J`, `ten_velocity`,
`wrap_xpos`) at random states, a run beside `mj_step`, gradients through a run with
respect to a wrap radius and a site against central differences, and bad input."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid

from .test_tendons import _slider, _ten_j

mujoco = pytest.importorskip("mujoco")

# A two-link arm: a world sphere with a side site, a cylinder at the elbow (rotated: its
# axis along y) with and without a side site, a sphere on the forearm; a tendon with a
# spring over both wraps and a limited tendon with a pulley, driven by an actuator.
XML = """
<mujoco>
  <option timestep="0.002" jacobian="dense" {option}><flag contact="disable"/></option>
  <worldbody>
    <site name="w0" pos="0 0 1.5"/>
    <geom name="ws" type="sphere" size="0.08" pos="0.05 0 1.2" contype="0" conaffinity="0"/>
    <site name="wside" pos="0.3 0 1.2"/>
    <body name="a" pos="0 0 1">
      <joint name="j1" type="hinge" axis="0 1 0" damping="0.05"/>
      <joint name="j1b" type="hinge" axis="1 0 0" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.03"/>
      <geom name="cyl" type="cylinder" size="0.06 0.05" pos="0.5 0 0" euler="90 0 0"
            contype="0" conaffinity="0"/>
      <site name="s1" pos="0.25 0 0.05"/>
      <site name="side1" pos="0.5 0 0.2"/>
      <body name="b" pos="0.5 0 0">
        <joint name="j2" type="hinge" axis="0 1 0" damping="0.05"/>
        <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.03"/>
        <site name="s2" pos="0.3 0.02 0.04"/>
        <geom name="sph" type="sphere" size="0.05" pos="0.4 0 0" contype="0" conaffinity="0"/>
        <site name="s3" pos="0.5 0.01 -0.03"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <spatial name="t0" stiffness="40" springlength="0.6" damping="0.3">
      <site site="w0"/><geom geom="ws" sidesite="wside"/><site site="s1"/>
      <geom geom="cyl" sidesite="side1"/><site site="s2"/>
    </spatial>
    <spatial name="t1" limited="true" range="0.5 1.3">
      <site site="s1"/><geom geom="cyl"/><site site="s2"/><geom geom="sph"/><site site="s3"/>
      <pulley divisor="2"/><site site="w0"/><site site="s3"/>
    </spatial>
  </tendon>
  <actuator><motor tendon="t1" gear="3"/></actuator>
</mujoco>"""


@pytest.fixture(scope="module")
def arm():
    m = mujoco.MjModel.from_xml_string(XML.format(option=""))
    return m, rigid.from_mujoco(m)


def _mujoco_wrap_points(m, d, i):
    """Tendon i's wrap points per wrap as (tangent points (2, 3), wrapped), from
    MuJoCo's wrap_obj / wrap_xpos (a geom id twice after a site: wrapped)."""
    adr, num = d.ten_wrapadr[i], d.ten_wrapnum[i]
    obj = d.wrap_obj.reshape(-1)[adr : adr + num]
    xpos = d.wrap_xpos.reshape(-1, 3)[adr : adr + num]
    return obj, xpos


def test_lengths_jacobians_velocities_and_wrap_points_match_mujoco(arm):
    """300 random states (uniform joint angles in [−2, 2]): both wraps engage and
    disengage, side sites on both sides. Asserted < 1e-12; measured |Δℓ| 6.7e-16, |ΔJ|
    5.0e-16, |Δℓ̇| 7.8e-16, |Δ wrap point| 5.6e-16."""
    m, mj = arm
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    frames = jax.jit(lambda q, v: mj.model._frames(q, v).tendons)
    points = jax.jit(lambda q: [t.wrap_points(mj.model, q) for t in mj.model.tendons])
    engaged = np.zeros(4, int)
    worst = 0.0
    for _ in range(300):
        mujoco.mj_resetData(m, d)
        d.qpos[:] = rng.uniform(-2, 2, m.nq)
        d.qvel[:] = rng.standard_normal(m.nv)
        mujoco.mj_forward(m, d)
        q, v = mj.qpos_to_q(d.qpos), mj.qvel_to_v(d.qvel)
        length, jac = frames(q, v)
        worst = max(
            worst,
            np.abs(length - d.ten_length).max(),
            np.abs(jac - _ten_j(m, d)).max(),
            np.abs(jac @ v - d.ten_velocity).max(),
        )
        k = 0
        for i, (pts, ok) in enumerate(points(q)):
            obj, xpos = _mujoco_wrap_points(m, d, i)
            geoms = [j for j in range(len(obj) - 1) if obj[j] >= 0 and obj[j + 1] == obj[j]]
            mine = [np.asarray(pts[w]) for w in range(len(ok)) if ok[w]]
            assert len(mine) == len(geoms)
            for p, j in zip(mine, geoms, strict=True):
                worst = max(worst, np.abs(p - xpos[j : j + 2]).max())
            engaged[k : k + len(ok)] += np.asarray(ok)
            k += len(ok)
    assert worst < 1e-12
    # Each wrap engages often; the three at the shoulder and elbow also disengage (the
    # forearm's sphere sits on the straight line s2–s3 at every state).
    assert np.all(engaged > 20) and np.all(engaged[:3] < 280)


def test_runs_beside_mujoco():
    """300 steps (RK4) of the arm falling under gravity with the spring tendon over
    the sphere and the cylinder, the limited pulley tendon and its motor, beside
    MuJoCo C (solver tolerance 1e-15), the pulley tendon's limit acting at 23 steps.
    Measured: |Δqpos| 5.3e-14."""
    m = mujoco.MjModel.from_xml_string(XML.format(option='integrator="RK4" tolerance="1e-15"'))
    ctrl = np.array([0.4])
    mj = rigid.from_mujoco(m, control=rigid.ConstantControl(jnp.asarray(ctrl)))
    d = mujoco.MjData(m)
    d.ctrl[:] = ctrl
    d.qpos[:] = (0.3, -0.2, 0.5)
    q0, v0 = mj.qpos_to_q(d.qpos.copy()), mj.qvel_to_v(d.qvel.copy())
    qpos = []
    for _ in range(300):
        mujoco.mj_step(m, d)
        qpos.append(d.qpos.copy())
    traj = sciad.simulate(
        mj.model,
        (q0, v0),
        dt=mj.dt,
        n_steps=300,
        integrator=mj.integrator,
        saveat=sciad.SaveAt(steps=1),
    )
    ours = np.asarray(mj.q_to_qpos(traj.ys[0]))[-300:]
    assert np.abs(ours - np.asarray(qpos)).max() < 1e-12


@pytest.mark.slow
def test_gradients_match_finite_differences(arm):
    """d‖q(T)‖²/d(cylinder radius, a site's x) through 60 steps with the wraps engaged,
    by reverse and forward mode, against central differences."""
    m, mj = arm
    d = mujoco.MjData(m)
    d.qpos[:] = (0.3, -0.2, 0.5)
    mujoco.mj_forward(m, d)
    assert d.ten_wrapnum[0] > 3  # wraps engaged at the start
    y0 = mj.qpos_to_q(d.qpos.copy()), mj.qvel_to_v(d.qvel.copy())
    points = mj.model.tendons[0].points

    @jax.jit
    def loss(p):
        model = eqx.tree_at(lambda x: x.tendons[0].wraps[1].radius, mj.model, p[0])
        model = eqx.tree_at(lambda x: x.tendons[0].points, model, points.at[1, 0].set(p[1]))
        traj = sciad.simulate(model, y0, dt=mj.dt, n_steps=60, integrator=mj.integrator)
        return jnp.sum(traj.y1[0] ** 2)

    p = jnp.array([0.06, float(points[1, 0])])
    grad = jax.grad(loss)(p)
    direction = jnp.array([0.7, -0.4])
    _, tangent = jax.jvp(loss, (p,), (direction,))
    eps = 1e-6
    fd = np.array([(loss(p + eps * e) - loss(p - eps * e)) / (2 * eps) for e in np.eye(2)])
    np.testing.assert_allclose(grad, fd, rtol=1e-6)
    np.testing.assert_allclose(tangent, fd @ np.asarray(direction), rtol=1e-6)
    assert np.all(np.abs(fd) > 1e-5)


def test_gradient_finite_at_the_switching_point():
    """A straight segment exactly tangent to a sphere (the wrap's onset): the length's
    gradient w.r.t. the radius and the site is finite, and matches a one-sided
    difference from the unwrapped side (where it is 0 for the radius)."""
    wrapper = rigid.TendonWrap(None, (0.0, 0.0, 0.0), 0.5)
    tendon = rigid.SpatialTendon(
        "t", [(None, (-1.0, 0.5, 0.0)), wrapper, ("cart", (1.0, 0.5, 0.0))]
    )
    model = _slider(tendon)

    def length(p):
        radius, y = p
        mb = eqx.tree_at(lambda x: x.tendons[0].wraps[0].radius, model, radius)
        points = model.tendons[0].points.at[0, 1].set(y)
        mb = eqx.tree_at(lambda x: x.tendons[0].points, mb, points)
        return mb._frames(jnp.zeros(1)).tendons[0][0]

    p = jnp.array([0.5, 0.5])
    g = jax.grad(length)(p)
    _, t = jax.jvp(length, (p,), (jnp.array([1.0, 0.0]),))
    assert np.all(np.isfinite(np.asarray(g))) and np.isfinite(float(t))
    h = 1e-7
    below = (length(p) - length(p - jnp.array([h, 0.0]))) / h  # radius below: no wrap
    np.testing.assert_allclose(below, 0.0, atol=1e-6)


def test_pulley_halves_a_branch():
    """A hand-built block and tackle: ℓ = (|a−b| + |c−d|/2) exactly."""
    tendon = rigid.SpatialTendon(
        "t",
        [
            (None, (-1.0, 0.0, 0.0)),
            ("cart", (0.0, 0.0, 0.0)),
            rigid.TendonPulley(2.0),
            ("cart", (0.0, 0.0, 0.0)),
            (None, (3.0, 0.0, 0.0)),
        ],
    )
    length, jac = _slider(tendon)._frames(jnp.array([0.5])).tendons
    np.testing.assert_allclose(length, [1.5 + 2.5 / 2], rtol=1e-15)
    np.testing.assert_allclose(jac, [[1.0 - 0.5]], rtol=1e-15)


def test_bad_input():
    with pytest.raises(ValueError, match="radius"):
        rigid.TendonWrap(None, (0, 0, 0), -1.0)
    with pytest.raises(ValueError, match="unit quaternion"):
        rigid.TendonWrap(None, (0, 0, 0), 1.0, quat=(1, 1, 0, 0))
    with pytest.raises(ValueError, match="side"):
        rigid.TendonWrap(None, (0, 0, 0), 1.0, side=(None, (1, 0)))
    with pytest.raises(ValueError, match="divisor"):
        rigid.TendonPulley(0.0)
    w = rigid.TendonWrap(None, (0, 0, 0), 1.0)
    a, b = (None, (2.0, 0, 0)), (None, (-2.0, 0, 0))
    with pytest.raises(ValueError, match="between two points"):
        rigid.SpatialTendon("t", [w, a, b])
    with pytest.raises(ValueError, match="between two points"):
        rigid.SpatialTendon("t", [a, w, w, b])
    with pytest.raises(ValueError, match="pulley"):
        rigid.SpatialTendon("t", [a, b, rigid.TendonPulley(2.0)])
    with pytest.raises(ValueError, match="under two points"):
        rigid.SpatialTendon("t", [a, rigid.TendonPulley(2.0), a, b])
    bad_side = rigid.TendonWrap(None, (0, 0, 0), 1.0, side=("nobody", (1, 0, 0)))
    with pytest.raises(ValueError, match="no body named 'nobody'"):
        _slider(rigid.SpatialTendon("t", [a, bad_side, b]))
    inside = XML.format(option="").replace(
        '<site name="wside" pos="0.3 0 1.2"/>', '<site name="wside" pos="0.08 0 1.2"/>'
    )
    with pytest.raises(ValueError, match="side site inside"):
        rigid.from_mujoco(mujoco.MjModel.from_xml_string(inside))

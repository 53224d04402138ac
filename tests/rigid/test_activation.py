"""Actuator activation dynamics (`FilterActivation`, `IntegratorActivation`) against
MuJoCo C: a two-link arm with a filter, an exact filter with an activation range, an
integrator with `actearly` and a filter on a tendon, run beside `mj_step` under Euler
and RK4 (qpos, qvel and act); a hard joint limit (constrained steps) with a filter;
gradients through the activations by reverse mode against central differences; and
the state's layout."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid

mujoco = pytest.importorskip("mujoco")


def _xml(option="", limit=""):
    """Two hinged links, a fixed tendon over both; four stateful actuators and a
    stateless one. The ranges are chosen so that the clamps engage within the run."""
    return f"""
<mujoco>
  <option timestep="0.005" tolerance="1e-15" {option}><flag contact="disable"/></option>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" damping="0.5" {limit}/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04"/>
      <body name="lower" pos="0.4 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0" ref="0.2" damping="0.3"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      </body>
    </body>
  </worldbody>
  <tendon><fixed name="both"><joint joint="shoulder" coef="0.5"/><joint joint="elbow" coef="-1"/></fixed></tendon>
  <actuator>
    <general name="filter" joint="shoulder" dyntype="filter" dynprm="0.04" gainprm="2"
             biastype="affine" biasprm="0 -1 -0.1" ctrllimited="true" ctrlrange="-1 1"/>
    <general name="exact" joint="elbow" dyntype="filterexact" dynprm="0.03" gainprm="1.5"
             gear="0.8" actlimited="true" actrange="-0.3 0.4"/>
    <general name="integrator" joint="shoulder" dyntype="integrator" gainprm="0.7"
             actlimited="true" actrange="-0.5 0.5" actearly="true"/>
    <general name="tendon" tendon="both" dyntype="filter" dynprm="0.1" gainprm="1.2" gear="1.5"/>
    <motor joint="elbow" gear="0.5"/>
  </actuator>
</mujoco>"""


CTRL = np.array([1.7, 1.0, 2.0, -0.8, 0.3])  # the first clipped, the next two clamped


def _run_both(m, n, ctrl=CTRL, qpos=(0.3, 0.1), qvel=(0.5, -1.0)):
    """n steps of `mj_step` and of sciad (the same start, constant controls): MuJoCo's
    qpos, qvel, act per step and sciad's trajectory."""
    mj = rigid.from_mujoco(m, control=rigid.ConstantControl(jnp.asarray(ctrl)))
    d = mujoco.MjData(m)
    d.ctrl[:] = ctrl
    d.qpos[:] = m.qpos0 + np.asarray(qpos)
    d.qvel[:] = qvel
    d.act[:] = (0.2, -0.1, 0.0, 0.3)
    y0 = (mj.qpos_to_q(d.qpos.copy()), jnp.asarray(d.qvel.copy()), jnp.asarray(d.act.copy()))
    ref = {"qpos": [], "qvel": [], "act": []}
    for _ in range(n):
        mujoco.mj_step(m, d)
        for k in ref:
            ref[k].append(getattr(d, k).copy())
    traj = sciad.simulate(
        mj.model, y0, dt=mj.dt, n_steps=n, integrator=mj.integrator, saveat=sciad.SaveAt(steps=1)
    )
    ours = {
        "qpos": np.asarray(mj.q_to_qpos(traj.ys[0])),
        "qvel": np.asarray(traj.ys[1]),
        "act": np.asarray(traj.ys[2]),
    }
    return {k: np.asarray(x) for k, x in ref.items()}, ours


@pytest.mark.parametrize("integrator", ["Euler", "RK4"])
def test_activations_run_as_mujoco(integrator):
    """300 steps beside MuJoCo C: qpos, qvel and act agree to round-off (measured:
    Euler 8.9e-15, RK4 3.6e-15), with the exact filter and the integrator pinned
    at their activation ranges' bounds (clamps), the first control clipped."""
    m = mujoco.MjModel.from_xml_string(_xml(f'integrator="{integrator}"'))
    ref, ours = _run_both(m, 300)
    assert ref["act"][-1, 1] == 0.4 and ref["act"][-1, 2] == 0.5  # the clamps act
    for k in ("qpos", "qvel", "act"):
        err = np.abs(ours[k] - ref[k]).max()
        assert err < 1e-13, (k, err)


@pytest.mark.parametrize("integrator", ["Euler", "RK4"])
def test_activations_with_a_hard_limit_run_as_mujoco(integrator):
    """A hard shoulder limit (constrained steps: `constrained_velocity` with the
    activations, at every RK4 stage) that the filtered actuators drive into: 300
    steps beside MuJoCo C, to round-off (measured: qpos 4.4e-15 and 1.8e-15, qvel
    1.4e-14 and 1.2e-14, act 1.1e-16 under Euler and RK4)."""
    m = mujoco.MjModel.from_xml_string(
        _xml(f'integrator="{integrator}"', limit='limited="true" range="-0.5 0.45"')
    )
    mj = rigid.from_mujoco(m)
    assert mj.model.constrained
    ref, ours = _run_both(m, 300)
    d = mujoco.MjData(m)
    d.qpos[:] = ref["qpos"][-1]
    mujoco.mj_forward(m, d)
    assert d.nefc > 0  # at the limit at the end
    for k in ("qpos", "qvel", "act"):
        err = np.abs(ours[k] - ref[k]).max()
        assert err < 1e-13, (k, err)


def test_default_state_and_layout():
    """y = (q, v, act) with act = 0 (MuJoCo's initial act), in actuator order."""
    m = mujoco.MjModel.from_xml_string(_xml())
    mj = rigid.from_mujoco(m)
    assert mj.model.na == m.na == 4 and len(mj.y0) == 3
    assert np.array_equal(np.asarray(mj.y0[2]), np.zeros(4))
    q0, v0, act0 = mj.model.default_state()
    assert act0.shape == (4,)
    acts = mj.model.actuators
    assert isinstance(acts[0].activation, rigid.FilterActivation) and not acts[0].activation.exact
    assert acts[1].activation.exact and acts[2].activation.early
    assert isinstance(acts[2].activation, rigid.IntegratorActivation)
    assert isinstance(acts[3], rigid.TendonActuator) and acts[4].activation is None


@pytest.mark.parametrize("integrator", [rigid.SemiImplicitEuler(), rigid.RKMK4()])
def test_gradients_through_activations(integrator):
    """d(final shoulder angle)/d(filter τ, tendon gain, controls) through 100 steps by
    reverse mode against central differences in float64 (the clamps inactive: act
    in range)."""
    m = mujoco.MjModel.from_xml_string(_xml())
    ctrl = jnp.asarray([0.5, 0.2, 0.3, -0.4, 0.1])
    mj = rigid.from_mujoco(m, control=rigid.ConstantControl(ctrl))
    y0 = (mj.y0[0] + 0.1, mj.y0[1], jnp.asarray([0.1, 0.0, 0.0, 0.2]))

    def final(p):
        tau, gain, u = p
        model = eqx.tree_at(lambda mb: mb.actuators[0].activation.tau, mj.model, tau)
        model = eqx.tree_at(lambda mb: mb.actuators[3].gain, model, gain)
        model = eqx.tree_at(lambda mb: mb.control.value, model, u)
        traj = sciad.simulate(model, y0, dt=mj.dt, n_steps=100, integrator=integrator)
        return traj.y1[0][0] + 0.3 * traj.y1[2][1]

    p0 = (jnp.asarray(0.04), jnp.asarray(1.8), ctrl)
    # One compiled program gives the gradient and the values for the differences.
    value_and_grad = jax.jit(jax.value_and_grad(final))
    grad = value_and_grad(p0)[1]

    def value(p):
        return value_and_grad(p)[0]

    h = 1e-6
    flat, unravel = jax.flatten_util.ravel_pytree(p0)
    got = jax.flatten_util.ravel_pytree(grad)[0]
    for i in range(flat.shape[0]):
        e = jnp.zeros_like(flat).at[i].set(h)
        central = (float(value(unravel(flat + e))) - float(value(unravel(flat - e)))) / (2 * h)
        assert abs(float(got[i]) - central) <= 1e-6 * max(1.0, abs(central)), (i, got, central)
    assert np.all(np.asarray(got) != 0)


def test_exact_filter_is_the_exponential():
    """`FilterActivation(exact=True).next` is the exact solution for a constant control
    over any step; the Euler filter's is act + h·act_dot; both clamp."""
    f = rigid.FilterActivation(0.2, exact=True)
    act, u, h = jnp.asarray(0.3), jnp.asarray(-1.0), 0.7
    exact = u + (act - u) * np.exp(-h / 0.2)
    assert abs(float(f.next(act, f.rate(u, act), h)) - exact) < 1e-15
    e = rigid.FilterActivation(0.2, act_range=(-0.5, 0.5))
    assert float(e.next(act, e.rate(u, act), h)) == -0.5
    assert float(e.next(act, e.rate(u, act), 0.01)) == pytest.approx(0.3 + 0.01 * (-1.3 / 0.2))

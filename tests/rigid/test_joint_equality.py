"""Joint equality constraints (`JointEquality`, MuJoCo's `<equality><joint>`) against
MuJoCo C: the rows (`efc_pos`, `efc_J`, `efc_diagApprox`) at random states and
trajectories beside `mj_step` under Euler and RK4 (a gear between two hinges, a
quartic coupling of a slider to a hinge with its own solref/solimp, a hinge held at an
offset); the gradient with respect to a coupling coefficient against central
differences; and the checks of the constructor and the model."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid

from .test_equality_friction import _beside_mujoco, _rows_against_mujoco

mujoco = pytest.importorskip("mujoco")


def _xml(equality, option=""):
    """A two-link arm (the shoulder with a `ref`), a slider with a `ref` and a hinge
    about x, a motor on three of them; `equality` couples them."""
    return f"""
<mujoco>
  <option timestep="0.002" tolerance="1e-15" {option}><flag contact="disable"/></option>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="h1" type="hinge" axis="0 1 0" damping="0.1" ref="0.3"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04"/>
      <body name="b" pos="0.4 0 0">
        <joint name="h2" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      </body>
    </body>
    <body name="c" pos="1 0 1">
      <joint name="s" type="slide" axis="0 0 1" ref="0.1"/>
      <geom type="sphere" size="0.1"/>
    </body>
    <body name="d" pos="2 0 1">
      <joint name="h3" type="hinge" axis="1 0 0"/>
      <geom type="box" size="0.1 0.2 0.05" pos="0 0.2 0"/>
    </body>
  </worldbody>
  <equality>{equality}</equality>
  <actuator><motor joint="h1"/><motor joint="s"/><motor joint="h3"/></actuator>
</mujoco>"""


EQUALITIES = {
    "gear": '<joint joint1="h2" joint2="h1" polycoef="0 -0.5 0 0 0"/>',
    "polynomial": '<joint joint1="s" joint2="h3" polycoef="0.05 0.3 -0.2 0.1 0.05" '
    'solref="0.01 0.8" solimp="0.8 0.95 0.01 0.3 2"/>',
    "single": '<joint joint1="h3" polycoef="0.2 0 0 0 0"/>',
}
CTRL = np.array([0.5, -1.0, 0.2])


def _converted(m, ctrl=CTRL):
    return rigid.from_mujoco(m, control=rigid.ConstantControl(jnp.asarray(ctrl)))


@pytest.mark.parametrize("seed", [0, 1])
def test_joint_equality_rows_match_mujoco(seed):
    """The rows' values, Jacobians and inverse weights at random states."""
    for eq in EQUALITIES.values():
        m = mujoco.MjModel.from_xml_string(_xml(eq))
        mj = _converted(m)
        assert isinstance(mj.model.equalities[0], rigid.JointEquality)
        _rows_against_mujoco(m, mj, [mujoco.mjtConstraint.mjCNSTR_EQUALITY], seed)


@pytest.mark.parametrize(
    ("name", "integrator"),
    [(name, "Euler") for name in EQUALITIES] + [("polynomial", "RK4")],
)
def test_joint_equalities_run_as_mujoco(name, integrator):
    """Started off the constraint and driven: 300 steps beside MuJoCo C, to round-off
    (measured: Euler ≤ 1.9e-14, RK4 1.1e-14)."""
    m = mujoco.MjModel.from_xml_string(_xml(EQUALITIES[name], f'integrator="{integrator}"'))
    mj = _converted(m)
    d = mujoco.MjData(m)
    d.ctrl[:] = CTRL
    d.qpos[:] += (0.1, -0.05, 0.3, 0.2)
    d.qvel[:] = (0.2, 0.0, -0.5, 1.0)
    err, forces = _beside_mujoco(m, mj, d, 300, mujoco.mjtConstraint.mjCNSTR_EQUALITY)
    assert min(np.abs(f).max() for f, _ in forces) > 1e-6  # the row acts at every step
    assert err < 1e-13


def test_gradient_with_respect_to_the_coupling():
    """d(final slider position)/d(c₁, c₂) of the polynomial coupling through 100
    Euler steps: reverse mode against central differences in float64."""
    m = mujoco.MjModel.from_xml_string(_xml(EQUALITIES["polynomial"]))
    mj = _converted(m)
    y0 = (mj.y0[0] + jnp.asarray([0.1, -0.05, 0.3, 0.2]), jnp.asarray([0.2, 0.0, -0.5, 1.0]))

    def final(c):
        coef = mj.model.equalities[0].polycoef.at[1:3].set(c)
        model = eqx.tree_at(lambda mb: mb.equalities[0].polycoef, mj.model, coef)
        traj = sciad.simulate(model, y0, dt=mj.dt, n_steps=100, integrator=mj.integrator)
        return traj.y1[0][2]

    c0 = jnp.asarray([0.3, -0.2])
    grad = np.asarray(jax.jit(jax.grad(final))(c0))
    value = jax.jit(final)
    h = 1e-6
    for i in range(2):
        e = jnp.zeros(2).at[i].set(h)
        central = (float(value(c0 + e)) - float(value(c0 - e))) / (2 * h)
        assert abs(grad[i] - central) <= 1e-6 * max(1.0, abs(central)), (i, grad, central)
    assert np.all(np.abs(grad) > 1e-3)


def test_joint_equality_checks():
    """The model refuses an unknown body and a joint that is not a hinge or slider."""
    link = dict(mass=1.0, inertia=(0.1, 0.1, 0.1))
    bodies = [
        rigid.Body("a", joint=rigid.HingeJoint(axis=(0.0, 1.0, 0.0)), **link),
        rigid.Body("b", joint=rigid.BallJoint(), **link),
    ]
    with pytest.raises(ValueError, match="JointEquality: no body named 'x'"):
        rigid.MultiBody(bodies, equalities=[rigid.JointEquality("a", "x")])
    with pytest.raises(ValueError, match="body 'b' has a BallJoint"):
        rigid.MultiBody(bodies, equalities=[rigid.JointEquality("a", "b")])
    model = rigid.MultiBody(
        bodies[:1], equalities=[rigid.JointEquality("a", polycoef=(0.1, 0, 0, 0, 0))]
    )
    assert model.constrained and "equalities" in model.constraint_names()

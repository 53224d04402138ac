"""Bad input to `sciad.rigid` (bodies, joints, contacts, MJCF) and the error each must raise."""

import jax.numpy as jnp
import pytest

import sciad
import sciad.rigid as rigid  # noqa: E402

from . import case_names, run_case
from ._common import KEPLER, OK, PEND, sim, Y0  # noqa: F401

_HINGE_Y = rigid.HingeJoint(axis=(0.0, 1.0, 0.0))
_LINK = dict(mass=1.0, inertia=(0.1, 0.1, 0.1))
_ONE_LINK = rigid.MultiBody([rigid.Body("a", joint=_HINGE_Y, **_LINK)])
_FREE = rigid.MultiBody([rigid.Body("f", joint=rigid.FreeJoint(), **_LINK)])
_LIMITED = rigid.MultiBody(
    [rigid.Body("a", joint=rigid.HingeJoint(axis=(0.0, 1.0, 0.0), range=(-1.0, 1.0)), **_LINK)]
)

RIGID_CASES = [
    (
        "rigid parent order",
        lambda: rigid.MultiBody(
            [rigid.Body("b", parent="a", joint=_HINGE_Y, **_LINK), rigid.Body("a", **_LINK)]
        ),
        ValueError,
        "parent 'a' is not a body listed before it",
    ),
    (
        "rigid duplicate name",
        lambda: rigid.MultiBody([rigid.Body("a", joint=_HINGE_Y, **_LINK)] * 2),
        ValueError,
        "duplicate body name 'a'",
    ),
    (
        "rigid free joint parent",
        lambda: rigid.MultiBody(
            [
                rigid.Body("a", joint=_HINGE_Y, **_LINK),
                rigid.Body("b", parent="a", joint=rigid.FreeJoint(), **_LINK),
            ]
        ),
        ValueError,
        "a FreeJoint's parent must be the world",
    ),
    (
        "rigid no dofs",
        lambda: rigid.MultiBody([rigid.Body("a", **_LINK)]),
        ValueError,
        "no degrees of freedom",
    ),
    (
        "rigid mass negative",
        lambda: rigid.Body("a", mass=-1.0, inertia=(1.0, 1.0, 1.0)),
        ValueError,
        "mass must be positive",
    ),
    (
        "rigid inertia triangle",
        lambda: rigid.Body("a", mass=1.0, inertia=(0.1, 0.1, 1.0)),
        ValueError,
        "triangle inequality",
    ),
    (
        "rigid inertia shape",
        lambda: rigid.Body("a", mass=1.0, inertia=(0.1, 0.1)),
        ValueError,
        r"inertia must have shape \(3,\)",
    ),
    (
        "rigid no inertia",
        lambda: rigid.Body("a", mass=1.0),
        ValueError,
        "give mass and inertia, or a shape",
    ),
    (
        "rigid shape and inertia",
        lambda: rigid.Body("a", shape=rigid.Sphere(0.1), density=1.0, inertia=(1.0, 1.0, 1.0)),
        ValueError,
        "either inertia or shape",
    ),
    (
        "rigid zero quaternion",
        lambda: rigid.Body("a", quat=(0.0, 0.0, 0.0, 0.0), **_LINK),
        ValueError,
        "non-zero quaternion",
    ),
    (
        "rigid zero axis",
        lambda: rigid.HingeJoint(axis=(0.0, 0.0, 0.0)),
        ValueError,
        "axis must be non-zero",
    ),
    ("rigid range order", lambda: rigid.HingeJoint(range=(1.0, -1.0)), ValueError, "lower < upper"),
    (
        "rigid limit kind",
        lambda: rigid.BallJoint(max_angle=0.5, limit="stiff"),
        ValueError,
        "limit must be 'hard'",
    ),
    (
        "rigid hard limit under RKMK4",
        lambda: sciad.simulate(
            _LIMITED, _LIMITED.default_state(), dt=1e-3, n_steps=1, integrator=rigid.RKMK4()
        ),
        ValueError,
        "hard limits",
    ),
    (
        "rigid negative damping",
        lambda: rigid.SliderJoint(damping=-0.1),
        ValueError,
        "damping must be >= 0",
    ),
    ("rigid sphere radius", lambda: rigid.Sphere(-0.1), ValueError, "radius must be positive"),
    (
        "rigid box shape",
        lambda: rigid.Box(jnp.ones(2)),
        ValueError,
        r"half_extents must have shape \(3,\)",
    ),
    (
        "rigid joint type",
        lambda: rigid.Body("a", joint="hinge", **_LINK),
        TypeError,
        "joint must be a sciad.rigid.AbstractJoint",
    ),
    (
        "rigid actuator joint",
        lambda: rigid.MultiBody(
            [rigid.Body("a", joint=_HINGE_Y, **_LINK)], actuators=[rigid.JointActuator.motor("b")]
        ),
        ValueError,
        "no body named 'b'",
    ),
    (
        "rigid servo on ball",
        lambda: rigid.MultiBody(
            [rigid.Body("a", joint=rigid.BallJoint(), **_LINK)],
            actuators=[rigid.JointActuator.position("a", kp=1.0)],
        ),
        ValueError,
        "needs a hinge or slider",
    ),
    (
        "rigid control shape",
        lambda: rigid.MultiBody(
            [rigid.Body("a", joint=_HINGE_Y, **_LINK)],
            actuators=[rigid.JointActuator.motor("a")],
            control=rigid.ConstantControl(jnp.zeros(2)),
        ),
        ValueError,
        r"control must return shape \(1,\)",
    ),
    (
        "rigid wrench shape",
        lambda: rigid.MultiBody([rigid.Body("a", joint=_HINGE_Y, **_LINK)], wrench=jnp.zeros(6)),
        ValueError,
        r"wrench must return shape \(1, 6\)",
    ),
    (
        "rigid state shape",
        lambda: sciad.simulate(_ONE_LINK, (jnp.zeros(2), jnp.zeros(1)), dt=0.01, n_steps=1),
        ValueError,
        r"y0\[0\] \(q\) must have shape \(1,\)",
    ),
    (
        "rigid state not a tuple",
        lambda: sciad.simulate(_ONE_LINK, jnp.zeros(2), dt=0.01, n_steps=1),
        ValueError,
        r"must be a tuple \(q, v\)",
    ),
    (
        "rigid integrator on ode",
        lambda: sciad.simulate(PEND, Y0, dt=0.01, n_steps=1, integrator=rigid.RKMK4()),
        TypeError,
        "RKMK4 integrates a sciad.rigid.MultiBody; got Pendulum",
    ),
    (
        "rigid splitting on hinges",
        lambda: sciad.simulate(
            _ONE_LINK,
            _ONE_LINK.default_state(),
            dt=0.01,
            n_steps=1,
            integrator=rigid.FreeBodySplitting(),
        ),
        ValueError,
        "FreeBodySplitting integrates free bodies only",
    ),
    (
        "rigid free state nan",
        lambda: sciad.simulate(_FREE, (jnp.full(7, jnp.nan), jnp.zeros(6)), dt=0.01, n_steps=1),
        ValueError,
        "y0.* contains NaN",
    ),
]

_MJCF_HINGE = (
    '<mujoco><worldbody><body name="b"><joint name="j"/><geom size="0.1"/></body>'
    "</worldbody>{}</mujoco>"
)

MJCF_CASES = [
    (
        "mjcf source type",
        lambda: rigid.load_mjcf(3),  # pyright: ignore[reportArgumentType]
        TypeError,
        "a path or an XML string",
    ),
    (
        "mjcf missing file",
        lambda: rigid.load_mjcf("no/such/ant.xml"),
        FileNotFoundError,
        "no such file 'no/such/ant.xml'",
    ),
    (
        "mjcf not a model",
        lambda: rigid.from_mujoco("<mujoco/>"),
        TypeError,
        "needs a compiled mujoco.MjModel; got str",
    ),
    (
        "mjcf compile error",
        lambda: rigid.load_mjcf(
            "<mujoco><worldbody><body><joint type='nope'/></body></worldbody></mujoco>"
        ),
        ValueError,
        "nope",
    ),
    (
        "mjcf two blockers at once",
        lambda: rigid.load_mjcf(
            '<mujoco><worldbody><body name="leg" mocap="true"/><body name="arm" gravcomp="1">'
            '<joint name="y" axis="0 1 0"/><geom size="0.1"/></body></worldbody></mujoco>'
        ),
        ValueError,
        r"cannot represent 2 features of this model faithfully:\n  - MJCF body 'leg': mocap"
        r".*\n  - MJCF body 'arm': gravity compensation",
    ),
    (
        "mjcf tendon",
        lambda: rigid.load_mjcf(
            _MJCF_HINGE.format(
                '<tendon><fixed name="t"><joint joint="j" coef="1"/></fixed></tendon>'
            )
        ),
        ValueError,
        "MJCF tendon 't': tendons are not supported",
    ),
    (
        "mjcf actuator forcerange",
        lambda: rigid.load_mjcf(
            _MJCF_HINGE.format('<actuator><motor name="m" joint="j" forcerange="-1 1"/></actuator>')
        ),
        ValueError,
        "MJCF actuator 'm': forcerange",
    ),
    (
        "mjcf qpos shape",
        lambda: rigid.load_mjcf(_MJCF_HINGE.format("")).qpos_to_q(jnp.zeros(3)),
        ValueError,
        r"qpos must have shape \(\.\.\., 1\); got \(3,\)",
    ),
]


CASES = RIGID_CASES + MJCF_CASES


@pytest.mark.parametrize("name", case_names(CASES))
def test_bad_input(name, bad_input_runner):
    run_case(bad_input_runner, __name__, name)

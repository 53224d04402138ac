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
        "rigid hard limit under FreeBodySplitting",
        lambda: sciad.simulate(
            _LIMITED,
            _LIMITED.default_state(),
            dt=1e-3,
            n_steps=1,
            integrator=rigid.FreeBodySplitting(),
        ),
        ValueError,
        "hard limits",
    ),
    (
        "rigid negative damping",
        lambda: rigid.SliderJoint(damping=-0.1),
        ValueError,
        r"SliderJoint.damping must be finite and >= 0; got -0.1",
    ),
    (
        "rigid sphere radius",
        lambda: rigid.Sphere(-0.1),
        ValueError,
        r"Sphere.radius must be finite and > 0; got -0.1",
    ),
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

NAN = float("nan")
_BALL = rigid.Sphere(0.1)


def _body(**kw):
    return rigid.Body("a", **{**_LINK, **kw})


def _with(**kw):
    """The one-link hinge model with extra `MultiBody` arguments."""
    return rigid.MultiBody([rigid.Body("a", joint=_HINGE_Y, **_LINK)], **kw)


def _with_actuator(actuator):
    return _with(actuators=[actuator])


def _free_state(quat):
    q0, v0 = _FREE.default_state()
    return sciad.simulate(_FREE, (q0.at[3:].set(jnp.asarray(quat)), v0), dt=0.01, n_steps=1)


def _contact_model(**kw):
    body = rigid.Body(
        "ball", joint=rigid.FreeJoint(), pos=(0.0, 0.0, 0.2), shape=_BALL, density=1.0
    )
    geoms = [rigid.Geom(rigid.Plane()), rigid.Geom(_BALL, body="ball")]
    return rigid.MultiBody([body], geoms=geoms, **kw)


# One case per class and argument that is wrong on its face: each must be refused
# before any tracing, with a message naming the argument.
VALIDATION_CASES = [
    # shapes
    (
        "rigid sphere radius zero",
        lambda: rigid.Sphere(0.0),
        ValueError,
        r"Sphere.radius must be finite and > 0; got 0.0",
    ),
    (
        "rigid sphere radius nan",
        lambda: rigid.Sphere(NAN),
        ValueError,
        r"Sphere.radius must be finite and > 0; got nan",
    ),
    (
        "rigid sphere radius vector",
        lambda: rigid.Sphere(jnp.ones(2)),
        ValueError,
        r"Sphere.radius must be a scalar; got shape \(2,\)",
    ),
    (
        "rigid sphere radius complex",
        lambda: rigid.Sphere(1j),
        TypeError,
        r"Sphere.radius must be real; got dtype complex",
    ),
    (
        "rigid sphere radius bool",
        lambda: rigid.Sphere(True),
        TypeError,
        r"Sphere.radius must be real; got dtype bool",
    ),
    (
        "rigid box zero extent",
        lambda: rigid.Box(jnp.array([0.1, 0.0, 0.1])),
        ValueError,
        r"Box.half_extents must be finite and > 0; got 0.0",
    ),
    (
        "rigid box negative extent",
        lambda: rigid.Box(jnp.array([0.1, 0.1, -0.1])),
        ValueError,
        r"Box.half_extents must be finite and > 0; got -0.1",
    ),
    (
        "rigid box infinite extent",
        lambda: rigid.Box(jnp.array([0.1, jnp.inf, 0.1])),
        ValueError,
        r"Box.half_extents must be finite and > 0; got inf",
    ),
    (
        "rigid capsule zero length",
        lambda: rigid.Capsule(0.1, 0.0),
        ValueError,
        r"Capsule.half_length must be finite and > 0; got 0.0",
    ),
    (
        "rigid capsule negative radius",
        lambda: rigid.Capsule(-0.1, 0.2),
        ValueError,
        r"Capsule.radius must be finite and > 0; got -0.1",
    ),
    (
        "rigid cylinder zero radius",
        lambda: rigid.Cylinder(0.0, 0.2),
        ValueError,
        r"Cylinder.radius must be finite and > 0; got 0.0",
    ),
    (
        "rigid cylinder nan length",
        lambda: rigid.Cylinder(0.1, NAN),
        ValueError,
        r"Cylinder.half_length must be finite and > 0; got nan",
    ),
    (
        "rigid shape density negative",
        lambda: _BALL.mass_properties(-1.0),
        ValueError,
        r"Sphere density must be finite and > 0; got -1.0",
    ),
    (
        "rigid body density zero",
        lambda: rigid.Body("a", shape=rigid.Box(jnp.full(3, 0.1)), density=0.0),
        ValueError,
        r"Box density must be finite and > 0; got 0.0",
    ),
    (
        "rigid plane body",
        lambda: rigid.Body("p", shape=rigid.Plane(), density=1.0),
        TypeError,
        "a Plane has no volume or mass",
    ),
    # bodies
    (
        "rigid body mass zero",
        lambda: _body(mass=0.0),
        ValueError,
        r"Body 'a': mass must be positive",
    ),
    (
        "rigid body mass nan",
        lambda: _body(mass=NAN),
        ValueError,
        r"Body 'a' mass must be finite; got nan",
    ),
    (
        "rigid body mass complex",
        lambda: _body(mass=1.0 + 1j),
        TypeError,
        r"Body 'a' mass must be real",
    ),
    (
        "rigid body mass vector",
        lambda: _body(mass=jnp.ones(2)),
        ValueError,
        r"Body 'a' mass must have shape \(\); got shape \(2,\)",
    ),
    (
        "rigid body inertia zero on a moving body",
        lambda: _body(joint=_HINGE_Y, inertia=(0.0, 0.1, 0.1)),
        ValueError,
        "principal inertia must be positive",
    ),
    (
        "rigid body inertia negative (welded)",
        lambda: _body(inertia=(-0.1, 0.1, 0.1)),
        ValueError,
        "principal inertia must be positive",
    ),
    (
        "rigid body inertia nan",
        lambda: _body(inertia=(NAN, 0.1, 0.1)),
        ValueError,
        r"Body 'a' inertia must be finite",
    ),
    (
        "rigid body inertia tensor asymmetric",
        lambda: _body(inertia=jnp.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])),
        ValueError,
        "the inertia tensor must be symmetric",
    ),
    (
        "rigid body inertia tensor nan",
        lambda: _body(inertia=jnp.diag(jnp.array([1.0, NAN, 1.0]))),
        ValueError,
        r"Body 'a' inertia must be finite",
    ),
    (
        "rigid body inertia tensor shape",
        lambda: _body(inertia=jnp.eye(2)),
        ValueError,
        r"Body 'a' inertia must have shape \(3,\); got shape \(2, 2\)",
    ),
    (
        "rigid body pos shape",
        lambda: _body(pos=(0.0, 1.0)),
        ValueError,
        r"Body 'a' pos must have shape \(3,\); got shape \(2,\)",
    ),
    (
        "rigid body pos nan",
        lambda: _body(pos=(0.0, NAN, 0.0)),
        ValueError,
        r"Body 'a' pos must be finite",
    ),
    (
        "rigid body pos strings",
        lambda: _body(pos=("0", "0", "1")),
        TypeError,
        r"Body 'a' pos must be a real number or array; got \('0', '0', '1'\)",
    ),
    (
        "rigid body com shape",
        lambda: _body(com=jnp.zeros(4)),
        ValueError,
        r"Body 'a' com must have shape \(3,\); got shape \(4,\)",
    ),
    (
        "rigid body quat shape",
        lambda: _body(quat=(1.0, 0.0, 0.0)),
        ValueError,
        r"Body 'a' quat must have shape \(4,\); got shape \(3,\)",
    ),
    (
        "rigid body quat nan",
        lambda: _body(quat=(NAN, 0.0, 0.0, 0.0)),
        ValueError,
        r"Body 'a' quat must be finite",
    ),
    (
        "rigid body inertia_quat zero",
        lambda: _body(inertia_quat=(0.0, 0.0, 0.0, 0.0)),
        ValueError,
        r"Body 'a' inertia_quat must be a non-zero quaternion",
    ),
    (
        "rigid body name empty",
        lambda: rigid.Body("", **_LINK),
        TypeError,
        "Body name must be a non-empty string",
    ),
    (
        "rigid body parent type",
        lambda: rigid.Body("a", parent=0, **_LINK),
        TypeError,
        r"Body 'a': parent must be a body name",
    ),
    (
        "rigid body own parent",
        lambda: rigid.Body("a", parent="a", **_LINK),
        ValueError,
        "Body 'a' cannot be its own parent",
    ),
    (
        "rigid body density without shape",
        lambda: _body(density=1.0),
        ValueError,
        "density needs a shape",
    ),
    (
        "rigid body shape mass and density",
        lambda: rigid.Body("a", shape=_BALL, mass=1.0, density=1.0),
        ValueError,
        "give exactly one of density and mass",
    ),
    (
        "rigid body shape type",
        lambda: rigid.Body("a", shape="sphere", density=1.0),
        TypeError,
        r"Body 'a': shape must be a sciad.rigid shape",
    ),
    # joints
    (
        "rigid hinge axis shape",
        lambda: rigid.HingeJoint(axis=(0.0, 1.0)),
        ValueError,
        r"HingeJoint axis must have shape \(3,\); got shape \(2,\)",
    ),
    (
        "rigid hinge axis nan",
        lambda: rigid.HingeJoint(axis=(0.0, NAN, 1.0)),
        ValueError,
        "HingeJoint axis must be finite",
    ),
    (
        "rigid hinge pos shape",
        lambda: rigid.HingeJoint(pos=(0.0, 0.0)),
        ValueError,
        r"HingeJoint pos must have shape \(3,\)",
    ),
    (
        "rigid hinge armature negative",
        lambda: rigid.HingeJoint(armature=-1.0),
        ValueError,
        r"HingeJoint.armature must be finite and >= 0; got -1.0",
    ),
    (
        "rigid hinge damping vector",
        lambda: rigid.HingeJoint(damping=jnp.ones(3)),
        ValueError,
        r"HingeJoint.damping must be a scalar; got shape \(3,\)",
    ),
    (
        "rigid hinge damping nan",
        lambda: rigid.HingeJoint(damping=NAN),
        ValueError,
        r"HingeJoint.damping must be finite and >= 0; got nan",
    ),
    (
        "rigid hinge limit stiffness negative",
        lambda: rigid.HingeJoint(range=(-1.0, 1.0), limit_stiffness=-5.0),
        ValueError,
        r"HingeJoint.limit_stiffness must be finite and >= 0; got -5.0",
    ),
    (
        "rigid hinge range shape",
        lambda: rigid.HingeJoint(range=(-1.0, 0.0, 1.0)),
        ValueError,
        r"HingeJoint.range \(lower, upper\) must have shape \(2,\); got shape \(3,\)",
    ),
    (
        "rigid hinge range nan",
        lambda: rigid.HingeJoint(range=(NAN, 1.0)),
        ValueError,
        r"HingeJoint.range \(lower, upper\) must be finite",
    ),
    (
        "rigid hinge range empty",
        lambda: rigid.HingeJoint(range=(1.0, 1.0)),
        ValueError,
        "HingeJoint.range must have lower < upper",
    ),
    (
        "rigid slider zero axis",
        lambda: rigid.SliderJoint(axis=(0.0, 0.0, 0.0)),
        ValueError,
        "SliderJoint axis must be non-zero",
    ),
    (
        "rigid slider limit damping negative",
        lambda: rigid.SliderJoint(limit_damping=-1.0),
        ValueError,
        r"SliderJoint.limit_damping must be finite and >= 0; got -1.0",
    ),
    (
        "rigid slider limit kind",
        lambda: rigid.SliderJoint(range=(0.0, 1.0), limit="spring"),
        ValueError,
        r"SliderJoint.limit must be 'hard'",
    ),
    (
        "rigid slider range order",
        lambda: rigid.SliderJoint(range=(0.5, -0.5)),
        ValueError,
        "SliderJoint.range must have lower < upper",
    ),
    (
        "rigid ball max_angle zero",
        lambda: rigid.BallJoint(max_angle=0.0),
        ValueError,
        r"BallJoint.max_angle must lie in \(0.0, 3.14159\d*\]; got 0.0",
    ),
    (
        "rigid ball max_angle above pi",
        lambda: rigid.BallJoint(max_angle=4.0),
        ValueError,
        r"BallJoint.max_angle must lie in \(0.0, 3.14159\d*\]; got 4.0",
    ),
    (
        "rigid ball max_angle vector",
        lambda: rigid.BallJoint(max_angle=jnp.ones(2)),
        ValueError,
        "BallJoint.max_angle must be a real scalar",
    ),
    (
        "rigid ball pos shape",
        lambda: rigid.BallJoint(pos=jnp.zeros(2)),
        ValueError,
        r"BallJoint pos must have shape \(3,\)",
    ),
    (
        "rigid ball armature negative",
        lambda: rigid.BallJoint(armature=-0.1),
        ValueError,
        r"BallJoint.armature must be finite and >= 0",
    ),
    (
        "rigid free damping negative",
        lambda: rigid.FreeJoint(damping=-1.0),
        ValueError,
        r"FreeJoint.damping must be finite and >= 0; got -1.0",
    ),
    (
        "rigid free armature nan",
        lambda: rigid.FreeJoint(armature=NAN),
        ValueError,
        r"FreeJoint.armature must be finite and >= 0; got nan",
    ),
    # geoms
    (
        "rigid geom shape type",
        lambda: rigid.Geom("sphere"),
        TypeError,
        "Geom shape must be a sciad.rigid shape",
    ),
    (
        "rigid geom friction negative",
        lambda: rigid.Geom(_BALL, friction=-0.5),
        ValueError,
        r"Geom friction must be finite and >= 0; got -0.5",
    ),
    (
        "rigid geom friction nan",
        lambda: rigid.Geom(_BALL, name="foot", friction=NAN),
        ValueError,
        r"Geom 'foot' friction must be finite and >= 0; got nan",
    ),
    (
        "rigid geom friction vector",
        lambda: rigid.Geom(_BALL, friction=jnp.ones(3)),
        ValueError,
        r"Geom friction must be a scalar; got shape \(3,\)",
    ),
    (
        "rigid geom restitution above one",
        lambda: rigid.Geom(_BALL, restitution=1.5),
        ValueError,
        r"Geom restitution must lie in \[0.0, 1.0\]; got 1.5",
    ),
    (
        "rigid geom restitution negative",
        lambda: rigid.Geom(_BALL, restitution=-0.1),
        ValueError,
        r"Geom restitution must lie in \[0.0, 1.0\]; got -0.1",
    ),
    (
        "rigid geom restitution vector",
        lambda: rigid.Geom(_BALL, restitution=jnp.zeros(2)),
        ValueError,
        "Geom restitution must be a real scalar",
    ),
    (
        "rigid geom pos shape",
        lambda: rigid.Geom(_BALL, name="foot", pos=(0.0, 0.0)),
        ValueError,
        r"Geom 'foot' pos must have shape \(3,\); got shape \(2,\)",
    ),
    (
        "rigid geom pos nan",
        lambda: rigid.Geom(_BALL, pos=(0.0, 0.0, NAN)),
        ValueError,
        "Geom pos must be finite",
    ),
    (
        "rigid geom quat zero",
        lambda: rigid.Geom(_BALL, quat=(0.0, 0.0, 0.0, 0.0)),
        ValueError,
        "Geom quat must be a non-zero quaternion",
    ),
    (
        "rigid geom contype negative",
        lambda: rigid.Geom(_BALL, contype=-1),
        ValueError,
        "Geom contype must be an int >= 0; got -1",
    ),
    (
        "rigid geom conaffinity float",
        lambda: rigid.Geom(_BALL, conaffinity=1.0),
        TypeError,
        "Geom conaffinity must be an int; got 1.0",
    ),
    (
        "rigid geom body type",
        lambda: rigid.Geom(_BALL, body=1),
        TypeError,
        "Geom body must be a body name or None",
    ),
    (
        "rigid geom name type",
        lambda: rigid.Geom(_BALL, name=3),
        TypeError,
        "Geom name must be a string or None",
    ),
    (
        "rigid geom unknown body",
        lambda: _with(geoms=[rigid.Geom(_BALL, body="b")]),
        ValueError,
        "no body named 'b'",
    ),
    (
        "rigid geoms item type",
        lambda: _with(geoms=[_BALL]),
        TypeError,
        "MultiBody geoms must be sciad.rigid.Geom; item 0",
    ),
    # the contact model
    (
        "rigid impedance time constant negative",
        lambda: rigid.Impedance(time_constant=-0.01),
        ValueError,
        r"Impedance.time_constant and Impedance.damping_ratio must both be > 0 \(time "
        r"constant and damping ratio\) or both <= 0 \(MuJoCo's direct format: -stiffness "
        r"and -damping\); got \(-0.01, 1.0\)",
    ),
    (
        "rigid impedance time constant nan",
        lambda: rigid.Impedance(time_constant=NAN),
        ValueError,
        r"Impedance.time_constant must be finite",
    ),
    (
        "rigid impedance damping ratio zero",
        lambda: rigid.Impedance(damping_ratio=0.0),
        ValueError,
        r"Impedance.time_constant and Impedance.damping_ratio must both be > 0 .* got "
        r"\(0.02, 0.0\)",
    ),
    (
        "rigid impedance d0 one",
        lambda: rigid.Impedance(d0=1.0),
        ValueError,
        r"Impedance.d0 must lie in \[0.0001, 0.9999\]; got 1.0",
    ),
    (
        "rigid impedance dmax vector",
        lambda: rigid.Impedance(dmax=jnp.ones(2)),
        ValueError,
        r"Impedance.dmax must be a real scalar",
    ),
    (
        "rigid impedance width negative",
        lambda: rigid.Impedance(width=-1e-3),
        ValueError,
        r"Impedance.width must be finite and >= 0; got -0.001",
    ),
    (
        "rigid impedance power below one",
        lambda: rigid.Impedance(power=0.5),
        ValueError,
        r"Impedance.power must lie in \[1.0, inf\]; got 0.5",
    ),
    (
        "rigid impedance solref mixed formats",
        lambda: rigid.Impedance.from_mujoco((-100.0, 10.0), (0.9, 0.95, 0.001, 0.5, 2)),
        ValueError,
        r"solref \(-100.0, 10.0\) mixes the standard format \(positive: time constant "
        r"and damping ratio\) and the direct one",
    ),
    (
        "rigid impedance direct stiffness negative",
        lambda: rigid.Impedance.direct(stiffness=-1.0, damping=10.0),
        ValueError,
        r"Impedance.direct stiffness must be finite and >= 0; got -1.0",
    ),
    (
        "rigid geom condim 5",
        lambda: rigid.Geom(rigid.Sphere(0.1), condim=5, name="ball"),
        ValueError,
        r"Geom 'ball' condim must be one of \(1, 3, 4, 6\); got 5",
    ),
    (
        "rigid geom condim 2",
        lambda: rigid.Geom(rigid.Sphere(0.1), condim=2, name="ball"),
        ValueError,
        r"Geom 'ball' condim must be one of \(1, 3, 4, 6\); got 2",
    ),
    (
        "rigid geom torsional friction negative",
        lambda: rigid.Geom(rigid.Sphere(0.1), torsional_friction=-0.1, name="ball"),
        ValueError,
        r"Geom 'ball' torsional_friction must be finite and >= 0; got -0.1",
    ),
    (
        "rigid geom rolling friction vector",
        lambda: rigid.Geom(rigid.Sphere(0.1), rolling_friction=jnp.ones(2), name="ball"),
        ValueError,
        r"Geom 'ball' rolling_friction must be",
    ),
    (
        "rigid geom priority float",
        lambda: rigid.Geom(rigid.Sphere(0.1), priority=1.5, name="ball"),
        TypeError,
        r"Geom 'ball' priority must be an int; got 1.5",
    ),
    (
        "rigid inverse weights two-dimensional",
        lambda: rigid.InverseWeights(jnp.ones(2), jnp.ones(2), jnp.ones((2, 2))),
        ValueError,
        r"InverseWeights.dof must be one-dimensional; got shape \(2, 2\)",
    ),
    (
        "rigid inverse weights negative",
        lambda: rigid.InverseWeights(-jnp.ones(2), jnp.ones(2), jnp.ones(2)),
        ValueError,
        r"InverseWeights.body_translation must be finite and >= 0; got -1.0",
    ),
    (
        "rigid contact impedance type",
        lambda: rigid.ContactModel(impedance=0.02),
        TypeError,
        r"ContactModel.impedance must be a sciad.rigid.Impedance; got 0.02",
    ),
    (
        "rigid contact cone unknown",
        lambda: rigid.ContactModel(cone="round"),
        ValueError,
        r"ContactModel.cone must be 'elliptic' or 'pyramidal'; got 'round'",
    ),
    (
        "rigid contact impratio negative",
        lambda: rigid.ContactModel(cone="pyramidal", impratio=-1.0),
        ValueError,
        r"ContactModel.impratio must be finite and > 0; got -1.0",
    ),
    (
        "rigid contact max_iterations zero",
        lambda: rigid.ContactModel(max_iterations=0),
        ValueError,
        r"ContactModel.max_iterations must be an int >= 1; got 0",
    ),
    (
        "rigid contact max_iterations float",
        lambda: rigid.ContactModel(max_iterations=10.0),
        TypeError,
        r"ContactModel.max_iterations must be an int",
    ),
    (
        "rigid contact tolerance zero",
        lambda: rigid.ContactModel(tolerance=0.0),
        ValueError,
        r"ContactModel.tolerance must be finite and > 0; got 0.0",
    ),
    (
        "rigid contact tolerance string",
        lambda: rigid.ContactModel(tolerance="tight"),
        TypeError,
        r"ContactModel.tolerance must be a float",
    ),
    (
        "rigid contact noslip_iterations negative",
        lambda: rigid.ContactModel(cone="pyramidal", noslip_iterations=-1),
        ValueError,
        r"ContactModel.noslip_iterations must be an int >= 0; got -1",
    ),
    (
        "rigid contact noslip with the elliptic cone",
        lambda: rigid.ContactModel(noslip_iterations=4),
        ValueError,
        r"ContactModel\(noslip_iterations > 0\) needs cone='pyramidal'",
    ),
    (
        "rigid contact noslip_tolerance negative",
        lambda: rigid.ContactModel(cone="pyramidal", noslip_tolerance=-1e-6),
        ValueError,
        r"ContactModel.noslip_tolerance must be finite and > 0; got -1e-06",
    ),
    (
        "rigid contact model type",
        lambda: _contact_model(contact=0.01),
        TypeError,
        "contact must be a sciad.rigid.ContactModel",
    ),
    # actuators
    (
        "rigid actuator dof negative",
        lambda: rigid.JointActuator("a", dof=-1),
        ValueError,
        "JointActuator dof must be an int >= 0; got -1",
    ),
    (
        "rigid actuator dof float",
        lambda: rigid.JointActuator("a", dof=0.0),
        TypeError,
        "JointActuator dof must be an int",
    ),
    (
        "rigid actuator joint type",
        lambda: rigid.JointActuator(0),
        TypeError,
        r"JointActuator joint must be a body name \(str\)",
    ),
    (
        "rigid actuator gain nan",
        lambda: rigid.JointActuator("a", gain=NAN),
        ValueError,
        "JointActuator 'a' gain must be finite",
    ),
    (
        "rigid actuator bias vector",
        lambda: rigid.JointActuator("a", bias_constant=jnp.ones(2)),
        ValueError,
        "JointActuator 'a' bias_constant must be a real scalar",
    ),
    (
        "rigid actuator bias complex",
        lambda: rigid.JointActuator("a", bias_velocity=1j),
        TypeError,
        "JointActuator 'a' bias_velocity must be a real number",
    ),
    (
        "rigid actuator ctrl_range order",
        lambda: rigid.JointActuator.motor("a", ctrl_range=(1.0, -1.0)),
        ValueError,
        "JointActuator 'a' ctrl_range must have lower < upper",
    ),
    (
        "rigid actuator ctrl_range shape",
        lambda: rigid.JointActuator.motor("a", ctrl_range=(1.0,)),
        ValueError,
        r"JointActuator 'a' ctrl_range must have shape \(2,\); got shape \(1,\)",
    ),
    (
        "rigid actuator ctrl_range nan",
        lambda: rigid.JointActuator.motor("a", ctrl_range=(NAN, 1.0)),
        ValueError,
        "JointActuator 'a' ctrl_range must be finite",
    ),
    (
        "rigid motor gear zero",
        lambda: rigid.JointActuator.motor("a", gear=0.0),
        ValueError,
        "JointActuator.motor gear must be non-zero",
    ),
    (
        "rigid position servo kp negative",
        lambda: rigid.JointActuator.position("a", kp=-10.0),
        ValueError,
        r"JointActuator.position kp must be finite and > 0; got -10.0",
    ),
    (
        "rigid position servo kv negative",
        lambda: rigid.JointActuator.position("a", kp=10.0, kv=-1.0),
        ValueError,
        r"JointActuator.position kv must be finite and >= 0; got -1.0",
    ),
    (
        "rigid velocity servo kv zero",
        lambda: rigid.JointActuator.velocity("a", kv=0.0),
        ValueError,
        r"JointActuator.velocity kv must be finite and > 0; got 0.0",
    ),
    (
        "rigid actuator dof out of range",
        lambda: _with_actuator(rigid.JointActuator.motor("a", dof=1)),
        ValueError,
        "dof 1 out of range for HingeJoint with 1 dofs",
    ),
    (
        "rigid actuators item type",
        lambda: _with(actuators=["a"]),
        TypeError,
        "MultiBody actuators must be sciad.rigid.JointActuator",
    ),
    # control signals
    (
        "rigid interpolated ts unsorted",
        lambda: rigid.InterpolatedControl(jnp.array([0.0, 2.0, 1.0]), jnp.zeros((3, 1))),
        ValueError,
        "InterpolatedControl ts must be strictly increasing",
    ),
    (
        "rigid interpolated ts repeated",
        lambda: rigid.InterpolatedControl(jnp.array([0.0, 1.0, 1.0]), jnp.zeros((3, 1))),
        ValueError,
        "InterpolatedControl ts must be strictly increasing",
    ),
    (
        "rigid interpolated one knot",
        lambda: rigid.InterpolatedControl(jnp.array([0.0]), jnp.zeros((1, 1))),
        ValueError,
        r"ts must have shape \(m,\) with m >= 2",
    ),
    (
        "rigid interpolated ts matrix",
        lambda: rigid.InterpolatedControl(jnp.zeros((2, 2)), jnp.zeros((2, 1))),
        ValueError,
        r"ts must have shape \(m,\) with m >= 2; got \(2, 2\)",
    ),
    (
        "rigid interpolated values length",
        lambda: rigid.InterpolatedControl(jnp.array([0.0, 1.0]), jnp.zeros((3, 1))),
        ValueError,
        r"values must have shape \(m, \.\.\.\) with m = 2 knots; got \(3, 1\)",
    ),
    (
        "rigid interpolated ts nan",
        lambda: rigid.InterpolatedControl(jnp.array([0.0, NAN]), jnp.zeros((2, 1))),
        ValueError,
        "InterpolatedControl.ts must be finite",
    ),
    (
        "rigid interpolated values nan",
        lambda: rigid.InterpolatedControl(jnp.array([0.0, 1.0]), jnp.array([[0.0], [NAN]])),
        ValueError,
        "InterpolatedControl.values must be finite",
    ),
    (
        "rigid constant control nan",
        lambda: rigid.ConstantControl(jnp.array([NAN])),
        ValueError,
        "ConstantControl.value must be finite",
    ),
    (
        "rigid constant control complex",
        lambda: rigid.ConstantControl(jnp.array([1j])),
        TypeError,
        "ConstantControl.value must be real",
    ),
    (
        "rigid control type",
        lambda: _with(actuators=[rigid.JointActuator.motor("a")], control=jnp.zeros(1)),
        TypeError,
        "control must be a sciad.rigid.AbstractControl",
    ),
    (
        "rigid interpolated control shape",
        lambda: _with(
            actuators=[rigid.JointActuator.motor("a")],
            control=rigid.InterpolatedControl(jnp.array([0.0, 1.0]), jnp.zeros((2, 3))),
        ),
        ValueError,
        r"control must return shape \(1,\) \(1 actuators\); got \(3,\)",
    ),
    # the multibody
    (
        "rigid gravity shape",
        lambda: _with(gravity=(0.0, -9.81)),
        ValueError,
        r"MultiBody gravity must have shape \(3,\); got shape \(2,\)",
    ),
    (
        "rigid gravity nan",
        lambda: _with(gravity=(0.0, 0.0, NAN)),
        ValueError,
        "MultiBody gravity must be finite",
    ),
    (
        "rigid gravity complex",
        lambda: _with(gravity=jnp.array([0.0, 0.0, -9.81j])),
        TypeError,
        "MultiBody gravity must be real",
    ),
    (
        "rigid wrench nan",
        lambda: _with(wrench=jnp.full((1, 6), NAN)),
        ValueError,
        "MultiBody wrench must be finite",
    ),
    (
        "rigid exclude unknown body",
        lambda: _with(exclude=[("a", "b")]),
        ValueError,
        "MultiBody exclude: no body named 'b'",
    ),
    (
        "rigid exclude not a pair",
        lambda: _with(exclude=["a"]),
        ValueError,
        r"MultiBody exclude items must be \(body, body\) pairs",
    ),
    (
        "rigid bodies item type",
        lambda: rigid.MultiBody([_BALL]),
        TypeError,
        "MultiBody bodies must be sciad.rigid.Body; item 0",
    ),
    (
        "rigid no bodies",
        lambda: rigid.MultiBody([]),
        ValueError,
        "MultiBody needs at least one body",
    ),
    # states and runs
    (
        "rigid state zero quaternion",
        lambda: _free_state((0.0, 0.0, 0.0, 0.0)),
        ValueError,
        r"y0\[0\] \(q\) of body 'f' \(FreeJoint\), q\[0:7\] = .* is off the joint's manifold",
    ),
    (
        "rigid state non-unit quaternion",
        lambda: _free_state((1.0, 0.0, 0.0, 1.0)),
        ValueError,
        "quaternions must have unit length",
    ),
    (
        "rigid state v shape",
        lambda: sciad.simulate(_FREE, (_FREE.default_state()[0], jnp.zeros(7)), dt=0.01, n_steps=1),
        ValueError,
        r"y0\[1\] \(v\) must have shape \(6,\)",
    ),
    (
        "rigid dt zero",
        lambda: sciad.simulate(_ONE_LINK, _ONE_LINK.default_state(), dt=0.0, n_steps=1),
        ValueError,
        "dt must be positive",
    ),
    (
        "rigid dt negative",
        lambda: sciad.simulate(_LIMITED, _LIMITED.default_state(), dt=-1e-3, n_steps=1),
        ValueError,
        "dt must be positive",
    ),
    (
        "rigid semi-implicit mode",
        lambda: rigid.SemiImplicitEuler(implicit="implicitfast"),
        ValueError,
        "SemiImplicitEuler.implicit must be one of 'none', 'damping', 'fast', 'full'; "
        "got 'implicitfast'",
    ),
    (
        "rigid contacts under FreeBodySplitting",
        lambda: sciad.simulate(
            _contact_model(),
            _contact_model().default_state(),
            dt=1e-3,
            n_steps=1,
            integrator=rigid.FreeBodySplitting(),
        ),
        ValueError,
        "FreeBodySplitting cannot run a MultiBody with contacts",
    ),
    (
        "rigid contacts under RK4",
        lambda: sciad.simulate(
            _contact_model(),
            _contact_model().default_state(),
            dt=1e-3,
            n_steps=1,
            integrator=sciad.RK4(),
        ),
        ValueError,
        "no smooth vector field",
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
            '<mujoco><worldbody><body name="leg"><joint name="k"/><geom size="0.1"/></body>'
            '<body name="arm" gravcomp="1"><joint name="y" type="ball" actuatorgravcomp="true"/>'
            '<geom size="0.1"/></body></worldbody>'
            '<actuator><general name="m" joint="k" dyntype="user"/></actuator></mujoco>'
        ),
        ValueError,
        r"cannot represent 2 features of this model faithfully:\n  - MJCF joint 'y': "
        r"actuatorgravcomp on a ball or free joint.*\n  - MJCF actuator 'm': activation "
        "dynamics mjDYN_USER",
    ),
    (
        "mjcf tendon",
        lambda: rigid.load_mjcf(
            _MJCF_HINGE.format(
                '<tendon><fixed name="t" armature="0.1"><joint joint="j" coef="1"/></fixed>'
                "</tendon>"
            )
        ),
        ValueError,
        "MJCF tendon 't': tendon armature is not supported",
    ),
    (
        "mjcf actuator user dynamics",
        lambda: rigid.load_mjcf(
            _MJCF_HINGE.format('<actuator><general name="m" joint="j" dyntype="user"/></actuator>')
        ),
        ValueError,
        "MJCF actuator 'm': activation dynamics mjDYN_USER are not supported",
    ),
    (
        "mjcf qpos shape",
        lambda: rigid.load_mjcf(_MJCF_HINGE.format("")).qpos_to_q(jnp.zeros(3)),
        ValueError,
        r"qpos must have shape \(\.\.\., 1\); got \(3,\)",
    ),
    (
        "rigid ellipsoid zero radius",
        lambda: rigid.Ellipsoid(jnp.array([0.1, 0.0, 0.1])),
        ValueError,
        r"Ellipsoid.radii must be finite and > 0; got 0.0",
    ),
    (
        "rigid ellipsoid negative radius",
        lambda: rigid.Ellipsoid(jnp.array([0.1, -0.25, 0.1])),
        ValueError,
        r"Ellipsoid.radii must be finite and > 0; got -0.25",
    ),
    (
        "rigid ellipsoid infinite radius",
        lambda: rigid.Ellipsoid(jnp.array([0.1, jnp.inf, 0.1])),
        ValueError,
        r"Ellipsoid.radii must be finite and > 0; got inf",
    ),
    (
        "rigid ellipsoid radii shape",
        lambda: rigid.Ellipsoid(jnp.array([0.1, 0.2])),
        ValueError,
        r"Ellipsoid.radii must have shape \(3,\); got shape \(2,\)",
    ),
]


CASES = RIGID_CASES + VALIDATION_CASES + MJCF_CASES

# sciad.rigid.Medium (fluid forces) and its MJCF import.
CASES += [
    (
        "medium negative density",
        lambda: rigid.Medium(density=-1.0),
        ValueError,
        r"Medium\.density must be finite and >= 0; got -1\.0",
    ),
    (
        "medium nan viscosity",
        lambda: rigid.Medium(viscosity=NAN),
        ValueError,
        r"Medium\.viscosity must be finite; got nan",
    ),
    (
        "medium negative viscosity",
        lambda: rigid.Medium(viscosity=-0.1),
        ValueError,
        r"Medium\.viscosity must be finite and >= 0; got -0\.1",
    ),
    (
        "medium density not a scalar",
        lambda: rigid.Medium(density=jnp.ones(2)),
        ValueError,
        r"Medium\.density must have shape \(\); got shape \(2,\)",
    ),
    (
        "medium complex density",
        lambda: rigid.Medium(density=1j),
        TypeError,
        r"Medium\.density must be real",
    ),
    (
        "medium wind shape",
        lambda: rigid.Medium(wind=(1.0, 2.0)),
        ValueError,
        r"Medium\.wind must have shape \(3,\); got shape \(2,\)",
    ),
    (
        "medium infinite wind",
        lambda: rigid.Medium(wind=(0.0, float("inf"), 0.0)),
        ValueError,
        r"Medium\.wind must be finite",
    ),
    (
        "multibody medium type",
        lambda: _with(medium=1000.0),
        TypeError,
        r"MultiBody medium must be a sciad\.rigid\.Medium; got 1000\.0",
    ),
    (
        "fluid ellipsoid body type",
        lambda: rigid.FluidEllipsoid(3, (0.1, 0.1, 0.1)),  # pyright: ignore[reportArgumentType]
        TypeError,
        r"FluidEllipsoid\.body must be a body name; got 3",
    ),
    (
        "fluid ellipsoid zero semiaxis",
        lambda: rigid.FluidEllipsoid("a", (0.1, 0.0, 0.1)),
        ValueError,
        r"FluidEllipsoid 'a' semiaxes must be finite and > 0; got 0\.0",
    ),
    (
        "fluid ellipsoid semiaxes shape",
        lambda: rigid.FluidEllipsoid("a", (0.1, 0.1)),
        ValueError,
        r"FluidEllipsoid 'a' semiaxes must have shape \(3,\); got shape \(2,\)",
    ),
    (
        "fluid ellipsoid nan drag",
        lambda: rigid.FluidEllipsoid("a", (0.1, 0.1, 0.1), blunt_drag=NAN),
        ValueError,
        r"FluidEllipsoid 'a' blunt_drag must be finite",
    ),
    (
        "fluid ellipsoid negative virtual mass",
        lambda: rigid.FluidEllipsoid(
            "a", (0.1, 0.1, 0.1), virtual_mass=(1.0, -1.0, 1.0), virtual_inertia=(0.0, 0.0, 0.0)
        ),
        ValueError,
        r"FluidEllipsoid 'a' virtual_mass must be finite and >= 0; got -1\.0",
    ),
    (
        "fluid ellipsoid zero quat",
        lambda: rigid.FluidEllipsoid("a", (0.1, 0.1, 0.1), quat=(0.0, 0.0, 0.0, 0.0)),
        ValueError,
        r"FluidEllipsoid 'a' quat must be a non-zero quaternion",
    ),
    (
        "medium ellipsoids type",
        lambda: rigid.Medium(1000.0, ellipsoids=[rigid.Sphere(0.1)]),  # pyright: ignore[reportArgumentType]
        TypeError,
        r"Medium\.ellipsoids must be sciad\.rigid\.FluidEllipsoid; item 0 is Sphere",
    ),
    (
        "medium ellipsoid unknown body",
        lambda: _with(
            medium=rigid.Medium(1000.0, ellipsoids=[rigid.FluidEllipsoid("x", (0.1, 0.1, 0.1))])
        ),
        ValueError,
        r"FluidEllipsoid: no body named 'x'; bodies: \('a',\)",
    ),
]


def _tendon_model(*tendons, actuators=(), **kw):
    bodies = [
        rigid.Body("a", joint=_HINGE_Y, **_LINK),
        rigid.Body("b", parent="a", joint=rigid.BallJoint(), pos=(0.0, 0.0, -1.0), **_LINK),
    ]
    return rigid.MultiBody(bodies, tendons=tendons, actuators=actuators, **kw)


CASES += [
    (
        "tendon negative stiffness",
        lambda: rigid.FixedTendon("t", [("a", 1.0)], stiffness=-1.0),
        ValueError,
        r"FixedTendon 't' stiffness must be finite and >= 0; got -1\.0",
    ),
    (
        "tendon nan damping",
        lambda: rigid.SpatialTendon(
            "t", [(None, (0, 0, 0)), ("a", (1, 0, 0))], damping=float("nan")
        ),
        ValueError,
        r"SpatialTendon 't' damping must be finite and >= 0; got nan",
    ),
    (
        "tendon negative frictionloss",
        lambda: rigid.FixedTendon("t", [("a", 1.0)], frictionloss=-0.5),
        ValueError,
        r"FixedTendon 't' frictionloss must be finite and >= 0; got -0\.5",
    ),
    (
        "tendon negative margin",
        lambda: rigid.FixedTendon("t", [("a", 1.0)], range=(0.0, 1.0), margin=-0.1),
        ValueError,
        r"FixedTendon 't' margin must be finite and >= 0",
    ),
    (
        "tendon range reversed",
        lambda: rigid.FixedTendon("t", [("a", 1.0)], range=(1.0, 0.5)),
        ValueError,
        r"FixedTendon 't' range must have lower < upper; got \(1\.0, 0\.5\)",
    ),
    (
        "tendon range shape",
        lambda: rigid.FixedTendon("t", [("a", 1.0)], range=(0.0, 1.0, 2.0)),
        ValueError,
        r"FixedTendon 't' range must have shape \(2,\)",
    ),
    (
        "tendon springlength reversed",
        lambda: rigid.FixedTendon("t", [("a", 1.0)], springlength=(0.3, 0.1)),
        ValueError,
        r"FixedTendon 't' springlength must have lower <= upper; got \(0\.3, 0\.1\)",
    ),
    (
        "tendon empty name",
        lambda: rigid.FixedTendon("", [("a", 1.0)]),
        TypeError,
        r"FixedTendon name must be a non-empty str; got ''",
    ),
    (
        "tendon no joints",
        lambda: rigid.FixedTendon("t", []),
        ValueError,
        r"FixedTendon 't' joints must be a non-empty list of \(body, coef\)",
    ),
    (
        "tendon joint item",
        lambda: rigid.FixedTendon("t", [("a", 1.0, 2.0)]),
        ValueError,
        r"FixedTendon 't' joints items must be \(body name, coef\) pairs",
    ),
    (
        "tendon coef not scalar",
        lambda: rigid.FixedTendon("t", [("a", (1.0, 2.0))]),
        ValueError,
        r"FixedTendon 't' coef of 'a' must be a real scalar",
    ),
    (
        "spatial tendon one point",
        lambda: rigid.SpatialTendon("t", [("a", (0.0, 0.0, 0.0))]),
        ValueError,
        r"SpatialTendon 't' path must be a list of at least two \(body, pos\) points",
    ),
    (
        "spatial tendon point shape",
        lambda: rigid.SpatialTendon("t", [(None, (0.0, 0.0)), ("a", (0.0, 0.0, 1.0))]),
        ValueError,
        r"SpatialTendon 't' path point 0 must have shape \(3,\)",
    ),
    (
        "tendon limit impedance type",
        lambda: rigid.FixedTendon("t", [("a", 1.0)], range=(0, 1), limit_impedance=(0.02, 1.0)),
        TypeError,
        r"FixedTendon 't' limit_impedance must be a sciad\.rigid\.Impedance or None",
    ),
    (
        "tendon unknown joint",
        lambda: _tendon_model(rigid.FixedTendon("t", [("z", 1.0)])),
        ValueError,
        r"FixedTendon 't': no body named 'z'",
    ),
    (
        "tendon on a ball joint",
        lambda: _tendon_model(rigid.FixedTendon("t", [("b", 1.0)])),
        ValueError,
        r"FixedTendon 't': body 'b' has a BallJoint; a fixed tendon couples hinges and sliders",
    ),
    (
        "spatial tendon unknown body",
        lambda: _tendon_model(rigid.SpatialTendon("t", [(None, (0, 0, 0)), ("z", (0, 0, 1))])),
        ValueError,
        r"SpatialTendon 't': no body named 'z'",
    ),
    (
        "tendon duplicate name",
        lambda: _tendon_model(
            rigid.FixedTendon("t", [("a", 1.0)]), rigid.FixedTendon("t", [("a", 2.0)])
        ),
        ValueError,
        r"MultiBody: duplicate tendon name 't'",
    ),
    (
        "tendons item type",
        lambda: _tendon_model(rigid.HingeJoint()),
        TypeError,
        r"MultiBody tendons must be sciad\.rigid\.FixedTendon or SpatialTendon; item 0",
    ),
    (
        "tendon actuator unknown tendon",
        lambda: _tendon_model(
            rigid.FixedTendon("t", [("a", 1.0)]), actuators=[rigid.TendonActuator.motor("u")]
        ),
        ValueError,
        r"TendonActuator: no tendon named 'u'; tendons: \['t'\]",
    ),
    (
        "tendon actuator negative kp",
        lambda: rigid.TendonActuator.position("t", kp=-1.0),
        ValueError,
        r"TendonActuator\.position kp must be finite and > 0; got -1\.0",
    ),
    (
        "tendon actuator ctrl range",
        lambda: rigid.TendonActuator("t", ctrl_range=(1.0, -1.0)),
        ValueError,
        r"TendonActuator 't' ctrl_range must have lower < upper",
    ),
    (
        "tendon actuator gain shape",
        lambda: rigid.TendonActuator("t", gain=(1.0, 2.0)),
        ValueError,
        r"TendonActuator 't' gain must be a real scalar",
    ),
    (
        "tendon inverse weights missing",
        lambda: _tendon_model(
            rigid.FixedTendon("t", [("a", 1.0)], range=(-1.0, 1.0)),
            inverse_weights=rigid.InverseWeights(jnp.ones(2), jnp.ones(2), jnp.ones(4)),
        ),
        ValueError,
        r"MultiBody inverse_weights\.tendon must have shape \(1,\) \(one per tendon",
    ),
    (
        "mjcf tendon nonlinear spring",
        lambda: rigid.load_mjcf(
            _MJCF_HINGE.format(
                '<tendon><fixed name="t" stiffness="1 0 1">'
                '<joint joint="j" coef="1"/></fixed></tendon>'
            )
        ),
        ValueError,
        r"MJCF tendon 't': nonlinear tendon stiffness \(stiffnesspoly\) is not supported",
    ),
]


_TENDON_A = rigid.FixedTendon("ta", [("a", 1.0)])

CASES += [
    (
        "joint negative frictionloss",
        lambda: rigid.HingeJoint(axis=(0.0, 1.0, 0.0), frictionloss=-1.0),
        ValueError,
        r"HingeJoint\.frictionloss must be finite and >= 0; got -1\.0",
    ),
    (
        "joint nan frictionloss",
        lambda: rigid.SliderJoint(frictionloss=float("nan")),
        ValueError,
        r"SliderJoint\.frictionloss must be finite; got nan",
    ),
    (
        "joint friction impedance type",
        lambda: rigid.HingeJoint(frictionloss=1.0, friction_impedance=(0.02, 1.0)),
        TypeError,
        r"HingeJoint\.friction_impedance must be a sciad\.rigid\.Impedance or None",
    ),
    (
        "tendon equality unknown tendon",
        lambda: rigid.MultiBody(
            [rigid.Body("a", joint=_HINGE_Y, **_LINK)],
            tendons=[_TENDON_A],
            equalities=[rigid.TendonEquality("ta", "tb")],
        ),
        ValueError,
        r"TendonEquality: no tendon named 'tb'; tendons: \['ta'\]",
    ),
    (
        "tendon equality polycoef shape",
        lambda: rigid.TendonEquality("ta", polycoef=(0.0, 1.0, 0.0)),
        ValueError,
        r"TendonEquality polycoef must have shape \(5,\)",
    ),
    (
        "tendon equality reference shape",
        lambda: rigid.TendonEquality("ta", "tb", reference=(0.5,)),
        ValueError,
        r"TendonEquality reference must have shape \(2,\)",
    ),
    (
        "tendon equality name type",
        lambda: rigid.TendonEquality(3),
        TypeError,
        r"TendonEquality first must be a non-empty str \(a tendon name\); got 3",
    ),
    (
        "tendon equality not an equality",
        lambda: rigid.MultiBody(
            [rigid.Body("a", joint=_HINGE_Y, **_LINK)], tendons=[_TENDON_A], equalities=["ta"]
        ),
        TypeError,
        r"MultiBody equalities must be sciad\.rigid\.TendonEquality, JointEquality, "
        "ConnectEquality or WeldEquality; item 0 is 'ta'",
    ),
]

_FILTERED = rigid.MultiBody(
    [rigid.Body("a", joint=_HINGE_Y, **_LINK)],
    actuators=[rigid.JointActuator.motor("a", activation=rigid.FilterActivation(0.1, early=True))],
)

CASES += [
    (
        "activation tau negative",
        lambda: rigid.FilterActivation(-0.1),
        ValueError,
        r"FilterActivation\.tau must be finite and > 0; got -0\.1",
    ),
    (
        "activation range reversed",
        lambda: rigid.IntegratorActivation(act_range=(1.0, -1.0)),
        ValueError,
        r"IntegratorActivation\.act_range must have lower < upper",
    ),
    (
        "activation early not bool",
        lambda: rigid.FilterActivation(0.1, early=1),
        TypeError,
        r"FilterActivation\.early must be True or False; got 1",
    ),
    (
        "activation wrong type",
        lambda: rigid.JointActuator("a", activation=0.1),
        TypeError,
        r"JointActuator 'a' activation must be a sciad\.rigid\.FilterActivation, "
        "IntegratorActivation or None; got 0.1",
    ),
    (
        "activation state missing",
        lambda: sciad.simulate(_FILTERED, _FILTERED.default_state()[:2], dt=0.01, n_steps=2),
        ValueError,
        r"y0 for this MultiBody must be a tuple \(q, v, act\) of shapes \(1,\), \(1,\), "
        r"\(1,\); got a tuple of 2",
    ),
    (
        "activation state shape",
        lambda: sciad.simulate(
            _FILTERED, (jnp.zeros(1), jnp.zeros(1), jnp.zeros(2)), dt=0.01, n_steps=2
        ),
        ValueError,
        r"y0\[2\] \(act\) must have shape \(1,\) \(actuator activations\); got shape \(2,\)",
    ),
    (
        "activation early without a step",
        lambda: sciad.simulate(
            _FILTERED, _FILTERED.default_state(), dt=0.01, n_steps=2, integrator=sciad.RK4()
        ),
        ValueError,
        r"an actuator with early activation \(actearly\) needs the step",
    ),
    (
        "activation free body splitting",
        lambda: sciad.simulate(
            rigid.MultiBody(
                [rigid.Body("f", joint=rigid.FreeJoint(), **_LINK)],
                tendons=[
                    rigid.SpatialTendon("t", [(None, (0.0, 0.0, 1.0)), ("f", (0.0, 0.0, 0.0))])
                ],
                actuators=[rigid.TendonActuator("t", activation=rigid.IntegratorActivation())],
            ),
            (jnp.array([0.0, 0, 0, 1, 0, 0, 0]), jnp.zeros(6), jnp.zeros(1)),
            dt=0.01,
            n_steps=2,
            integrator=rigid.FreeBodySplitting(),
        ),
        ValueError,
        "FreeBodySplitting cannot run actuators with activation states",
    ),
    (
        "joint equality name type",
        lambda: rigid.JointEquality("a", 3),
        TypeError,
        r"JointEquality second must be a non-empty str or None \(a body name\); got 3",
    ),
    (
        "joint equality same joint",
        lambda: rigid.JointEquality("a", "a"),
        ValueError,
        "JointEquality first and second must differ; got 'a' twice",
    ),
    (
        "joint equality unknown body",
        lambda: rigid.MultiBody(
            [rigid.Body("a", joint=_HINGE_Y, **_LINK)], equalities=[rigid.JointEquality("a", "b")]
        ),
        ValueError,
        "JointEquality: no body named 'b'",
    ),
    (
        "joint equality free joint",
        lambda: rigid.MultiBody(
            [rigid.Body("f", joint=rigid.FreeJoint(), **_LINK)],
            equalities=[rigid.JointEquality("f")],
        ),
        ValueError,
        "JointEquality: body 'f' has a FreeJoint; joint equalities couple hinges and sliders",
    ),
    (
        "mjcf filter time constant zero",
        lambda: rigid.load_mjcf(
            '<mujoco><worldbody><body name="b"><joint name="j"/><geom size="0.1"/></body>'
            '</worldbody><actuator><general name="f" joint="j" dyntype="filter" dynprm="0"/>'
            "</actuator></mujoco>"
        ),
        ValueError,
        r"MJCF actuator 'f': a filter time constant dynprm\[0\] = 0 \(it must be > 0\)",
    ),
    (
        "mjcf no degrees of freedom",
        lambda: rigid.load_mjcf(
            '<mujoco><worldbody><geom type="plane" size="1 1 1"/></worldbody></mujoco>'
        ),
        ValueError,
        r"MJCF model: no degrees of freedom \(no joints\): a MultiBody needs a moving body",
    ),
]


@pytest.mark.parametrize("name", case_names(CASES))
def test_bad_input(name, bad_input_runner):
    run_case(bad_input_runner, __name__, name)

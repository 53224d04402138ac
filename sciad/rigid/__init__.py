"""The rigid-body pillar (first slice): bodies, shapes, joints, articulated dynamics in
generalised coordinates, and integrators on the configuration manifold.

A [`MultiBody`][sciad.rigid.MultiBody] is a tree of [`Body`][sciad.rigid.Body]s joined
by joints (free, ball, hinge, slider, fixed), with gravity, joint actuators driven by a
differentiable control signal, and applied wrenches; `sciad.simulate` runs it with
[`SemiImplicitEuler`][sciad.rigid.SemiImplicitEuler], [`RKMK4`][sciad.rigid.RKMK4] or,
for free bodies, [`FreeBodySplitting`][sciad.rigid.FreeBodySplitting].

Roadmap: contacts and friction, MJCF import, notebooks and benchmarks.
"""

from ._actuators import (
    AbstractControl as AbstractControl,
    ConstantControl as ConstantControl,
    InterpolatedControl as InterpolatedControl,
    JointActuator as JointActuator,
)
from ._body import Body as Body
from ._integrators import (
    FreeBodySplitting as FreeBodySplitting,
    RKMK4 as RKMK4,
    SemiImplicitEuler as SemiImplicitEuler,
)
from ._joints import (
    AbstractJoint as AbstractJoint,
    BallJoint as BallJoint,
    FixedJoint as FixedJoint,
    FreeJoint as FreeJoint,
    HingeJoint as HingeJoint,
    SliderJoint as SliderJoint,
)
from ._multibody import MultiBody as MultiBody
from ._shapes import (
    AbstractShape as AbstractShape,
    Box as Box,
    Capsule as Capsule,
    Cylinder as Cylinder,
    Sphere as Sphere,
)

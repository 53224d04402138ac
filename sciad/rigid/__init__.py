"""The rigid-body pillar: bodies, shapes, joints, articulated dynamics in generalised
coordinates, contacts, integrators on the configuration manifold, and MJCF import.

A [`MultiBody`][sciad.rigid.MultiBody] is a tree of [`Body`][sciad.rigid.Body]s joined
by joints (free, ball, hinge, slider, fixed), with gravity, joint actuators driven by a
differentiable control signal, applied wrenches, and collision [`Geom`][sciad.rigid.Geom]s
whose contacts (Coulomb friction, restitution) are solved to convergence and
differentiated implicitly, and the drag of a fluid [`Medium`][sciad.rigid.Medium];
`sciad.simulate` runs it with
[`SemiImplicitEuler`][sciad.rigid.SemiImplicitEuler] (with contacts),
[`RKMK4`][sciad.rigid.RKMK4] or, for free bodies,
[`FreeBodySplitting`][sciad.rigid.FreeBodySplitting].
"""

from ._activation import (
    AbstractActivation as AbstractActivation,
    FilterActivation as FilterActivation,
    IntegratorActivation as IntegratorActivation,
)
from ._actuators import (
    AbstractActuator as AbstractActuator,
    AbstractControl as AbstractControl,
    ConstantControl as ConstantControl,
    InterpolatedControl as InterpolatedControl,
    JointActuator as JointActuator,
    TendonActuator as TendonActuator,
)
from ._body import Body as Body
from ._collision import Contacts as Contacts
from ._equality import (
    AbstractEquality as AbstractEquality,
    AbstractScalarEquality as AbstractScalarEquality,
    JointEquality as JointEquality,
    TendonEquality as TendonEquality,
)
from ._equality_bodies import ConnectEquality as ConnectEquality, WeldEquality as WeldEquality
from ._fluid import FluidEllipsoid as FluidEllipsoid, Medium as Medium
from ._geom import (
    ContactModel as ContactModel,
    ContactPair as ContactPair,
    Geom as Geom,
)
from ._hfield import HeightField as HeightField
from ._impedance import Impedance as Impedance, InverseWeights as InverseWeights
from ._integrators import (
    ConstraintSolveState as ConstraintSolveState,
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
from ._mesh import ConvexMesh as ConvexMesh
from ._mjcf import (
    from_mujoco as from_mujoco,
    load_mjcf as load_mjcf,
    MJCFModel as MJCFModel,
)
from ._multibody import MultiBody as MultiBody
from ._shapes import (
    AbstractShape as AbstractShape,
    Box as Box,
    Capsule as Capsule,
    Cylinder as Cylinder,
    Ellipsoid as Ellipsoid,
    Plane as Plane,
    Sphere as Sphere,
)
from ._site_actuator import SiteActuator as SiteActuator
from ._tendon_wrap import TendonPulley as TendonPulley, TendonWrap as TendonWrap
from ._tendons import (
    AbstractTendon as AbstractTendon,
    FixedTendon as FixedTendon,
    SpatialTendon as SpatialTendon,
)

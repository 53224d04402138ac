"""A body: its place in the tree, its joint, and its inertial parameters."""

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float
import numpy as np
from scipy.spatial.transform import Rotation

from .._core._geometry import quat_multiply, quat_normalize
from .._core._types import Anything, FloatScalar
from .._core._validate import as_float_array, check_scalar, is_concrete
from ._joints import AbstractJoint, FixedJoint
from ._shapes import AbstractShape
from ._types import QuatLike, ScalarLike, Vec3Like


def _shaped(name: str, x: Anything, shape: tuple[int, ...]) -> Array:
    return as_float_array(x, name, shape)


def _unit_quat(name: str, q: Anything) -> Array:
    q = _shaped(name, q, (4,))
    if is_concrete(q) and not np.linalg.norm(np.asarray(q)) > 0:
        raise ValueError(f"{name} must be a non-zero quaternion (w, x, y, z); got {np.asarray(q)}.")
    return quat_normalize(q)


def _principal(tensor: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Principal moments and the quaternion (w, x, y, z) of the principal axes."""
    moments, axes = np.linalg.eigh(tensor)
    if np.linalg.det(axes) < 0:
        axes[:, 2] = -axes[:, 2]
    x, y, z, w = Rotation.from_matrix(axes).as_quat()
    return moments, np.array([w, x, y, z])


class Body(eqx.Module):
    """One rigid body of a [`MultiBody`][sciad.rigid.MultiBody]: its parent, joint,
    placement and inertial parameters (MuJoCo's body/inertial/joint in one place).

    The body frame sits at `pos`, `quat` in the parent's frame when the joint is at its
    neutral configuration. The centre of mass is at `com` (body frame) and the inertia
    about it is diagonal, `inertia`, in axes rotated by `inertia_quat` from the body
    axes (MuJoCo's `ipos`, `iquat` and `diaginertia`).

    Give the inertial parameters directly (`mass`, `inertia`) or from a `shape` with a
    `density` (or a `shape` and a `mass`). The shape is centred at `com` with its axes
    along `inertia_quat`, so e.g. a capsule link along x is
    `shape=Capsule(r, h), com=(h, 0, 0), inertia_quat=(√½, 0, √½, 0)`.
    A full 3×3 `inertia` tensor (about `com`, body axes) is diagonalised on
    construction (concrete values only).

    **Arguments:**

    - `name`: a unique name.
    - `parent`: the parent body's name; `None` for the world.
    - `joint`: an [`AbstractJoint`][sciad.rigid.AbstractJoint]; default
      [`FixedJoint`][sciad.rigid.FixedJoint] (welded to the parent).
    - `pos`, `quat`: placement in the parent frame: shape `(3,)` (length) and a
      quaternion (w, x, y, z), normalised. For a free joint they are the default
      initial pose.
    - `mass` (mass units), `inertia`: principal moments, shape `(3,)` (mass·length²);
      or a `(3, 3)` tensor. Both positive (on a welded body, `FixedJoint`, the moments
      may be zero: a point mass), or both exactly zero: a massless link that
      carries a joint for its children (MuJoCo's several joints in one body are a chain
      of such links); [`MultiBody`][sciad.rigid.MultiBody] requires such a link to
      have a descendant with mass.
    - `com`: shape `(3,)`, the centre of mass in the body frame.
    - `inertia_quat`: the principal axes' orientation in the body frame.
    - `shape`, `density`: compute `mass` and `inertia` from a shape.
    - `gravcomp`: gravity compensation, a real scalar (dimensionless; default 0): a
      force −gravcomp · mass · gravity at the centre of mass cancels that fraction of
      the body's weight (1: weightless; MuJoCo's body `gravcomp`). It is a passive
      force, or an actuator force on the dofs of joints with `actuator_gravcomp`.
      Whether the model computes it is decided when the
      [`MultiBody`][sciad.rigid.MultiBody] is built (some body's `gravcomp`
      nonzero or traced).

    **Example:**

    ```python
    link = sciad.rigid.Body("link1", parent=None, joint=sciad.rigid.HingeJoint(axis=jnp.array([0.0, 1.0, 0.0])),
                            pos=jnp.array([0.0, 0.0, 1.0]), com=jnp.array([0.0, 0.0, -0.5]),
                            mass=1.0, inertia=jnp.array([0.1, 0.1, 0.01]))
    ```
    """

    name: str = eqx.field(static=True)
    parent: str | None = eqx.field(static=True)
    joint: AbstractJoint
    pos: Float[Array, "3"]
    quat: Float[Array, "4"]
    mass: FloatScalar
    inertia: Float[Array, "3"]
    com: Float[Array, "3"]
    inertia_quat: Float[Array, "4"]
    gravcomp: FloatScalar

    def __init__(
        self,
        name: str,
        *,
        parent: str | None = None,
        joint: AbstractJoint | None = None,
        pos: Vec3Like = (0.0, 0.0, 0.0),
        quat: QuatLike = (1.0, 0.0, 0.0, 0.0),
        mass: ScalarLike | None = None,
        inertia: Vec3Like | Float[ArrayLike, "3 3"] | None = None,
        com: Vec3Like = (0.0, 0.0, 0.0),
        inertia_quat: QuatLike = (1.0, 0.0, 0.0, 0.0),
        shape: AbstractShape | None = None,
        density: ScalarLike | None = None,
        gravcomp: ScalarLike = 0.0,
    ):
        if not isinstance(name, str) or not name:
            raise TypeError(f"Body name must be a non-empty string; got {name!r}.")
        if parent is not None and not isinstance(parent, str):
            raise TypeError(
                f"Body {name!r}: parent must be a body name (str) or None for the world; "
                f"got {parent!r}."
            )
        if parent == name:
            raise ValueError(f"Body {name!r} cannot be its own parent.")
        if joint is None:
            joint = FixedJoint()
        if not isinstance(joint, AbstractJoint):
            raise TypeError(
                f"Body {name!r}: joint must be a sciad.rigid.AbstractJoint such as "
                f"HingeJoint(); got {joint!r}."
            )
        self.name = name
        self.parent = parent
        self.joint = joint
        self.pos = _shaped(f"Body {name!r} pos", pos, (3,))
        self.quat = _unit_quat(f"Body {name!r} quat", quat)
        self.com = _shaped(f"Body {name!r} com", com, (3,))
        iquat = _unit_quat(f"Body {name!r} inertia_quat", inertia_quat)
        if shape is not None:
            if not isinstance(shape, AbstractShape):
                raise TypeError(
                    f"Body {name!r}: shape must be a sciad.rigid shape (Sphere, Box, "
                    f"Capsule, Cylinder); got {shape!r}."
                )
            if inertia is not None:
                raise ValueError(f"Body {name!r}: give either inertia or shape, not both.")
            if (mass is None) == (density is None):
                raise ValueError(
                    f"Body {name!r}: with a shape, give exactly one of density and mass."
                )
            if density is not None:
                mass, inertia = shape.mass_properties(density)
            else:
                mass = jnp.asarray(mass)
                inertia = mass * shape.unit_inertia()
        elif mass is None or inertia is None:
            raise ValueError(
                f"Body {name!r}: give mass and inertia, or a shape with a density or mass."
            )
        elif density is not None:
            raise ValueError(f"Body {name!r}: density needs a shape.")
        inertia = as_float_array(inertia, f"Body {name!r} inertia")
        if inertia.shape == (3, 3):
            if not is_concrete(inertia):
                raise ValueError(
                    f"Body {name!r}: a 3×3 inertia tensor is diagonalised with NumPy and "
                    "must be concrete; pass principal moments (3,) and inertia_quat "
                    "to trace through it."
                )
            tensor = np.asarray(inertia, dtype=np.float64)
            if not np.allclose(tensor, tensor.T, rtol=1e-12, atol=1e-15 * np.abs(tensor).max()):
                raise ValueError(f"Body {name!r}: the inertia tensor must be symmetric.")
            moments, axes_quat = _principal(tensor)
            inertia = jnp.asarray(moments, dtype=inertia.dtype)
            iquat = quat_multiply(iquat, jnp.asarray(axes_quat, dtype=iquat.dtype))
        self.mass = _shaped(f"Body {name!r} mass", mass, ())
        self.inertia = _shaped(f"Body {name!r} inertia", inertia, (3,))
        self.inertia_quat = iquat
        check_scalar(gravcomp, f"Body {name!r} gravcomp")
        self.gravcomp = as_float_array(gravcomp, f"Body {name!r} gravcomp")

    @property
    def massless(self) -> bool:
        """Whether the body is a massless link (mass and inertia exactly zero, concrete):
        a carrier of a joint whose children hold the mass, as MuJoCo's several joints of
        one body are a chain of such links (see [`MultiBody`][sciad.rigid.MultiBody])."""
        return (
            is_concrete(self.mass)
            and is_concrete(self.inertia)
            and float(self.mass) == 0
            and not np.any(np.asarray(self.inertia))
        )

    def __check_init__(self):
        if self.massless:
            return
        if is_concrete(self.mass) and not float(self.mass) > 0:
            raise ValueError(
                f"Body {self.name!r}: mass must be positive (or mass and inertia both zero: "
                f"a massless link carrying a joint for its children); got {float(self.mass)}."
            )
        if is_concrete(self.inertia):
            i = np.asarray(self.inertia, dtype=np.float64)
            # A welded body (nv = 0) only adds to its parent's composite inertia, so it
            # may be a point mass (MuJoCo's sensor and camera links are); a moving body
            # needs every principal moment positive.
            if not (np.all(i > 0) or (self.joint.nv == 0 and np.all(i >= 0))):
                raise ValueError(
                    f"Body {self.name!r}: principal inertia must be positive (zero only "
                    f"on a welded body, FixedJoint); got {i}."
                )
            a, b, c = np.sort(i)
            if a + b < c * (1 - 1e-12):
                raise ValueError(
                    f"Body {self.name!r}: principal inertia {i} violates the triangle "
                    "inequality I1 + I2 >= I3 that every real mass distribution obeys."
                )

"""Primitive shapes and their mass properties (uniform density)."""

import abc
import math

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._core._types import FloatScalar, RealScalarLike
from .._core._validate import check_positive

_TINY2 = 1e-30  # MuJoCo's mjMINVAL² below which a direction has no horizontal part


def _sign(x: Array) -> Array:
    """+1 for x ≥ 0, else −1 (MuJoCo's support functions' tie rule)."""
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def _round_jacobian(radius: Array | float, direction: Array) -> Array:
    """A sphere's support Jacobian r (I − n nᵀ) at the unit direction n."""
    return radius * (jnp.eye(3, dtype=direction.dtype) - jnp.outer(direction, direction))


class AbstractShape(eqx.Module):
    """A solid shape in its own frame, centred at the origin, symmetric about the axes.

    Concrete shapes give their volume and the principal second moments per unit mass
    about their centre; [`mass_properties`][sciad.rigid.AbstractShape.mass_properties]
    turns these into a mass and a principal inertia. The frame's axes are principal
    axes, so a shape placed with a pose in a body sets that body's `com` and
    `inertia_quat` (see [`Body`][sciad.rigid.Body]). The same shapes, placed in a
    [`Geom`][sciad.rigid.Geom], are the collision geometry.

    **Example:**

    ```python
    mass, inertia = sciad.rigid.Box(jnp.array([0.1, 0.2, 0.3])).mass_properties(1000.0)
    ```
    """

    @abc.abstractmethod
    def volume(self) -> FloatScalar:
        """The volume (length³)."""

    @abc.abstractmethod
    def unit_inertia(self) -> Float[Array, "3"]:
        """Principal moments of inertia per unit mass about the centre, along the
        shape's x, y, z axes (length²)."""

    @abc.abstractmethod
    def inradius(self) -> FloatScalar:
        """The radius of the largest ball about the centre that fits inside the shape
        (length): how deep another shape can reach into it before it nears the centre.
        Infinite for a plane, which has no centre."""

    def support(self, direction: Float[Array, "3"]) -> Float[Array, "3"]:
        """The support point: the point of the shape farthest along `direction` (a unit
        vector in the shape's frame; length), where the convex collision
        (GJK and EPA) touches the shape. Ties (a face or an edge along `direction`)
        take MuJoCo's choice."""
        raise TypeError(f"a {type(self).__name__} has no support point.")

    def support_jacobian(
        self, direction: Float[Array, "3"], point: Float[Array, "3"]
    ) -> Float[Array, "3 3"]:
        """d(support)/d(direction) at a unit `direction` whose contact lies at `point`
        (both in the shape's frame): the surface's radii of curvature there, zero along
        flat parts (length). It sets how a convex contact's normal turns."""
        raise TypeError(f"a {type(self).__name__} has no support point.")

    def bounding_radius(self) -> FloatScalar:
        """The radius of the smallest ball about the centre that holds the shape
        (MuJoCo's `geom_rbound`; length)."""
        raise TypeError(f"a {type(self).__name__} has no bounding radius.")

    def mass_properties(self, density: RealScalarLike) -> tuple[FloatScalar, Float[Array, "3"]]:
        """Mass and principal inertia for a uniform `density`.

        **Arguments:**

        - `density`: mass per volume (e.g. kg/m³).

        **Returns:** `(mass, inertia)`: a scalar and shape `(3,)` (mass·length²), the
        moments about the centre along the shape's axes.
        """
        check_positive(density, f"{type(self).__name__} density")
        mass = jnp.asarray(density * self.volume())
        return mass, mass * self.unit_inertia()


class Sphere(AbstractShape):
    """A solid sphere of radius r: V = 4πr³/3, I = (2/5) m r² about every axis.

    **Arguments:** `radius` r (length), a positive scalar.

    **Example:** `sciad.rigid.Sphere(0.1).mass_properties(1000.0)`
    """

    radius: FloatScalar = eqx.field(converter=jnp.asarray)

    def __check_init__(self):
        check_positive(self.radius, "Sphere.radius")

    def volume(self) -> FloatScalar:
        """4πr³/3."""
        return (4 * math.pi / 3) * self.radius**3

    def unit_inertia(self) -> Float[Array, "3"]:
        """(2/5) r² on every axis."""
        return jnp.stack([0.4 * self.radius**2] * 3)

    def inradius(self) -> FloatScalar:
        """r."""
        return self.radius

    def support(self, direction: Float[Array, "3"]) -> Float[Array, "3"]:
        """r n."""
        return self.radius * direction

    def support_jacobian(
        self, direction: Float[Array, "3"], point: Float[Array, "3"]
    ) -> Float[Array, "3 3"]:
        """r (I − n nᵀ)."""
        return _round_jacobian(self.radius, direction)

    def bounding_radius(self) -> FloatScalar:
        """r."""
        return self.radius


class Box(AbstractShape):
    """A solid box with half-extents (a, b, c) (MuJoCo's box `size`).

    V = 8abc; I_x = m (b² + c²)/3 and cyclically (full edges 2a, 2b, 2c).

    **Arguments:** `half_extents`: shape `(3,)`, positive (length).

    **Example:** `sciad.rigid.Box(jnp.array([0.1, 0.2, 0.3])).mass_properties(1000.0)`
    """

    half_extents: Float[Array, "3"] = eqx.field(converter=jnp.asarray)

    def __check_init__(self):
        check_positive(self.half_extents, "Box.half_extents", shape=(3,))

    def volume(self) -> FloatScalar:
        """8abc."""
        return 8 * jnp.prod(self.half_extents)

    def unit_inertia(self) -> Float[Array, "3"]:
        """((b² + c²)/3, (a² + c²)/3, (a² + b²)/3)."""
        a2, b2, c2 = self.half_extents**2
        return jnp.stack([b2 + c2, a2 + c2, a2 + b2]) / 3

    def inradius(self) -> FloatScalar:
        """The smallest half-extent."""
        return jnp.min(self.half_extents)

    def support(self, direction: Float[Array, "3"]) -> Float[Array, "3"]:
        """The corner sign(n) ∘ (a, b, c)."""
        return _sign(direction) * self.half_extents

    def support_jacobian(
        self, direction: Float[Array, "3"], point: Float[Array, "3"]
    ) -> Float[Array, "3 3"]:
        """Zero: a box is flat."""
        return jnp.zeros((3, 3), direction.dtype)

    def bounding_radius(self) -> FloatScalar:
        """|(a, b, c)|."""
        return jnp.sqrt(jnp.sum(self.half_extents**2))


class Cylinder(AbstractShape):
    """A solid cylinder along z with radius r and half-length h (MuJoCo's `size`).

    V = 2πr²h; I_z = m r²/2, I_x = I_y = m (r²/4 + h²/3).

    **Arguments:** `radius` r and `half_length` h (length), positive scalars.

    **Example:** `sciad.rigid.Cylinder(0.05, 0.2).mass_properties(1000.0)`
    """

    radius: FloatScalar = eqx.field(converter=jnp.asarray)
    half_length: FloatScalar = eqx.field(converter=jnp.asarray)

    def __check_init__(self):
        check_positive(self.radius, "Cylinder.radius")
        check_positive(self.half_length, "Cylinder.half_length")

    def volume(self) -> FloatScalar:
        """2πr²h."""
        return 2 * math.pi * self.radius**2 * self.half_length

    def unit_inertia(self) -> Float[Array, "3"]:
        """(r²/4 + h²/3, r²/4 + h²/3, r²/2)."""
        r2, h2 = self.radius**2, self.half_length**2
        side = r2 / 4 + h2 / 3
        return jnp.stack([side, side, r2 / 2])

    def inradius(self) -> FloatScalar:
        """min(r, h)."""
        return jnp.minimum(self.radius, self.half_length)

    def support(self, direction: Float[Array, "3"]) -> Float[Array, "3"]:
        """The rim point r (n_x, n_y)/|(n_x, n_y)| at height sign(n_z) h (the cap's
        centre when n is along the axis)."""
        rho2 = direction[0] ** 2 + direction[1] ** 2
        ok = rho2 > _TINY2
        scale = jnp.where(ok, self.radius / jnp.sqrt(jnp.where(ok, rho2, 1.0)), 0.0)
        return jnp.stack(
            [scale * direction[0], scale * direction[1], _sign(direction[2]) * self.half_length]
        )

    def support_jacobian(
        self, direction: Float[Array, "3"], point: Float[Array, "3"]
    ) -> Float[Array, "3 3"]:
        """(r/ρ)(P − q qᵀ) on the curved side and rim (ρ = |(n_x, n_y)|, P the projection
        on the xy plane, q the radial unit vector); zero inside a cap."""
        rho2 = direction[0] ** 2 + direction[1] ** 2
        on_rim = point[0] ** 2 + point[1] ** 2 >= (1 - 1e-6) ** 2 * self.radius**2
        ok = (rho2 > _TINY2) & on_rim
        rho = jnp.sqrt(jnp.where(ok, rho2, 1.0))
        q = jnp.stack([direction[0] / rho, direction[1] / rho, jnp.zeros_like(rho)])
        flat = jnp.diag(jnp.asarray([1.0, 1.0, 0.0], direction.dtype))
        return jnp.where(ok, self.radius / rho * (flat - jnp.outer(q, q)), 0.0)

    def bounding_radius(self) -> FloatScalar:
        """√(r² + h²)."""
        return jnp.sqrt(self.radius**2 + self.half_length**2)


class Capsule(AbstractShape):
    """A capsule along z: a cylinder of radius r and half-length h capped by two
    hemispheres (MuJoCo's `size` (r, h)).

    With m_c = 2πr²hρ and m_s = (4/3)πr³ρ: I_z = m_c r²/2 + (2/5) m_s r² and
    I_x = I_y = m_c (r²/4 + h²/3) + m_s ((2/5) r² + h² + (3/4) h r) (each hemisphere's
    centre of mass lies 3r/8 from its flat face; parallel-axis theorem).

    **Arguments:** `radius` r and `half_length` h (length), positive scalars.

    **Example:** `sciad.rigid.Capsule(0.05, 0.2).mass_properties(1000.0)`
    """

    radius: FloatScalar = eqx.field(converter=jnp.asarray)
    half_length: FloatScalar = eqx.field(converter=jnp.asarray)

    def __check_init__(self):
        check_positive(self.radius, "Capsule.radius")
        check_positive(self.half_length, "Capsule.half_length")

    def volume(self) -> FloatScalar:
        """2πr²h + (4/3)πr³."""
        r, h = self.radius, self.half_length
        return 2 * math.pi * r**2 * h + (4 * math.pi / 3) * r**3

    def unit_inertia(self) -> Float[Array, "3"]:
        """The capsule's principal moments per unit mass (see the class docstring)."""
        r, h = self.radius, self.half_length
        vc = 2 * math.pi * r**2 * h
        vs = (4 * math.pi / 3) * r**3
        fc, fs = vc / (vc + vs), vs / (vc + vs)
        side = fc * (r**2 / 4 + h**2 / 3) + fs * (0.4 * r**2 + h**2 + 0.75 * h * r)
        axial = fc * r**2 / 2 + fs * 0.4 * r**2
        return jnp.stack([side, side, axial])

    def inradius(self) -> FloatScalar:
        """r (every point of the axis segment is r from the surface)."""
        return self.radius

    def support(self, direction: Float[Array, "3"]) -> Float[Array, "3"]:
        """r n + sign(n_z) h ẑ."""
        up = jnp.zeros(3, direction.dtype).at[2].set(_sign(direction[2]) * self.half_length)
        return self.radius * direction + up

    def support_jacobian(
        self, direction: Float[Array, "3"], point: Float[Array, "3"]
    ) -> Float[Array, "3 3"]:
        """r (I − n nᵀ) (the axis segment adds nothing)."""
        return _round_jacobian(self.radius, direction)

    def bounding_radius(self) -> FloatScalar:
        """r + h."""
        return self.radius + self.half_length


class Ellipsoid(AbstractShape):
    """A solid ellipsoid with semi-axes (a, b, c) along its x, y, z axes (MuJoCo's
    ellipsoid `size`).

    V = 4πabc/3; I_x = m (b² + c²)/5 and cyclically.

    **Arguments:** `radii`: shape `(3,)`, positive (length).

    **Example:** `sciad.rigid.Ellipsoid(jnp.array([0.1, 0.2, 0.3])).mass_properties(1000.0)`
    """

    radii: Float[Array, "3"] = eqx.field(converter=jnp.asarray)

    def __check_init__(self):
        check_positive(self.radii, "Ellipsoid.radii", shape=(3,))

    def volume(self) -> FloatScalar:
        """4πabc/3."""
        return (4 * math.pi / 3) * jnp.prod(self.radii)

    def unit_inertia(self) -> Float[Array, "3"]:
        """((b² + c²)/5, (a² + c²)/5, (a² + b²)/5)."""
        a2, b2, c2 = self.radii**2
        return jnp.stack([b2 + c2, a2 + c2, a2 + b2]) / 5

    def inradius(self) -> FloatScalar:
        """The smallest semi-axis."""
        return jnp.min(self.radii)

    def support(self, direction: Float[Array, "3"]) -> Float[Array, "3"]:
        """A² n / |A n|, A = diag(a, b, c)."""
        scaled = self.radii * direction
        return self.radii * scaled / jnp.sqrt(jnp.sum(scaled**2))

    def support_jacobian(
        self, direction: Float[Array, "3"], point: Float[Array, "3"]
    ) -> Float[Array, "3 3"]:
        """(A² − A²n (A²n)ᵀ/|An|²)/|An|."""
        a2n = self.radii**2 * direction
        norm = jnp.sqrt(jnp.sum((self.radii * direction) ** 2))
        return (jnp.diag(self.radii**2) - jnp.outer(a2n, a2n) / norm**2) / norm

    def bounding_radius(self) -> FloatScalar:
        """The largest semi-axis."""
        return jnp.max(self.radii)


class Plane(AbstractShape):
    """An infinite plane: the half-space z ≤ 0 of its geom frame, with outward normal
    +z. For collision only ([`Geom`][sciad.rigid.Geom]), typically the ground fixed
    to the world; it has no volume and no mass.

    **Example:** `ground = sciad.rigid.Geom(sciad.rigid.Plane(), friction=0.8)`
    """

    def volume(self) -> FloatScalar:
        """A plane has no volume: raises `TypeError`."""
        raise TypeError("a Plane has no volume or mass; use it in a Geom for contacts only.")

    def unit_inertia(self) -> Float[Array, "3"]:
        """A plane has no inertia: raises `TypeError`."""
        raise TypeError("a Plane has no inertia; use it in a Geom for contacts only.")

    def inradius(self) -> FloatScalar:
        """Infinite: the half-space holds balls of every size."""
        return jnp.asarray(jnp.inf)

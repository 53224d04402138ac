"""Fluid forces (`Medium`): MuJoCo's inertia-box model of drag in a fluid of given
density, viscosity and wind, as a passive force on every body with mass."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._core._geometry import cross, quat_to_matrix
from .._core._types import FloatScalar
from .._core._validate import as_float_array, check_positive
from ._spatial import matmul, wrench_at_origin
from ._types import ScalarLike, Vec3Like

# MuJoCo's mjMINVAL: a body lighter than this feels no fluid, and a box side's square
# is at least this (a body whose inertia is degenerate along an axis).
_MINVAL = 1e-15


class Medium(eqx.Module):
    """A fluid the bodies move through: MuJoCo's `<option density viscosity wind>`
    with its inertia-box model of fluid forces.

    Each body with mass m moves as the solid box of equal mass and principal inertia,
    with sides bᵢ = √(6 (Iⱼ + Iₖ − Iᵢ) / m) along the principal axes, at the velocity
    (ω, v) of its centre of mass relative to the fluid (v minus the wind), both in its
    principal frame. In that frame the fluid exerts, at the centre of mass,

    - viscous (Stokes) drag of the sphere of diameter d = (b₁ + b₂ + b₃)/3:
      force −3πdμ v and torque −πd³μ ω;
    - quadratic (pressure) drag: force −½ρ bⱼbₖ |vᵢ| vᵢ on each axis i (bⱼbₖ the face
      across it) and torque −ρ bᵢ (bⱼ⁴ + bₖ⁴) |ωᵢ| ωᵢ / 64,

    and the sum enters the equations of motion as a passive generalised force, as
    MuJoCo's `qfrc_fluid` (explicitly: even MuJoCo's Euler integrator treats only the
    joint damping implicitly). Bodies lighter than 1e-15 feel no fluid (MuJoCo's
    `mjMINVAL`). Everything is smooth in the state and the parameters but at a
    velocity component of exactly zero, where the quadratic drag |x|x has a
    continuous first derivative (zero).

    Reference: MuJoCo documentation, "Computation: Fluid forces: Inertia model";
    `mj_inertiaBoxFluidModel` in MuJoCo's `engine_passive.c`.

    **Arguments:**

    - `density`: ρ ≥ 0, the fluid's density (mass/length³; water: 1000 kg/m³).
    - `viscosity`: μ ≥ 0, its dynamic viscosity (mass/(length·time); water: 1e-3 Pa·s).
    - `wind`: the fluid's velocity in the world frame, shape `(3,)` (length/time).

    **Example:**

    ```python
    water = sciad.rigid.Medium(density=1000.0, viscosity=1e-3)
    model = sciad.rigid.MultiBody(bodies, medium=water)
    ```
    """

    density: FloatScalar
    viscosity: FloatScalar
    wind: Float[Array, "3"]

    def __init__(
        self,
        density: ScalarLike = 0.0,
        viscosity: ScalarLike = 0.0,
        wind: Vec3Like = (0.0, 0.0, 0.0),
    ):
        self.density = as_float_array(density, "Medium.density", ())
        self.viscosity = as_float_array(viscosity, "Medium.viscosity", ())
        self.wind = as_float_array(wind, "Medium.wind", (3,))

    def __check_init__(self):
        check_positive(self.density, "Medium.density", zero_ok=True)
        check_positive(self.viscosity, "Medium.viscosity", zero_ok=True)

    def wrench(
        self,
        mass: FloatScalar,
        inertia: Float[Array, "3"],
        rotation: Float[Array, "3 3"],
        angular: Float[Array, "3"],
        linear: Float[Array, "3"],
    ) -> tuple[Float[Array, "3"], Float[Array, "3"]]:
        """The fluid's force and torque on one body, at its centre of mass.

        **Arguments:**

        - `mass`: the body's mass (zero, or below 1e-15: no force).
        - `inertia`: its principal moments of inertia about the centre of mass, shape
          `(3,)` (mass·length²).
        - `rotation`: its principal axes in the world (columns), shape `(3, 3)`.
        - `angular`: its angular velocity in the world frame, shape `(3,)` (rad/time).
        - `linear`: the velocity of its centre of mass in the world frame, shape `(3,)`
          (length/time).

        **Returns:** `(force, torque)`, each shape `(3,)` in the world frame (force and
        force·length units).

        **Example:** `force, torque = medium.wrench(1.0, jnp.full(3, 0.1), jnp.eye(3), w, v)`
        """
        mass = jnp.asarray(mass)
        massive = mass >= _MINVAL
        m = jnp.where(massive, mass, 1.0)
        i0, i1, i2 = inertia[0], inertia[1], inertia[2]
        box = jnp.sqrt(
            jnp.maximum(_MINVAL, jnp.stack([i1 + i2 - i0, i0 + i2 - i1, i0 + i1 - i2])) / m * 6.0
        )
        w = rotation.T @ angular
        v = rotation.T @ (linear - self.wind)
        diam = jnp.sum(box) / 3.0
        torque = -jnp.pi * diam**3 * self.viscosity * w
        force = -3.0 * jnp.pi * diam * self.viscosity * v
        face = jnp.stack([box[1] * box[2], box[0] * box[2], box[0] * box[1]])
        force = force - 0.5 * self.density * face * jnp.abs(v) * v
        b4 = box**4
        arm = box * (jnp.roll(b4, -1) + jnp.roll(b4, -2))
        torque = torque - self.density * arm * jnp.abs(w) * w / 64.0
        force = jnp.where(massive, rotation @ force, 0.0)
        torque = jnp.where(massive, rotation @ torque, 0.0)
        return force, torque


def fluid_forces(
    medium: Medium,
    mass: Float[Array, " n"],
    inertia: Float[Array, "n 3"],
    inertia_quat: Float[Array, "n 4"],
    rot: Float[Array, "n 3 3"],
    com: Float[Array, "n 3"],
    velocity: Float[Array, "n 6"],
) -> Float[Array, "n 6"]:
    """Every body's fluid wrench as a spatial force about the world origin, (n, 6),
    from the body frames `rot`, the centres of mass `com` and the spatial velocities
    (ω, velocity of the point at the world origin), all in the world frame."""
    rotation = matmul(rot, quat_to_matrix(inertia_quat))
    angular = velocity[:, :3]
    linear = velocity[:, 3:] + cross(angular, com)
    force, torque = jax.vmap(medium.wrench)(mass, inertia, rotation, angular, linear)
    return wrench_at_origin(com, force, torque)

"""Fluid forces (`Medium`, `FluidEllipsoid`): MuJoCo's two models of a fluid of given
density, viscosity and wind, as a passive force on every body with mass: the
inertia-box model, and the ellipsoid model (drag, lift and added mass per ellipsoid)."""

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float
import numpy as np
import scipy.integrate

from .._core._geometry import cross, quat_to_matrix
from .._core._types import Anything, FloatScalar
from .._core._validate import as_float_array, check_positive, is_concrete
from ._body import _unit_quat
from ._spatial import matmul, matvec, wrench_at_origin
from ._types import MINVAL, QuatLike, ScalarLike, Vec3Like

# (`MINVAL`, MuJoCo's mjMINVAL: a body lighter than it feels no fluid, and a box side's
# square is at least it, a body whose inertia is degenerate along an axis.)
# MuJoCo's compiler's mjEPS: the floor of the added-mass coefficients' denominators.
_EPS = 1e-14


def _safe_norm(x: Array) -> Array:
    """|x|, with a zero (not NaN) gradient at x = 0 (the double-`where` trick)."""
    sq = jnp.sum(x * x, axis=-1)
    pos = sq > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, sq, 1.0)), 0.0)


def _kappa(a: float, b: float, c: float) -> float:
    """Lamb's added-mass integral of an ellipsoid with semi-axes (a, b, c) along a:
    α = a b c ∫₀^∞ dλ / ((a² + λ) √((a² + λ)(b² + λ)(c² + λ)))."""

    def f(lam: float) -> float:
        return 1.0 / (
            (1 + lam / a**2) * np.sqrt((1 + lam / a**2) * (1 + lam / b**2) * (1 + lam / c**2))
        )

    value, _ = scipy.integrate.quad(f, 0.0, np.inf, epsabs=0.0, epsrel=1e-13, limit=200)
    return value / a**2


def added_mass(semiaxes: Anything) -> tuple[np.ndarray, np.ndarray]:
    """The virtual (added) mass and moments of inertia of an ellipsoid per unit fluid
    density, along and about its axes: Lamb's coefficients κᵢ, m = V κᵢ/(2 − κᵢ) and
    I = V (sⱼ² − sₖ²)² |κₖ − κⱼ| / (5 |2(sⱼ² − sₖ²) + (sⱼ² + sₖ²)(κⱼ − κₖ)|), as
    MuJoCo's compiler (which integrates κ by a 15-point rule: its values differ in the
    seventh digit)."""
    s = np.asarray(semiaxes, dtype=np.float64)
    volume = 4.0 / 3.0 * np.pi * np.prod(s)
    k = np.array([_kappa(s[i], s[(i + 1) % 3], s[(i + 2) % 3]) for i in range(3)])
    mass = volume * k / np.maximum(_EPS, 2.0 - k)
    inertia = np.zeros(3)
    for i in range(3):
        j, m = (i + 1) % 3, (i + 2) % 3
        d = s[j] ** 2 - s[m] ** 2
        denom = max(_EPS, abs(2 * d + (s[j] ** 2 + s[m] ** 2) * (k[j] - k[m])))
        inertia[i] = volume * d**2 * abs(k[m] - k[j]) / denom / 5.0
    return mass, inertia


class FluidEllipsoid(eqx.Module):
    """An ellipsoid fixed to a body that the fluid of a [`Medium`][sciad.rigid.Medium]
    acts on with MuJoCo's ellipsoid model (MuJoCo's geoms with
    `fluidshape="ellipsoid"`), in place of the body's inertia box.

    At the ellipsoid's centre and in its frame, with (ω, u) its angular velocity and
    its centre's velocity relative to the wind, semi-axes s, volume V, fluid density
    ρ and viscosity μ, the fluid exerts (MuJoCo's `mj_ellipsoidFluidModel`):

    - added-mass forces of the virtual mass m_v and inertia I_v (per unit density):
      force ρ(m_v ⊙ u) × ω, torque ρ(m_v ⊙ u) × u + ρ(I_v ⊙ ω) × ω (the terms with
      accelerations are left out, as in MuJoCo);
    - Magnus lift c_M ρ V ω × u and Kutta–Joukowski lift from the circulation about
      the projected area A(u) along u;
    - linear drag −(3πDμ + ρ|u|(c_b A + c_s (A_max − A))) u with D = 2(s₁+s₂+s₃)/3
      and A_max the largest cross-section, and angular drag
      −(πD³μ + ρ|c_a I + c_s (I_max − I)) ⊙ ω|) ω with I the ellipsoid's moments
      about its axes per unit density.

    Reference: MuJoCo documentation, "Computation: Fluid forces: Ellipsoid model";
    Lamb, *Hydrodynamics* (1932) §114 for the added mass.

    **Arguments:**

    - `body`: the name of the body it is fixed to.
    - `semiaxes`: shape `(3,)`, positive (length).
    - `pos`, `quat`: its centre and axes in the body frame, shapes `(3,)` and `(4,)`.
    - `blunt_drag`, `slender_drag`, `angular_drag`, `kutta_lift`, `magnus_lift`:
      the dimensionless coefficients c_b, c_s, c_a, c_K, c_M (MuJoCo's `fluidcoef`;
      defaults 0.5, 0.25, 1.5, 1.0, 1.0).
    - `virtual_mass`, `virtual_inertia`: shapes `(3,)` (length³ and length⁵): the
      added mass and inertia per unit density; `None` (default): Lamb's values for
      the ellipsoid (needs concrete `semiaxes`).

    **Example:**

    ```python
    fin = sciad.rigid.FluidEllipsoid("tail", (0.1, 0.02, 0.05), pos=(-0.2, 0.0, 0.0))
    water = sciad.rigid.Medium(1000.0, 1e-3, ellipsoids=[fin])
    ```
    """

    body: str = eqx.field(static=True)
    semiaxes: Float[Array, "3"]
    pos: Float[Array, "3"]
    quat: Float[Array, "4"]
    blunt_drag: FloatScalar
    slender_drag: FloatScalar
    angular_drag: FloatScalar
    kutta_lift: FloatScalar
    magnus_lift: FloatScalar
    virtual_mass: Float[Array, "3"]
    virtual_inertia: Float[Array, "3"]

    def __init__(
        self,
        body: str,
        semiaxes: Vec3Like,
        *,
        pos: Vec3Like = (0.0, 0.0, 0.0),
        quat: QuatLike = (1.0, 0.0, 0.0, 0.0),
        blunt_drag: ScalarLike = 0.5,
        slender_drag: ScalarLike = 0.25,
        angular_drag: ScalarLike = 1.5,
        kutta_lift: ScalarLike = 1.0,
        magnus_lift: ScalarLike = 1.0,
        virtual_mass: Vec3Like | None = None,
        virtual_inertia: Vec3Like | None = None,
    ):
        if not isinstance(body, str):
            raise TypeError(f"FluidEllipsoid.body must be a body name; got {body!r}.")
        label = f"FluidEllipsoid {body!r}"
        self.body = body
        self.semiaxes = as_float_array(semiaxes, f"{label} semiaxes", (3,))
        check_positive(self.semiaxes, f"{label} semiaxes", shape=(3,))
        self.pos = as_float_array(pos, f"{label} pos", (3,))
        self.quat = _unit_quat(f"{label} quat", quat)
        coefs = (blunt_drag, slender_drag, angular_drag, kutta_lift, magnus_lift)
        names = ("blunt_drag", "slender_drag", "angular_drag", "kutta_lift", "magnus_lift")
        for name, x in zip(names, coefs, strict=True):
            setattr(self, name, as_float_array(x, f"{label} {name}", ()))
        if virtual_mass is None or virtual_inertia is None:
            if not is_concrete(self.semiaxes):
                raise ValueError(
                    f"{label}: give virtual_mass and virtual_inertia when semiaxes are "
                    "traced (their defaults are computed from concrete semi-axes)."
                )
            default = added_mass(self.semiaxes)
            virtual_mass = default[0] if virtual_mass is None else virtual_mass
            virtual_inertia = default[1] if virtual_inertia is None else virtual_inertia
        self.virtual_mass = as_float_array(virtual_mass, f"{label} virtual_mass", (3,))
        self.virtual_inertia = as_float_array(virtual_inertia, f"{label} virtual_inertia", (3,))

    def __check_init__(self):
        label = f"FluidEllipsoid {self.body!r}"
        check_positive(self.semiaxes, f"{label} semiaxes", shape=(3,))
        check_positive(self.virtual_mass, f"{label} virtual_mass", zero_ok=True, shape=(3,))
        check_positive(self.virtual_inertia, f"{label} virtual_inertia", zero_ok=True, shape=(3,))


def _ellipsoid_force(
    s: Array,
    coef: Array,
    vmass: Array,
    vinertia: Array,
    density: Array,
    viscosity: Array,
    w: Array,
    u: Array,
) -> tuple[Array, Array]:
    """The force and torque on one ellipsoid, in its frame, from its semi-axes s, its
    coefficients (blunt drag, slender drag, angular drag, Kutta lift, Magnus lift),
    virtual mass and inertia, its angular velocity w and its centre's velocity u
    relative to the fluid (both in its frame)."""
    blunt, slender, angular, kutta_lift, magnus_lift = coef[0], coef[1], coef[2], coef[3], coef[4]
    # Added mass (the acceleration terms left out, as MuJoCo).
    lin_mom = density * vmass * u
    ang_mom = density * vinertia * w
    force = cross(lin_mom, w)
    torque = cross(lin_mom, u) + cross(ang_mom, w)
    # Lift.
    volume = 4.0 / 3.0 * jnp.pi * s[0] * s[1] * s[2]
    d_max, d_min = jnp.max(s), jnp.min(s)
    d_mid = jnp.sum(s) - d_max - d_min
    a_max = jnp.pi * d_max * d_mid
    magnus = magnus_lift * density * volume * cross(w, u)
    pair = jnp.stack([s[1] * s[2], s[2] * s[0], s[0] * s[1]])  # products of the other two semi-axes
    proj_denom = jnp.sum(pair**4 * u**2)
    proj_num = jnp.sum((pair * u) ** 2)
    ratio = proj_denom / jnp.maximum(MINVAL, proj_num)
    pos = ratio > 0
    a_proj = jnp.pi * jnp.where(pos, jnp.sqrt(jnp.where(pos, ratio, 1.0)), 0.0)
    speed = _safe_norm(u)
    cos_alpha = proj_num / jnp.maximum(MINVAL, speed * proj_denom)
    circulation = kutta_lift * density * cos_alpha * a_proj * cross(pair**2 * u, u)
    kutta = cross(circulation, u)
    # Drag: viscous (Stokes, of the sphere of mean diameter) and quadratic.
    diam = 2.0 / 3.0 * jnp.sum(s)
    roll1, roll2 = jnp.roll(s, -1), jnp.roll(s, -2)
    moments = 8.0 / 15.0 * jnp.pi * s * jnp.maximum(roll1, roll2) ** 4
    i_max = 8.0 / 15.0 * jnp.pi * d_mid * d_max**4
    mom_visc = w * (angular * moments + slender * (i_max - moments))
    drag_lin = viscosity * 3.0 * jnp.pi * diam + density * speed * (
        a_proj * blunt + slender * (a_max - a_proj)
    )
    drag_ang = viscosity * jnp.pi * diam**3 + density * _safe_norm(mom_visc)
    return force + magnus + kutta - drag_lin * u, torque - drag_ang * w


class Medium(eqx.Module):
    """A fluid the bodies move through: MuJoCo's `<option density viscosity wind>`
    with its fluid models.

    **Inertia-box model** (every body with mass but those listed in `ellipsoids`).
    Each body with mass m moves as the solid box of equal mass and principal inertia,
    with sides bᵢ = √(6 (Iⱼ + Iₖ − Iᵢ) / m) along the principal axes, at the velocity
    (ω, u) of its centre of mass relative to the fluid (its velocity minus the wind),
    both in its principal frame. In that frame the fluid exerts, at the centre of mass,

    - viscous (Stokes) drag of the sphere of diameter d = (b₁ + b₂ + b₃)/3:
      force −3πdμ u and torque −πd³μ ω;
    - quadratic (pressure) drag: force −½ρ bⱼbₖ |uᵢ| uᵢ on each axis i (bⱼbₖ the face
      across it) and torque −ρ bᵢ (bⱼ⁴ + bₖ⁴) |ωᵢ| ωᵢ / 64.

    **Ellipsoid model**: a body with [`FluidEllipsoid`][sciad.rigid.FluidEllipsoid]s
    feels the fluid through them only (drag, lift and added mass of each; MuJoCo's
    `fluidshape="ellipsoid"`).

    The sum enters the equations of motion as a passive generalised force, as
    MuJoCo's `qfrc_fluid`, treated explicitly by every integrator (as by MuJoCo's Euler
    and RK4). Bodies lighter than 1e-15 feel no fluid (MuJoCo's `mjMINVAL`). The
    forces are differentiable functions of the state and the parameters; at a velocity
    of exactly zero, where the norms and |x| x are not smooth, the derivatives are
    the finite one-sided limits (zero for the quadratic drag), never NaN.

    Reference: MuJoCo documentation, "Computation: Fluid forces";
    `mj_inertiaBoxFluidModel` and `mj_ellipsoidFluidModel` in MuJoCo's
    `engine_passive.c`.

    **Arguments:**

    - `density`: ρ ≥ 0, the fluid's density (mass/length³; water: 1000 kg/m³).
    - `viscosity`: μ ≥ 0, its dynamic viscosity (mass/(length·time); water: 1e-3 Pa·s).
    - `wind`: the fluid's velocity in the world frame, shape `(3,)` (length/time).
    - `ellipsoids`: a sequence of [`FluidEllipsoid`][sciad.rigid.FluidEllipsoid]s
      (default none: every body uses its inertia box).

    **Example:**

    ```python
    water = sciad.rigid.Medium(density=1000.0, viscosity=1e-3)
    model = sciad.rigid.MultiBody(bodies, medium=water)
    ```
    """

    density: FloatScalar
    viscosity: FloatScalar
    wind: Float[Array, "3"]
    ellipsoids: tuple[FluidEllipsoid, ...]

    def __init__(
        self,
        density: ScalarLike = 0.0,
        viscosity: ScalarLike = 0.0,
        wind: Vec3Like = (0.0, 0.0, 0.0),
        ellipsoids: Sequence[FluidEllipsoid] = (),
    ):
        self.density = as_float_array(density, "Medium.density", ())
        self.viscosity = as_float_array(viscosity, "Medium.viscosity", ())
        self.wind = as_float_array(wind, "Medium.wind", (3,))
        ellipsoids = tuple(ellipsoids)
        for i, e in enumerate(ellipsoids):
            if not isinstance(e, FluidEllipsoid):
                raise TypeError(
                    f"Medium.ellipsoids must be sciad.rigid.FluidEllipsoid; item {i} is {e!r}."
                )
        self.ellipsoids = ellipsoids

    def __check_init__(self):
        check_positive(self.density, "Medium.density", zero_ok=True)
        check_positive(self.viscosity, "Medium.viscosity", zero_ok=True)

    def check_bodies(self, names: Sequence[str]) -> None:
        """Raise `ValueError` if an ellipsoid names a body not in `names` (a model's
        body names; [`MultiBody`][sciad.rigid.MultiBody] calls it)."""
        for e in self.ellipsoids:
            if e.body not in names:
                raise ValueError(
                    f"FluidEllipsoid: no body named {e.body!r}; bodies: {tuple(names)}."
                )

    def wrench(
        self,
        mass: FloatScalar,
        inertia: Float[Array, "3"],
        rotation: Float[Array, "3 3"],
        angular: Float[Array, "3"],
        linear: Float[Array, "3"],
    ) -> tuple[Float[Array, "3"], Float[Array, "3"]]:
        """The inertia-box model's force and torque on one body, at its centre of mass.

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
        massive = mass >= MINVAL
        m = jnp.where(massive, mass, 1.0)
        i0, i1, i2 = inertia[0], inertia[1], inertia[2]
        box = jnp.sqrt(
            jnp.maximum(MINVAL, jnp.stack([i1 + i2 - i0, i0 + i2 - i1, i0 + i1 - i2])) / m * 6.0
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


def fluid_forces(mb: Anything, rot: Array, pos: Array, com: Array, velocity: Array) -> Array:
    """Every body's fluid wrench as a spatial force about the world origin, (n, 6), for
    a `MultiBody` `mb` with a medium, from the body frames (`rot` (n, 3, 3), origins
    `pos` (n, 3)), the centres of mass `com` (n, 3) and the spatial velocities
    (ω, velocity of the point at the world origin) (n, 6), all in the world frame."""
    medium: Medium = mb.medium
    angular = velocity[:, :3]
    rotation = matmul(rot, quat_to_matrix(mb.inertia_quat))
    linear = velocity[:, 3:] + cross(angular, com)
    force, torque = jax.vmap(medium.wrench)(mb.mass, mb.inertia, rotation, angular, linear)
    ellipsoids = medium.ellipsoids
    if not ellipsoids:
        return wrench_at_origin(com, force, torque)
    idx = np.asarray([mb.names.index(e.body) for e in ellipsoids])
    box = ~np.isin(np.arange(len(mb.names)), idx)
    out = wrench_at_origin(com, force, torque) * jnp.asarray(box, velocity.dtype)[:, None]
    # The ellipsoids' frames and velocities, each in its own frame.
    r = matmul(rot[idx], quat_to_matrix(jnp.stack([e.quat for e in ellipsoids])))
    centre = pos[idx] + matvec(rot[idx], jnp.stack([e.pos for e in ellipsoids]))
    w = matvec(jnp.swapaxes(r, -1, -2), angular[idx])
    u_world = velocity[idx, 3:] + cross(angular[idx], centre) - medium.wind[None, :]
    u = matvec(jnp.swapaxes(r, -1, -2), u_world)
    coef = jnp.stack(
        [
            jnp.stack([e.blunt_drag, e.slender_drag, e.angular_drag, e.kutta_lift, e.magnus_lift])
            for e in ellipsoids
        ]
    )
    f_local, t_local = jax.vmap(_ellipsoid_force, in_axes=(0, 0, 0, 0, None, None, 0, 0))(
        jnp.stack([e.semiaxes for e in ellipsoids]),
        coef,
        jnp.stack([e.virtual_mass for e in ellipsoids]),
        jnp.stack([e.virtual_inertia for e in ellipsoids]),
        medium.density,
        medium.viscosity,
        w,
        u,
    )
    massive = (mb.mass[idx] >= MINVAL)[:, None]
    f_e = jnp.where(massive, matvec(r, f_local), 0.0)
    t_e = jnp.where(massive, matvec(r, t_local), 0.0)
    return out.at[idx].add(wrench_at_origin(centre, f_e, t_e))

"""An actuator that applies a wrench at a point fixed to a body (MuJoCo's site
transmission without a reference site): thrusters, propellers, jets."""

from collections.abc import Sequence

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float
import numpy as np

from .._core._geometry import quat_to_matrix
from .._core._types import Anything, FloatScalar
from .._core._validate import as_float_array, is_concrete
from ._activation import AbstractActivation
from ._actuators import _set_affine, AbstractActuator
from ._spatial import matvec, wrench_at_origin
from ._types import QuatLike, RangeLike, ScalarLike, Vec3Like


class SiteActuator(AbstractActuator):
    """An [`AbstractActuator`][sciad.rigid.AbstractActuator] that applies a wrench at
    a site: a frame fixed to a body at `pos`, `quat` (MuJoCo's site transmission,
    without a reference site). Its force f pushes with f · `gear[:3]` and twists
    with f · `gear[3:]`, both in the site's frame; ℓ = 0 (so `bias_position` has no
    effect) and ℓ̇ = J v, J the wrench's Jacobian: the dofs feel Jᵀ f.

    **Arguments:**

    - `body`: the name of the body carrying the site.
    - `gear`: shape `(6,)`: force (3, dimensionless) and torque (3, length) per unit
      of f, in the site's frame; not all zero.
    - `pos`: shape `(3,)` (length), `quat`: (w, x, y, z): the site in the body frame.
    - `gain`, `bias_constant`, `bias_position`, `bias_velocity`: scalars (force = gain
      · x + bias_constant + bias_velocity · ℓ̇).
    - `ctrl_range`, `force_range`, `activation`: as for
      [`JointActuator`][sciad.rigid.JointActuator] (the gear is not folded in: the
      force range is MuJoCo's `forcerange`).

    **Example** (a rotor thrusting along the body's z axis with a drag torque):

    ```python
    rotor = sciad.rigid.SiteActuator("drone", gear=(0.0, 0.0, 1.0, 0.0, 0.0, -0.01),
                                     pos=(0.1, 0.0, 0.0), ctrl_range=(0.0, 5.0))
    ```
    """

    body: str = eqx.field(static=True)
    gear: Float[Array, "6"]
    pos: Float[Array, "3"]
    quat: Float[Array, "4"]
    gain: FloatScalar
    bias_constant: FloatScalar
    bias_position: FloatScalar
    bias_velocity: FloatScalar
    ctrl_range: Float[Array, "2"] | None
    force_range: Float[Array, "2"] | None
    activation: AbstractActivation | None

    def __init__(
        self,
        body: str,
        *,
        gear: Float[ArrayLike, "6"] | Sequence[float | int],
        pos: Vec3Like = (0.0, 0.0, 0.0),
        quat: QuatLike = (1.0, 0.0, 0.0, 0.0),
        gain: ScalarLike = 1.0,
        bias_constant: ScalarLike = 0.0,
        bias_position: ScalarLike = 0.0,
        bias_velocity: ScalarLike = 0.0,
        ctrl_range: RangeLike | None = None,
        force_range: RangeLike | None = None,
        activation: AbstractActivation | None = None,
    ):
        if not isinstance(body, str) or not body:
            raise TypeError(f"SiteActuator body must be a body name (str); got {body!r}.")
        label = f"SiteActuator on {body!r}"
        self.body = body
        self.gear = as_float_array(gear, f"{label} gear", (6,))
        self.pos = as_float_array(pos, f"{label} pos", (3,))
        self.quat = as_float_array(quat, f"{label} quat", (4,))
        _set_affine(self, label, locals())

    def __check_init__(self):
        if is_concrete(self.gear) and not np.any(np.asarray(self.gear)):
            raise ValueError(f"SiteActuator on {self.body!r}: gear must not be all zero.")
        if is_concrete(self.quat) and not np.isclose(np.linalg.norm(self.quat), 1.0, atol=1e-6):
            raise ValueError(
                f"SiteActuator on {self.body!r}: quat must be a unit quaternion; got "
                f"{np.asarray(self.quat)}."
            )

    @property
    def target(self) -> str:
        """`body`."""
        return self.body

    @classmethod
    def transmissions(
        cls, actuators: Sequence[Anything], mb: Anything, q: Array, f: Anything
    ) -> tuple[Array, Array]:
        """ℓ = 0 and J: the generalised force of the unit wrench (R g_f at the site,
        R g_t), R the site's rotation in the world (MuJoCo's `mj_transmission`)."""
        topo = mb.topology
        b = np.asarray([mb.body_index(a.body) for a in actuators], np.int64)
        dtype = q.dtype
        rot = f.rot[b] @ quat_to_matrix(jnp.stack([a.quat for a in actuators]).astype(dtype))
        site = f.pos[b] + matvec(f.rot[b], jnp.stack([a.pos for a in actuators]).astype(dtype))
        gear = jnp.stack([a.gear for a in actuators]).astype(dtype)
        force = matvec(rot, gear[:, :3])
        wrench = wrench_at_origin(site, force, matvec(rot, gear[:, 3:]))  # (k, 6)
        # Only the dofs of the site body's ancestors (and its own) move the site.
        reach = jnp.asarray(topo.anc[b][:, topo.dof_body], dtype)  # (k, nv)
        moment = reach * (wrench @ f.subspace.T)
        return jnp.zeros(len(actuators), dtype), moment

"""Test scenes built directly in sciad and their MJCF twins (converted with
`sciad.rigid.from_mujoco` to cross-check against MuJoCo C)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import sciad.rigid as rigid

Y = jnp.array([0.0, 1.0, 0.0])
# sciad has no contacts yet: MuJoCo must not collide the geoms either.
NO_CONTACT = '<flag contact="disable"/>'


def chain(n=5, length=0.5, radius=0.05, damping=0.0, **kw):
    """An n-link pendulum of capsules hanging along −z from hinges about y."""
    bodies = []
    for i in range(n):
        bodies.append(
            rigid.Body(
                f"link{i}",
                parent=None if i == 0 else f"link{i - 1}",
                joint=rigid.HingeJoint(axis=Y, damping=damping),
                pos=jnp.array([0.0, 0.0, 0.0 if i == 0 else -length]),
                shape=rigid.Capsule(radius, length / 2),
                density=1000.0,
                com=jnp.array([0.0, 0.0, -length / 2]),
            )
        )
    return rigid.MultiBody(bodies, **kw)


def chain_mjcf(n=5, length=0.5, radius=0.05, damping=0.0, timestep=1e-3, integrator="Euler"):
    """The MJCF twin of `chain`."""
    body = ""
    for i in reversed(range(n)):
        z = 0.0 if i == 0 else -length
        body = (
            f'<body name="link{i}" pos="0 0 {z}">'
            f'<joint type="hinge" axis="0 1 0" damping="{damping}"/>'
            f'<geom type="capsule" fromto="0 0 0 0 0 {-length}" size="{radius}" density="1000"/>'
            f"{body}</body>"
        )
    return (
        f'<mujoco><option timestep="{timestep}" integrator="{integrator}">{NO_CONTACT}</option>'
        f"<worldbody>{body}</worldbody></mujoco>"
    )


LEGS = {"fl": (0.3, 0.15), "fr": (0.3, -0.15), "bl": (-0.3, 0.15), "br": (-0.3, -0.15)}


def quadruped(**kw):
    """A free-floating box torso with four 2-hinge legs (9 bodies, nq = 15, nv = 14) and
    a motor on every hinge."""
    bodies = [
        rigid.Body(
            "torso",
            joint=rigid.FreeJoint(),
            pos=jnp.array([0.0, 0.0, 1.0]),
            shape=rigid.Box(jnp.array([0.3, 0.15, 0.05])),
            density=1000.0,
        )
    ]
    for leg, (x, y) in LEGS.items():
        bodies.append(
            rigid.Body(
                f"{leg}_thigh",
                parent="torso",
                joint=rigid.HingeJoint(axis=Y, damping=0.05),
                pos=jnp.array([x, y, 0.0]),
                shape=rigid.Capsule(0.03, 0.1),
                density=1000.0,
                com=jnp.array([0.0, 0.0, -0.1]),
            )
        )
        bodies.append(
            rigid.Body(
                f"{leg}_shin",
                parent=f"{leg}_thigh",
                joint=rigid.HingeJoint(axis=Y, damping=0.05),
                pos=jnp.array([0.0, 0.0, -0.2]),
                shape=rigid.Capsule(0.025, 0.1),
                density=1000.0,
                com=jnp.array([0.0, 0.0, -0.1]),
            )
        )
    actuators = [
        rigid.JointActuator.motor(f"{leg}_{part}", gear=2.0)
        for leg in LEGS
        for part in ("thigh", "shin")
    ]
    return rigid.MultiBody(bodies, actuators=actuators, **kw)


def quadruped_mjcf(timestep=1e-3, integrator="Euler"):
    """The MJCF twin of `quadruped`."""
    legs = ""
    for leg, (x, y) in LEGS.items():
        legs += (
            f'<body name="{leg}_thigh" pos="{x} {y} 0">'
            '<joint name="{0}_hip" type="hinge" axis="0 1 0" damping="0.05"/>'.format(leg)
            + '<geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.03" density="1000"/>'
            f'<body name="{leg}_shin" pos="0 0 -0.2">'
            f'<joint name="{leg}_knee" type="hinge" axis="0 1 0" damping="0.05"/>'
            '<geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.025" density="1000"/>'
            "</body></body>"
        )
    motors = "".join(
        f'<motor joint="{leg}_{j}" gear="2"/>' for leg in LEGS for j in ("hip", "knee")
    )
    return (
        f'<mujoco><option timestep="{timestep}" integrator="{integrator}">{NO_CONTACT}</option>'
        "<worldbody>"
        '<body name="torso" pos="0 0 1"><freejoint/>'
        '<geom type="box" size="0.3 0.15 0.05" density="1000"/>'
        f"{legs}</body></worldbody><actuator>{motors}</actuator></mujoco>"
    )


MIXED_MJCF = """<mujoco><option><flag contact="disable"/></option><worldbody>
<body name="torso" pos="0 0 1"><freejoint/><geom type="box" size="0.3 0.15 0.05" density="1000"/>
 <body name="l1" pos="0.3 0.15 0"><joint type="hinge" axis="0 1 1" pos="0.01 0 0" damping="0.1"
   armature="0.02"/><geom type="capsule" fromto="0 0 0 0.05 0 -0.2" size="0.03"/>
  <body name="l2" pos="0 0 -0.2" quat="0.9 0.1 -0.2 0.3"><joint type="ball" pos="0 0.02 0"
    damping="0.05" armature="0.01"/><geom type="sphere" size="0.05" pos="0.05 0 -0.1"/>
   <body name="tip" pos="0.1 0 -0.1"><geom type="cylinder" size="0.02 0.05" pos="0 0.01 0"/></body>
  </body>
 </body>
 <body name="l3" pos="-0.3 0 0" quat="0.9 0.1 0.3 0.2"><joint type="slide" axis="1 1 0"
   damping="0.2"/><geom type="box" size="0.05 0.06 0.07" pos="0.01 0.02 0.03" quat="0.8 0.2 0.1 0.3"/>
 </body>
</body>
<body name="ball" pos="1 0 0"><joint type="ball"/><geom type="ellipsoid" size="0.1 0.2 0.3"
  pos="0 0 -0.3"/></body>
</worldbody></mujoco>"""


def random_state(model, seed, scale=1.0):
    """A random (q, v): joint positions perturbed on their manifolds, velocities normal."""
    rng = np.random.default_rng(seed)
    q0, _ = model.default_state()
    dq = jnp.asarray(rng.normal(size=model.nv) * scale)
    q = eqx.filter_jit(lambda m, q, d: m.integrate_positions(q, d))(model, q0, dq)
    return q, jnp.asarray(rng.normal(size=model.nv) * scale)


def flat(softness: float, time_constant: float = 0.02) -> rigid.Impedance:
    """An impedance with a constant d = 1/(1 + softness), so that a row's
    regularisation is R = (1 − d)/d · A = softness · A (the form the analytic tests
    use), and the given time constant."""
    d = min(1.0 / (1.0 + softness), 0.9999)  # at most MuJoCo's maximum
    return rigid.Impedance(time_constant=time_constant, d0=d, dmax=d)


# The softness of MuJoCo's hardest impedance, d = 0.9999 (mjMAXIMP).
HARDEST = 1 / 0.9999 - 1


# Compiled-program sharing for the gradient tests: each rigid program with contacts costs
# tens of seconds of tracing and XLA compilation, so a test compiles one program that
# yields both the value and the derivative, and takes its central differences from the
# same program's values (same numbers as a separate value-only program would give).


def _with_differences(program, xs, eps):
    """`program(x) -> (value, derivative)` at each scalar of `xs`, with the central
    difference of the values with step `eps`: a triple of floats per point, or the one
    triple for one point."""

    def at(s):
        return program(jnp.asarray(s, dtype=jnp.float64))

    out = []
    for x in xs:
        value, derivative = at(x)
        fd = (float(at(x + eps)[0]) - float(at(x - eps)[0])) / (2 * eps)
        out.append((float(value), float(derivative), fd))
    return out[0] if len(xs) == 1 else out


def value_grad_fd(f, *xs, eps):
    """f's value and gradient at each scalar of `xs` from one compiled
    `value_and_grad` program, and f's central difference with step `eps` from that
    program's values: a (value, gradient, difference) triple per point (one triple
    for one point)."""
    return _with_differences(jax.jit(jax.value_and_grad(f)), xs, eps)


def value_jvp_fd(f, *xs, eps):
    """f's value and forward-mode derivative at each scalar of `xs` from one compiled
    `jvp` program, and f's central difference with step `eps` from that program's
    values: a (value, derivative, difference) triple per point (one triple for one
    point)."""
    return _with_differences(jax.jit(lambda s: jax.jvp(f, (s,), (jnp.ones_like(s),))), xs, eps)


def two_free_geoms_touching(m, d, n, seed, spread, accept=lambda d: d.ncon > 0):
    """`n` random poses of a MuJoCo model's two free bodies (independent random
    orientations, the second body's centre normal with scale `spread` about the
    first's) at which `accept(d)` holds after `mj_forward` (a contact, by default):
    yields `d` at each."""
    import mujoco
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(seed)
    found = 0
    while found < n:
        d.qpos[:] = 0.0
        d.qpos[3:7] = Rotation.random(random_state=rng).as_quat(scalar_first=True)
        d.qpos[10:14] = Rotation.random(random_state=rng).as_quat(scalar_first=True)
        d.qpos[7:10] = rng.normal(size=3) * spread
        mujoco.mj_forward(m, d)
        if accept(d):
            found += 1
            yield d


def touching(m, d, qpos_at, lo: float, hi: float) -> float:
    """The parameter s in [lo, hi] at which the model's geoms 0 and 1 just touch with
    `d.qpos = qpos_at(s)` (overlapping at `lo`, apart at `hi`): bisection on
    `mj_geomDistance` to round-off, returning the apart end."""
    import mujoco

    for _ in range(60):
        mid = 0.5 * (lo + hi)
        d.qpos[:] = qpos_at(mid)
        mujoco.mj_kinematics(m, d)
        if mujoco.mj_geomDistance(m, d, 0, 1, 1.0, None) < 0:
            lo = mid
        else:
            hi = mid
    return hi

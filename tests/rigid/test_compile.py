"""Graph size: no Python loop over bodies, tendons or actuators in the traced code.
(Compile times are measured by benchmarks/rigid_steps.py and benchmarks/compile_time.py,
not asserted here: the suite holds no timing assertions.)"""

import jax
import jax.extend as jex
import jax.numpy as jnp
import numpy as np
import pytest

import sciad.rigid as rigid

from .scenes import chain


def _count(jaxpr: jex.core.Jaxpr) -> int:
    """The number of equations of `jaxpr` and of every jaxpr nested in it (the bodies
    of `scan`, `while`, `cond`, `custom_jvp`, `pjit`, ...)."""
    n = 0
    for eqn in jaxpr.eqns:
        n += 1
        for param in eqn.params.values():
            for sub in param if isinstance(param, (list, tuple)) else (param,):
                if isinstance(sub, jex.core.ClosedJaxpr):
                    n += _count(sub.jaxpr)
                elif isinstance(sub, jex.core.Jaxpr):
                    n += _count(sub)
    return n


def test_graph_size_does_not_grow_with_bodies():
    """The traced dynamics of a 40-link chain is barely larger than a 5-link chain's:
    joints are vmapped per type, tree sums are masks, and forward kinematics takes
    ⌈log₂ depth⌉ vectorised rounds, so the jaxpr grows with log(depth), not with n."""

    def size(n):
        model = chain(n)
        q, v = model.default_state()
        return len(jax.make_jaxpr(lambda q, v: model.accelerations(0.0, q, v))(q, v).jaxpr.eqns)

    small, large = size(5), size(40)
    assert large < 1.25 * small, (small, large)


def _elements(k: int, n: int = 6) -> rigid.MultiBody:
    """An n-link chain with k of each element: limited fixed tendons with springs,
    spatial tendons through the world and two links, position servos with control
    ranges on the joints, and motors on the fixed tendons with early filter
    activations."""
    links = [f"link{i}" for i in range(n)]
    tendons = [
        rigid.FixedTendon(
            f"fixed{i}",
            [(links[i % n], 1.0), (links[(i + 1) % n], -0.5)],
            stiffness=1.0 + i,
            damping=0.1,
            range=(-1.0, 1.0 + i),
        )
        for i in range(k)
    ]
    tendons += [
        rigid.SpatialTendon(
            f"spatial{i}",
            [
                (None, (0.0, 0.0, 0.1)),
                (links[i % n], (0.1, 0.0, -0.1)),
                (links[(i + 2) % n], (0.0, 0.1, 0.0)),
            ],
            stiffness=2.0,
            springlength=0.3,
        )
        for i in range(k)
    ]
    actuators = [
        rigid.JointActuator.position(links[i % n], kp=1.0 + i, ctrl_range=(-1.0, 1.0))
        for i in range(k)
    ]
    actuators += [
        rigid.TendonActuator.motor(
            f"fixed{i}", gear=2.0, activation=rigid.FilterActivation(0.1, early=True)
        )
        for i in range(k)
    ]
    control = rigid.ConstantControl(jnp.linspace(-2.0, 2.0, 2 * k))
    return chain(n, tendons=tendons, actuators=actuators, control=control)


def test_graph_size_does_not_grow_with_tendons_or_actuators():
    """A constrained step of a chain with 40 each of fixed and spatial tendons, joint
    and tendon actuators (with activations) traces to the same program size as with 2
    each: the elements of one class are one vectorised computation with static index
    arrays (their parameters stacked), not a Python loop tracing each one anew (which
    made it 4.6 times larger: 1,696 equations with 2, 7,738 with 40)."""

    def size(k):
        model = _elements(k)
        q, v, act = model.default_state()
        step = jax.make_jaxpr(lambda q, v, a: model.constrained_velocity(0.0, 1e-3, q, v, act=a))
        return _count(step(q, v, act).jaxpr)

    small, large = size(2), size(40)
    assert large <= small + 10, (small, large)


def test_graph_size_does_not_grow_with_distinct_meshes():
    """The contacts of a floor and 8 free meshes of 8 different vertex counts trace to
    about the program of 2 such meshes (measured 10,488 equations and 10,442; the
    geoms' parameters are stacked per geom): pairs of meshes batch whatever their
    sizes (padded to common ones), where one program per pair of vertex counts made
    236 for MuJoCo Menagerie's OP3 (more than 15 minutes to compile)."""
    mujoco = pytest.importorskip("mujoco")
    rng = np.random.default_rng(0)

    def size(k):
        assets = "".join(
            f'<mesh name="m{i}" vertex="{" ".join(map(str, rng.normal(size=(12 + i, 3)).ravel()))}"/>'
            for i in range(k)
        )
        bodies = "".join(
            f'<body pos="{i} 0 1"><freejoint/><geom type="mesh" mesh="m{i}"/></body>'
            for i in range(k)
        )
        xml = f"""<mujoco><asset>{assets}</asset><worldbody><geom type="plane" size="9 9 1"/>
        {bodies}</worldbody></mujoco>"""
        model = rigid.from_mujoco(mujoco.MjModel.from_xml_string(xml)).model
        q, _ = model.default_state()
        return _count(jax.make_jaxpr(lambda q: model._contacts(model._frames(q)).dist)(q).jaxpr)

    small, large = size(2), size(8)
    assert large < 1.01 * small, (small, large)

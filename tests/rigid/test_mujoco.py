"""MuJoCo C as the reference: the same model's kinematics, mass matrix, bias forces,
accelerations and inverse dynamics at random states, and whole trajectories."""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid

from .scenes import (
    chain,
    chain_mjcf,
    MIXED_MJCF,
    quadruped,
    quadruped_mjcf,
    random_state,
)

mujoco = pytest.importorskip("mujoco")


@eqx.filter_jit
def everything(model, q, v):
    pos, quat = model.forward_kinematics(q)
    qacc = model.accelerations(0.0, q, v)
    return dict(
        xpos=pos,
        xquat=quat,
        M=model.mass_matrix(q),
        bias=model.bias_force(q, v),
        qacc=qacc,
        inverse=model.inverse_dynamics(0.0, q, v, 0.5 * qacc),
        energy=model.kinetic_energy(q, v) + model.potential_energy(q),
    )


@pytest.mark.parametrize(
    "scene", ["mixed", pytest.param("chain", marks=pytest.mark.slow), "quadruped"]
)
def test_terms_match_mujoco(scene):
    """Every joint type (free, ball, hinge, slide, a welded body), off-centre joints,
    rotated bodies and principal axes, damping and armature: body poses, the mass matrix,
    the bias forces, the accelerations, inverse dynamics and the energy agree with
    MuJoCo's to 1e-12 relative to their scale (measured ≤ 4e-14) at random states.
    MuJoCo's contacts are disabled: sciad has none yet."""
    xml = {"mixed": MIXED_MJCF, "chain": chain_mjcf(5, damping=0.1), "quadruped": quadruped_mjcf()}[
        scene
    ]
    xml = xml.replace('<flag contact="disable"/>', '<flag contact="disable" energy="enable"/>')
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    model = rigid.from_mujoco(m).model
    if scene == "chain":  # the scenes built directly in sciad are the same models
        built = chain(5, damping=0.1)
    elif scene == "quadruped":
        built = quadruped()
    else:
        built = model
    for seed in range(3):
        q, v = random_state(model, seed)
        d.qpos[:], d.qvel[:] = np.asarray(q), np.asarray(v)
        mujoco.mj_forward(m, d)
        ours, direct = everything(model, q, v), everything(built, q, v)
        full = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, full)
        want = dict(
            xpos=d.xpos[1:],
            xquat=d.xquat[1:],
            M=full,
            bias=d.qfrc_bias,
            qacc=d.qacc,
            energy=d.energy.sum(),
        )
        want = {k: np.array(x) for k, x in want.items()}  # copies: d changes below
        d.qacc[:] = 0.5 * d.qacc
        mujoco.mj_inverse(m, d)
        want["inverse"] = d.qfrc_inverse.copy()
        for key, ref in want.items():
            scale = 1.0 + np.max(np.abs(ref))
            for got in (ours, direct):
                x = np.asarray(got[key])
                if key == "xquat":  # q and −q are the same rotation
                    x = x * np.sign(np.sum(x * ref, axis=1, keepdims=True))
                assert np.max(np.abs(x - ref)) < 1e-12 * scale, (key, np.max(np.abs(x - ref)))


def mujoco_run(xml, q, v, n, ctrl=None):
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = np.asarray(q), np.asarray(v)
    for k in range(n):
        if ctrl is not None:
            d.ctrl[:] = ctrl[k]
        mujoco.mj_step(m, d)
    return d.qpos.copy(), d.qvel.copy()


@pytest.mark.parametrize("method", ["Euler", pytest.param("RK4", marks=pytest.mark.slow)])
def test_chain_trajectory_matches_mujoco(method):
    """The damped 5-link chain (damping 0.1, so MuJoCo's Euler integrates it
    implicitly, as does SemiImplicitEuler), dt = 1e-3, 2,000 steps (2 s of chaotic
    swinging from a random state): q and v agree with MuJoCo's to 1e-10 (measured
    2e-14 for Euler and for RK4)."""
    model = chain(5, damping=0.1)
    q, v = random_state(model, 7)
    integ = rigid.SemiImplicitEuler() if method == "Euler" else rigid.RKMK4()
    y1 = sciad.simulate(model, (q, v), dt=1e-3, n_steps=2000, integrator=integ).y1
    qm, vm = mujoco_run(chain_mjcf(5, damping=0.1, integrator=method), q, v, 2000)
    assert np.max(np.abs(np.asarray(y1[0]) - qm)) < 1e-10
    assert np.max(np.abs(np.asarray(y1[1]) - vm)) < 1e-10


def test_free_body_rk4_matches_mujoco():
    """An asymmetric free body with its centre of mass off the body origin, rotated
    principal axes and gravity, spinning fast: RKMK4 against MuJoCo's RK4, dt = 1e-3,
    1,000 steps: agreement to 1e-11 (measured 4e-15: MuJoCo's RK4 omits the dexp⁻¹
    stage correction, which changes the result only at higher order)."""
    xml = (
        '<mujoco><option timestep="0.001" integrator="RK4"/><worldbody><body name="top" pos="0 0 1">'
        '<freejoint/><inertial pos="0.1 -0.05 0.2" quat="0.9 0.2 -0.3 0.1" mass="2" '
        'diaginertia="0.1 0.2 0.3"/></body></worldbody></mujoco>'
    )
    m = mujoco.MjModel.from_xml_string(xml)
    model = rigid.from_mujoco(m).model
    q0, _ = model.default_state()
    v0 = jnp.array([0.3, -0.2, 1.0, 2.0, -3.0, 1.5])
    y1 = sciad.simulate(model, (q0, v0), dt=1e-3, n_steps=1000, integrator=rigid.RKMK4()).y1
    qm, vm = mujoco_run(xml, q0, v0, 1000)
    assert np.max(np.abs(np.asarray(y1[0]) - qm)) < 1e-11
    assert np.max(np.abs(np.asarray(y1[1]) - vm)) < 1e-11


def test_quadruped_with_controls_matches_mujoco():
    """The quadruped (free torso, 8 damped hinges, 8 motors with gear 2) falling under
    gravity while its motors follow a control sequence, MuJoCo's Euler against
    SemiImplicitEuler with an InterpolatedControl whose knots sit at the step times,
    dt = 1e-3, 1,000 steps (legs spinning at up to 40 rad/s): agreement to 1e-10
    (measured 2e-13 in q, 7e-12 in v)."""
    n = 1000
    rng = np.random.default_rng(3)
    ctrl = np.cumsum(rng.normal(size=(n, 8)) * 0.1, axis=0)
    ts = jnp.arange(n, dtype=float) * 1e-3
    model = quadruped(control=rigid.InterpolatedControl(ts, jnp.asarray(ctrl)))
    q, v = random_state(model, 2, scale=0.5)
    y1 = sciad.simulate(model, (q, v), dt=1e-3, n_steps=n, integrator=rigid.SemiImplicitEuler()).y1
    qm, vm = mujoco_run(quadruped_mjcf(), q, v, n, ctrl=ctrl)
    assert np.max(np.abs(np.asarray(y1[0]) - qm)) < 1e-10
    assert np.max(np.abs(np.asarray(y1[1]) - vm)) < 1e-10

"""Height fields (`HeightField`) against MuJoCo C: the contacts of spheres, capsules,
ellipsoids and cylinders with the prisms of a random terrain (mjc_ConvexHField), a
ball rolling over it, and the refusals."""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid

mujoco = pytest.importorskip("mujoco")

NROW, NCOL = 9, 11
GEOMS = {
    "sphere": 'size="0.1"',
    "capsule": 'type="capsule" size="0.05 0.08"',
    "ellipsoid": 'type="ellipsoid" size="0.1 0.07 0.05"',
    "cylinder": 'type="cylinder" size="0.06 0.05"',
}


def terrain_model(shape: str, cone: str = "pyramidal"):
    """A rotated, shifted random height field (9 × 11) and one free geom above it."""
    xml = f"""<mujoco><option timestep="0.002" cone="{cone}"/>
    <asset><hfield name="h" nrow="{NROW}" ncol="{NCOL}" size="1 0.8 0.1 0.05"/></asset>
    <worldbody><geom name="terrain" type="hfield" hfield="h" pos="0.05 0 0" euler="0 0 5"/>
    <body name="b" pos="0.13 0.07 0.25"><freejoint/><geom name="g" {GEOMS[shape]}
    mass="1"/></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    m.hfield_data[:] = np.random.default_rng(0).uniform(size=NROW * NCOL)
    return m, rigid.from_mujoco(m)


_contacts = eqx.filter_jit(lambda model, q: model.contacts(q))


@pytest.mark.parametrize(
    "shape, tol, point_tol",
    [
        ("sphere", 1e-12, 1e-11),  # measured 3e-17
        # MuJoCo's EPA stops at its tolerance (ccd_tolerance 1e-6): a deep capsule's
        # depth differs by 2.5e-9 and its point by 7.6e-6, a curved surface's by 1e-5
        ("capsule", 1e-8, 3e-5),
        pytest.param("ellipsoid", 3e-5, 1e-4, marks=pytest.mark.slow),
        pytest.param("cylinder", 3e-5, 1e-4, marks=pytest.mark.slow),
    ],
)
def test_contacts_match_mujoco(shape, tol, point_tol):
    """At three heights of a tilted geom over the terrain, sciad's active contacts are
    MuJoCo's (mj_forward's d.contact): one per penetrated prism, with the same
    distance, normal and point (to round-off for spheres and capsules, to MuJoCo's
    convex-collision tolerance for the other shapes)."""
    m, mj = terrain_model(shape)
    d = mujoco.MjData(m)
    found = 0
    for z in (0.17, 0.15, 0.12):
        d.qpos[:] = m.qpos0
        d.qpos[2] = z
        d.qpos[3:7] = np.array([0.9, 0.1, 0.3, 0.2]) / np.linalg.norm([0.9, 0.1, 0.3, 0.2])
        mujoco.mj_forward(m, d)
        c = _contacts(mj.model, mj.qpos_to_q(jnp.asarray(d.qpos)))
        active = np.flatnonzero(np.asarray(c.dist) < 0)
        assert len(active) == d.ncon
        found += d.ncon
        ref = d.contact[: d.ncon]
        got = sorted(active, key=lambda k: float(c.dist[k]))
        for k, r in zip(got, sorted(ref, key=lambda r: r.dist), strict=True):
            assert abs(float(c.dist[k]) - r.dist) < tol
            assert np.max(np.abs(np.asarray(c.normal[k]) - r.frame[:3])) < point_tol
            assert np.max(np.abs(np.asarray(c.point[k]) - r.pos)) < point_tol
    assert found >= 1


@pytest.mark.slow
def test_ball_rolling_over_terrain_matches_mujoco():
    """A ball thrown over the terrain lands on it, rolls and bounces over its slopes as
    MuJoCo's does: qpos and qvel after 200 steps agree with mj_step."""
    m, mj = terrain_model("sphere")
    q0, v0 = np.array(m.qpos0), np.array([0.5, -0.3, 0.0, 1.0, 2.0, 0.5])
    q0[2] = 0.17
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q0, v0
    ncon = 0
    for _ in range(200):
        mujoco.mj_step(m, d)
        ncon = max(ncon, d.ncon)
    assert ncon >= 2  # on two prisms at once
    y0 = (mj.qpos_to_q(jnp.asarray(q0)), mj.qvel_to_v(jnp.asarray(v0)))
    y1 = sciad.simulate(mj.model, y0, dt=mj.dt, n_steps=200, integrator=mj.integrator).y1
    assert np.max(np.abs(np.asarray(mj.q_to_qpos(y1[0])) - d.qpos)) < 1e-10
    assert np.max(np.abs(np.asarray(mj.v_to_qvel(y1[1])) - d.qvel)) < 1e-8


def test_refusals():
    """A window too small for a geom, and height-field data outside [0, 1], are refused
    before tracing, naming the geoms."""
    field = rigid.HeightField(jnp.zeros((11, 11)), (1.0, 1.0, 0.1, 0.1), window=2)
    body = rigid.Body("b", joint=rigid.FreeJoint(), mass=1.0, inertia=jnp.ones(3))
    geoms = [
        rigid.Geom(field, name="terrain"),
        rigid.Geom(rigid.Sphere(0.3), body="b", name="ball"),
    ]
    with pytest.raises(ValueError, match=r"geom 'terrain' .* examines 2 cells .* window=4"):
        rigid.MultiBody([body], geoms=geoms)
    with pytest.raises(ValueError, match=r"HeightField.data must lie in \[0, 1\]"):
        rigid.HeightField(2 * jnp.ones((3, 3)), (1.0, 1.0, 0.1, 0.1))

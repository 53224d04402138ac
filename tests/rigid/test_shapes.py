"""Shapes' mass properties against closed forms, numerical quadrature and MuJoCo; bodies
built from shapes and from full inertia tensors."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad.rigid as rigid


def test_closed_forms():
    rho = 1000.0
    m, i = rigid.Sphere(0.1).mass_properties(rho)
    assert np.isclose(m, rho * 4 / 3 * math.pi * 1e-3)
    np.testing.assert_allclose(i, 0.4 * m * 0.01 * np.ones(3), rtol=1e-14)
    m, i = rigid.Box(jnp.array([0.1, 0.2, 0.3])).mass_properties(rho)
    assert np.isclose(m, rho * 0.2 * 0.4 * 0.6)
    np.testing.assert_allclose(i, m / 12 * np.array([0.16 + 0.36, 0.04 + 0.36, 0.04 + 0.16]))
    m, i = rigid.Cylinder(0.1, 0.3).mass_properties(rho)
    assert np.isclose(m, rho * math.pi * 0.01 * 0.6)
    np.testing.assert_allclose(i, m * np.array([(3 * 0.01 + 0.36) / 12] * 2 + [0.005]))


def quadrature(inside, half_box, n=120):
    """Mass-normalised second moments of a solid by midpoint quadrature on a grid."""
    axes = [(np.arange(n) + 0.5) / n * 2 * h - h for h in half_box]
    x, y, z = np.meshgrid(*axes, indexing="ij")
    w = inside(x, y, z).astype(float)
    dv = np.prod([2 * h / n for h in half_box])
    vol = w.sum() * dv
    ixx = (w * (y**2 + z**2)).sum() / w.sum()
    izz = (w * (x**2 + y**2)).sum() / w.sum()
    return vol, np.array([ixx, ixx, izz])


def test_capsule_against_quadrature():
    """An independent check of the hemisphere terms (parallel-axis theorem)."""
    r, h = 0.1, 0.15
    cap = rigid.Capsule(r, h)

    def inside(x, y, z):
        zc = np.clip(z, -h, h)
        return x**2 + y**2 + (z - zc) ** 2 <= r**2

    vol, unit = quadrature(inside, (r, r, h + r), n=160)
    assert abs(float(cap.volume()) - vol) / vol < 2e-3
    np.testing.assert_allclose(cap.unit_inertia(), unit, rtol=3e-3)


def test_mass_properties_differentiable():
    """d(mass)/d(radius) of a sphere is 4πr²ρ; d(I)/d(r) follows."""
    dm = jax.grad(lambda r: rigid.Sphere(r).mass_properties(2.0)[0])(0.3)
    assert np.isclose(dm, 4 * math.pi * 0.09 * 2.0)
    di = jax.grad(lambda r: rigid.Capsule(r, 0.2).mass_properties(1.0)[1][2])(0.1)
    eps = 1e-6
    fd = (
        rigid.Capsule(0.1 + eps, 0.2).mass_properties(1.0)[1][2]
        - rigid.Capsule(0.1 - eps, 0.2).mass_properties(1.0)[1][2]
    ) / (2 * eps)
    assert np.isclose(di, fd, rtol=1e-7)


GEOMS = {
    "sphere": (lambda: rigid.Sphere(0.1), 'type="sphere" size="0.1"'),
    "box": (lambda: rigid.Box(jnp.array([0.1, 0.2, 0.3])), 'type="box" size="0.1 0.2 0.3"'),
    "capsule": (lambda: rigid.Capsule(0.05, 0.2), 'type="capsule" size="0.05 0.2"'),
    "cylinder": (lambda: rigid.Cylinder(0.05, 0.2), 'type="cylinder" size="0.05 0.2"'),
}


@pytest.mark.parametrize("kind", GEOMS)
def test_against_mujoco(kind):
    mujoco = pytest.importorskip("mujoco")
    make, geom = GEOMS[kind]
    xml = (
        '<mujoco><worldbody><body><freejoint/><geom density="700" '
        f"{geom}/></body></worldbody></mujoco>"
    )
    m = mujoco.MjModel.from_xml_string(xml)
    mass, inertia = make().mass_properties(700.0)
    assert np.isclose(mass, m.body_mass[1], rtol=1e-12)
    np.testing.assert_allclose(inertia, m.body_inertia[1], rtol=1e-12)


def test_body_from_shape_and_from_tensor():
    """A shape placed with a pose sets com and the principal axes; a full tensor is
    diagonalised to the same principal moments and axes."""
    s = math.sqrt(0.5)
    body = rigid.Body(
        "link",
        shape=rigid.Capsule(0.05, 0.2),
        density=1000.0,
        com=jnp.array([0.2, 0.0, 0.0]),
        inertia_quat=jnp.array([s, 0.0, s, 0.0]),  # capsule axis z → body x
    )
    mass, inertia = rigid.Capsule(0.05, 0.2).mass_properties(1000.0)
    assert np.isclose(body.mass, mass)
    # the tensor in body axes: axial moment along x
    tensor = np.diag([inertia[2], inertia[0], inertia[1]])
    from_tensor = rigid.Body("t", mass=mass, inertia=jnp.asarray(tensor))
    np.testing.assert_allclose(np.sort(from_tensor.inertia), np.sort(inertia), rtol=1e-12)

    def rotated(b):
        r = np.asarray(
            jax.vmap(lambda e: rigid_rotate(b.inertia_quat, e))(jnp.eye(3))
        ).T  # columns: principal axes in body coordinates
        return r @ np.diag(np.asarray(b.inertia)) @ r.T

    np.testing.assert_allclose(rotated(body), tensor, atol=1e-15)
    np.testing.assert_allclose(rotated(from_tensor), tensor, atol=1e-15)
    with_mass = rigid.Body("m", shape=rigid.Sphere(0.1), mass=2.0)
    np.testing.assert_allclose(with_mass.inertia, 0.4 * 2.0 * 0.01 * np.ones(3))


def rigid_rotate(q, v):
    from sciad._core._geometry import quat_rotate

    return quat_rotate(q, v)


def test_inradius_is_the_largest_ball_about_the_centre_inside():
    """Points at 0.999 of the inradius from the centre lie inside the solid, in every
    direction; at 1.001 of it some do not (the axes hit the nearest face)."""
    r, h, half = 0.1, 0.15, np.array([0.3, 0.07, 0.2])
    solids = [
        (rigid.Sphere(r), lambda x, y, z: x**2 + y**2 + z**2 <= r**2),
        (
            rigid.Box(jnp.asarray(half)),
            lambda x, y, z: (abs(x) <= half[0]) & (abs(y) <= half[1]) & (abs(z) <= half[2]),
        ),
        (rigid.Capsule(r, h), lambda x, y, z: x**2 + y**2 + (z - np.clip(z, -h, h)) ** 2 <= r**2),
        (rigid.Cylinder(r, h), lambda x, y, z: (x**2 + y**2 <= r**2) & (abs(z) <= h)),
        (rigid.Cylinder(0.3, 0.05), lambda x, y, z: (x**2 + y**2 <= 0.09) & (abs(z) <= 0.05)),
    ]
    rng = np.random.default_rng(0)
    dirs = rng.normal(size=(4000, 3))
    dirs = np.concatenate(
        [dirs / np.linalg.norm(dirs, axis=1, keepdims=True), np.eye(3), -np.eye(3)]
    )
    for shape, inside in solids:
        rho = float(shape.inradius())
        assert np.all(inside(*(0.999 * rho * dirs).T)), shape
        assert not np.all(inside(*(1.001 * rho * dirs).T)), shape
    assert float(rigid.Plane().inradius()) == np.inf

"""What the rigid pillar does with input that is legal but dangerous: a contact time
constant below two steps (clamped to 2·dt, as MuJoCo's `refsafe`), bodies that start
deep inside each other (a warning naming the geoms and the depth), and states off the
joints' manifold. The refusals themselves are in tests/bad_inputs/test_rigid.py."""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid

from .scenes import flat

G = 9.81
DT = 1e-3
EPS = 1e-2  # the contacts' softness: R = EPS · J M⁻¹ Jᵀ (a flat impedance)


def box_on_floor(z, time_constant=0.02):
    half = jnp.full(3, 0.1)
    body = rigid.Body(
        "box", joint=rigid.FreeJoint(), pos=(0.0, 0.0, z), shape=rigid.Box(half), density=1000.0
    )
    geoms = [rigid.Geom(rigid.Plane(), name="floor"), rigid.Geom(rigid.Box(half), body="box")]
    return rigid.MultiBody(
        [body], geoms=geoms, contact=rigid.ContactModel(impedance=flat(EPS, time_constant))
    )


def ball_on_floor(z, time_constant=0.02):
    ball = rigid.Sphere(0.1)
    body = rigid.Body("ball", joint=rigid.FreeJoint(), pos=(0.0, 0.0, z), shape=ball, density=1.0)
    geoms = [rigid.Geom(rigid.Plane(), name="floor"), rigid.Geom(ball, body="ball", name="ball")]
    return rigid.MultiBody(
        [body], geoms=geoms, contact=rigid.ContactModel(impedance=flat(EPS, time_constant))
    )


@eqx.filter_jit
def heights(model, n_steps):
    traj = sciad.simulate(
        model, model.default_state(), dt=DT, n_steps=n_steps, saveat=sciad.SaveAt(steps=1)
    )
    return traj.ys[0][:, 2]


def test_effective_time_constant_is_at_least_two_steps():
    contact = rigid.ContactModel(rigid.Impedance(time_constant=0.02))
    assert float(contact.effective_time_constant(1e-3)) == 0.02
    assert float(contact.effective_time_constant(0.02)) == 0.04

    def tau(t):
        return rigid.ContactModel(rigid.Impedance(time_constant=t)).effective_time_constant(1e-3)

    dtau = jax.grad(tau)  # differentiable in both arguments, piecewise
    assert float(dtau(0.02)) == 1.0 and float(dtau(1e-4)) == 0.0


def test_a_time_constant_below_two_steps_does_not_launch_a_dropped_box():
    """Before the clamp, a box dropped from 0.2 m with τ = dt/2 rose to 1.28 m: the
    recovery φ ← φ (1 − dt/τ) flips the penetration's sign each step and the push
    −φ/τ grows it. With max(τ, 2 dt) the run is the τ = 2 dt run, bit for bit, and
    the box rebounds by 1.4 cm (the impact step's penetration pushed out in 2 dt)."""
    z_half = heights(box_on_floor(0.3, time_constant=DT / 2), 600) - 0.1
    z_two = heights(box_on_floor(0.3, time_constant=2 * DT), 600) - 0.1
    np.testing.assert_array_equal(z_half, z_two)
    landed = np.argmax(z_half < 0)
    assert 0 < landed < 250
    assert np.max(z_half[landed:]) < 0.02  # of a 0.2 m drop
    assert abs(z_half[-1]) < 1e-5  # and it comes to rest on the floor


def test_a_hard_limit_with_a_tiny_time_constant_matches_two_steps():
    """The hard joint limits use the same clamped time constant as the contacts."""

    def pendulum(tau):
        joint = rigid.HingeJoint(axis=(0.0, 1.0, 0.0), range=(-0.3, 0.3))
        bob = rigid.Body("bob", joint=joint, com=(0.0, 0.0, -1.0), mass=1.0, inertia=(1e-3,) * 3)
        return rigid.MultiBody([bob], contact=rigid.ContactModel(flat(EPS, tau)))

    @eqx.filter_jit
    def angles(model):
        y0 = (jnp.zeros(1), jnp.array([3.0]))  # into the upper limit at 3 rad/s
        traj = sciad.simulate(model, y0, dt=DT, n_steps=400, saveat=sciad.SaveAt(steps=1))
        return traj.ys[0][:, 0]

    tiny, two = angles(pendulum(DT / 4)), angles(pendulum(2 * DT))
    np.testing.assert_array_equal(tiny, two)
    # it stops at the limit (within the 3 mrad the impact step overshoots), not beyond
    assert 0.3 < np.max(tiny) < 0.3 + 3.0 * DT + 1e-9


def test_a_ball_starting_deep_in_the_floor_is_warned_about_and_pushed_out_as_told():
    """3 cm deep (the threshold is a tenth of the 0.1 m radius): the warning names both
    geoms, the depth and the speed depth/τ that bounds the push; the first step's
    velocity is the solve's minimiser for one contact, (û + ε v_free)/(1 + ε), with
    MuJoCo's reference û = h k d |r| (k = 1/(d τ)², a flat d = 1/(1 + ε))."""
    model = ball_on_floor(0.07)
    y0 = model.default_state()
    with pytest.warns(UserWarning) as record:
        traj = sciad.simulate(model, y0, dt=DT, n_steps=1)
    (w,) = record
    msg = str(w.message)
    assert "geom 'floor' (Plane on the world) and geom 'ball' (Sphere on body 'ball')" in msg
    assert "start 0.03 deep" in msg and "more than 0.1 of the smaller geom's inradius (0.01)" in msg
    assert "depth/time_constant = 1.5 " in msg
    assert w.filename == __file__  # it points at the simulate call
    vz = float(traj.ys[1][-1, 2])
    d, v_free = 1 / (1 + EPS), -G * DT
    push = DT * 0.03 / (d * 0.02) ** 2 * d
    np.testing.assert_allclose(vz, (push + EPS * v_free) / (1 + EPS), rtol=1e-9)


@pytest.mark.parametrize("z", [0.1, 0.095, 0.25])
def test_no_warning_for_touching_shallow_or_separated_geoms(z):
    model = ball_on_floor(z)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.check_state(model.default_state())


def test_deep_box_corners_are_warned_once_per_pair():
    model = box_on_floor(0.08)  # four corners 2 cm deep
    with pytest.warns(UserWarning, match="start 0.02 deep") as record:
        model.check_state(model.default_state())
    assert len(record) == 1


def test_no_warning_and_no_error_when_the_state_is_traced():
    model = ball_on_floor(0.07)

    @jax.jit
    def check(q, v):
        model.check_state((q, v))
        return q

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(*model.default_state())


def test_a_concrete_state_inside_an_outer_jit_is_checked_and_warned_about():
    """Inside jit, operations on concrete values are staged too: the state checks run on
    the concrete positions at trace time (a deep start is warned about, an off-manifold
    quaternion refused), not on tracers (the demo's jit of a jvp failed so)."""
    model = ball_on_floor(0.07)
    q0, v0 = model.default_state()
    with pytest.warns(UserWarning, match="start 0.03 deep"):
        jax.jit(lambda v: model.check_state((q0, v0 + v)) or v)(1.0)
    bad = q0.at[3].set(2.0)
    with pytest.raises(ValueError, match="off the joint's manifold"):
        jax.jit(lambda v: model.check_state((bad, v0 + v)) or v)(1.0)


def test_slightly_unnormalised_quaternions_are_accepted():
    """A hand-typed quaternion (0.7071, 0.7071, 0, 0) is 1.4e-5 short of unit length: fine
    (the integrators normalise). (1, 0, 0, 1) is refused (tests/bad_inputs)."""
    model = rigid.MultiBody(
        [rigid.Body("b", joint=rigid.BallJoint(), mass=1.0, inertia=(0.1, 0.1, 0.1))]
    )
    model.check_state((jnp.array([0.7071, 0.7071, 0.0, 0.0]), jnp.zeros(3)))
    with pytest.raises(ValueError, match=r"body 'b' \(BallJoint\), q\[0:4\] = \[1. 0. 0. 1.\]"):
        model.check_state((jnp.array([1.0, 0.0, 0.0, 1.0]), jnp.zeros(3)))


def _scattered_cylinders():
    """Eight cylinders (five points a pair): two pairs deep in each other, one pair touching
    shallowly, the rest metres apart."""
    radius = [0.1, 0.08, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05]
    half = [0.2, 0.15, 0.2, 0.1, 0.1, 0.1, 0.3, 0.05]
    x = [0.0, 0.15, 3.0, 3.17, 6.0, 6.199, 9.0, 12.0]
    tilt = [0.0, 0.3, 0.0, 0.7, 0.0, 0.0, 0.0, 0.4]  # rad about y
    shapes = [rigid.Cylinder(r, h) for r, h in zip(radius, half, strict=True)]
    bodies = [
        rigid.Body(
            f"b{k}",
            joint=rigid.FreeJoint(),
            pos=(x[k], 0.0, 1.0),
            quat=(np.cos(tilt[k] / 2), 0.0, np.sin(tilt[k] / 2), 0.0),
            shape=s,
            density=500.0,
        )
        for k, s in enumerate(shapes)
    ]
    geoms = [rigid.Geom(s, body=f"b{k}", name=f"g{k}") for k, s in enumerate(shapes)]
    return rigid.MultiBody(bodies, geoms=geoms, gravity=jnp.zeros(3))


def test_the_check_warns_about_exactly_the_deep_pairs_of_a_search_over_every_pair():
    """The check computes only the pairs whose bounding spheres overlap (the broad
    phase): the pairs it warns about and their depths are those of the same search over
    every pair (a pair's depth is its deepest point's)."""
    from sciad.rigid._collision import (
        _distances,
        _geom_frames,
        _pair_groups,
        DEEP_PENETRATION,
        near_pairs,
    )

    model = _scattered_cylinders()
    q = model.default_state()[0]
    rot, pos = _geom_frames(model, q)
    assert len(model.pairs) == 28 and near_pairs(model, rot, pos) == ((0, 1), (2, 3), (4, 5))
    every = _distances(
        model.geoms, model.geom_body, model.pairs, rot, pos, model.contact, model.explicit_pairs()
    )
    dist = np.asarray(every[0])
    expected = {}
    start = 0
    for _, k, ia, ib, _ in _pair_groups(model.geoms, model.pairs):
        for n, (i, j) in enumerate(zip(ia, ib, strict=True)):
            depth = float(np.max(-dist[start + k * n : start + k * (n + 1)]))
            inner = min(float(model.geoms[g].shape.inradius()) for g in (i, j))
            if depth > DEEP_PENETRATION * inner:
                expected[f"g{i}", f"g{j}"] = depth
        start += k * len(ia)
    assert set(expected) == {("g0", "g1"), ("g2", "g3")}  # g4–g5 is 1 mm deep: shallow
    with pytest.warns(UserWarning) as record:
        model.check_state(model.default_state())
    got = {}
    for w in record:
        msg = str(w.message)
        names = tuple(msg.split("'")[k] for k in (1, 5))
        got[names] = float(msg.split("start ")[1].split(" deep")[0])
    assert set(got) == set(expected)
    for pair, depth in expected.items():
        np.testing.assert_allclose(got[pair], depth, rtol=5e-3)  # printed to 3 digits

"""Explicit contact pairs (MuJoCo's `<contact><pair>`, `ContactPair`) and contact gaps
with MuJoCo C as the reference: the contact lists of `mj_collision` (a pair replacing
a dynamic one, a pair of geoms whose bitmasks never collide, a pair of a body and its
child, pair and geom gaps), a run beside `mj_step` with both cones, gradients with
respect to a pair's friction and friction reference against central differences, and
the refusals of bad input."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.rigid as rigid
from sciad.rigid._collision import _pair_groups, contact_frames

from ..helpers import fd_directional

mujoco = pytest.importorskip("mujoco")

TIGHT = 'tolerance="1e-15" iterations="500" ls_tolerance="1e-12"'

# floor–ball: a dynamic pair replaced by an explicit one (its own friction, solref,
# margin and gap; the ball starts in the gap, inactive); floor–cap: bitmasks that never
# collide, paired explicitly (condim 4, anisotropic friction, solreffriction); cap–tip:
# a body and its child, paired explicitly; floor–block: a dynamic pair with the floor's
# margin and gap (starts in the gap); floor–tip: a plain dynamic pair.
SCENE = f"""<mujoco><option timestep="0.002" cone="CONE" {TIGHT}/><worldbody>
<geom name="floor" type="plane" size="2 2 .1" friction="0.6 0.01 0.001" margin="0.001"
    gap="0.003"/>
<body name="ball" pos="0.5 0 0.105"><freejoint/><geom name="ball" size="0.1" mass="1"
    friction="0.9 0.02 0.01"/></body>
<body name="cap" pos="0 0 0.0498"><freejoint/><geom name="cap" type="capsule"
    fromto="-0.1 0 0 0.1 0 0" size="0.05" contype="2" conaffinity="2" mass="1"/>
  <body name="pend" pos="0 0 0.12"><joint name="hinge" type="hinge" axis="0 1 0"
      damping="0.01"/><geom name="tip" size="0.03" pos="0.08 0 -0.042" mass="0.1"/></body>
</body>
<body name="block" pos="-0.5 0 0.0525"><freejoint/><geom name="block" type="box"
    size="0.05 0.05 0.05" mass="0.5"/></body>
</worldbody><contact>
<pair geom1="floor" geom2="ball" friction="0.3 0.3 0.005 0.0001 0.0001" solref="0.01 0.8"
    solimp="0.8 0.9 0.002 0.4 3" margin="0.002" gap="0.01"/>
<pair geom1="cap" geom2="floor" condim="4" friction="0.8 0.5 0.02 0.001 0.001"
    solreffriction="0.05 1.2"/>
<pair geom1="tip" geom2="cap" condim="6" friction="0.5 0.5 0.01 0.002 0.002"
    solref="-20000 -80" solreffriction="-0.0 -30" gap="0.004"/>
</contact></mujoco>"""


def load(cone: str):
    m = mujoco.MjModel.from_xml_string(SCENE.replace("CONE", cone))
    return m, rigid.from_mujoco(m)


def _points(model: rigid.MultiBody) -> list[tuple[int, int]]:
    """The geom pair (i, j) of each candidate contact point of `model`."""
    out = []
    for _, n, ia, ib, _ in _pair_groups(model.geoms, model.pairs):
        out += [(int(i), int(j)) for i, j in zip(ia, ib, strict=True) for _ in range(n)]
    return out


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_contact_list_matches_mj_collision(cone):
    """Every contact of mj_collision at qpos0, and no other, is a candidate point of
    sciad with dist < gap: the same geoms, distance (less the margin), normal, frame,
    condim, friction, solref, solreffriction, solimp and activity (dist < margin;
    MuJoCo 4 lists contacts up to margin + gap and excludes those beyond the margin),
    to 1e-12 (measured: identical, 0)."""
    m, mj = load(cone)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    names = [g.name for g in mj.model.geoms]
    c = eqx.filter_jit(lambda model, q: model.contacts(q))(mj.model, mj.y0[0])
    frames = np.asarray(contact_frames(c.normal, c.tangent))
    ours: dict[frozenset, list] = {}
    for k, (i, j) in enumerate(_points(mj.model)):
        if float(c.dist[k]) < float(c.gap[k]):
            ours.setdefault(frozenset((names[i], names[j])), []).append((k, names[i]))
    theirs: dict[frozenset, list] = {}
    for con in d.contact[: d.ncon]:
        g1, g2 = (mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) for g in con.geom)
        theirs.setdefault(frozenset((g1, g2)), []).append((con, g1))
    assert ours.keys() == theirs.keys()
    assert {frozenset(("floor", "ball")), frozenset(("cap", "tip"))} <= set(theirs)
    assert frozenset(("floor", "cap")) in theirs and len(theirs) == 4
    inactive = 0
    for key, cons in theirs.items():
        mine = ours[key]
        assert len(mine) == len(cons), key
        cons = sorted(cons, key=lambda x: x[0].dist)
        mine = sorted(mine, key=lambda x: float(c.dist[x[0]]))
        for (con, g1), (k, first) in zip(cons, mine, strict=True):
            sign = 1.0 if first == g1 else -1.0
            margin = con.includemargin
            assert abs(float(c.dist[k]) + margin - con.dist) < 1e-12
            assert (float(c.dist[k]) < 0) == (not con.exclude)
            inactive += int(con.exclude)
            frame = con.frame.reshape(3, 3)
            np.testing.assert_allclose(sign * frames[k, 0], frame[0], atol=1e-12)
            if sign > 0 and cone == "pyramidal":
                np.testing.assert_allclose(frames[k], frame, atol=1e-12)
            assert int(c.dim[k]) == con.dim
            fri = con.friction if con.dim > 1 else np.zeros(5)
            np.testing.assert_allclose(c.friction[k], fri, rtol=1e-15)
            np.testing.assert_allclose(c.impedance[k, :2], con.solref, rtol=1e-15)
            np.testing.assert_allclose(c.impedance[k, 2:], con.solimp, rtol=1e-15)
            np.testing.assert_allclose(c.friction_reference[k], con.solreffriction)
    assert inactive == 5  # the ball and the block's four corners lie in their gaps


@pytest.mark.parametrize(
    "cone, tol",
    [pytest.param("pyramidal", 1e-10, marks=pytest.mark.slow), ("elliptic", 1e-8)],
)
def test_run_matches_mj_step(cone, tol):
    """300 steps (0.6 s) of the scene with the ball sliding and spinning, the capsule
    sliding, its child pendulum falling onto it and the block dropping out of its gap,
    beside mj_step: max |Δqpos| below `tol` and |Δqvel| below 10 `tol` (measured:
    pyramidal 2.9e-11 and 2e-14, the position offset from the block's impact, where
    the velocities differ by up to 2e-8 for a few steps; elliptic 3.0e-10 and 1.1e-8,
    MuJoCo's line search tolerance). Without the pairs' solreffriction the elliptic
    run would differ by 4e-3 in qpos and 0.32 in qvel."""
    m, mj = load(cone)
    d = mujoco.MjData(m)
    qvel0 = np.zeros(m.nv)
    qvel0[:6] = [0.5, 0.3, 0.0, 1.0, -2.0, 10.0]
    qvel0[6:8] = [0.4, -0.2]
    qvel0[11] = 3.0
    d.qvel[:] = qvel0
    contacts = set()
    for _ in range(300):
        mujoco.mj_step(m, d)
        for con in d.contact[: d.ncon]:
            if not con.exclude:
                contacts.add(frozenset(int(g) for g in con.geom))
    assert len(contacts) == 5  # every pair acts
    y0 = (mj.y0[0], mj.qvel_to_v(jnp.asarray(qvel0)))
    y1 = sciad.simulate(mj.model, y0, dt=mj.dt, n_steps=300, integrator=mj.integrator).y1
    dq = np.max(np.abs(np.asarray(mj.q_to_qpos(y1[0])) - d.qpos))
    dv = np.max(np.abs(np.asarray(mj.v_to_qvel(y1[1])) - d.qvel))
    assert dq < tol and dv < 10 * tol, (dq, dv)


# One ball on a floor through the same pair three times (MuJoCo makes contacts for
# each; Shadow-hand and Adroit models repeat pairs), with condims 3, 1 and 6.
REPEATED = f"""<mujoco><option timestep="0.002" cone="elliptic" {TIGHT}/><worldbody>
<geom name="floor" type="plane" size="2 2 .1"/>
<body name="ball" pos="0 0 0.099"><freejoint/><geom name="ball" size="0.1" mass="1"/></body>
</worldbody><contact>
<pair geom1="floor" geom2="ball" friction="0.3 0.3 0.005 0.0001 0.0001" solref="0.01 0.8"/>
<pair geom1="ball" geom2="floor" condim="1" solref="0.03 1" margin="0.001"/>
<pair geom1="floor" geom2="ball" condim="6" friction="0.9 0.9 0.02 0.001 0.001"/>
</contact></mujoco>"""


def test_repeated_pairs_each_make_contacts_as_in_mujoco():
    """A pair given three times makes three contacts, each with its own parameters, as
    mj_collision does (condims 3, 1, 6 in order, the margin of the second alone); 200
    steps of the ball spinning and sliding beside mj_step agree to 1e-12 in qpos and
    1e-11 in qvel (measured 3.6e-16 and 1.6e-15). With
    the second and third pairs dropped the run differs by more than 1e-3."""
    m = mujoco.MjModel.from_xml_string(REPEATED)
    mj = rigid.from_mujoco(m)
    d = mujoco.MjData(m)
    qvel0 = np.array([1.0, 0.5, 0.0, 2.0, -3.0, 1.0])
    d.qvel[:] = qvel0
    mujoco.mj_forward(m, d)
    assert [con.dim for con in d.contact[: d.ncon]] == [3, 1, 6]
    assert [cp.condim for _, cp in mj.model.explicit_pairs()] == [3, 1, 6]
    c = eqx.filter_jit(lambda model, q: model.contacts(q))(mj.model, mj.y0[0])
    np.testing.assert_array_equal(np.asarray(c.dim), [3, 1, 6])
    for k, con in enumerate(d.contact[: d.ncon]):
        assert abs(float(c.dist[k]) + con.includemargin - con.dist) < 1e-15
        np.testing.assert_allclose(c.impedance[k, :2], con.solref, rtol=1e-15)
    for _ in range(200):
        mujoco.mj_step(m, d)
    y0 = (mj.y0[0], mj.qvel_to_v(jnp.asarray(qvel0)))
    run = eqx.filter_jit(
        lambda model: sciad.simulate(model, y0, dt=mj.dt, n_steps=200, integrator=mj.integrator).y1
    )
    y1 = run(mj.model)
    dq = np.max(np.abs(np.asarray(mj.q_to_qpos(y1[0])) - d.qpos))
    dv = np.max(np.abs(np.asarray(mj.v_to_qvel(y1[1])) - d.qvel))
    assert dq < 1e-12 and dv < 1e-11, (dq, dv)
    first = REPEATED.split("<pair")[:2]
    alone = rigid.from_mujoco(
        mujoco.MjModel.from_xml_string("<pair".join(first) + "</contact></mujoco>")
    )
    y1 = run(alone.model)
    assert np.max(np.abs(np.asarray(mj.q_to_qpos(y1[0])) - d.qpos)) > 1e-3


def _slider(mu, tau_f):
    """A ball sliding and spinning on a floor through an explicit pair of sliding
    friction `mu` and friction time constant `tau_f` (elliptic cone)."""
    bodies = [
        rigid.Body(
            "ball",
            joint=rigid.FreeJoint(),
            pos=(0.0, 0.0, 0.0995),
            mass=1.0,
            inertia=jnp.full(3, 0.004),
        )
    ]
    geoms = [
        rigid.Geom(rigid.Plane(), name="floor", contype=0, conaffinity=0),
        rigid.Geom(rigid.Sphere(0.1), body="ball", name="ball"),
    ]
    pair = rigid.ContactPair(
        "floor",
        "ball",
        condim=4,
        friction=jnp.stack([mu, mu, 0.01, 1e-4, 1e-4]),
        friction_reference=jnp.stack([tau_f, 1.0]),
    )
    return rigid.MultiBody(bodies, geoms=geoms, contact_pairs=[pair])


@pytest.mark.slow
def test_gradients_wrt_pair_friction_and_reference_match_finite_differences():
    """d(final x of the ball)/d(μ, τ_friction) of 60 steps by reverse and forward mode
    against central differences (relative 1e-6)."""
    model = _slider(jnp.asarray(0.3), jnp.asarray(0.05))
    q0, v0 = model.default_state()
    v0 = v0.at[:6].set(jnp.asarray([1.0, 0.0, 0.0, 0.0, 0.0, 8.0]))

    def final_x(theta):
        mb = _slider(theta[0], theta[1])
        y1 = sciad.simulate(mb, (q0, v0), dt=2e-3, n_steps=60).y1
        return y1[0][0]

    theta = jnp.asarray([0.3, 0.05])
    jvp = jax.jit(lambda t, dt: jax.jvp(final_x, (t,), (dt,)))
    grad = jax.jit(jax.grad(final_x))(theta)
    for k in range(2):
        e = jnp.zeros(2).at[k].set(1.0)
        fd = float(fd_directional(lambda t, e=e: jvp(t, e)[0], theta, e, eps=1e-6))
        tangent = float(jvp(theta, e)[1])
        assert abs(fd) > 1e-4  # both parameters act
        assert abs(float(grad[k]) - fd) < 1e-6 * abs(fd), (k, grad[k], fd)
        assert abs(tangent - fd) < 1e-6 * abs(fd), (k, tangent, fd)


def _two_balls(**pair):
    bodies = [
        rigid.Body(
            n, joint=rigid.FreeJoint(), pos=(x, 0.0, 0.1), mass=1.0, inertia=jnp.full(3, 0.004)
        )
        for n, x in (("a", 0.0), ("b", 0.3))
    ]
    geoms = [
        rigid.Geom(rigid.Plane(), name="floor"),
        rigid.Geom(rigid.Sphere(0.1), body="a", name="ga"),
        rigid.Geom(rigid.Box(jnp.full(3, 0.1)), body="b", name="gb"),
        rigid.Geom(rigid.Sphere(0.1), body="b", name="gb"),
    ]
    return bodies, geoms


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(geom2="floor"), ValueError, "two different geoms"),
        (dict(geom1=3), TypeError, "geom1"),
        (dict(condim=2), ValueError, "condim"),
        (dict(friction=(1.0, 1.0, 0.0)), ValueError, "friction"),
        (dict(friction=(1.0, -1.0, 0.0, 0.0, 0.0)), ValueError, "friction"),
        (dict(friction_reference=(0.02, -1.0)), ValueError, "both > 0"),
        (dict(margin=-0.1), ValueError, "margin"),
        (dict(gap=-0.1), ValueError, "gap"),
        (dict(restitution=1.5), ValueError, "restitution"),
        (dict(impedance=(0.02, 1.0)), TypeError, "impedance"),
    ],
)
def test_contact_pair_refuses_bad_parameters(kwargs, error, match):
    args = dict(geom1="floor", geom2="ga") | kwargs
    with pytest.raises(error, match=match):
        rigid.ContactPair(args.pop("geom1"), args.pop("geom2"), **args)


def test_multibody_refuses_bad_pairs():
    """Unknown or ambiguous geom names, two world geoms, a wrong item
    type, a margin or gap on a pair whose separated distance is inexact (a height
    field's prisms against a capsule),
    and a negative geom gap: precise errors at construction; a margin on a pair that
    MuJoCo 4 clips (capsule–cylinder): a warning (its contact sets within the margin
    can differ from MuJoCo's: test_clip_margins.py)."""
    bodies, geoms = _two_balls()

    def build(*pairs, geoms=geoms[:3]):
        return rigid.MultiBody(bodies, geoms=geoms, contact_pairs=list(pairs))

    with pytest.raises(ValueError, match="no geom has the name 'nope'"):
        build(rigid.ContactPair("floor", "nope"))
    with pytest.raises(ValueError, match="two geoms have the name 'gb'"):
        build(rigid.ContactPair("floor", "gb"), geoms=geoms)
    with pytest.raises(TypeError, match="contact_pairs"):
        build(("floor", "ga"))
    wall = rigid.Geom(rigid.Plane(), name="wall", pos=(1.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="both geoms are fixed to the world"):
        build(rigid.ContactPair("floor", "wall"), geoms=[*geoms[:3], wall])
    terrain = rigid.Geom(rigid.HeightField(jnp.zeros((5, 5)), (1.0, 1.0, 0.1, 0.1)), name="h")
    cap = rigid.Geom(rigid.Capsule(0.05, 0.1), body="b", name="cap")
    with pytest.raises(ValueError, match="margin or gap.*HeightField–Capsule"):
        build(rigid.ContactPair("h", "cap", gap=0.01), geoms=[terrain, cap])
    # MuJoCo 4's clipped cylinder pairs keep other points within a margin: a warning
    disc = rigid.Geom(rigid.Cylinder(0.2, 0.01), body="a", name="disc", margin=0.01)
    with pytest.warns(
        UserWarning, match="margin or gap on 1 clipped pair.*first: geom 'cap'.*differ"
    ):
        rigid.MultiBody(bodies, geoms=[disc, cap])
    with pytest.raises(ValueError, match="gap"):
        rigid.Geom(rigid.Sphere(0.1), gap=-1.0)
    # a pair of geoms whose bitmasks never collide, and one replacing a dynamic pair
    model = build(rigid.ContactPair("ga", "gb", condim=1))
    assert model.pairs.count((1, 2)) + model.pairs.count((2, 1)) == 1
    assert [cp.condim for _, cp in model.explicit_pairs()] == [1]


def test_load_mjcf_refuses_a_mixed_solreffriction():
    """A pair's solreffriction mixing the two formats (which MuJoCo replaces by (0, 0)
    with a warning) is refused, naming the pair (an adhesive pair: test_mjcf.py)."""
    xml = """<mujoco><worldbody><geom name="floor" type="plane" size="1 1 1"/>
    <body><freejoint/><geom name="ball" size="0.1"/></body></worldbody><contact>
    <pair name="p" geom1="floor" geom2="ball" solreffriction="0.02 -1"/></contact></mujoco>"""
    with pytest.raises(ValueError, match="MJCF pair 'p'.*friction_reference must be both"):
        rigid.from_mujoco(mujoco.MjModel.from_xml_string(xml))

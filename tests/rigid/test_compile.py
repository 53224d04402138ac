"""Graph size: no Python loop over bodies in the traced code. (Compile times are
measured by benchmarks/rigid_steps.py, not asserted here: the suite holds no timing
assertions.)"""

import jax

from .scenes import chain


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

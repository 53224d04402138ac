"""The result codes every sciad run reports."""

import equinox as eqx


class RESULTS(eqx.Enumeration):
    """Outcome of a run, carried in `Trajectory.result` and `FitResult.result`.

    With `throw=True` (the default) anything but `successful` is raised as an
    error at run time; with `throw=False` the code is returned, and under `jax.vmap`
    every batch element carries its own code.

    **Example:**

    ```python
    traj = sciad.simulate(model, y0, dt=0.1, n_steps=100, throw=False)
    ok = traj.result == sciad.RESULTS.successful
    ```
    """

    successful = ""
    max_steps_reached = (
        "The run needed more steps than `max_steps` allowed; it stopped early. "
        "Raise `max_steps`, or take larger steps."
    )
    nonfinite_state = (
        "The state became non-finite (NaN or inf). "
        "`Trajectory.stats['first_nonfinite_step']` gives the first bad step. "
        "Common causes: too large a step, or an unstable model."
    )
    neighbor_overflow = (
        "A neighbour list overflowed its static capacity; forces would be wrong. "
        "Rebuild with a larger capacity (`sciad.md.run_growing` does it for you)."
    )
    neighbor_list_stale = (
        "A particle moved more than half the neighbour-list skin within one step, so "
        "pairs could have been missed. Use a larger skin or a smaller step."
    )
    box_too_small = (
        "The periodic box became narrower than twice the interaction range (a barostat "
        "compressed it), so the minimum-image convention no longer holds and forces "
        "would be wrong. Start from a larger box (more particles), use a shorter "
        "cut-off, or let the box relax more slowly (larger tau_p)."
    )
    event_occurred = "A terminating event occurred and stopped the run."
    step_size_too_small = "The adaptive step size fell below its minimum."
    solver_failed = (
        "The solver failed: an implicit solve did not converge, or a linear solve "
        "was singular. Try a tighter tolerance, a smaller step, or another solver."
    )
    optimisation_failed = (
        "The optimiser did not converge: it reached its step limit, or the problem "
        "was singular or non-finite."
    )

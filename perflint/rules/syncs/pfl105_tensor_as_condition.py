from perflint.rules.syncs.sites import WHEN_REPORTED, SyncRule


class TensorAsCondition(SyncRule):
    code = "PFL105"
    # Off by default: below the precision bar on real code (see known_problems).
    default = False
    name = "tensor-as-condition"
    summary = "a tensor used as a condition (`if t`, `while loss > eps`, `assert`) inside a loop syncs every iteration"
    message = "this condition reads a device tensor on the host: a sync every step"
    why = """
Python needs a real `True`/`False` to branch, so `if t:` calls `bool(t)`, which runs
`aten::is_nonzero > aten::item > aten::_local_scalar_dense`: a device-to-host copy and a wait for all
queued work. `while loss > eps:` pays it on every iteration of the loop it controls.
"""
    example = """
for x in loader:
    loss = step(x)
    if torch.isnan(loss):
        raise FloatingPointError
"""
    instead = """
bad = torch.zeros((), dtype=torch.bool, device=device)
for x in loader:
    loss = step(x)
    bad |= torch.isnan(loss)   # stays on the device
if bad:                        # one sync
    raise FloatingPointError
"""
    known_problems = """
Off by default since blind review 49. Its findings on the corpus's hold-out repositories were right 35 of 57
times (61%) where judged, and in the blind reviews of fresh code since review 40, 12 of 25 (48%, counting
only findings the current rules still make): well under the 80% a default rule needs. Most tests it reports
are host control flow the code needs at that point (a NaN guard that skips or stops the step, an empty-mask
guard before a gather, a generation loop's stop test), tensors that are on the host after all, or branches
the default run never takes. Turning it off lowers the sync family's recall on the labelled corpus from 81%
to 75%: select it (`--select PFL105`) to audit a training loop's `if t:` and `while loss > eps:` tests.
Reports only conditions it knows are tensors, and only inside a loop (a step loop, or a loop of a per-step
function): a data-dependent branch in a `forward` is often on an optional input's path, which a static
reading cannot tell from the default one. Not in a loop that runs per step only for its device ops (over a
beam's hypotheses, an image's masks or classes): there the test is the algorithm's host control flow, and the
fix is to vectorize the loop, not to move one read (of 18 such findings on the corpus, 3 judged right, 8
wrong). `if t is None` and `if len(t)` are fine. A `while` condition
runs every iteration of its own loop.
""" + WHEN_REPORTED

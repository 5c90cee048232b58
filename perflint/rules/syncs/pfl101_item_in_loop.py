from perflint.rules.syncs.sites import WHEN_REPORTED, SyncRule


class ItemInLoop(SyncRule):
    code = "PFL101"
    name = "item-in-loop"
    summary = "`.item()` on a tensor inside a loop forces a device-to-host sync every iteration"
    message = "`.item()` makes the host wait for the device every step; keep the value on the device and read it once (after the loop, or every k steps)"
    why = """
`.item()` copies one number from the GPU to the host. The host must wait until every kernel queued
before it has finished, so the CPU stops running ahead and the GPU then idles while Python launches the
next step's kernels. On a CPU tensor it is cheap, which is why the cost hides until the code runs on a
GPU. In the profiler it shows as `aten::item > aten::_local_scalar_dense`, and on a GPU as
`cudaMemcpyAsync` (device to pageable host) + `cudaStreamSynchronize`.
"""
    example = """
total = 0.0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    total += loss.item()
"""
    instead = """
total = torch.zeros((), device=device)
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    total += loss.detach()
print(total.item())  # one sync, after the loop
"""
    known_problems = """
On a NumPy array or scalar `.item()` is free: it is reported only when the value is a tensor on the
device, or the result of a call given device tensors (`accuracy(output, target).item()`).
""" + WHEN_REPORTED

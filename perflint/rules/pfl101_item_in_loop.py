from perflint.rules._base import TensorMethodInHotLoop


class ItemInLoop(TensorMethodInHotLoop):
    code = "PFL101"
    name = "item-in-loop"
    summary = "`.item()` on a tensor inside a loop forces a device-to-host sync every iteration"
    message = "`.{method}()` in a loop syncs with the device every iteration; accumulate on the device and read once"
    methods = frozenset({"item"})
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
Quiet outside loops, on numpy arrays and Python values it can see, inside `if step % k == 0:` logging
blocks (once every k steps is usually the right price), and in compiled functions (PFL402 reports graph
breaks there). It cannot know whether the tensor lives on a GPU: on a CPU-only code path the call is cheap.
"""
    valid = (
        "import numpy as np\nfor i in range(3):\n    a = np.zeros(3)\n    v = a.item()\n",
        "loss = model(x)\nprint(loss.item())\n",
        "for step in range(10):\n    loss = model(x)\n    if step % 100 == 0:\n        print(loss.item())\n",
    )
    invalid = (
        "for x, y in loader:\n    loss = criterion(model(x), y)\n    total += loss.item()  # expect: PFL101\n",
        "while True:\n    v = t.item()  # expect: PFL101\n",
        "vals = [t.item() for t in ts]  # expect: PFL101\n",
    )

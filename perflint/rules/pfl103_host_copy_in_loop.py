import libcst as cst

from perflint.context import keyword, positional
from perflint.rules._base import TensorMethodInHotLoop, not_per_batch


class HostCopyInLoop(TensorMethodInHotLoop):
    code = "PFL103"
    name = "host-copy-in-loop"
    summary = "`.cpu()`, `.numpy()` or `.to('cpu')` inside a loop is a blocking device-to-host copy per iteration"
    message = "`.{method}()` in a loop is a blocking device-to-host copy every iteration"
    methods = frozenset({"cpu", "numpy", "to"})
    why = """
A device-to-host copy into ordinary (pageable) memory blocks the host until the copy, and every kernel
queued before it, is done. Inside a loop this serialises CPU and GPU once per iteration.
"""
    example = """
for x in loader:
    out = model(x)
    outputs.append(out.cpu().numpy())
"""
    instead = """
outs = [model(x) for x in loader]          # stays on the device
outputs = torch.cat(outs).cpu().numpy()    # one copy
"""
    known_problems = """
Quiet for `.to(...)` that does not name the CPU, on modules (`model.cpu()`), on numpy values, and in
`if step % k == 0:` blocks. A bare `.numpy()` is quiet: it raises on a device tensor, so code that runs
calls it on a host tensor, where it is free; `.numpy(force=True)` is reported. When the tensor already
lives on the CPU, `.cpu()` is cheap too, which the rule cannot see. Quiet in loops that are not steps
over device data: `for epoch in ...`, loops over a model's tensors (`state_dict().items()`,
`parameters()`: saving a checkpoint needs the copy), and loops over data built on the host.
"""
    valid = ("model = model.cpu()\nfor x in xs:\n    y = x.to(device)\n",
             "for x, y in loader:\n    out = session.run(None, {'x': x.numpy()})\n",
             "sd = {}\nfor k, v in model.state_dict().items():\n    sd[k] = v.cpu()\n",
             "for epoch in range(10):\n    train(model)\n    sample = model.decode(z).cpu()\n",
             "from torch import nn\nfor x in xs:\n    net = nn.Linear(2, 2)\n    net.cpu()\n")
    invalid = ("for x in loader:\n    out.append(model(x).cpu().numpy())  # expect: PFL103\n",
               "for x in loader:\n    y = model(x).to('cpu')  # expect: PFL103\n",
               "for x in loader:\n    y = model(x).numpy(force=True)  # expect: PFL103\n")

    def applies(self, node: cst.Call, ctx) -> bool:
        method = node.func.attr.value
        receiver = node.func.value
        if not_per_batch(ctx.loops[-1]):
            return False
        if method == "numpy" and isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) \
                and receiver.func.attr.value in ("cpu", "to"):
            return False  # `x.cpu().numpy()`: reported once, at .cpu()
        if method == "numpy":  # without force=True it raises on a device tensor: the data is already on the host
            force = keyword(node, "force")
            return force is not None and isinstance(force.value, cst.Name) and force.value.value == "True"
        if method != "to":
            return True
        first = positional(node, 0)
        dev = first.value if first is not None else None
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "device":
                dev = arg.value
        if isinstance(dev, cst.SimpleString):
            return dev.evaluated_value.split(":")[0] == "cpu"
        return isinstance(dev, cst.Call) and ctx.is_torch(dev.func, "torch.device") and bool(dev.args) \
            and isinstance(dev.args[0].value, cst.SimpleString) and dev.args[0].value.evaluated_value == "cpu"

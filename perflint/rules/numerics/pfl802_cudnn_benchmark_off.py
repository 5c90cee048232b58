import libcst as cst

from perflint.model.program import FileModel
from perflint.rules.common import FileFactsRule


_CONV = {"Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
         "LazyConv1d", "LazyConv2d", "LazyConv3d"}
_SETTINGS = {"torch.backends.cudnn.benchmark", "torch.backends.cudnn.deterministic"}


class CudnnBenchmarkOff(FileFactsRule):
    code = "PFL802"
    name = "cudnn-benchmark-off"
    summary = "a CUDA conv-net training script never sets `torch.backends.cudnn.benchmark = True`"
    message = ("convolutions on CUDA use cuDNN's heuristic algorithm choice; with fixed input shapes set "
               "`torch.backends.cudnn.benchmark = True` to time the candidates once and keep the fastest")
    severity = "info"
    default = False
    gpu_only = True
    proof_metric = ""
    proof_note = "cudnn.benchmark picks faster cuDNN algorithms on a GPU; the count of ops is the same, and the CPU has no cuDNN."
    why = """
For each new convolution shape cuDNN offers several algorithms (implicit GEMM, FFT, Winograd, ...).
With `benchmark = False` (the default) PyTorch picks one by cuDNN's heuristics; with `True` it runs
every candidate once on the first call of each shape and caches the fastest, which the PyTorch
performance tuning guide recommends for convolutional networks with fixed input sizes. The choice shows
in a trace as different kernel families for the same layer: the V100 ResNet-50 trace in
../shared/traces (kineto_tb_plugin) runs many of its convolutions as `implicit_convolve_sgemm`,
`winograd_nonfused` and `dgrad_engine`/`wgrad_alg0_engine` kernels.
"""
    example = """
model = ResNet50().cuda()
for x, y in loader:
    criterion(model(x.cuda()), y.cuda()).backward()
"""
    instead = """
torch.backends.cudnn.benchmark = True   # input shapes are fixed
model = ResNet50().cuda()
...
"""
    known_problems = """
Off by default: it cannot see whether input shapes are fixed (with variable image sizes or sequence
lengths every new shape is benchmarked again, which is slower), and the flag is often set in another
module. Quiet when the file sets `cudnn.benchmark` (to anything) or `cudnn.deterministic`, which
asks for reproducibility instead, and in test files (`test_*.py`). Reports the first convolution
layer of a file that calls `.backward()` and mentions CUDA (or `torch.accelerator`).
The gain is kernel speed (faster kernels, not fewer), which no count measures, so its reference pair
is checked only for computing the same result (`proof_metric` is empty).
"""

    def start(self) -> None:
        self.conv: cst.Call | None = None

    def on_call(self, node: cst.Call, model: FileModel, qual: str | None) -> None:
        if self.conv is None and qual is not None and qual.startswith("torch.nn.") \
                and qual.rsplit(".", 1)[1] in _CONV:
            self.conv = node

    def check(self, model: FileModel) -> None:
        if self.cuda and self.conv is not None and self.backward is not None \
                and not self.assigned & _SETTINGS and "torch.use_deterministic_algorithms" not in self.called:
            self.report(model, self.conv)

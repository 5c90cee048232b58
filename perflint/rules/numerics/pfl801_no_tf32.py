import libcst as cst

from perflint.model.program import FileModel
from perflint.rules.common import FileFactsRule


_MATMUL_LAYERS = {"Linear", "Bilinear", "LazyLinear", "MultiheadAttention", "Transformer", "TransformerEncoder",
                  "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer", "LSTM", "GRU", "RNN"}
_MATMUL_OPS = {"torch.matmul", "torch.mm", "torch.bmm", "torch.einsum", "torch.addmm", "torch.baddbmm",
               "torch.nn.functional.linear", "torch.nn.functional.scaled_dot_product_attention"}
_TF32_SETTINGS = {"torch.backends.cuda.matmul.allow_tf32", "torch.backends.cudnn.allow_tf32",
                  "torch.backends.cuda.matmul.fp32_precision", "torch.backends.fp32_precision",
                  "torch.backends.cudnn.conv.fp32_precision"}


class NoTf32(FileFactsRule):
    code = "PFL801"
    name = "no-tf32"
    summary = "a CUDA training script with FP32 matmuls never allows TF32 tensor cores"
    message = ("FP32 matmuls on CUDA run without tensor cores unless TF32 is allowed: add "
               "`torch.set_float32_matmul_precision(\"high\")` (or use autocast)")
    severity = "info"
    default = False
    gpu_only = True
    proof_metric = ""
    proof_note = "TF32 changes which GPU kernel runs (tensor cores instead of FP32 SIMT GEMMs), not how many; the evidence is the A100 AlexNet trace quoted on its page."
    why = """
Since PyTorch 1.12, FP32 matrix multiplies on CUDA do not use TF32 tensor cores unless allowed
(`torch.backends.cuda.matmul.allow_tf32` defaults to False), while cuDNN convolutions do
(`torch.backends.cudnn.allow_tf32` defaults to True). On Ampere and newer GPUs an FP32 GEMM then runs on
the plain FP32 units, several times slower than TF32 (NVIDIA A100: 19.5 vs 156 dense TFLOPS). In the
A100 AlexNet trace in ../shared/traces (hta/critical_path/alexnet), the convolutions run as
`sm80_xmma_fprop_implicit_gemm_indexed_tf32f32...` (TF32) while the three `nn.Linear` layers run
`ampere_sgemm_32x32_sliced1x4_tn`: 6 SIMT FP32 GEMMs that take 2,621 us against 1,814 us for the
6 TF32 conv kernels.
"""
    example = """
model = Transformer().cuda()
for x, y in loader:
    loss = criterion(model(x.cuda()), y.cuda())
    loss.backward()
"""
    instead = """
torch.set_float32_matmul_precision("high")   # TF32 for FP32 matmuls (10-bit mantissa)
model = Transformer().cuda()
...
"""
    known_problems = """
Off by default: TF32 rounds the inputs of a matmul to a 10-bit mantissa, which most training tolerates
but some numerics (e.g. solvers, some scientific code) do not, and the setting may live in another
module it does not see. It reports a file that calls `.backward()`, mentions CUDA, builds or calls a
matmul-heavy layer (`nn.Linear`, attention, RNNs, `torch.matmul`, `@`) and never sets
`torch.set_float32_matmul_precision`, `allow_tf32` or `fp32_precision`; files that use autocast, a
GradScaler, `.half()` or `torch.float16`/`bfloat16` are quiet (their matmuls already use tensor cores).
Quiet in test files (`test_*.py`), which often compare against FP32 on purpose. "CUDA" includes
`torch.accelerator` calls. GPUs older than Ampere have no TF32; the setting does nothing there.
The gain is kernel speed (faster kernels, not fewer), which no count measures, so its reference pair
is checked only for computing the same result (`proof_metric` is empty).
"""

    def start(self) -> None:
        self.matmul = False

    def on_call(self, node: cst.Call, model: FileModel, qual: str | None) -> None:
        if qual is not None and (qual in _MATMUL_OPS or qual.startswith("torch.nn.")
                                 and qual.rsplit(".", 1)[1] in _MATMUL_LAYERS):
            self.matmul = True

    def visit_BinaryOperation(self, node: cst.BinaryOperation, model: FileModel) -> None:
        if type(node.operator) is cst.MatrixMultiply:
            self.matmul = True

    def check(self, model: FileModel) -> None:
        if self.cuda and self.matmul and self.backward is not None and not self.half \
                and not self.assigned & _TF32_SETTINGS and "torch.set_float32_matmul_precision" not in self.called:
            self.report(model, self.backward)

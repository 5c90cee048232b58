import libcst as cst

from perflint.model.names import keyword, positional
from perflint.model.program import FileModel
from perflint.rules.common import FileFactsRule


# layer -> (argument names, in order) whose sizes become GEMM dimensions
_LAYERS = {"Linear": ("in_features", "out_features"), "Conv1d": ("in_channels", "out_channels"),
           "Conv2d": ("in_channels", "out_channels"), "Conv3d": ("in_channels", "out_channels"),
           "ConvTranspose1d": ("in_channels", "out_channels"), "ConvTranspose2d": ("in_channels", "out_channels"),
           "ConvTranspose3d": ("in_channels", "out_channels")}
_SMALL = 64  # below this a layer is too small for its shape to matter


class Fp16UnalignedDims(FileFactsRule):
    code = "PFL803"
    name = "fp16-unaligned-dims"
    summary = "an `nn.Linear`/`nn.Conv*d` size that is not a multiple of 8 in fp16/bf16 code misses tensor-core tiles"
    message = "{size} is not a multiple of 8: in fp16/bf16 this layer's GEMM pads or falls back from tensor-core tiles; round it up to {padded}"
    severity = "info"
    default = False
    gpu_only = True
    proof_metric = ""
    proof_note = "aligned sizes let the same GEMM run on tensor cores; the op count is the same and the CPU has no tensor cores."
    why = """
Tensor cores multiply fp16/bf16 matrices in tiles whose K and N dimensions are multiples of 8 elements
(16 bytes). cuBLAS and cuDNN pick their fastest kernels only when the GEMM sizes (a Linear layer's in and
out features, a convolution's channels, a batch times sequence length) are multiples of 8, and
otherwise run a slower, padded or non-tensor-core kernel (NVIDIA "Deep Learning Performance Guide:
Matrix Multiplication"; the ideal is a multiple of 64 or 128 on A100/H100). The best-known example is
nanoGPT's vocabulary (karpathy/nanoGPT, model.py): `vocab_size: int = 50304 # GPT-2 vocab_size of
50257, padded up to nearest multiple of 64 for efficiency`.
"""
    example = """
with torch.autocast("cuda", dtype=torch.bfloat16):
    head = nn.Linear(768, 50257)   # vocabulary size
"""
    instead = """
head = nn.Linear(768, 50304)       # padded to a multiple of 64; mask or ignore the extra logits
"""
    known_problems = """
Off by default, and quiet for sizes below 64 (an RGB input's 3 channels, a 10-class head), where the
layer is too small for its shape to matter, and for sizes held in variables, which it cannot read.
Reports only files that mention CUDA and use autocast, a GradScaler, `.half()`, `.bfloat16()` or
`torch.float16`/`bfloat16`, and not test files (`test_*.py`). Padding an output dimension changes the model's shape: the extra
outputs must be masked or ignored.
The gain is kernel speed (faster kernels, not fewer), which no count measures, so its reference pair
is checked only for computing the same result (`proof_metric` is empty).
"""

    def start(self) -> None:
        self.layers: list[tuple[cst.Call, int]] = []

    def on_call(self, node: cst.Call, model: FileModel, qual: str | None) -> None:
        if qual is None or not qual.startswith("torch.nn.") or qual.rsplit(".", 1)[1] not in _LAYERS:
            return
        for index, name in enumerate(_LAYERS[qual.rsplit(".", 1)[1]]):
            arg = keyword(node, name) or positional(node, index)
            if arg is not None and type(arg.value) is cst.Integer:
                size = int(arg.value.evaluated_value)
                if size >= _SMALL and size % 8:
                    self.layers.append((node, size))
                    return

    def check(self, model: FileModel) -> None:
        if self.cuda and self.half:
            for node, size in self.layers:
                self.report(model, node, self.message.format(size=size, padded=-(-size // 64) * 64))

"""What the program model knows about PyTorch's API, as data: which calls make tensors and where, which
return plain values, which are elementwise, which wait for the device. One table per question, so a
rule never carries its own copy of torch knowledge."""

from __future__ import annotations

# Packages whose import makes a file PyTorch code (besides a module of the linted project that is).
TORCH_PACKAGES = frozenset({
    "torch", "torchvision", "torchaudio", "torchtext", "torchdata", "torchrec", "torchmetrics", "timm",
    "lightning", "pytorch_lightning", "accelerate", "deepspeed", "apex", "fairscale", "functorch",
    "torch_geometric", "dgl", "diffusers", "peft", "xformers", "flash_attn", "triton", "transformer_engine"})
# Packages of other frameworks: a file that imports one of these and no torch is not PyTorch code.
OTHER_FRAMEWORKS = frozenset({"jax", "flax", "mxnet", "tensorflow", "keras", "paddle", "mindspore", "oneflow"})
# Libraries whose layers are kernels of a compiled extension (InPlaceABN's fused norm, spconv's sparse
# convolutions, DGL's message passing, Deformable DETR's MultiScaleDeformableAttention): Dynamo cannot trace
# them, so a model built of them breaks its graph at each such layer and compiling it gains little.
EXTENSION_LAYERS = frozenset({"inplace_abn", "spconv", "dgl", "MultiScaleDeformableAttention"})

# Factories that take `device=`: without it they allocate and fill on the host.
FACTORIES = frozenset(f"torch.{n}" for n in (
    "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange", "range", "linspace",
    "logspace", "eye", "empty_strided", "tril_indices", "triu_indices", "normal", "bartlett_window",
    "blackman_window", "hamming_window", "hann_window", "kaiser_window"))
# Constructors of a host tensor from host data (a list, a number, an array, a file, a buffer).
FROM_DATA = frozenset({"torch.tensor", "torch.Tensor", "torch.FloatTensor", "torch.LongTensor", "torch.IntTensor",
                       "torch.BoolTensor", "torch.DoubleTensor", "torch.HalfTensor", "torch.ByteTensor",
                       "torch.as_tensor", "torch.from_numpy", "torch.asarray", "torch.from_file",
                       "torch.frombuffer"})
# Device generators differ from the CPU one: with `device=` a seeded run draws different numbers.
RANDOM_FACTORIES = frozenset(f"torch.{n}" for n in ("rand", "randn", "randint", "randperm", "normal"))
# `torch.zeros_like(x)`: on x's device.
LIKE_FACTORIES = frozenset(f"torch.{n}_like" for n in ("zeros", "ones", "empty", "full", "rand", "randn",
                                                        "randint"))

# Calls that write one picture or drawn result out (a file, a grid, TensorBoard, a box on an image): what an
# inference script does with each result, or what a sample grid is assembled for.
IMAGE_OUTPUTS = frozenset({"imwrite", "imsave", "savefig", "save_image", "make_grid", "add_image", "add_images",
                           "imshow", "box_label", "write_frame"})

# torch.* callables that do not return a tensor.
NOT_TENSOR = frozenset({
    "torch.device", "torch.dtype", "torch.Size", "torch.Generator", "torch.no_grad", "torch.enable_grad",
    "torch.inference_mode", "torch.set_grad_enabled", "torch.manual_seed", "torch.seed", "torch.is_tensor",
    "torch.is_floating_point", "torch.numel", "torch.save", "torch.compile",
    "torch.get_default_dtype", "torch.set_default_dtype", "torch.set_num_threads", "torch.get_num_threads",
    "torch.autocast", "torch.set_float32_matmul_precision", "torch.use_deterministic_algorithms",
    "torch.finfo", "torch.iinfo", "torch.typename", "torch.is_grad_enabled", "torch.is_complex", "torch.is_conj",
    "torch.is_neg", "torch.is_inference", "torch.is_signed", "torch.is_storage", "torch.is_same_size",
    "torch.is_autocast_enabled", "torch.initial_seed", "torch.set_printoptions", "torch.set_default_device",
    "torch.get_default_device", "torch.set_default_tensor_type", "torch.get_rng_state", "torch.set_rng_state",
    "torch.set_anomaly_enabled", "torch.is_anomaly_enabled", "torch.get_float32_matmul_precision",
    "torch.Stream", "torch.Event", "torch.cond"})
NOT_TENSOR_PREFIXES = ("torch.cuda.", "torch.backends.", "torch.distributed.", "torch.jit.", "torch.profiler.",
                       "torch.utils.", "torch.optim.", "torch.autograd.profiler.", "torch.multiprocessing.",
                       "torch.hub.", "torch.onnx.", "torch.export.", "torch.fx.", "torch._dynamo.", "torch.amp.",
                       "torch.library.", "torch.testing.", "torch.compiler.", "torch.accelerator.", "torch.mps.",
                       "torch.xpu.", "torch.overrides.", "torch.package.", "torch.ao.", "torch.quantization.")
TENSOR_NAMESPACES = ("torch.linalg.", "torch.fft.", "torch.special.", "torch.nn.functional.", "torch.nn.init.",
                     "torchvision.ops.", "torch.distributions.")

# Tensor methods whose result is a Python value (or numpy), not a tensor.
SCALAR_METHODS = frozenset({"item", "tolist", "size", "dim", "ndimension", "numel", "nelement", "element_size",
                            "data_ptr", "is_contiguous", "stride", "get_device", "is_floating_point",
                            "is_complex", "storage_offset", "__len__", "equal", "untyped_storage",
                            "register_hook", "is_pinned", "is_shared", "type"})
# Methods only a tensor has (NumPy arrays, lists and most other objects do not): a result of one of them on
# something unknown is a tensor. Names NumPy shares (`sum`, `cumsum`, `reshape`, `max`) are left out.
TENSOR_ONLY_METHODS = frozenset({"unsqueeze", "permute", "masked_fill", "masked_fill_", "softmax", "log_softmax",
                                 "sigmoid", "contiguous", "detach", "expand", "expand_as", "repeat_interleave",
                                 "new_zeros", "new_ones", "new_full", "new_empty", "new_tensor", "view_as",
                                 "narrow", "unbind", "bmm", "clamp", "clamp_min", "clamp_max", "rsqrt", "type_as",
                                 "index_select", "gather", "scatter_add", "masked_select", "addcmul", "lerp"})
# Attributes of a tensor that hold Python values; and those that hold tensors on the same device.
PYTHON_ATTRS = frozenset({"shape", "dtype", "ndim", "is_cuda", "requires_grad", "is_leaf", "layout", "itemsize",
                          "nbytes", "names", "is_sparse", "is_quantized", "is_meta", "grad_fn"})
TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "data", "grad", "real", "imag"})
# Module methods that return the module itself (many of them move it: `.to`, `.cuda`, `.half`).
MODULE_SELF_METHODS = frozenset({"to", "cuda", "cpu", "train", "eval", "half", "float", "double", "bfloat16",
                                 "requires_grad_", "share_memory", "to_empty", "apply", "xpu", "mps",
                                 "to_memory_format"})
# Tensor methods that convert the dtype (`x.long()`): no kernel when the tensor already has it.
CAST_METHODS = frozenset({"float", "double", "half", "bfloat16", "long", "int", "short", "char", "byte", "bool"})
# nn.Module's own API besides those: called on `self` in a module they never run a submodule.
MODULE_API_METHODS = MODULE_SELF_METHODS | frozenset({
    "parameters", "buffers", "named_parameters", "named_buffers", "modules", "children", "named_modules",
    "named_children", "state_dict", "load_state_dict", "zero_grad", "register_buffer", "register_parameter",
    "register_module", "add_module", "register_forward_hook", "register_forward_pre_hook",
    "register_full_backward_hook", "get_submodule", "extra_repr"})
# Methods that run a model the way calling it does (a forward pass, or one step of generation or acting).
FORWARD_METHODS = frozenset({"forward", "generate", "sample", "predict", "get_action", "get_value",
                             "get_action_and_value", "encode", "decode", "loss", "compute_loss",
                             "training_step", "validation_step"})
# Words in the name of a function or class that takes a model and runs it every step somewhere else (another
# file's loop): `train_one_epoch(model, ...)`, `DDIMSampler(model)`.
RUNNER_WORDS = ("train", "fit", "evaluate", "validate", "eval_", "test_", "loop", "trainer", "sample", "infer",
                "predict", "generate", "run_epoch", "one_epoch")
MODULE_TENSOR_ATTRS = frozenset({"weight", "bias", "running_mean", "running_var", "in_proj_weight",
                                 "in_proj_bias", "pos_embed", "cls_token"})

# The PyTorch a program runs on, for the branches it takes on `torch.__version__` (`if int(version[0]) > 0`):
# a current release, so that code kept for 0.x or 1.x is judged as not running.
TORCH_VERSION = "2.5.0"
# Tests that hold only while a model is scripted, traced or exported: false when it runs eagerly.
EXPORT_ONLY_TESTS = frozenset({"torch.jit.is_scripting", "torch.jit.is_tracing", "torch.onnx.is_in_onnx_export",
                               "torch._C._get_tracing_state"})
# Device types as written in `"cuda:0"`, `torch.device("mps")`.
DEVICE_TYPES = frozenset({"cpu", "cuda", "mps", "xpu", "hpu", "npu", "meta", "xla", "mtia", "privateuseone",
                          "ipu", "musa", "mlu"})
# Names that, with nothing better known, hold a device in PyTorch code.
DEVICE_WORDS = frozenset({"device", "dev", "gpu", "rank", "local_rank", "gpu_id", "device_id", "cuda_device",
                          "gpu_rank", "device_ids"})

# Names that, with nothing better known, hold these kinds.
TENSOR_NAMES = frozenset({"loss", "logits", "outputs", "pred", "preds", "tensor"})
MODULE_NAMES = frozenset({"model", "net", "criterion", "loss_fn", "loss_func", "lossfn", "module", "encoder",
                          "decoder", "classifier", "backbone", "head", "generator", "discriminator", "netG",
                          "netD", "actor", "critic", "policy", "qf1", "qf2", "q_network", "target_network",
                          "unet", "vae", "ema_model", "teacher", "student", "agent"})
LOSS_WORDS = ("loss", "criterion", "metric")
OPTIMIZER_NAMES = frozenset({"optimizer", "optim", "opt", "optimizer_g", "optimizer_d", "optimizerG",
                             "optimizerD", "q_optimizer", "actor_optimizer", "policy_optimizer"})
LOADER_WORDS = ("loader", "dataloader")
BUILTIN_PYTHON = frozenset({"len", "int", "float", "bool", "str", "range", "sum", "min", "max", "abs", "round",
                            "list", "tuple", "dict", "set", "sorted", "enumerate", "zip", "isinstance", "repr",
                            "hash", "id", "ord", "chr", "divmod", "pow", "any", "all", "format", "open", "input",
                            "getattr", "hasattr", "type", "print", "vars", "next", "iter", "reversed", "map",
                            "filter", "slice", "callable"})
# Builtins whose result is a number or string whatever they are given (reading a tensor syncs, though).
BUILTIN_SCALAR = frozenset({"len", "int", "float", "bool", "str", "repr", "round", "hash", "id", "isinstance",
                            "hasattr", "callable", "format", "ord", "chr", "input"})

# Elementwise torch functions and tensor methods (one kernel each in eager mode).
ELEMENTWISE = frozenset({
    "abs", "neg", "negative", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "square",
    "pow", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "atan2", "sigmoid", "erf",
    "erfc", "erfinv", "reciprocal", "sign", "floor", "ceil", "round", "trunc", "frac", "clamp", "clip",
    "clamp_min", "clamp_max", "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
    "maximum", "minimum", "relu", "gelu", "silu", "mish", "softplus", "relu6", "leaky_relu", "elu", "selu",
    "celu", "hardsigmoid", "hardswish", "hardtanh", "logit", "lerp", "where", "addcmul", "addcdiv",
    "nan_to_num", "fmod", "remainder", "masked_fill", "float_power", "xlogy", "hypot", "logaddexp",
    "softsign", "tanhshrink", "threshold", "glu"})
# Ops whose output size depends on the data: the host must learn it (a sync).
DYNAMIC_SHAPE_OPS = frozenset({"nonzero", "unique", "unique_consecutive", "masked_select", "argwhere",
                               "repeat_interleave", "bincount"})

# Callables that compile a module or a function.
COMPILERS = frozenset({"torch.compile", "torch.jit.script", "torch.jit.trace", "torch._dynamo.optimize",
                       "torch.export.export", "torch.compiler.compile", "torch.jit.trace_module"})
TORCH_COMPILE = frozenset({"torch.compile", "torch._dynamo.optimize", "torch.compiler.compile"})
NO_GRAD = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                     "torch.autograd.grad_mode.no_grad", "torch.autograd.inference_mode"})
DATA_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
DDP = frozenset({"torch.nn.parallel.DistributedDataParallel",
                 "torch.nn.parallel.distributed.DistributedDataParallel", "torch.nn.DistributedDataParallel"})
DATA_PARALLEL = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                           "torch.nn.parallel.data_parallel.DataParallel"})
# Wrappers that return the module they are given, on its device.
MODULE_WRAPPERS = DDP | DATA_PARALLEL | frozenset({
    "torch.nn.parallel.DistributedDataParallelCPU", "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.nn.SyncBatchNorm.convert_sync_batchnorm"})
# Calls that return the accelerator (a device object or index).
DEVICE_FUNCTIONS = frozenset({"torch.cuda.current_device", "torch.accelerator.current_accelerator",
                              "torch.accelerator.current_device_index", "torch.xpu.current_device",
                              "torch.get_default_device"})
DTYPES = frozenset(f"torch.{n}" for n in (
    "float16", "half", "bfloat16", "float32", "float", "float64", "double", "int8", "uint8", "int16", "short",
    "int32", "int", "int64", "long", "bool", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2"))
# Explicit waits for the device.
SYNCHRONIZE = frozenset({"torch.cuda.synchronize", "torch.cuda.current_stream().synchronize",
                         "torch.accelerator.synchronize", "torch.xpu.synchronize", "torch.mps.synchronize",
                         "torch.cuda.Stream.synchronize", "torch.cuda.Event.synchronize"})
CLOCKS = frozenset({"time.time", "time.perf_counter", "time.monotonic", "time.perf_counter_ns", "time.time_ns",
                    "time.monotonic_ns", "timeit.default_timer", "time.process_time"})
# Calls that mean the loop around them plots, or waits for a person.
PLOTTING_PREFIXES = ("matplotlib.", "seaborn.", "plotly.", "visdom.", "cv2.imshow", "PIL.")
INTERACTIVE = frozenset({"input", "getpass.getpass"})
DISPLAY = frozenset({"cv2.imshow", "matplotlib.pyplot.pause"})  # a window shows each result

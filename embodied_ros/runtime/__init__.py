"""Runtime backends behind one contract: TensorRT, ONNX Runtime and PyTorch, chosen by `backend`.

Modules: contract (IOContract, TensorSpec, AxisRange, Backend, InferenceBackend), config
(RuntimeConfig), select (choose_backend, create_backend), onnxruntime_backend, torch_backend,
tensorrt_backend (engine build, cache, execution), engine_cache (cache keys, no TensorRT needed),
tensorrt_compat (check_tensorrt_compatible), export (`embodied-ros export`). Only the light
modules are imported here, so `import embodied_ros.runtime` loads neither torch nor onnxruntime.
"""

from .config import RuntimeConfig
from .contract import AxisRange, Backend, InferenceBackend, IOContract, TensorSpec

__all__ = ["AxisRange", "Backend", "IOContract", "InferenceBackend", "RuntimeConfig", "TensorSpec"]

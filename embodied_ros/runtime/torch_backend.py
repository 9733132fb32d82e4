"""PyTorch backend: the eager module behind the same contract (development, training, parity reference)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from ..errors import ModelError
from .contract import Backend, IOContract, outputs_by_name


class TorchBackend:
    """A torch module run eagerly in inference mode.

    The module's ``forward`` takes one tensor per contract input, in contract order, and returns a
    tensor or a flat tuple of tensors in contract output order (what the ONNX export traces).

    Attributes:
        kind: ``Backend.TORCH``.
        contract: inputs/outputs, checked on every run.
        device: where the module runs.
    """

    kind = Backend.TORCH

    def __init__(self, module: torch.nn.Module, contract: IOContract, *, device: str | torch.device = "cpu",
                 threads: int = 0):
        """Wrap ``module``.

        Args:
            module: the network; put in eval mode without gradients, moved to ``device``.
            contract: its inputs and outputs.
            device: torch device, e.g. "cpu" or "cuda:0".
            threads: torch intra-op threads for the process (0 = leave torch's setting alone).

        Raises:
            ModelError: the device is unavailable.
        """
        self.device = torch.device(device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise ModelError(f"torch backend on {self.device} asked for, but this torch sees no CUDA device")
        if threads > 0:
            torch.set_num_threads(threads)  # process-wide: torch has no per-module thread pool
        self.contract = contract
        self.module = module.eval().requires_grad_(False).to(self.device)
        self._name = type(module).__name__

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Numpy in, numpy out (host memory), as every backend.

        Raises:
            ModelError: inputs that do not fit the contract, or an output count that does not.
        """
        self.contract.check_inputs(inputs, self._name)
        with torch.inference_mode():
            tensors = [torch.from_numpy(np.ascontiguousarray(inputs[n])).to(self.device)
                       for n in self.contract.input_names]
            out = self.module(*tensors)
            values = (out,) if isinstance(out, torch.Tensor) else tuple(out)
            named = outputs_by_name(values, self.contract.output_names, self._name)
            return {n: t.detach().cpu().numpy() for n, t in named.items()}

    def describe(self) -> str:
        return f"torch {torch.__version__} eager on {self.device} ({torch.get_num_threads()} threads) {self._name}"

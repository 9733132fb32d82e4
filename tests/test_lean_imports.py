"""The default model runs on ONNX Runtime without torch or onnx: `run` and the node import neither.

torch is for export, training, the Embodied Perceptron and the torch backend; importing it costs a
few hundred MB of resident memory that a robot's node should not carry (issue 34).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from embodied_ros.cli import default_data_dir

DATA = default_data_dir()
HEAVY = ("torch", "onnx")


def _needs_data() -> None:
    if not (DATA / "redkitchen").is_dir() or not (DATA / "yolox_nano").is_dir():
        pytest.skip(f"the redkitchen frames or the YOLOX-Nano files are not in {DATA}")


def _heavy_modules(code: str, *args: str) -> list[str]:
    """Run ``code`` in a fresh interpreter; the HEAVY modules it had imported at the end."""
    tail = f"; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", "import sys; " + code + tail, *args], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return eval(done.stdout.strip().splitlines()[-1])  # noqa: S307 - our own printed list


def test_run_with_the_default_model_imports_neither_torch_nor_onnx(tmp_path: Path) -> None:
    _needs_data()
    code = ("from embodied_ros.cli import main; "
            "sys.argv = ['embodied-ros', 'run', sys.argv[1], '--out', sys.argv[2], '--weights', sys.argv[3], "
            "'--max-frames', '2']; assert main() == 0")
    heavy = _heavy_modules(code, str(DATA / "redkitchen"), str(tmp_path / "out"), str(DATA / "yolox_nano"))
    assert (tmp_path / "out" / "objects.json").is_file()  # it did run
    assert heavy == []


def test_the_nodes_default_model_loads_without_torch_or_onnx() -> None:
    """What the node's loading thread does with its default parameters, then one frame perceived."""
    _needs_data()
    pytest.importorskip("rclpy", reason="the node needs rclpy")
    code = ("import embodied_ros.ros.node; from pathlib import Path; "
            "from embodied_ros.ros.config import NodeConfig; "
            "from embodied_ros.network.registry import build_perceptor; "
            "from embodied_ros.recordings import open_source; c = NodeConfig(); "
            "p = build_perceptor(c.model, weights=Path(sys.argv[1]), backend=c.backend); "
            "f = next(iter(open_source(Path(sys.argv[2])).frames(max_frames=1))); p.perceive(f)")
    assert _heavy_modules(code, str(DATA / "yolox_nano"), str(DATA / "redkitchen")) == []


def test_the_torch_backend_still_reads_the_onnx_file() -> None:
    """The other side: asking for the torch backend does load torch (the guard above is not vacuous)."""
    _needs_data()
    code = ("from pathlib import Path; from embodied_ros.network.registry import build_perceptor; "
            "build_perceptor('yolox-nano', weights=Path(sys.argv[1]), backend='torch')")
    assert "torch" in _heavy_modules(code, str(DATA / "yolox_nano"))


def test_the_nodes_grounder_thread_never_imports_torch() -> None:
    """The node builds its grounder (spaCy, the text encoder) on a thread while its own threads run TF
    look-ups through scipy, which looks torch up in sys.modules: a torch half-imported on the grounder's
    thread broke them and killed the node. spaCy is imported on the node's thread with torch hidden."""
    pytest.importorskip("spacy", reason="the grounder's parser is spaCy")
    code = ("from embodied_ros.ros.services import GrounderHolder; "
            "h = GrounderHolder(); assert h.get() is not None, h.error; "
            "from embodied_ros.grounding.dependency import load_pipeline; assert load_pipeline() is not None")
    assert "torch" not in _heavy_modules(code)

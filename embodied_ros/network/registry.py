"""Perceptors by name: the one place that turns `--model NAME --weights PATH` into a Perceptor."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ConfigError, ModelError
from ..runtime.config import RuntimeConfig
from .detector2d import DETECTOR_RUNTIME, NetworkDetector2D
from .lifted_perceptor import Detector2D, LiftedPerceptor
from .lifting import LiftingParams
from .perceptor import Perceptor
from .weights import DEFAULT_MODEL, KNOWN_MODELS, ModelFiles, resolve_known_model

MODELS_ENV = "EMBODIED_ROS_MODELS"
_REPO_MODELS = Path(__file__).resolve().parents[2] / "models"

# The 2D detector keeps candidates well below Darknet's display threshold (0.25): the scene
# memory applies the project's 0.075 score rule, and repeated weak sightings accumulate.
DETECTOR_SCORE_THRESHOLD = 0.1
ULTRALYTICS = "ultralytics-onnx"  # a user's Ultralytics export, its classes its own (network/ultralytics_detector.py)
# Detector ensembles by name: the member models (weights.KNOWN_MODELS) and how their boxes are fused
# (network/ensemble.py): in the image, or by the scene memory as two detections of one object.
ENSEMBLES = {
    "ensemble-yolox-nanodet": (("yolox-nano", "nanodet-plus-m-416"), "wbf"),
    "ensemble-yolox-nanodet-map": (("yolox-nano", "nanodet-plus-m-416"), "memory"),
}


def _search_dirs(weights: Path | None) -> list[Path]:
    """Where a known model's files are looked for, in order."""
    dirs = _weights_dirs(weights) if weights is not None else []
    if os.environ.get(MODELS_ENV):
        dirs.append(Path(os.environ[MODELS_ENV]))
    dirs.append(_REPO_MODELS)
    return dirs


def _weights_dirs(weights: Path) -> list[Path]:
    """The --weights folder (a file's folder) and its sub-folders: it may be a folder of model folders."""
    folder = weights if weights.is_dir() else weights.parent
    return [folder, *sorted(d for d in folder.iterdir() if d.is_dir())]


def _custom_darknet_files(weights: Path) -> ModelFiles:
    """A user's own Darknet model: NAME.weights with NAME.cfg and one *.names file beside it."""
    cfg = weights.with_suffix(".cfg")
    names = sorted(weights.parent.glob("*.names"))
    if not cfg.is_file() or not names:
        raise ModelError(f"{weights}: a Darknet model needs {cfg.name} and a .names file in the same folder")
    return ModelFiles(cfg, weights, names[0], "darknet")


def _ultralytics_files(weights: Path | None) -> tuple[Path, Path | None]:
    """A user's Ultralytics export (``--weights FILE.onnx|FILE.tflite``, or a folder holding one) and its
    names file: ``FILE.names`` beside it, else the one ``*.names`` in its folder when the model carries
    no names of its own (None: the names in the model's metadata)."""
    if weights is None:
        raise ModelError(f"--model {ULTRALYTICS} needs --weights FILE.onnx (an Ultralytics export; see "
                         "docs/custom_detectors.md)")
    files = [weights] if weights.is_file() else sorted(p for p in weights.iterdir() if p.suffix in (".onnx", ".tflite"))
    if len(files) != 1 or files[0].suffix not in (".onnx", ".tflite"):
        raise ModelError(f"--weights {weights}: --model {ULTRALYTICS} needs one .onnx (or .tflite) Ultralytics export")
    model = files[0]
    own = model.with_suffix(".names")
    if own.is_file():
        return model, own
    others = sorted(model.parent.glob("*.names"))
    return model, others[0] if len(others) == 1 and model.suffix == ".tflite" else None


def runtime_config(backend: str = "auto", allow_fallback: bool = False, fp16: bool = False) -> RuntimeConfig:
    """The RuntimeConfig of a model choice (``--backend``, ``--allow-fallback``, ``--fp16``): what the
    registry passes to every network it builds; an unknown backend is a ModelError naming the choices."""
    try:
        return RuntimeConfig(backend=backend, allow_fallback=allow_fallback, fp16=fp16)
    except ConfigError as err:
        raise ModelError(str(err)) from None


PERCEPTRON = "embodied-perceptron"
PERCEPTRON_FILE = "embodied_perceptron.pt"  # state dict + training config (training.trainer.save_weights)


def find_perceptron_weights(weights: Path | None = None) -> Path | None:
    """The Embodied Perceptron's weights file: --weights (file or folder), else the search folders
    (models/, $EMBODIED_ROS_MODELS); None when there is none."""
    if weights is not None and weights.is_file():
        return weights
    return next((d / PERCEPTRON_FILE for d in _search_dirs(weights) if (d / PERCEPTRON_FILE).is_file()), None)


def _perceptron_weights(weights: Path | None) -> Path:
    found = find_perceptron_weights(weights)
    if found is not None:
        return found
    raise ModelError(f"no {PERCEPTRON_FILE} found (looked in {', '.join(str(d) for d in _search_dirs(weights))}); "
                     "train one with `embodied-ros train` and pass --weights PATH")


def build_perceptron(weights: Path | None = None, backend: str = "auto", allow_fallback: bool = False,
                     fp16: bool = False, floor_z: float | None = None) -> Perceptor:
    """The Embodied Perceptron on a runtime backend; its ONNX file is the .onnx beside the weights, or
    exported once into the cache (keyed by the weights' sha256). A size calibration beside the
    weights (``<stem>.sizes.json``, ``embodied-ros calibrate``) is applied to its boxes."""
    from ..runtime.engine_cache import cache_dir, sha256_file
    from ..runtime.select import create_backend
    from .onnx_export import export_onnx
    from .perceptron import INPUT_NAMES, PerceptronNetwork, example_inputs, output_names, perceptron_contract
    from .perceptron_file import load_perceptron
    from .perceptron_perceptor import PerceptronPerceptor
    from .size_calibration import calibration_for

    path = _perceptron_weights(weights)
    model, config = load_perceptron(path)
    contract = perceptron_contract(config)

    def onnx_path() -> Path:
        beside = path.with_suffix(".onnx")
        if beside.is_file():
            return beside
        cached = cache_dir() / "onnx" / f"embodied-perceptron-{sha256_file(path)[:16]}.onnx"
        if not cached.is_file():
            export_onnx(model, example_inputs(config), cached, input_names=INPUT_NAMES,
                        output_names=output_names(config))
        return cached

    runtime = create_backend(runtime_config(backend, allow_fallback, fp16), contract, onnx_path=onnx_path,
                             torch_module=lambda: model)
    perceptor = PerceptronPerceptor(runtime.run, config, name=f"{PERCEPTRON} ({runtime.kind.value})",
                                    floor_z=floor_z, sizes=calibration_for(path))
    perceptor.network = PerceptronNetwork(model)  # for `embodied-ros export`
    return perceptor


def build_detector(files: ModelFiles, runtime: RuntimeConfig = DETECTOR_RUNTIME, *,
                   score_threshold: float = DETECTOR_SCORE_THRESHOLD, **detector) -> NetworkDetector2D:
    """The 2D detector that reads ``files`` (by their family: Darknet, YOLOX ONNX or NanoDet ncnn).

    Args:
        files: verified model files (``weights.resolve_known_model``).
        runtime: the backend and its settings (``runtime_config`` of ``build_perceptor``'s choice).
        score_threshold: candidates below this score are dropped before NMS.
        detector: more detector arguments (``cache``, ``iou_threshold``, ...).

    Raises:
        ModelError: unusable files or backend.
    """
    kwargs = dict(runtime=runtime, score_threshold=score_threshold, **detector)
    if files.family == "yolox":
        from .yolox_detector import YoloxDetector2D

        return YoloxDetector2D(files.weights, files.names, **kwargs)
    if files.family == "nanodet":
        from .nanodet_detector import NanoDetDetector2D

        return NanoDetDetector2D(files.graph, files.weights, files.names, **kwargs)
    from .yolo_detector import YoloDetector2D

    return YoloDetector2D(files.graph, files.weights, files.names, **kwargs)


def build_perceptor(
    name: str = DEFAULT_MODEL,
    *,
    weights: Path | None = None,
    download: bool = False,
    backend: str = "auto",
    allow_fallback: bool = False,
    fp16: bool = False,
    lifting: LiftingParams | None = None,
    detector_score_threshold: float | None = None,
) -> Perceptor:
    """Build the perceptor called ``name``.

    Args:
        name: "embodied-perceptron" (the project's network; weights from ``embodied-ros train``),
            a known 2D detector (``weights.KNOWN_MODELS``: Yolo-Fastest, YOLOX-Nano, NanoDet-Plus;
            lifted to 3D), a detector ensemble (``ENSEMBLES``: the members' boxes fused), "darknet" for a
            user's own Darknet files given by ``weights``, or "ultralytics-onnx" for a user's Ultralytics
            export (YOLOv8/YOLO11/YOLO-World/YOLOE ONNX, or TFLite with LiteRT) with its own classes.
        weights: a weights file, the folder holding the model's files, or a folder of such folders.
        download: fetch missing files from their upstream URL (sha256-checked).
        backend: "auto" (TensorRT when a GPU and tensorrt are present, else ONNX Runtime),
            "tensorrt", "onnxruntime" or "torch" (runtime/select.py).
        allow_fallback: "tensorrt" asked for but unusable here -> ONNX Runtime with a warning.
        fp16: half-precision TensorRT engine.
        lifting: 2D -> 3D lifting settings.
        detector_score_threshold: 2D detections below this are dropped before lifting (None: the
            model's own, ``KnownModel.score_threshold``; ``DETECTOR_SCORE_THRESHOLD`` for others).

    Raises:
        ModelError: unknown model, files missing (with how to get them) or unusable.
    """
    if weights is not None and not weights.exists():
        raise ModelError(f"--weights {weights}: no such file or folder")
    if name == PERCEPTRON:
        return build_perceptron(weights, backend, allow_fallback, fp16)
    runtime = runtime_config(backend, allow_fallback, fp16)

    def threshold(model: str) -> float:
        if detector_score_threshold is not None:
            return detector_score_threshold
        return KNOWN_MODELS[model].score_threshold if model in KNOWN_MODELS else DETECTOR_SCORE_THRESHOLD

    if name == ULTRALYTICS:
        from .ultralytics_detector import UltralyticsDetector2D

        model, names = _ultralytics_files(weights)
        detector = UltralyticsDetector2D(model, names, runtime=runtime, score_threshold=threshold(name))
        return LiftedPerceptor(detector, lifting or LiftingParams(), name=f"{name} {model.name}+lifting")
    if name in ENSEMBLES:
        from .ensemble import EnsembleDetector2D

        models, method = ENSEMBLES[name]
        members = [build_detector(_known_files(m, weights, download), runtime, score_threshold=threshold(m))
                   for m in models]
        ensemble = EnsembleDetector2D(members, method=method,
                                      score_threshold=detector_score_threshold or DETECTOR_SCORE_THRESHOLD)
        return LiftedPerceptor(ensemble, lifting or LiftingParams(), name=f"{name}+lifting")
    if name in KNOWN_MODELS:
        files = _known_files(name, weights, download)
    elif name == "darknet":
        if weights is None or not weights.is_file():
            raise ModelError("--model darknet needs --weights PATH.weights")
        files = _custom_darknet_files(weights)
    else:
        known = ", ".join([PERCEPTRON, *sorted(KNOWN_MODELS), *sorted(ENSEMBLES), "darknet", ULTRALYTICS])
        raise ModelError(f"unknown model {name!r}; known: {known}")
    detector = build_detector(files, runtime, score_threshold=threshold(name))
    return LiftedPerceptor(detector, lifting or LiftingParams(), name=f"{name}+lifting")


def _known_files(name: str, weights: Path | None, download: bool) -> ModelFiles:
    """A registered model's verified files, or a ModelError that says which files to provide."""
    if weights is not None and not download:
        _check_weights_folder(name, weights)
    try:
        return resolve_known_model(name, search_dirs=_search_dirs(weights), download=download)
    except ModelError as err:
        wanted = ", ".join(f.filename for f in KNOWN_MODELS[name].files)
        raise ModelError(f"{err} (or pass --weights DIR holding {wanted})") from err


def _check_weights_folder(name: str, weights: Path) -> None:
    """ModelError naming the files of ``name`` that the --weights folder (and its sub-folders) lacks.

    A user who names a folder means that folder: a model found elsewhere, or a word about the
    download cache, would hide that it holds another model's files.
    """
    dirs = _weights_dirs(weights)
    folder = dirs[0]
    missing = [f.filename for f in KNOWN_MODELS[name].files if not any((d / f.filename).is_file() for d in dirs)]
    if missing:
        held = sorted(p.name for p in folder.iterdir() if p.is_file())
        listed = ", ".join(held[:6]) + (" ..." if len(held) > 6 else "") or "no files"
        raise ModelError(f"--weights {folder} has no {' or '.join(missing)} (nor its sub-folders), which --model "
                         f"{name} needs; it holds {listed}: pass the folder holding them, another --model, or "
                         "--download-weights")


def build_detector_2d(name: str = DEFAULT_MODEL, **options) -> Detector2D:
    """The 2D detector called ``name``, without lifting: what the ``embodied_detector`` node runs.

    Args:
        name, options: as for :func:`build_perceptor` (weights, download, backend, allow_fallback, fp16, ...).

    Raises:
        ModelError: unknown or unusable model, or one that is not a 2D detector (the Embodied Perceptron
            predicts 3D boxes from the whole RGB-D frame: it runs in the map node).
    """
    if name == PERCEPTRON:
        raise ModelError(f"{PERCEPTRON} is not a 2D detector (it predicts 3D boxes from RGB-D): run it in the "
                         "map node (detector:=internal)")
    perceptor = build_perceptor(name, **options)
    return perceptor.detector  # type: ignore[attr-defined]  # every other model is a LiftedPerceptor

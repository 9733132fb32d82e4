"""The options `run`, `inspect` and `changes` share: the model, the memory's thresholds, the recording's missing
facts and rosbag2 topics; and where the real recordings are."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

from ..memory.config import MemoryConfig
from ..network.weights import DEFAULT_MODEL
from ..runtime.contract import Backend
from ..sources.pose_check import PoseConvention, PoseUnits
from ..sources.registration import Registration


def default_data_dir() -> Path:
    """../shared/data beside the checkout (or $EMBODIED_ROS_DATA): the real recordings used by demo and tests."""
    env = os.environ.get("EMBODIED_ROS_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2].parent / "shared" / "data"


def add_run_options(p: argparse.ArgumentParser, out_required: bool = True) -> None:
    """`run`'s options: the model, the memory's thresholds, the recording's and the outputs' (`changes` too, where
    --out is optional)."""
    p.add_argument("--out", type=Path, required=out_required, help="output folder (scene.mcap, objects.json, pictures)")
    p.add_argument("--model", default=DEFAULT_MODEL,
                   help="perceptor: yolox-nano, nanodet-plus-m-416, yolo-fastest-1.1-xl, yolo-fastest-1.1 (2D "
                        "detectors lifted to 3D), ensemble-yolox-nanodet, ensemble-yolox-nanodet-map, darknet, "
                        "ultralytics-onnx (your own Ultralytics export: --weights FILE.onnx), "
                        "embodied-perceptron (default: %(default)s)")
    p.add_argument("--weights", type=Path, default=None,
                   help="weights file or folder holding the model's files and its coco.names (Darknet .cfg/.weights, "
                        "yolox_nano.onnx, nanodet-plus-m_416.param/.bin)")
    p.add_argument("--download-weights", action="store_true",
                   help="download the model's weights from its upstream URL (sha256-checked) if not found")
    p.add_argument("--backend", default=Backend.AUTO.value, choices=[b.value for b in Backend],
                   help="auto: TensorRT when a GPU and tensorrt are present, else ONNX Runtime (default: %(default)s)")
    p.add_argument("--allow-fallback", action="store_true",
                   help="if --backend tensorrt cannot run here, use ONNX Runtime instead of stopping")
    p.add_argument("--fp16", action="store_true", help="half-precision TensorRT engine")
    p.add_argument("--max-frames", type=positive_int, default=None, help="stop after N frames")
    p.add_argument("--stride", type=positive_int, default=1, help="use every K-th frame (default: 1)")
    mem = MemoryConfig()
    p.add_argument("--score-threshold", type=float, default=mem.score_threshold, help="(default: %(default)s)")
    p.add_argument("--iou-threshold", type=float, default=mem.iou_threshold, help="(default: %(default)s)")
    p.add_argument("--max-per-class", type=int, default=mem.max_per_class, help="(default: %(default)s)")
    p.add_argument("--containment-threshold", type=float, default=mem.containment_threshold,
                   help="same class and overlap above this fraction of the smaller box also associates "
                        "(default: %(default)s; 1.0 = IoU only)")
    p.add_argument("--min-observations", type=int, default=mem.min_observations,
                   help="publish objects seen in at least N frames (default: %(default)s; 1 = every detection)")
    p.add_argument("--publish-confidence", type=float, default=mem.publish_confidence,
                   help="publish objects at least this likely to exist (default: %(default)s; 0 = every object)")
    p.add_argument("--per-class", action="store_true", help="associate detections per class (default: class-agnostic)")
    p.add_argument("--depth-scale", type=float, default=1.0,
                   help="for depth NOT registered to colour: depth_px = c + scale * (colour_px - c) + offset "
                        "(c: principal point; default: %(default)s)")
    p.add_argument("--depth-offset", type=float, nargs=2, metavar=("DX", "DY"), default=(0.0, 0.0),
                   help="pixel offset of that mapping (default: 0 0)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE", dest="settings",
                   help="any field of the pipeline's config, applied after the options above (repeatable): "
                        "SECTION is runtime, lifting, memory, occupancy, grounder or keyframes, e.g. "
                        "--set memory.existence_revisit_s=5 --set lifting.surface_classes=table,desk "
                        "(the fields and their meaning: config/params.yaml)")
    add_recording_options(p)
    p.add_argument("--no-inputs", action="store_true", help="do not copy colour/depth/camera_info/tf into the bag")
    p.add_argument("--overwrite", action="store_true", help="replace outputs already in --out")


def positive_int(text: str) -> int:
    """--stride, --max-frames: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is out of range: at least 1")
    return value


def gravity_option(text: str) -> tuple[float, float, float] | str:
    """--gravity: auto, off, or X,Y,Z (gravity's direction in the recording's world)."""
    if text in ("auto", "off"):
        return text
    try:
        vector = tuple(float(v) for v in text.replace(" ", ",").split(",") if v)
    except ValueError:
        vector = ()
    if len(vector) != 3 or not all(map(math.isfinite, vector)) or not any(vector):
        raise argparse.ArgumentTypeError(f"{text!r}: expected auto, off or X,Y,Z (e.g. 0,0,-1)")
    return vector  # type: ignore[return-value]


def add_recording_options(p: argparse.ArgumentParser) -> None:
    """What a recording's files may not say (sources.preflight.RecordingOptions), and rosbag2 topics."""
    rec = p.add_argument_group("recording")
    rec.add_argument("--registration", default="auto", choices=[r.value for r in Registration],
                     help="colour/depth registration: auto = the recording's own (7-Scenes: 7scenes-affine, "
                          "ScanNet: calibrated, others: none) (default: %(default)s)")
    rec.add_argument("--intrinsics", type=float, nargs=4, metavar=("FX", "FY", "CX", "CY"), default=None,
                     help="camera intrinsics in pixels (TUM RGB-D, image folders)")
    rec.add_argument("--depth-factor", type=float, default=None,
                     help="depth image value of one metre (default: 5000 for TUM RGB-D, else 1000)")
    rec.add_argument("--poses", type=Path, default=None,
                     help="trajectory file (image folders, TUM RGB-D, Azure Kinect .mkv)")
    rec.add_argument("--pose-convention", default="camera-to-world", choices=[c.value for c in PoseConvention],
                     help="what the recorded poses map (default: %(default)s)")
    rec.add_argument("--pose-units", default="m", choices=[u.value for u in PoseUnits],
                     help="unit of the recorded translations (default: %(default)s)")
    rec.add_argument("--pose-check", default="on", choices=["on", "off"],
                     help="stop when the depth of the first frames does not land on itself under the poses, "
                          "naming the option that fixes it (default: %(default)s)")
    rec.add_argument("--gravity", type=gravity_option, default="auto", metavar="auto|off|X,Y,Z",
                     help="the world's down: auto estimates it when the recording gives none, off leaves the "
                          "world as recorded, X,Y,Z gives it in the recording's world (default: auto)")
    bag = p.add_argument_group("rosbag2 input (defaults: the Azure Kinect ROS driver's topics)")
    bag.add_argument("--color-topic", default="rgb/image_raw", help="(default: %(default)s; /compressed found too)")
    bag.add_argument("--depth-topic", default="depth_to_rgb/image_raw",
                     help="(default: %(default)s; /compressedDepth found too)")
    bag.add_argument("--info-topic", default="rgb/camera_info", help="(default: %(default)s)")
    bag.add_argument("--pose-topic", default=None, help="PoseStamped/Odometry topic (default: use /tf)")
    bag.add_argument("--world-frame", default="map", help="TF frame poses are expressed in (default: %(default)s)")
    bag.add_argument("--detections-topic", default=None,
                     help="vision_msgs/Detection2DArray another detector recorded beside the images (e.g. "
                          "/embodied_detector/detections): map those detections, run no model")



"""`embodied-ros`: the command line (run over a recording, inspect one, ground, demo, ...)."""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from .display_text import escaped_output
from .errors import EmbodiedError, InputError, ModelError, os_error_line
from .memory.config import MemoryConfig
from .network.weights import DEFAULT_MODEL
from .runtime.contract import Backend
from .sources.base import FrameSource
from .sources.pose_check import PoseConvention, PoseUnits
from .sources.preflight import RecordingOptions
from .sources.registration import Registration

if TYPE_CHECKING:
    from .mapper import SceneMapper

log = logging.getLogger("embodied_ros")


def default_data_dir() -> Path:
    """../shared/data beside the checkout (or $EMBODIED_ROS_DATA): the real recordings used by demo and tests."""
    env = os.environ.get("EMBODIED_ROS_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _add_run_options(p: argparse.ArgumentParser, out_required: bool = True) -> None:
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
    p.add_argument("--max-frames", type=_positive_int, default=None, help="stop after N frames")
    p.add_argument("--stride", type=_positive_int, default=1, help="use every K-th frame (default: 1)")
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
    _add_recording_options(p)
    p.add_argument("--no-inputs", action="store_true", help="do not copy colour/depth/camera_info/tf into the bag")
    p.add_argument("--overwrite", action="store_true", help="replace outputs already in --out")


def _positive_int(text: str) -> int:
    """--stride, --max-frames: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is out of range: at least 1")
    return value


def _gravity(text: str) -> tuple[float, float, float] | str:
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


def _add_recording_options(p: argparse.ArgumentParser) -> None:
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
    rec.add_argument("--gravity", type=_gravity, default="auto", metavar="auto|off|X,Y,Z",
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


def _open_recording(args: argparse.Namespace) -> tuple[FrameSource, RecordingOptions]:
    """The source named on the command line, and its recording options."""
    from .recordings import open_source

    options = RecordingOptions(
        registration=Registration(args.registration),
        intrinsics=tuple(args.intrinsics) if args.intrinsics else None,
        depth_factor=args.depth_factor, poses=args.poses,
        pose_convention=PoseConvention(args.pose_convention), pose_units=PoseUnits(args.pose_units),
        pose_check=args.pose_check == "on",
        gravity=args.gravity if isinstance(args.gravity, tuple) else None,
        estimate_gravity=args.gravity != "off")
    bag_options = dict(color_topic=args.color_topic, depth_topic=args.depth_topic, info_topic=args.info_topic,
                       pose_topic=args.pose_topic, world_frame=args.world_frame)
    if args.detections_topic:
        bag_options["detections_topic"] = args.detections_topic
    source = open_source(args.source, options, **bag_options)
    if args.detections_topic and not getattr(source, "detections_topic", None):
        source.close()
        raise InputError(f"--detections-topic reads a rosbag2's Detection2DArray topic; {args.source} is a "
                         f"{getattr(source, 'layout', 'recording')}, not a rosbag2")
    return source, options


def _frames_to_run(total: int, stride: int, max_frames: int | None) -> int | None:
    """How many frames a run over ``total`` reads (None: unknown, a live camera)."""
    n = (total + stride - 1) // stride if total else None
    return (min(n, max_frames) if n is not None else max_frames) if max_frames is not None else n


def cmd_run(args: argparse.Namespace) -> int:
    from .config_fields import pipeline_config
    from .mapper import SceneMapper
    from .outputs.run_folder import check_free_space, check_output_folder
    from .sources.preflight import prepare_or_stop

    check_output_folder(args.out, args.overwrite, reads=(args.source, args.poses))  # first: a refusal loses nothing
    recording, options = _open_recording(args)
    with recording:  # the free space a run needs counts its frames: checked before any frame or the model is read
        n = _frames_to_run(len(recording), args.stride, args.max_frames)
        check_free_space(args.out, n or 0, write_inputs=not args.no_inputs)
        source = prepare_or_stop(recording, options)
        config = pipeline_config(args)
        if args.detections_topic:  # another detector's recorded detections: lifted, no model run here
            from .network.given_detections import GivenDetectionsPerceptor

            perceptor = GivenDetectionsPerceptor(config.lifting, f"detections on {recording.detections_topic}")
        else:
            perceptor = config.build_perceptor()
        mapper = SceneMapper(config, perceptor)
        return _run_into_folder(args, source, mapper, n)


def _run_into_folder(args: argparse.Namespace, source: FrameSource, mapper: SceneMapper, n: int | None) -> int:
    """The run itself, written beside --out's previous run and swapped in; Ctrl-C/SIGTERM keep the work."""
    from tqdm import tqdm

    from .interrupts import StopRequest
    from .outputs.run_folder import BAG_FILES, RunFolder
    from .pipeline import run

    with StopRequest() as stop, RunFolder(args.out, args.overwrite) as folder:
        try:
            summary = run(source, mapper, folder.path, stride=args.stride,
                          max_frames=args.max_frames, write_inputs=not args.no_inputs, should_stop=stop,
                          progress=lambda it: tqdm(it, total=n, unit="frame", desc=Path(str(args.source)).name))
        except KeyboardInterrupt:
            if not stop():
                raise
            closed = all((folder.path / name).is_file() for name in BAG_FILES)
            if closed:
                with stop.shielded():
                    folder.commit(f"stopped at once by {stop.name}: the bag only", names=BAG_FILES,
                                  source=source.name)
            print(f"embodied-ros: stopped at once by a second {stop.name}: "
                  + (f"the bag so far is in {args.out} (no map)" if closed else "nothing was kept"), file=sys.stderr)
            return stop.exit_code
        if summary.stopped and summary.frames_processed == 0:
            print(f"embodied-ros: {stop.name} before the first frame: nothing was written", file=sys.stderr)
            return stop.exit_code
        how_far = f"{summary.frames_read} of {n if n is not None else 'unknown'} frames"
        state = f"stopped by {stop.name} after {how_far}" if summary.stopped else "complete"
        with stop.shielded():
            outputs = folder.commit(state, source=source.name, frames_processed=summary.frames_processed,
                                    frames_skipped=len(summary.skipped))
    print(f"{summary.frames_processed} frames processed, {len(summary.skipped)} skipped, "
          f"{len(summary.objects)} objects published ({len(summary.all_objects)} in memory)")
    print("objects: " + ", ".join(f"{k} x{v}" for k, v in summary.class_counts().items()))
    print("mean ms per frame: " + ", ".join(f"{k} {v:.1f}" for k, v in summary.stage_ms.items())
          + f"; the bag on its own thread {summary.writer_ms:.1f}")
    print(f"sustained {summary.fps:.1f} frames per second ({summary.frames_processed} frames in "
          f"{summary.seconds:.1f} s, reading to the bag closed)")
    print(f"outputs in {args.out}: " + ", ".join(p.name for p in outputs))
    if summary.stopped:
        print(f"embodied-ros: {state}: the map of those frames is in {args.out}", file=sys.stderr)
        return stop.exit_code
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    """Print what a run would see; exit 1 when a run would not go ahead (the last line says why), 2 (run's line)
    when the recording cannot be used at all."""
    from tqdm import tqdm

    from .inspection import inspect_recording

    source, options = _open_recording(args)
    with source:
        n = _frames_to_run(len(source), args.stride, args.max_frames)
        report = inspect_recording(source, options, stride=args.stride, max_frames=args.max_frames,
                                   progress=lambda it: tqdm(it, total=n, unit="frame", desc="reading", leave=False))
    print(report.text())
    return 1 if report.stop else 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .network.registry import PERCEPTRON_FILE, find_perceptron_weights

    weights = args.weights or find_perceptron_weights()
    if weights is not None:
        return _synthetic_demo(args, weights)
    log.info("no trained %s in models/: running the lifted COCO detector on the redkitchen recording", PERCEPTRON_FILE)
    data = default_data_dir()
    scene, weights = data / "redkitchen", data
    if not scene.is_dir():
        raise InputError(
            f"the demo needs the redkitchen recording and the {DEFAULT_MODEL} weights in {data} "
            "(set EMBODIED_ROS_DATA to their folder), or the Embodied Perceptron's weights in models/"
        )
    argv = ["run", str(scene), "--out", str(args.out), "--weights", str(weights), "--overwrite", "--backend",
            "onnxruntime"]
    if args.max_frames is not None:
        argv += ["--max-frames", str(args.max_frames)]
    run_args = build_parser().parse_args(argv)
    return cmd_run(run_args)


def _synthetic_demo(args: argparse.Namespace, weights: Path) -> int:
    from .demo import DEMO_SEED, run_demo
    from .outputs.run_folder import RunFolder

    with RunFolder(args.out, overwrite=True) as folder:
        result = run_demo(folder.path, weights, seed=args.seed if args.seed is not None else DEMO_SEED,
                          frames=args.max_frames or 40)
        s = result.summary
        folder.commit(source=f"synthetic scene, seed {args.seed if args.seed is not None else DEMO_SEED}",
                      frames_processed=s.frames_processed)
    print(f"synthetic scene (seed {args.seed if args.seed is not None else DEMO_SEED}, never trained on): "
          f"{s.frames_processed} frames, {len(s.objects)} objects published")
    print("objects: " + ", ".join(f"{k} x{v}" for k, v in s.class_counts().items()))
    print(f"accumulated detection vs ground truth: mAP@0.25 {result.map25:.3f}, mAP@0.50 {result.map50:.3f}")
    print(f"world occupancy map vs ground truth, voxels in the frames' view: {result.occupancy.summary()}")
    print(f"grounding: {result.grounding_correct}/{result.grounding_total} of the scene's prompts right (Acc@0.25)")
    for line in result.examples:
        print("  " + line)
    print(f"outputs in {args.out}: " + ", ".join(p.name for p in s.outputs) + ", demo_metrics.json")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from .training.config import load_config
    from .training.trainer import train

    result = train(load_config(args.config), args.out, resume=args.resume, progress=not args.no_progress)
    if result is not None:  # rank 0
        evals = [h for h in result.history if "map25_frame" in h]
        last = evals[-1] if evals else {}
        print(f"trained {result.steps} steps in {result.seconds / 60:.1f} min; weights: {result.weights}")
        if last:
            print(f"held-out: mAP@0.25 per frame {last['map25_frame']:.3f}, accumulated {last['map25_scene']:.3f}, "
                  f"occupancy mIoU {last['miou']:.3f}"
                  + (f" (in view {last['miou_view']:.3f})" if "miou_view" in last else ""))
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from .network.perceptron_perceptor import torch_runner
    from .network.registry import find_perceptron_weights
    from .network.size_calibration import calibration_path
    from .runtime.engine_cache import sha256_file
    from .training.calibrate import calibrate_sizes
    from .training.trainer import load_weights

    if args.weights is not None and not args.weights.exists():
        raise ModelError(f"--weights {args.weights}: no such file or folder")
    weights = find_perceptron_weights(args.weights)
    if weights is None:
        raise ModelError("no Embodied Perceptron weights found; pass --weights PATH")
    first, last = args.seeds
    if not 0 <= first < last:
        raise InputError(f"--seeds {first} {last}: need 0 <= FIRST < LAST")
    model, config = load_weights(weights)
    val = range(*config.data.val_seeds)
    if first < val.stop and val.start < last:
        raise InputError(f"--seeds {first} {last} overlap the held-out seeds {val.start}..{val.stop - 1}: "
                         "calibrate on training seeds")
    sizes = calibrate_sizes(torch_runner(model), config.model, config.data, range(first, last), args.frames,
                            source=f"{weights.name}, seeds {first}..{last - 1}, {args.frames} keyframes each",
                            progress=not args.no_progress, weights_sha256=sha256_file(weights))
    out = args.out or calibration_path(weights)
    sizes.save(out)
    for name, (h, a) in sizes.factors.items():
        print(f"  {name:10s} height x{h:.2f}  footprint x{a:.2f}  ({sizes.samples[name]} detections)")
    print(f"size calibration of {len(sizes.factors)} classes written to {out}")
    return 0


def cmd_ground(args: argparse.Namespace) -> int:
    from .grounding.cli import ground_command

    return ground_command(args.run_dir, args.phrase, json_out=args.json, picture=args.picture,
                          from_frame=args.from_frame, all_objects=args.all_objects, timings=args.timings,
                          parser=args.parser)


def cmd_describe(args: argparse.Namespace) -> int:
    from .grounding.cli import describe_command

    return describe_command(args.run_dir, args.id, json_out=args.json, dense_captions=args.dense_captions,
                            scene_id=args.scene_id, from_frame=args.from_frame, all_objects=args.all_objects)


def cmd_scene_graph(args: argparse.Namespace) -> int:
    from .grounding.cli import scene_graph_command

    return scene_graph_command(args.run_dir, args.out, from_frame=args.from_frame,
                               with_descriptions=args.descriptions, all_objects=args.all_objects)


def cmd_play(args: argparse.Namespace) -> int:
    from .ros.player import play

    play(args)
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse answering a bad option with one line, as every other error is (the usage is a --help away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"embodied-ros: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="embodied-ros", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    p_run = sub.add_parser("run", help="run the pipeline over a recording and write a bag, objects.json and pictures")
    p_run.add_argument("source", help="posed RGB-D folder (7-Scenes/3DMatch, TUM RGB-D, ScanNet export, EmbodiedScan "
                                      "demo, images + trajectory), Azure Kinect .mkv, or rosbag2 folder/file")
    _add_run_options(p_run)
    p_run.set_defaults(func=cmd_run)

    p_inspect = sub.add_parser("inspect", help="what `run` would see in a recording: layout, frames, intrinsics, "
                                              "depth, registration, gravity, pose sanity, bad frames")
    p_inspect.add_argument("source", help="a recording, as for `run`")
    p_inspect.add_argument("--max-frames", type=_positive_int, default=None,
                           help="read at most N frames (default: all)")
    p_inspect.add_argument("--stride", type=_positive_int, default=1, help="read every K-th frame (default: 1)")
    _add_recording_options(p_inspect)
    p_inspect.set_defaults(func=cmd_inspect)

    p_ground = sub.add_parser("ground", help="answer a phrase with the 3D box of an object of a finished run")
    p_ground.add_argument("run_dir", type=Path, help="output folder of `embodied-ros run` (reads memory.json)")
    p_ground.add_argument("phrase", help='e.g. "the cup on the table next to the monitor"')
    p_ground.add_argument("--json", action="store_true", help="print the answer as JSON")
    p_ground.add_argument("--picture", type=Path, default=None, help="also draw the answer into this PNG")
    frame_help = "frame index whose camera 'left', 'nearest', 'behind me' refer to (default: the run's last frame)"
    p_ground.add_argument("--from-frame", type=int, default=None, metavar="N", help=frame_help)
    all_help = "speak about every object of the memory, not only the published ones RViz shows (debugging)"
    p_ground.add_argument("--all-objects", action="store_true", help=all_help)
    p_ground.add_argument("--timings", action="store_true", help="print where the call's time went (stderr)")
    p_ground.add_argument("--parser", choices=("auto", "spacy", "rules"), default="auto",
                          help="phrase parser: spaCy where installed (auto), or the rule-based fallback")
    p_ground.set_defaults(func=cmd_ground)

    p_desc = sub.add_parser("describe", help="a referring expression for each object of a finished run "
                                             "(checked by grounding it)")
    p_desc.add_argument("run_dir", type=Path, help="output folder of `embodied-ros run` (reads memory.json)")
    p_desc.add_argument("--id", type=int, default=None, help="describe only this object")
    p_desc.add_argument("--json", action="store_true", help="print the descriptions as JSON")
    p_desc.add_argument("--dense-captions", type=Path, default=None, metavar="FILE",
                        help="also write them in Scan2Cap's dense-captioning submission form (caption, box as "
                             "8x3 corners, sem_prob, obj_prob)")
    p_desc.add_argument("--scene-id", default="", help="scene id in that file (default: the run folder's name)")
    p_desc.add_argument("--from-frame", type=int, default=None, metavar="N", help=frame_help)
    p_desc.add_argument("--all-objects", action="store_true", help=all_help)
    p_desc.set_defaults(func=cmd_describe)

    p_graph = sub.add_parser("scene-graph", help="a finished run's objects and their relations as JSON")
    p_graph.add_argument("run_dir", type=Path, help="output folder of `embodied-ros run` (reads memory.json)")
    p_graph.add_argument("--out", type=Path, default=None, help="write the JSON here (default: print it)")
    p_graph.add_argument("--descriptions", action="store_true", help="add each object's referring expression")
    p_graph.add_argument("--from-frame", type=int, default=None, metavar="N", help=frame_help)
    p_graph.add_argument("--all-objects", action="store_true", help=all_help)
    p_graph.set_defaults(func=cmd_scene_graph)

    from .changes_cli import add_changes_parser
    add_changes_parser(sub, lambda p: _add_run_options(p, out_required=False))
    from .ros.player import add_play_arguments

    p_play = sub.add_parser("play", help="publish a recording as the Azure Kinect ROS driver's topics + TF "
                                         "(needs ROS 2), to try the node without a camera")
    add_play_arguments(p_play)
    p_play.set_defaults(func=cmd_play)

    from .network.export_command import add_export_arguments, cmd_export

    p_export = sub.add_parser("export", help="export a network to ONNX (and a TensorRT engine on a GPU machine)")
    add_export_arguments(p_export)
    p_export.set_defaults(func=cmd_export)

    p_train = sub.add_parser("train", help="train the Embodied Perceptron on synthetic scenes (torchrun for DDP)")
    p_train.add_argument("--config", type=Path, required=True, help="YAML training config (see config/train_*.yaml)")
    p_train.add_argument("--out", type=Path, required=True, help="run folder (checkpoints, weights, history, plot)")
    p_train.add_argument("--resume", action="store_true", help="continue from the run folder's checkpoint")
    p_train.add_argument("--no-progress", action="store_true", help="no progress bars (logs only)")
    p_train.set_defaults(func=cmd_train)

    p_cal = sub.add_parser("calibrate", help="fit the Embodied Perceptron's per-class box size correction "
                                             "on synthetic training scenes")
    p_cal.add_argument("--weights", type=Path, default=None,
                       help="weights file (default: models/embodied_perceptron.pt)")
    p_cal.add_argument("--seeds", type=int, nargs=2, default=(0, 24), metavar=("FIRST", "LAST"),
                       help="[FIRST, LAST) training scene seeds (default: 0 24)")
    p_cal.add_argument("--frames", type=int, default=12, help="keyframes per scene (default: %(default)s)")
    p_cal.add_argument("--out", type=Path, default=None,
                       help="output JSON (default: <weights stem>.sizes.json beside the weights)")
    p_cal.add_argument("--no-progress", action="store_true", help="no progress bar")
    p_cal.set_defaults(func=cmd_calibrate)

    p_demo = sub.add_parser("demo", help="run on the built-in scene")
    p_demo.add_argument("--out", type=Path, default=Path("out/demo"), help="output folder (default: %(default)s)")
    p_demo.add_argument("--max-frames", type=_positive_int, default=None,
                        help="frames of the scene (default: 40) or recording")
    p_demo.add_argument("--weights", type=Path, default=None,
                        help="Embodied Perceptron weights (default: models/embodied_perceptron.pt)")
    p_demo.add_argument("--seed", type=int, default=None, help="synthetic scene seed (default: a held-out one)")
    p_demo.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    with escaped_output():  # user text (phrases, paths) never drives the terminal
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args))
    except EmbodiedError as err:
        print(f"embodied-ros: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # one the commands did not expect (a read-only cache, a vanished file): still one line
        print(f"embodied-ros: error: {os_error_line(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("embodied-ros: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

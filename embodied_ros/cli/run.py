"""`embodied-ros run` (the pipeline over a recording, into --out) and `embodied-ros inspect` (what a run would
see in it)."""

from __future__ import annotations

import argparse
from typing import Any

from .options import add_recording_options, add_run_options, positive_int
from .recording import frames_to_run, open_recording, run_into_folder


def add_run_parser(sub: Any) -> None:
    """The ``run`` subcommand."""
    p_run = sub.add_parser("run", help="run the pipeline over a recording and write a bag, objects.json and pictures")
    p_run.add_argument("source", help="posed RGB-D folder (7-Scenes/3DMatch, TUM RGB-D, ScanNet export, EmbodiedScan "
                                      "demo, images + trajectory), Azure Kinect .mkv, or rosbag2 folder/file")
    add_run_options(p_run)
    p_run.set_defaults(func=cmd_run)


def add_inspect_parser(sub: Any) -> None:
    """The ``inspect`` subcommand."""
    p_inspect = sub.add_parser("inspect", help="what `run` would see in a recording: layout, frames, intrinsics, "
                                              "depth, registration, gravity, pose sanity, bad frames")
    p_inspect.add_argument("source", help="a recording, as for `run`")
    p_inspect.add_argument("--max-frames", type=positive_int, default=None,
                           help="read at most N frames (default: all)")
    p_inspect.add_argument("--stride", type=positive_int, default=1, help="read every K-th frame (default: 1)")
    add_recording_options(p_inspect)
    p_inspect.set_defaults(func=cmd_inspect)


def cmd_run(args: argparse.Namespace) -> int:
    from ..config_fields import pipeline_config
    from ..mapper import SceneMapper
    from ..outputs.run_folder import check_free_space, check_output_folder
    from ..sources.preflight import prepare_or_stop

    check_output_folder(args.out, args.overwrite, reads=(args.source, args.poses))  # first: a refusal loses nothing
    recording, options = open_recording(args)
    with recording:  # the free space a run needs counts its frames: checked before any frame or the model is read
        n = frames_to_run(len(recording), args.stride, args.max_frames)
        check_free_space(args.out, n or 0, write_inputs=not args.no_inputs)
        source = prepare_or_stop(recording, options)
        config = pipeline_config(args)
        if args.detections_topic:  # another detector's recorded detections: lifted, no model run here
            from ..network.given_detections import GivenDetectionsPerceptor

            perceptor = GivenDetectionsPerceptor(config.lifting, f"detections on {recording.detections_topic}")
        else:
            perceptor = config.build_perceptor()
        mapper = SceneMapper(config, perceptor)
        return run_into_folder(args, source, mapper, n)


def cmd_inspect(args: argparse.Namespace) -> int:
    """Print what a run would see; exit 1 when a run would not go ahead (the last line says why), 2 (run's line)
    when the recording cannot be used at all."""
    from tqdm import tqdm

    from ..inspection import inspect_recording

    source, options = open_recording(args)
    with source:
        n = frames_to_run(len(source), args.stride, args.max_frames)
        report = inspect_recording(source, options, stride=args.stride, max_frames=args.max_frames,
                                   progress=lambda it: tqdm(it, total=n, unit="frame", desc="reading", leave=False))
    print(report.text())
    return 1 if report.stop else 0

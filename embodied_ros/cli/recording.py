"""Running a recording from the command line: open the source its options name, and run a mapper over it into
--out (beside the previous run, swapped in at the end). `run` and `changes` (a map against a later recording)
both use them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError
from ..sources.base import FrameSource
from ..sources.pose_check import PoseConvention, PoseUnits
from ..sources.preflight import RecordingOptions
from ..sources.registration import Registration

if TYPE_CHECKING:
    from ..mapper import SceneMapper


def open_recording(args: argparse.Namespace) -> tuple[FrameSource, RecordingOptions]:
    """The source named on the command line, and its recording options."""
    from ..recordings import open_source

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


def frames_to_run(total: int, stride: int, max_frames: int | None) -> int | None:
    """How many frames a run over ``total`` reads (None: unknown, a live camera)."""
    n = (total + stride - 1) // stride if total else None
    return (min(n, max_frames) if n is not None else max_frames) if max_frames is not None else n


def run_into_folder(args: argparse.Namespace, source: FrameSource, mapper: SceneMapper, n: int | None) -> int:
    """The run itself, written beside --out's previous run and swapped in; Ctrl-C/SIGTERM keep the work."""
    from tqdm import tqdm

    from ..interrupts import StopRequest
    from ..outputs.run_folder import BAG_FILES, RunFolder
    from ..pipeline import run

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

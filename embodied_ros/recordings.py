"""Open any recording, live camera or generated scene as a FrameSource: the front door to sources/.

It sits above sources/ and synthetic/ because the synthetic world is itself built on sources/ (its frames
are a FrameSource): sources/ never imports the world that uses it.
"""

from __future__ import annotations

import logging
from pathlib import Path

from .errors import InputError
from .sources.base import FrameSource
from .sources.preflight import RecordingOptions
from .sources.registration import Registration

log = logging.getLogger(__name__)

__all__ = ["open_source", "describe_source_kinds"]


def describe_source_kinds() -> str:
    return ("a 7-Scenes/3DMatch sequence folder (frame-NNNNNN.color.jpg ...) or scene folder (seq-XX/), a TUM RGB-D "
            "folder (rgb.txt, depth.txt), a ScanNet export (color/, depth/, pose/, intrinsic/), an EmbodiedScan demo "
            "folder (poses.txt, rgb/, depth/, intrinsic.txt), a folder of rgb/ and depth/ images with a trajectory, "
            "an Azure Kinect .mkv, a rosbag2 folder or .mcap/.db3 file, k4a[:DEVICE] for a live camera, "
            "or synthetic[:SEED|:key=value,...] for a generated scene")


def open_source(spec: str | Path, options: RecordingOptions | None = None, **bag_options: object) -> FrameSource:
    """Open the right source for ``spec`` by looking at what is there.

    Folders are told apart by their files, in this order: rosbag2 (metadata.yaml), 7-Scenes /
    3DMatch sequence (frame-NNNNNN.color.*), 3DMatch scene (seq-XX/ folders of those), TUM RGB-D
    (rgb.txt + depth.txt), ScanNet export (color/, depth/, pose/, intrinsic/), EmbodiedScan demo
    (poses.txt + rgb/ + intrinsic.txt, unless ``options.poses`` is given), image folder (rgb/ or
    color/ ... + depth/ and a trajectory).

    Args:
        spec: a path, ``k4a`` / ``k4a:N`` for a live Azure Kinect, or ``synthetic:SEED`` /
            ``synthetic:seed=7,frames=80,size=1280x720`` for a generated scene.
        options: the recording options the source needs (registration, intrinsics, depth
            factor, trajectory); the pose and gravity options act later (sources.preflight).
            None: the defaults.
        bag_options: passed to the rosbag2 source (topic names, world_frame, ...).

    Raises:
        InputError: nothing there, or nothing recognisable.
    """
    options = options or RecordingOptions()
    source = _open(spec, options, bag_options)
    _warn_unused(source, options)
    return source


def _open(spec: str | Path, options: RecordingOptions, bag_options: dict) -> FrameSource:
    text = str(spec)
    if text == "synthetic" or text.startswith("synthetic:"):
        from .synthetic.source import SyntheticSource

        return SyntheticSource.from_spec(text)
    if text == "k4a" or text.startswith("k4a:"):
        from .sources.kinect_live import KinectLiveSource

        return KinectLiveSource(device_id=int(text.partition(":")[2] or 0))
    path = Path(spec).expanduser()
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix == ".mkv":
            from .sources.kinect_mkv import KinectMkvSource

            return KinectMkvSource(path, poses_path=options.poses)
        if suffix in (".mcap", ".db3"):
            from .sources.rosbag_source import RosbagSource

            return RosbagSource(path, **bag_options)  # type: ignore[arg-type]
        raise InputError(f"{path}: unknown recording type {suffix!r}; expected {describe_source_kinds()}")
    if (path / "metadata.yaml").is_file():
        from .sources.rosbag_source import RosbagSource

        return RosbagSource(path, **bag_options)  # type: ignore[arg-type]
    if any(path.glob("frame-*.color.*")):
        from .sources.folders import SevenScenesFolder

        return SevenScenesFolder(path, registration=options.registration)
    from .sources.threedmatch import ThreeDMatchScene, sequence_folders

    if sequence_folders(path):
        return ThreeDMatchScene(path, registration=options.registration)
    if (path / "rgb.txt").is_file() and (path / "depth.txt").is_file():
        from .sources.tum import TumFolder

        return TumFolder(path, intrinsics=options.intrinsics, depth_factor=options.depth_factor,
                         registration=options.registration, poses=options.poses)
    if all((path / sub).is_dir() for sub in ("color", "depth", "pose", "intrinsic")):
        from .sources.scannet import ScanNetExport

        return ScanNetExport(path, registration=options.registration, depth_factor=options.depth_factor)
    if (path / "poses.txt").is_file() and (path / "rgb").is_dir() and (path / "intrinsic.txt").is_file() \
            and options.poses is None:
        from .sources.folders import EmbodiedScanDemoFolder

        return EmbodiedScanDemoFolder(path)
    from .sources.image_folder import ImageFolder, image_folders

    if image_folders(path):
        return ImageFolder(path, intrinsics=options.intrinsics, depth_factor=options.depth_factor,
                           poses=options.poses, registration=options.registration)
    raise InputError(f"{path}: not a recording this tool reads; expected {describe_source_kinds()}")


_USERS = {  # option -> the sources that use it
    "--intrinsics": {"TumFolder", "ImageFolder"},
    "--depth-factor": {"TumFolder", "ImageFolder", "ScanNetExport"},
    "--poses": {"TumFolder", "ImageFolder", "KinectMkvSource"},
    "--registration": {"SevenScenesFolder", "ThreeDMatchScene", "TumFolder", "ScanNetExport", "ImageFolder"},
}


def _warn_unused(source: FrameSource, options: RecordingOptions) -> None:
    """Say which given options this kind of recording does not use (nothing is dropped silently)."""
    given = {"--intrinsics": options.intrinsics, "--depth-factor": options.depth_factor, "--poses": options.poses,
             "--registration": None if options.registration is Registration.AUTO else options.registration}
    for option, value in given.items():
        if value is not None and type(source).__name__ not in _USERS[option]:
            log.warning("%s is not used for a %s (%s)", option, source.layout, source.name)

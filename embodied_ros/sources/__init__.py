"""Frame sources: posed RGB-D folders, Azure Kinect recordings and live cameras, rosbag2."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from .base import FrameSource

__all__ = ["FrameSource", "open_source", "describe_source_kinds"]


def describe_source_kinds() -> str:
    return ("a 7-Scenes/3DMatch folder (frame-NNNNNN.color.jpg ...), an EmbodiedScan demo folder (poses.txt, rgb/, "
            "depth/), an Azure Kinect .mkv, a rosbag2 folder or .mcap/.db3 file, k4a[:DEVICE] for a live camera, "
            "or synthetic[:SEED|:key=value,...] for a generated scene")


def open_source(spec: str | Path, *, poses: Path | None = None, **options: object) -> FrameSource:
    """Open the right source for ``spec`` by looking at what is there.

    Args:
        spec: a path, ``k4a`` / ``k4a:N`` for a live Azure Kinect, or ``synthetic:SEED`` /
            ``synthetic:seed=7,frames=80,size=1280x720`` for a generated scene.
        poses: a poses file for an Azure Kinect recording.
        options: passed to the rosbag2 source (topic names, world_frame, ...).

    Raises:
        InputError: nothing there, or nothing recognisable.
    """
    text = str(spec)
    if text == "synthetic" or text.startswith("synthetic:"):
        from ..synthetic.source import SyntheticSource

        return SyntheticSource.from_spec(text)
    if text == "k4a" or text.startswith("k4a:"):
        from .kinect_live import KinectLiveSource

        return KinectLiveSource(device_id=int(text.partition(":")[2] or 0))
    path = Path(spec).expanduser()
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix == ".mkv":
            from .kinect_mkv import KinectMkvSource

            return KinectMkvSource(path, poses_path=poses)
        if suffix in (".mcap", ".db3"):
            from .rosbag_source import RosbagSource

            return RosbagSource(path, **options)  # type: ignore[arg-type]
        raise InputError(f"{path}: unknown recording type {suffix!r}; expected {describe_source_kinds()}")
    if (path / "metadata.yaml").is_file():
        from .rosbag_source import RosbagSource

        return RosbagSource(path, **options)  # type: ignore[arg-type]
    if (path / "poses.txt").is_file() and (path / "rgb").is_dir():
        from .folders import EmbodiedScanDemoFolder

        return EmbodiedScanDemoFolder(path)
    if any(path.glob("frame-*.color.*")):
        from .folders import SevenScenesFolder

        return SevenScenesFolder(path)
    raise InputError(f"{path}: not a recording this tool reads; expected {describe_source_kinds()}")

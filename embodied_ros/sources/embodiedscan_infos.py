"""EmbodiedScan's annotation files (embodiedscan_infos_*.pkl): scenes as frame sources + ground truth.

Layout read (as the EmbodiedScan dataset code writes and reads it):
``{"metainfo": {"categories": {name: id}, ...}, "data_list": [scene, ...]}``, each scene a dict
with ``sample_idx`` ("scannet/scene0000_00"), optional ``axis_align_matrix`` (4x4), the colour
intrinsics ``cam2img`` (4x4, or per image), optional ``depth_cam2img``, ``images`` (``img_path``,
``depth_path``, ``cam2global`` 4x4, ``visible_instance_ids``) and ``instances`` (``bbox_3d``: 9-DoF
box in the axis-aligned world, EmbodiedScan's ZXY Euler convention, which is this project's;
``bbox_label_3d``: a category id; ``bbox_id``). Paths are relative to the data root.

Frames: the camera pose is ``axis_align_matrix @ cam2global`` (z-up world). Depth images are
uint16 in millimetres (Matterport3D: quarter millimetres, as the dataset code's depth_shift).
Colour and depth cameras of ScanNet differ in intrinsics: the colour image is resampled into
the depth camera (K = depth_cam2img), so frames meet the Frame contract.

The file is a Python pickle: open only annotation files you trust.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from ..errors import FrameError, InputError
from ..frame import Frame
from .base import FrameSource
from .images import read_color_file, read_depth_file

_DEPTH_SHIFT = {"matterport3d": 4000.0}  # units per metre; others 1000
_FPS = 30  # stamps: frame index / 30 fps (the infos carry no time)


@dataclass(frozen=True)
class SceneAnnotations:
    """Ground truth of one scene in its axis-aligned, z-up world.

    Attributes:
        boxes: (M, 9) float64 9-DoF boxes.
        class_names: per box, its category name.
        instance_ids: (M,) int64 bbox_id of each box.
        visible: per image, the indices (into ``boxes``) of the instances visible in it.
    """

    boxes: np.ndarray
    class_names: tuple[str, ...]
    instance_ids: np.ndarray
    visible: tuple[np.ndarray, ...]


def load_infos(path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(metainfo, data_list) of an embodiedscan_infos_*.pkl file.

    Raises:
        InputError: missing or unreadable file, or not the EmbodiedScan layout.
    """
    path = Path(path)
    try:
        with path.open("rb") as f:
            data = pickle.load(f)  # noqa: S301 - the dataset's own format; documented above
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError) as err:
        raise InputError(f"{path}: not a readable pickle ({err})") from None
    if not isinstance(data, dict) or "data_list" not in data or "metainfo" not in data:
        raise InputError(f"{path}: not an EmbodiedScan infos file (needs 'metainfo' and 'data_list')")
    if "categories" not in data["metainfo"]:
        raise InputError(f"{path}: metainfo has no 'categories'")
    return data["metainfo"], list(data["data_list"])


class EmbodiedScanScene(FrameSource):
    """The posed RGB-D images of one scene of an infos file, with its annotations.

    Args:
        info: the scene's dict from ``data_list``.
        categories: ``metainfo["categories"]`` (name -> id).
        data_root: folder the image paths are relative to.
    """

    def __init__(self, info: dict[str, Any], categories: dict[str, int], data_root: str | Path) -> None:
        self.info = info
        self.data_root = Path(data_root)
        self.sample_idx = str(info.get("sample_idx", "scene"))
        self.name = self.sample_idx
        self.gravity_aligned = "axis_align_matrix" in info
        self.axis_align = np.asarray(info.get("axis_align_matrix", np.eye(4)), dtype=np.float64)
        self.depth_shift = _DEPTH_SHIFT.get(self.sample_idx.split("/")[0], 1000.0)
        self._id_to_name = {int(v): str(k) for k, v in categories.items()}
        self.images = list(info.get("images", []))
        if not self.images:
            raise InputError(f"{self.sample_idx}: scene has no images")

    def __len__(self) -> int:
        return len(self.images)

    def _intrinsics(self, image: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        colour = image.get("cam2img", self.info.get("cam2img"))
        if colour is None:
            raise FrameError(f"{self.sample_idx}: no cam2img for {image.get('img_path')}")
        depth = image.get("depth_cam2img", self.info.get("depth_cam2img", colour))
        return np.asarray(colour, dtype=np.float64)[:3, :3], np.asarray(depth, dtype=np.float64)[:3, :3]

    def read(self, index: int) -> Frame:
        if not 0 <= index < len(self.images):
            raise IndexError(f"image index {index} out of range (0..{len(self.images) - 1})")
        image = self.images[index]
        where = f"{self.sample_idx} image {index}"
        try:
            color = read_color_file(self.data_root / image["img_path"])
            depth_raw = read_depth_file(self.data_root / image["depth_path"])
        except KeyError as err:
            raise FrameError(f"{where}: missing field {err}") from None
        K_color, K_depth = self._intrinsics(image)
        h, w = depth_raw.shape
        # Colour pixel of each depth pixel, same optical centre and axes: K_c K_d^-1 [u, v, 1].
        M = K_color @ np.linalg.inv(K_depth)
        u, v = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
        map_x = (M[0, 0] * u + M[0, 1] * v + M[0, 2]).astype(np.float32)
        map_y = (M[1, 0] * u + M[1, 1] * v + M[1, 2]).astype(np.float32)
        color = cv2.remap(color, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
        # read_depth_file returns metres for 1 mm units; rescale for other depth shifts.
        depth = (depth_raw * (1000.0 / self.depth_shift)).astype(np.float32)
        pose = self.axis_align @ np.asarray(image.get("cam2global", np.full((4, 4), np.nan)), dtype=np.float64)
        return Frame(color=color, depth=depth, K=K_depth, T_world_camera=pose,
                     stamp_ns=index * 1_000_000_000 // _FPS, index=index, source_name=where)

    def annotations(self) -> SceneAnnotations:
        """The scene's boxes, class names and per-image visibility (boxes with unknown ids dropped)."""
        instances = list(self.info.get("instances", []))
        keep = [i for i, inst in enumerate(instances) if int(inst["bbox_label_3d"]) in self._id_to_name]
        boxes = np.array([instances[i]["bbox_3d"] for i in keep], dtype=np.float64).reshape(-1, 9)
        names = tuple(self._id_to_name[int(instances[i]["bbox_label_3d"])] for i in keep)
        ids = np.array([instances[i].get("bbox_id", i) for i in keep], dtype=np.int64)
        position = {old: new for new, old in enumerate(keep)}
        visible = tuple(
            np.array([position[i] for i in img.get("visible_instance_ids", []) if i in position], dtype=np.int64)
            for img in self.images
        )
        return SceneAnnotations(boxes, names, ids, visible)


def iter_scenes(infos_path: str | Path, data_root: str | Path) -> Iterator[EmbodiedScanScene]:
    """Every scene of an infos file, in file order."""
    metainfo, data_list = load_infos(infos_path)
    for info in data_list:
        yield EmbodiedScanScene(info, metainfo["categories"], data_root)

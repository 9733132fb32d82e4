"""EmbodiedScan infos (.pkl) reader, on a tiny sample written in that format from real frames."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import cv2
import numpy as np
import pytest

from embodied_ros.errors import FrameError, InputError
from embodied_ros.geometry.transforms import gravity_alignment
from embodied_ros.sources.embodiedscan_infos import EmbodiedScanScene, iter_scenes, load_infos

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
KITCHEN = DATA / "redkitchen"
needs_kitchen = pytest.mark.skipif(not KITCHEN.is_dir(), reason=f"redkitchen not found in {DATA}")
NUMBERS = (0, 10, 20)


def _write_sample(root: Path) -> Path:
    """A one-scene infos file in ScanNet style: 1.5x colour with its own intrinsics, 640x480 depth."""
    K = np.loadtxt(KITCHEN / "camera-intrinsics.txt")
    K_color = np.diag([1.5, 1.5, 1.0]) @ K
    scene = root / "scannet" / "posed_images" / "scene0000_00"
    scene.mkdir(parents=True)
    images = []
    for i, n in enumerate(NUMBERS):
        colour = cv2.imread(str(KITCHEN / f"frame-{n:06d}.color.jpg"))
        cv2.imwrite(str(scene / f"{i:05d}.jpg"), cv2.resize(colour, (960, 720), interpolation=cv2.INTER_LINEAR))
        depth = cv2.imread(str(KITCHEN / f"frame-{n:06d}.depth.png"), cv2.IMREAD_UNCHANGED)
        depth[depth == 65535] = 0
        cv2.imwrite(str(scene / f"{i:05d}.png"), depth)
        images.append({"img_path": f"scannet/posed_images/scene0000_00/{i:05d}.jpg",
                       "depth_path": f"scannet/posed_images/scene0000_00/{i:05d}.png",
                       "cam2global": np.loadtxt(KITCHEN / f"frame-{n:06d}.pose.txt"),
                       "visible_instance_ids": [0, 2] if i == 0 else [1]})
    to_4x4 = np.eye(4)
    to_4x4[:3, :3] = K_color
    depth_4x4 = np.eye(4)
    depth_4x4[:3, :3] = K
    info = {"sample_idx": "scannet/scene0000_00", "axis_align_matrix": gravity_alignment(
        np.loadtxt(KITCHEN / "gravity-direction.txt")), "cam2img": to_4x4, "depth_cam2img": depth_4x4,
        "images": images,
        "instances": [{"bbox_3d": [0.1, 1.8, -0.7, 1.2, 0.8, 0.1, 0.2, 0.0, 0.0], "bbox_label_3d": 9, "bbox_id": 4},
                      {"bbox_3d": [0.0, 2.2, -1.0, 0.5, 0.5, 0.9, 0.0, 0.1, 0.0], "bbox_label_3d": 77, "bbox_id": 5},
                      {"bbox_3d": [-0.7, 1.8, -0.7, 0.1, 0.1, 0.1, 0.0, 0.0, 0.3], "bbox_label_3d": 5, "bbox_id": 6}]}
    path = root / "embodiedscan_infos_val.pkl"
    with path.open("wb") as f:
        pickle.dump({"metainfo": {"categories": {"cup": 5, "table": 9}, "DATASET": "EmbodiedScan"},
                     "data_list": [info]}, f)
    return path


@needs_kitchen
def test_reads_frames_and_annotations_of_a_sample(tmp_path: Path) -> None:
    path = _write_sample(tmp_path)
    (scene,) = list(iter_scenes(path, tmp_path))
    assert isinstance(scene, EmbodiedScanScene) and len(scene) == 3 and scene.gravity_aligned
    frame = scene.read(1)
    assert frame.color.shape == (480, 640, 3) and frame.depth.shape == (480, 640)
    original = cv2.imread(str(KITCHEN / "frame-000010.color.jpg"))[:, :, ::-1].astype(np.float64)
    assert np.abs(frame.color[4:-4, 4:-4] - original[4:-4, 4:-4]).mean() < 6.0  # colour resampled into depth K
    raw = cv2.imread(str(KITCHEN / "frame-000010.depth.png"), cv2.IMREAD_UNCHANGED)
    np.testing.assert_allclose(frame.depth[raw < 65535], raw[raw < 65535] / 1000.0, atol=1e-6)
    T_align = gravity_alignment(np.loadtxt(KITCHEN / "gravity-direction.txt"))
    np.testing.assert_allclose(frame.T_world_camera, T_align @ np.loadtxt(KITCHEN / "frame-000010.pose.txt"))
    ann = scene.annotations()
    assert ann.class_names == ("table", "cup")  # the instance with the unknown category id is dropped
    assert ann.instance_ids.tolist() == [4, 6] and ann.boxes.shape == (2, 9)
    assert [v.tolist() for v in ann.visible] == [[0, 1], [], []]


def test_bad_files_are_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_infos(tmp_path / "missing.pkl")
    (tmp_path / "junk.pkl").write_bytes(b"not a pickle")
    with pytest.raises(InputError, match="not a readable pickle"):
        load_infos(tmp_path / "junk.pkl")
    with (tmp_path / "other.pkl").open("wb") as f:
        pickle.dump({"something": 1}, f)
    with pytest.raises(InputError, match="metainfo"):
        load_infos(tmp_path / "other.pkl")
    scene = EmbodiedScanScene({"sample_idx": "scannet/x", "images": [{"img_path": "a.jpg"}]}, {}, tmp_path)
    assert isinstance(next(iter(scene.frames())), FrameError)  # a bad image is yielded, not raised
    with pytest.raises(InputError, match="no images"):
        EmbodiedScanScene({"sample_idx": "scannet/x", "images": []}, {}, tmp_path)

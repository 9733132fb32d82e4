"""Benchmark: scene memory update time vs objects in memory, and occupancy integration time per frame.

Run: .venv/bin/python benchmarks/bench_memory.py [--frames 200] [--hours 0.25]

The memory holds objects on a floor-plan grid (1.5 m apart) at the same density whatever
their number, as a growing map would; each frame brings 10 detections: 8 jittered sightings
of objects around a moving camera and 2 new objects, as boxes only (a network's) and as lifted
detections with their points and the frame (each object's geometry, the visibility test of the
objects near the camera). The update cost must not depend on how many objects the memory already
holds (the ratio should stay near 1).

``--hours H`` replays the 100 real redkitchen frames' YOLOX-Nano perceptions (detected and lifted
once) over and over, as a robot that stays in one room for H hours at 3 keyframes a second, and
prints the objects, their voxels and the process's memory as it goes: they must level off.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np

from embodied_ros.detections import Detections3D, FramePerception, LocalOccupancy
from embodied_ros.frame import Frame
from embodied_ros.memory.scene_memory import SceneMemory
from embodied_ros.occupancy.voxel_map import OccupancyMap

VOCAB = ("chair", "table", "cup", "sofa", "monitor")
SPACING = 1.5  # metres between objects on the floor plan
DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))


def _grid_boxes(n: int, rng: np.random.Generator) -> np.ndarray:
    side = int(np.ceil(np.sqrt(n)))
    ij = np.stack(np.unravel_index(np.arange(n), (side, side)), axis=1).astype(np.float64)
    boxes = np.zeros((n, 9))
    boxes[:, 0:2] = ij * SPACING
    boxes[:, 3:6] = rng.uniform(0.3, 0.9, (n, 3))
    boxes[:, 2] = boxes[:, 5] / 2
    boxes[:, 6] = rng.uniform(-np.pi / 2, np.pi / 2, n)
    return boxes


def _surface_points(box: np.ndarray, rng: np.random.Generator, n: int = 200) -> np.ndarray:
    """``n`` points on a box's top and sides (what lifting passes on as an object's geometry)."""
    local = rng.uniform(-0.5, 0.5, (n, 3))
    face = rng.integers(0, 3, n)
    local[np.arange(n), face] = np.where(face == 2, 0.5, np.sign(local[np.arange(n), face]) * 0.5)
    c, s = np.cos(box[6]), np.sin(box[6])
    R = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    return box[:3] + (local * box[3:6]) @ R.T


def _camera_frame(index: int, camera: np.ndarray) -> Frame:
    """A 640x480 frame from ``camera`` looking down at 45 degrees along +x, seeing a floor 2 m away."""
    K = np.array([[585.0, 0, 320.0], [0, 585.0, 240.0], [0, 0, 1.0]])
    c = np.sqrt(0.5)
    T = np.eye(4)
    T[:3, :3] = np.array([[0, -c, c], [-1, 0, 0], [0, -c, -c]])  # optical z forward-down, x towards -y
    T[:3, 3] = camera
    return Frame(np.zeros((480, 640, 3), np.uint8), np.full((480, 640), 2.0, np.float32), K, T, index, index)


def _perception(index: int, boxes: np.ndarray, rng: np.random.Generator, viewpoint: np.ndarray | None = None,
                views: bool = False) -> FramePerception:
    labels = rng.integers(0, len(VOCAB), len(boxes))
    points = tuple(_surface_points(b, rng) for b in boxes) if views else None
    det = Detections3D(boxes, labels, rng.uniform(0.1, 0.95, len(boxes)), VOCAB, "world", points=points)
    frame = _camera_frame(index, viewpoint) if views and viewpoint is not None else None
    return FramePerception(frame_index=index, stamp_ns=index * 33_333_333, detections=det, viewpoint=viewpoint,
                           frame=frame)


def bench_memory(n_objects: int, n_frames: int, seed: int = 0, views: bool = False) -> tuple[float, int]:
    """Median milliseconds per update with ``n_objects`` already in memory; objects at the end.

    ``views``: detections carry points and the frame (geometry, visibility, existence evidence)."""
    rng = np.random.default_rng(seed)
    memory = SceneMemory(forget_after_s=1e9)  # the fill's objects are never re-detected: keep them all
    boxes = _grid_boxes(n_objects, rng)
    for start in range(0, n_objects, 100):  # fill the memory (non-overlapping: one object each)
        memory.update(_perception(-1, boxes[start:start + 100], rng, views=views))
    assert len(memory) == n_objects, len(memory)
    extent = boxes[:, 0:2].max(axis=0)
    times = []
    for f in range(n_frames):
        centre = rng.uniform(0, 1, 2) * extent  # the camera wanders over the whole map
        near = np.argsort(np.linalg.norm(boxes[:, 0:2] - centre, axis=1))[:8]
        seen = boxes[near].copy()
        seen[:, 0:3] += rng.normal(0, 0.03, (8, 3))
        new = np.zeros((2, 9))
        new[:, 0:2] = centre + rng.uniform(-3, 3, (2, 2)) + SPACING / 2  # between grid objects
        new[:, 3:6] = 0.2
        new[:, 2] = 2.0  # above the others: new objects
        camera = np.array([*centre, 1.2])  # objects' fronts turn towards it (memory.front_from_views)
        perception = _perception(f, np.concatenate([seen, new]), rng, camera, views=views)
        t0 = time.perf_counter()
        memory.update(perception)
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times), len(memory)


def _frames() -> list[Frame]:
    """Real redkitchen frames when the shared data is there, else a synthetic wall."""
    folder = DATA / "redkitchen"
    K = np.array([[585.0, 0, 320.0], [0, 585.0, 240.0], [0, 0, 1.0]])
    if not folder.is_dir():
        depth = np.full((480, 640), 2.0, np.float32)
        return [Frame(np.zeros((480, 640, 3), np.uint8), depth, K, np.eye(4), i, i) for i in range(20)]
    from PIL import Image

    frames = []
    for i in range(0, 1000, 10):
        stem = folder / f"frame-{i:06d}"
        depth = np.asarray(Image.open(f"{stem}.depth.png")).astype(np.float32) / 1000.0
        color = np.zeros(depth.shape + (3,), np.uint8)  # colour is not used by the occupancy map
        frames.append(Frame(color, depth, K, np.loadtxt(f"{stem}.pose.txt"), i, i))
    return frames


def bench_occupancy(pixel_stride: int = 4, voxel_size: float = 0.16) -> tuple[float, float, int]:
    """Median and max milliseconds per integrate_depth (640x480), and occupied voxels at the end."""
    occ = OccupancyMap(voxel_size=voxel_size)
    frames = _frames()
    times = []
    for frame in frames:
        t0 = time.perf_counter()
        occ.integrate_depth(frame, pixel_stride=pixel_stride)
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times), 1e3 * max(times), occ.stats().n_occupied


def bench_local_grid(voxel_size: float, n: int = 30) -> float:
    """Median milliseconds to fuse a 40x40x16 network grid at 0.16 m (a third occupied, camera-centred
    and turned a little more each time) into a map of ``voxel_size``."""
    rng = np.random.default_rng(0)
    labels = np.where(rng.random((40, 40, 16)) < 0.33, rng.integers(0, 3, (40, 40, 16)), -1).astype(np.int16)
    occ = OccupancyMap(voxel_size=voxel_size)
    times = []
    for i in range(n):
        c, s = np.cos(0.05 * i), np.sin(0.05 * i)
        T = np.eye(4)
        T[:3, :3] = [[c, -s, 0], [s, c, 0], [0, 0, 1]]
        T[:3, 3] = T[:3, :3] @ [-3.2, -3.2, -0.78] + [0.1 * i, 0.0, 0.0]
        t0 = time.perf_counter()
        occ.integrate_local_grid(LocalOccupancy(labels, T, 0.16, VOCAB[:3]))
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def bench_hours(hours: float, rate_hz: float = 3.0, report_every: int = 1000) -> None:
    """Replay the redkitchen frames' real perceptions for ``hours`` at ``rate_hz`` keyframes a second."""
    import resource

    from embodied_ros.network.lifting import lift_detections
    from embodied_ros.network.registry import build_perceptor
    try:
        from embodied_ros.recordings import open_source
    except ImportError:  # a baseline from before recordings.py
        from embodied_ros.sources import open_source

    perceptor = build_perceptor("yolox-nano", weights=DATA, backend="onnxruntime")
    with open_source(DATA / "redkitchen") as source:
        frames = [f for f in source.frames() if isinstance(f, Frame)]
    lifted = [(f, perceptor.detector.detect(f.color)) for f in frames]
    lifted = [(f, d, lift_detections(f, d, perceptor.params)) for f, d in lifted]
    memory = SceneMemory()
    n = int(hours * 3600 * rate_hz)
    times = []
    for i in range(n):
        frame, dets, det3 = lifted[i % len(lifted)]
        t0 = time.perf_counter()
        memory.update(FramePerception(i, int(i * 1e9 / rate_hz), det3, dets,
                                      viewpoint=frame.T_world_camera[:3, 3].copy(), frame=frame))
        times.append(time.perf_counter() - t0)
        if (i + 1) % report_every == 0 or i + 1 == n:
            voxels = sum(len(memory.geometry_points(o.id)) for o in memory.objects())
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
            print(f"  {(i + 1) / rate_hz / 60:6.1f} min ({i + 1} updates): {len(memory)} objects "
                  f"({len(memory.published_objects())} published), {voxels} geometry voxels, "
                  f"update median {1e3 * statistics.median(times[-report_every:]):.1f} ms, peak RSS {rss:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=200, help="timed memory updates per size")
    parser.add_argument("--hours", type=float, default=0.0, help="also replay redkitchen for this long")
    args = parser.parse_args()
    for views in (False, True):
        kind = "lifted, with points and frames" if views else "boxes only"
        small, n_small = bench_memory(100, args.frames, views=views)
        large, n_large = bench_memory(10_000, args.frames, views=views)
        print(f"memory update ({kind}), 10 detections/frame, 100 objects:    {small:7.2f} ms/frame "
              f"(ends with {n_small})")
        print(f"memory update ({kind}), 10 detections/frame, 10,000 objects: {large:7.2f} ms/frame "
              f"(ends with {n_large})")
        print(f"ratio 10,000 / 100 objects: {large / small:.2f}")
    if args.hours > 0:
        print(f"redkitchen replayed for {args.hours} h at 3 keyframes/s:")
        bench_hours(args.hours)
    source = "redkitchen" if (DATA / "redkitchen").is_dir() else "synthetic wall"
    for stride, voxel in ((4, 0.16), (2, 0.16), (4, 0.08)):
        med, worst, n_occ = bench_occupancy(stride, voxel)
        print(f"occupancy integrate_depth 640x480 ({source}), pixel_stride={stride}, map voxel {voxel} m: "
              f"median {med:.1f} ms, max {worst:.1f} ms ({n_occ} occupied voxels)")
    coarse, fine = bench_local_grid(0.16), bench_local_grid(0.08)
    print(f"network grid 40x40x16 at 0.16 m into the map: {coarse:.1f} ms (map voxel 0.16 m), "
          f"{fine:.1f} ms (0.08 m, split 2x2x2); ratio {fine / coarse:.2f}")


if __name__ == "__main__":
    main()

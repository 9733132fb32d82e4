"""The Embodied Perceptron as a Perceptor: frame -> graph inputs -> any backend -> decoded world output."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import cv2
import numpy as np

from ..detections import Detections3D, FramePerception, LocalOccupancy
from ..errors import ConfigError
from ..frame import Frame
from ..geometry.grid import aligned_grid_pose
from ..geometry.transforms import invert_transform, transform_points
from .lifting import LiftingParams, lift_detections
from .perceptron import INPUT_NAMES, PIXEL_OUTPUT, PerceptronConfig, output_names
from .perceptron_decode import DecodeParams, decode_boxes
from .pixel_detections import PIXEL_LIFTING, PixelDecodeParams, pixel_class_indices, pixel_decode
from .size_calibration import SizeCalibration

RunGraph = Callable[[Mapping[str, np.ndarray]], Mapping[str, np.ndarray]]
"""A backend: named input arrays -> named output arrays (the graph contract of perceptron.py)."""


@dataclass(frozen=True)
class GraphInputs:
    """The arrays fed to the graph for one keyframe, and the grid they refer to."""

    images: np.ndarray  # (V, 3, S, S) float32 RGB in [0, 1]
    projections: np.ndarray  # (V, 3, 4) float32 grid frame -> pixels of the S x S image
    depth_volume: np.ndarray  # (1, 1, X, Y, Z) float32 log(1 + depth points per voxel)
    T_world_grid: np.ndarray  # (4, 4) pose of the grid's voxel (0, 0, 0) corner

    def as_dict(self) -> dict[str, np.ndarray]:
        return dict(zip(INPUT_NAMES, (self.images, self.projections, self.depth_volume), strict=True))


def estimate_floor_z(frame: Frame, percentile: float = 2.0, stride: int = 8) -> float:
    """Height of the floor in a z-up world, from the lowest depth points of the frame (metres)."""
    depth = frame.depth[::stride, ::stride]
    v, u = np.nonzero(np.isfinite(depth) & (depth > 0))
    if len(u) == 0:
        return float(frame.T_world_camera[2, 3]) - 1.2  # a camera held at about chest height
    z = depth[v, u].astype(np.float64)
    rays = np.linalg.solve(frame.K, np.stack([u * stride, v * stride, np.ones_like(u)]).astype(np.float64))
    world = transform_points(frame.T_world_camera, (rays * z).T)
    return float(np.percentile(world[:, 2], percentile))


def graph_inputs(frame: Frame, config: PerceptronConfig, floor_z: float | None = None,
                 depth_stride: int = 2) -> GraphInputs:
    """Resize the image, place the grid, project it into the view and voxelise the depth points.

    Args:
        frame: a posed RGB-D frame in a z-up world.
        config: the network's shapes.
        floor_z: floor height in the world; estimated from the frame when None.
        depth_stride: depth pixels used for the depth volume (every n-th row and column).
    """
    s = config.image_size
    T_world_grid = aligned_grid_pose(frame.T_world_camera, config.grid_spec(),
                                     estimate_floor_z(frame) if floor_z is None else floor_z)
    image = cv2.resize(frame.color, (s, s), interpolation=cv2.INTER_AREA)
    images = (image.astype(np.float32) / 255.0).transpose(2, 0, 1)[None]  # (1, 3, S, S)
    scale = np.diag([s / frame.width, s / frame.height, 1.0])
    T_cam_grid = invert_transform(frame.T_world_camera) @ T_world_grid
    projections = (scale @ frame.K @ T_cam_grid[:3]).astype(np.float32)[None]  # (1, 3, 4)

    depth = frame.depth[::depth_stride, ::depth_stride]
    v, u = np.nonzero(np.isfinite(depth) & (depth > 0))
    rays = np.linalg.solve(frame.K, np.stack([u * depth_stride, v * depth_stride, np.ones_like(u)]).astype(float))
    points = transform_points(invert_transform(T_world_grid) @ frame.T_world_camera, (rays * depth[v, u]).T)
    ijk = np.floor((points - np.asarray(config.grid_origin)) / config.voxel_size).astype(np.int64)
    shape = np.asarray(config.grid_shape)
    ok = np.all((ijk >= 0) & (ijk < shape), axis=1)
    flat = np.ravel_multi_index(ijk[ok].T, config.grid_shape)
    counts = np.bincount(flat, minlength=int(np.prod(shape))).reshape(config.grid_shape)
    depth_volume = np.log1p(counts).astype(np.float32)[None, None]
    return GraphInputs(images, projections, depth_volume, T_world_grid)


class PerceptronPerceptor:
    """Perceptor over the Embodied Perceptron graph, on whichever backend ``run_graph`` wraps.

    Args:
        run_graph: the backend (named inputs -> named outputs), e.g. an ONNX Runtime session's run.
        config: the graph's shapes and vocabularies (must match the weights).
        decode: box decoding thresholds.
        name: for logs and outputs.
        floor_z: floor height of the world, when known (a synthetic scene: 0); None estimates it
            from each frame's depth.
        sizes: per-class box size correction applied after decoding (fitted for these weights;
            network/size_calibration.py), or None.
        pixels: for a graph with a pixel head, the classes whose boxes come from it (lifted
            through depth) instead of from the box head; None: pixel_detections.PIXEL_CLASSES.
        lifting: how pixel regions are lifted through depth (network/lifting.py); None:
            pixel_detections.PIXEL_LIFTING.
    """

    def __init__(self, run_graph: RunGraph, config: PerceptronConfig,
                 decode: DecodeParams | None = None, name: str = "embodied-perceptron",
                 floor_z: float | None = None, sizes: SizeCalibration | None = None,
                 pixels: PixelDecodeParams | None = None, lifting: LiftingParams | None = None) -> None:
        self.floor_z = floor_z
        self.sizes = sizes
        self.pixels = pixels or PixelDecodeParams()
        self.lifting = lifting or PIXEL_LIFTING
        self.network: object | None = None  # the exportable network, when built from weights (registry)
        self.run_graph = run_graph
        if not config.classes:
            raise ConfigError("the graph's class vocabulary (config.classes) is not set")
        self.config = config
        self.decode = decode or DecodeParams()
        self.name = name
        self.class_names = tuple(config.classes)
        self._coarse = config.box_voxel_centres().astype(np.float64)
        self._pixel_labels = pixel_class_indices(self.pixels.classes, self.class_names)

    def perceive(self, frame: Frame) -> FramePerception:
        t0 = time.perf_counter()
        floor_z = estimate_floor_z(frame) if self.floor_z is None else self.floor_z
        inputs = graph_inputs(frame, self.config, floor_z=floor_z)
        t1 = time.perf_counter()
        out = self.run_graph(inputs.as_dict())
        t2 = time.perf_counter()
        boxes, labels, scores = decode_boxes(out["box_cls"], out["box_ctr"], out["box_dist"], out["box_rot"],
                                             self._coarse, inputs.T_world_grid, self.decode)
        if self.sizes is not None:
            boxes = self.sizes.apply(boxes, labels, self.class_names)
        detections = Detections3D(boxes, labels, scores, self.class_names, frame.world_frame)
        regions = pixel_labels = None
        if PIXEL_OUTPUT in out and self.pixels.classes:
            pixel_labels, owner, regions = pixel_decode(np.asarray(out[PIXEL_OUTPUT])[0], self.class_names,
                                                        (frame.width, frame.height), self.pixels)
            lifted = lift_detections(frame, regions, self.lifting, regions=owner, floor_z=floor_z)
            detections = _replace_classes(detections, lifted, self._pixel_labels)
        occ = np.asarray(out["occupancy"])[0].argmax(axis=0).astype(np.int16)  # (X, Y, Z)
        occ[occ == self.config.empty_label] = -1
        t3 = time.perf_counter()
        return FramePerception(
            frame_index=frame.index, stamp_ns=frame.stamp_ns,
            detections=detections, detections_2d=regions,
            occupancy=LocalOccupancy(occ, inputs.T_world_grid, self.config.voxel_size,
                                     tuple(self.config.occupancy_classes)),
            timings_s={"preprocess": t1 - t0, "network": t2 - t1, "decode": t3 - t2},
            viewpoint=frame.T_world_camera[:3, 3].copy(), pixel_labels=pixel_labels, frame=frame,
        )


def _replace_classes(boxes_head: Detections3D, lifted: Detections3D, classes: list[int]) -> Detections3D:
    """The box head's detections of every class but ``classes``, and the lifted ones of those.

    The box head still decodes those classes (its NMS is most of the decoding time): skipping them
    lets more of its low-scored boxes of other classes past ``DecodeParams.max_boxes``, which cost
    accumulated mAP@0.25 0.661 -> 0.598 and grounding 0.431 -> 0.391 on seeds 10004..10011."""
    kept = boxes_head.select(~np.isin(boxes_head.labels, classes))
    return Detections3D(np.concatenate([kept.boxes, lifted.boxes.reshape(-1, 9)]),
                        np.concatenate([kept.labels, lifted.labels]).astype(np.int64),
                        np.concatenate([kept.scores, lifted.scores]), kept.class_names, kept.frame_id)


def torch_runner(model: object) -> RunGraph:
    """A RunGraph over an in-process PyTorch EmbodiedPerceptron (eval mode, no gradients)."""
    import torch

    names = output_names(model.config)  # type: ignore[attr-defined]

    def run(inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        with torch.no_grad():
            outs = model(*(torch.from_numpy(np.ascontiguousarray(inputs[n])) for n in INPUT_NAMES))  # type: ignore[operator]
        return {n: o.numpy() for n, o in zip(names, outs, strict=True)}

    return run

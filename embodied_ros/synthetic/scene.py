"""A synthetic indoor scene with ground truth: objects, a camera trajectory, rendered posed RGB-D frames.

``generate_scene(seed)`` draws everything from the seed: the same seed and config give the same
room, objects, trajectory, prompts and, frame by frame, the same noisy images (each frame's
noise comes from its own generator seeded with (seed, frame index), so frames can be rendered
in any order, or in parallel workers, and still agree).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from ..detections import Detections3D, LocalOccupancy
from ..frame import WORLD_FRAME, Frame
from .classes import OBJECT_CLASSES
from .ground_truth import GridSpec, SurfaceSamples, aligned_grid_pose, visibility_fractions
from .layout import LayoutConfig, generate_layout
from .noise import DepthNoiseConfig, apply_color_noise, apply_depth_noise
from .prompts import GroundingPrompt, make_prompts
from .renderer import SceneRenderer
from .scene_objects import RoomShell, SyntheticObject
from .trajectory import TrajectoryConfig, make_trajectory

if TYPE_CHECKING:
    from ..metrics.detection import BoxSet

_STREAM_LAYOUT, _STREAM_TRAJECTORY, _STREAM_SURFACE, _STREAM_PROMPTS, _STREAM_FRAME = range(5)


@dataclass(frozen=True)
class SceneConfig:
    """Everything that shapes a synthetic scene besides its seed."""

    width: int = 480  # image width, pixels
    height: int = 480  # image height, pixels
    focal: float | None = None  # focal length fx = fy in pixels; None = 0.75 * width (67 degree horizontal FOV)
    layout: LayoutConfig = field(default_factory=LayoutConfig)  # room and object drawing
    trajectory: TrajectoryConfig = field(default_factory=TrajectoryConfig)  # camera path
    noise: DepthNoiseConfig | None = field(default_factory=DepthNoiseConfig)  # sensor noise; None = clean
    grid: GridSpec = field(default_factory=GridSpec)  # local occupancy grid
    frame_period_ns: int = 100_000_000  # time between frames (keyframes at 10 Hz)
    visibility_stride: int = 4  # pixel stride of the visibility counts (1 = exact, much slower)
    max_prompts: int = 40  # grounding prompts drawn per scene (fewer when the scene allows fewer)

    @property
    def K(self) -> np.ndarray:
        """(3, 3) pinhole intrinsics; principal point at the image centre."""
        f = 0.75 * self.width if self.focal is None else float(self.focal)
        return np.array([[f, 0.0, (self.width - 1) / 2], [0.0, f, (self.height - 1) / 2], [0.0, 0.0, 1.0]])


KINECT_720P = SceneConfig(width=1280, height=720, focal=612.0)
"""The Azure Kinect's 1280x720 colour camera (about 92 x 60 degrees field of view)."""


@dataclass(frozen=True, eq=False)
class SyntheticFrame:
    """One rendered frame and its per-frame ground truth.

    Attributes:
        frame: the posed RGB-D frame (noisy colour and depth, world z up).
        depth_clean: (H, W) float32 noise-free depth, metres (0 = no surface).
        instance: (H, W) int32 object instance id + 1 per pixel; 0 = room surface.
        class_id: (H, W) int16 index into classes.ALL_CLASSES; -1 = no hit.
        visible_pixels: (N,) int64 pixels showing each object (estimated at the visibility stride).
        visibility: (N,) float64 fraction of each object's unoccluded image footprint that is visible.
    """

    frame: Frame
    depth_clean: np.ndarray
    instance: np.ndarray
    class_id: np.ndarray
    visible_pixels: np.ndarray
    visibility: np.ndarray


class SyntheticScene:
    """A generated room with its objects, camera trajectory, renderer and ground truth.

    Build with ``generate_scene``. Attributes:
        seed: the seed it was drawn from.
        config: its SceneConfig.
        room: walls, floor, ceiling and openings.
        objects: the objects; ``objects[i].instance_id == i``.
        poses: (F, 4, 4) float64 camera-to-world poses (OpenCV optical, world z up, floor at z = 0).
        K: (3, 3) intrinsics of every frame.
    """

    def __init__(self, seed: int, config: SceneConfig, room: RoomShell, objects: list[SyntheticObject],
                 poses: np.ndarray) -> None:
        self.seed = int(seed)
        self.config = config
        self.room = room
        self.objects = list(objects)
        self.poses = np.asarray(poses, dtype=np.float64)
        self.K = config.K
        self.class_names: tuple[str, ...] = OBJECT_CLASSES

    def __len__(self) -> int:
        return len(self.poses)

    def __repr__(self) -> str:
        return (f"SyntheticScene(seed={self.seed}, room={self.room.width:.2f}x{self.room.depth:.2f}x"
                f"{self.room.height:.2f} m, {len(self.objects)} objects, {len(self)} frames)")

    # ------------------------------------------------------------------ objects

    @property
    def boxes(self) -> np.ndarray:
        """(N, 9) float64 world boxes of all objects."""
        return np.array([o.box for o in self.objects]).reshape(-1, 9)

    @property
    def labels(self) -> np.ndarray:
        """(N,) int64 class index (into OBJECT_CLASSES) of each object."""
        return np.array([o.label for o in self.objects], dtype=np.int64)

    def ground_truth(self, instance_ids: np.ndarray | None = None) -> BoxSet:
        """The objects' boxes and class names as a metrics BoxSet (all, or the given ids)."""
        from ..metrics.detection import BoxSet  # here: the metrics package may import this one

        ids = np.arange(len(self.objects)) if instance_ids is None else np.asarray(instance_ids, dtype=np.int64)
        return BoxSet(self.boxes[ids], tuple(self.objects[i].class_name for i in ids))

    def as_detections(self, instance_ids: np.ndarray | None = None, score: float = 1.0) -> Detections3D:
        """The objects as world-frame detections (perfect detections, for tests and upper bounds)."""
        ids = np.arange(len(self.objects)) if instance_ids is None else np.asarray(instance_ids, dtype=np.int64)
        return Detections3D(self.boxes[ids], self.labels[ids], np.full(len(ids), float(score)), self.class_names,
                            WORLD_FRAME)

    # ------------------------------------------------------------------ rendering

    @cached_property
    def renderer(self) -> SceneRenderer:
        """The ray-casting renderer (built on first use)."""
        return SceneRenderer(self.room, self.objects)

    def render(self, index: int, visibility: bool = True) -> SyntheticFrame:
        """Render frame ``index`` with noise and its ground truth.

        Args:
            index: 0 <= index < len(self).
            visibility: compute per-object visibility (one more ray query); zeros otherwise.

        Raises:
            IndexError: for an index outside the trajectory.
        """
        if not 0 <= index < len(self):
            raise IndexError(f"frame {index} outside 0..{len(self) - 1}")
        cfg = self.config
        T = self.poses[index]
        view = self.renderer.render(self.K, T, cfg.width, cfg.height)
        rng = np.random.default_rng([self.seed, _STREAM_FRAME, index])
        if cfg.noise is None:
            depth, color = view.depth, view.color
        else:
            depth = apply_depth_noise(view, rng, cfg.noise)
            color = apply_color_noise(view.color, rng, cfg.noise)
        n = len(self.objects)
        if visibility:
            stride = cfg.visibility_stride
            counts = self.renderer.unoccluded_pixel_counts(self.K, T, cfg.width, cfg.height, stride)
            vis_px, vis = visibility_fractions(view.instance, counts, stride)
        else:
            vis_px, vis = np.zeros(n, np.int64), np.zeros(n)
        frame = Frame(color, depth, self.K.copy(), T.copy(), index * cfg.frame_period_ns, index,
                      source_name=f"synthetic:seed={self.seed}", camera_frame="camera")
        return SyntheticFrame(frame, view.depth, view.instance, view.class_id, vis_px, vis)

    def frame(self, index: int) -> Frame:
        """The posed RGB-D frame ``index`` alone (no visibility query)."""
        return self.render(index, visibility=False).frame

    def visible_objects(self, synthetic_frame: SyntheticFrame, min_fraction: float = 0.1,
                        min_pixels: int = 100) -> np.ndarray:
        """Instance ids of the objects seen in a frame: enough pixels and enough of their footprint."""
        ok = (synthetic_frame.visible_pixels >= min_pixels) & (synthetic_frame.visibility >= min_fraction)
        return np.flatnonzero(ok)

    # ------------------------------------------------------------------ occupancy

    @cached_property
    def surface(self) -> SurfaceSamples:
        """Labelled surface points of the whole scene (built on first use)."""
        return SurfaceSamples(self.room, self.objects, np.random.default_rng([self.seed, _STREAM_SURFACE]))

    def grid_pose(self, index: int) -> np.ndarray:
        """(4, 4) world pose of frame ``index``'s local occupancy grid corner (see ground_truth.py)."""
        return aligned_grid_pose(self.poses[index], self.config.grid)

    def occupancy(self, index: int) -> LocalOccupancy:
        """Ground-truth occupancy labels (classes.OCCUPANCY_CLASSES, -1 empty) on frame ``index``'s grid."""
        return self.surface.occupancy(self.grid_pose(index), self.config.grid)

    # ------------------------------------------------------------------ grounding

    @cached_property
    def prompts(self) -> list[GroundingPrompt]:
        """Grounding prompts made with EmbodiedScan's five relation templates (see prompts.py)."""
        return make_prompts(self.objects, np.random.default_rng([self.seed, _STREAM_PROMPTS]), self.config.max_prompts)


def generate_scene(seed: int, config: SceneConfig = SceneConfig()) -> SyntheticScene:
    """Draw a room, its objects and a camera trajectory from ``seed``.

    Rendering happens frame by frame on demand (``scene.render(i)`` / ``scene.frame(i)``).
    """
    room, objects = generate_layout(np.random.default_rng([seed, _STREAM_LAYOUT]), config.layout)
    poses = make_trajectory(room, objects, np.random.default_rng([seed, _STREAM_TRAJECTORY]), config.trajectory)
    return SyntheticScene(seed, config, room, objects, poses)

"""A synthetic indoor world with ground truth: procedural rooms rendered to posed RGB-D frames.

``generate_scene(seed)`` draws a room (walls with doors and windows, furniture and small
objects built from parts, some tilted), a robot-like camera trajectory, and gives per frame the
rendered colour, Kinect-like noisy depth, instance and class images, per-object visibility and
the 40x40x16 occupancy labels, plus the scene's 9-DoF boxes and grounding prompts.
``SyntheticSource`` makes a scene a FrameSource; ``revisit(scene)`` changes the room for a second pass
(objects moved, gone, new: the truth of what changed). Rendering needs open3d.
"""

from .classes import OBJECT_CLASSES, OCCUPANCY_CLASSES, STRUCTURE_CLASSES, SYNONYMS
from .ground_truth import GridSpec, aligned_grid_pose
from .layout import LayoutConfig
from .noise import DepthNoiseConfig
from .oracle import GroundTruthPerceptor, LiftedGroundTruthPerceptor
from .prompts import GroundingPrompt, RelationType, make_prompts
from .revisit import Revisit, RevisitConfig, RevisitSource, TrueChange, revisit
from .scene import KINECT_720P, SceneConfig, SyntheticFrame, SyntheticScene, generate_scene
from .scene_objects import SUPPORT_FLOOR, SUPPORT_WALL, RoomShell, SyntheticObject
from .source import SyntheticSource, parse_synthetic_spec
from .trajectory import TrajectoryConfig, TrajectoryKind

__all__ = [
    "KINECT_720P", "OBJECT_CLASSES", "OCCUPANCY_CLASSES", "STRUCTURE_CLASSES", "SUPPORT_FLOOR", "SUPPORT_WALL",
    "SYNONYMS", "DepthNoiseConfig", "GridSpec", "GroundTruthPerceptor", "GroundingPrompt", "LayoutConfig",
    "LiftedGroundTruthPerceptor", "RelationType", "Revisit", "RevisitConfig", "RevisitSource", "RoomShell",
    "SceneConfig", "SyntheticFrame", "SyntheticObject", "SyntheticScene", "SyntheticSource", "TrajectoryConfig",
    "TrajectoryKind", "TrueChange", "aligned_grid_pose", "generate_scene", "make_prompts", "parse_synthetic_spec",
    "revisit",
]

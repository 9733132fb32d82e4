"""Configuration of the ROS 2 node: inputs, model, keyframes, outputs (ROS parameters are declared from it)."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace

from ..errors import ConfigError
from ..grounding.engine import GrounderConfig
from ..keyframe_policy import KeyframePolicy
from ..mapper import ModelChoice, PipelineConfig
from ..memory.changes import ChangeConfig
from ..memory.config import MemoryConfig, OccupancyConfig
from ..network.lifting import LiftingParams
from ..runtime.contract import Backend

_KEYFRAMES = KeyframePolicy()  # the keyframe_* defaults are the policy's own
_MODEL = ModelChoice()  # and the model's are the pipeline's
# Grounder settings that follow another parameter (``NodeConfig.pipeline``): not parameters of their own.
GROUNDER_FROM_MEMORY = frozenset({"min_observations"})


class InputKind(str, enum.Enum):
    """Where the node's frames come from."""

    TOPICS = "topics"
    """The Azure Kinect ROS driver's (or any driver's) colour, registered depth and camera_info topics."""
    K4A = "k4a"
    """A directly attached Azure Kinect through pyk4a (colour + depth transformed to colour + calibration)."""


@dataclass(frozen=True)
class NodeConfig:
    """Parameters of the ``embodied_perception`` node (the memory and occupancy have their own)."""

    # Input: "topics" (driver topics) or "k4a" (pyk4a, device 0).
    source: InputKind = InputKind.TOPICS
    # Colour image topic (sensor_msgs/Image bgra8/bgr8/rgb8/..., or CompressedImage when color_compressed
    # or the name ends in /compressed).
    color_topic: str = "rgb/image_raw"
    # Subscribe to sensor_msgs/CompressedImage on color_topic instead of Image.
    color_compressed: bool = False
    # Depth registered to colour (16UC1 millimetres or 32FC1 metres), same stamp as the colour image;
    # a name ending in /compressedDepth is image_transport's compressedDepth (PNG) CompressedImage.
    depth_topic: str = "depth_to_rgb/image_raw"
    # sensor_msgs/CameraInfo of the colour camera (K is read from it).
    camera_info_topic: str = "rgb/camera_info"
    # Fixed world frame (z up, REP-105); boxes and markers are published in it.
    world_frame: str = "map"
    # Camera pose from a PoseStamped or Odometry topic (the optical frame's pose in its header frame);
    # empty: from TF, world_frame -> the image's frame_id at the image stamp.
    pose_topic: str = ""
    # "PoseStamped" or "Odometry": the message type on pose_topic.
    pose_type: str = "PoseStamped"
    # How long to wait for TF at the image stamp (seconds) before the frame is dropped with a warning.
    tf_timeout: float = 0.1
    # A pose sample this far (seconds) from the image stamp is still used (pose topics only).
    pose_tolerance: float = 0.1
    # How long (seconds) a colour/depth pair newer than every pose sample waits for its pose (pose topics
    # and /tf without tf2_ros) before it is dropped with a warning; it never blocks a callback meanwhile.
    pose_wait: float = 0.5
    # Optical colour frame of a pyk4a camera (source k4a), looked up in TF at the capture time.
    k4a_camera_frame: str = "rgb_camera_link"
    # Input QoS: "auto" (reliable unless the camera's publisher offers best effort only, also when one
    # appears later), "reliable", or "best_effort" (drops large images under load).
    input_qos: str = "auto"
    # vision_msgs/Detection2DArray of another detector (the embodied_detector node, isaac_ros, your own),
    # stamped like the colour images: each frame is lifted with the detections of its stamp instead of
    # running `model` here; "" = run `model` in this node.
    detections_topic: str = ""
    # How long (seconds) a frame waits for the detections of its stamp; then (or at once while the
    # detector is silent) it is counted as without detections and only its depth is fused.
    detections_wait: float = 0.5
    # Names of numeric class ids on detections_topic (class_id "k" -> the k-th name), for detectors that
    # send numbers (isaac_ros YOLOv8); empty: class_id is the class name.
    detections_class_names: tuple[str, ...] = ()
    # Perceptor name (see `embodied-ros run --help`).
    model: str = _MODEL.model
    # Folder (or .weights file) with the model's files; empty: models/ and $EMBODIED_ROS_MODELS.
    weights: str = _MODEL.weights
    # Fetch missing model files from their pinned upstream URL (sha256-checked); never done silently.
    download_weights: bool = _MODEL.download_weights
    # Network backend: "auto" (TensorRT when a GPU and tensorrt are present, else ONNX Runtime),
    # "tensorrt", "onnxruntime" or "torch".
    backend: str = _MODEL.backend
    # backend "tensorrt" but unusable here (no GPU, no tensorrt): run ONNX Runtime instead of stopping.
    allow_fallback: bool = _MODEL.allow_fallback
    # Half-precision TensorRT engine (FP16 flag on TensorRT 10, fp16 ONNX types on TensorRT 11).
    fp16: bool = _MODEL.fp16
    # A frame becomes a keyframe when the camera moved this far (metres) since the last keyframe ...
    keyframe_min_translation: float = _KEYFRAMES.min_translation
    # ... or turned this much (radians) ...
    keyframe_min_rotation: float = _KEYFRAMES.min_rotation
    # ... or this much time passed (seconds); 0 makes every frame a keyframe.
    keyframe_max_interval: float = _KEYFRAMES.max_interval
    # A keyframe that came while the network was busy and waited longer than this (seconds) is
    # skipped (counted) for the next, fresher frame, so markers never come late; 0 = never skip it.
    keyframe_max_wait: float = _KEYFRAMES.max_wait
    # Frames not run through the network (not keyframes, or skipped) still carry depth: fuse it into
    # the occupancy map when the worker is idle and the next frame is not due before it would end.
    fuse_skipped_depth: bool = True
    # Folder that holds the maps of ~/save_map and ~/load_map (a request names a map in it, never
    # another path); "" = ~/.embodied_ros/map.
    map_dir: str = ""
    # Load the map named start_map at start when it was saved (a restart loses nothing that was saved).
    load_map_on_start: bool = False
    # Map loaded by load_map_on_start and saved/loaded when a request names none.
    start_map: str = "default"
    # A camera pose further than this speed (m/s) from the last frame taken is a jump (a TF glitch, a
    # relocalisation): its frames are skipped until the time since then makes the move plausible; 0 = no check.
    max_camera_speed: float = 10.0
    # Share of the time (0-1, over about a second) ~/ground and ~/describe may spend answering; calls beyond it
    # are answered at once with success false ("busy"), so a flood of calls neither delays answers nor stalls
    # perception; 0 = no limit.
    max_ground_share: float = 0.3
    # Diagnostics period (seconds) on /diagnostics.
    diagnostics_period: float = 1.0
    # Also publish vision_msgs/Detection3DArray on ~/detections (when vision_msgs is installed).
    publish_detections: bool = True
    # ~/detections_image (the keyframe's colour image, for RViz) draws its 2D detections from this score up.
    image_min_score: float = 0.3
    # TF frame (child of world_frame) at the middle of the map, which config/embodied.rviz's view follows;
    # "" = none.
    view_frame: str = "embodied_view"

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "source", InputKind(self.source))
        except ValueError:
            raise ConfigError(f"source must be one of {[k.value for k in InputKind]}, got {self.source!r}") from None
        if self.pose_type not in ("PoseStamped", "Odometry"):
            raise ConfigError(f"pose_type must be PoseStamped or Odometry, got {self.pose_type!r}")
        if self.input_qos not in ("auto", "reliable", "best_effort"):
            raise ConfigError(f"input_qos must be auto, reliable or best_effort, got {self.input_qos!r}")
        if self.backend not in {b.value for b in Backend}:
            raise ConfigError(f"backend must be one of {[b.value for b in Backend]}, got {self.backend!r}")
        for name in ("tf_timeout", "pose_tolerance", "pose_wait", "keyframe_min_translation", "keyframe_min_rotation",
                     "keyframe_max_interval", "keyframe_max_wait", "image_min_score", "detections_wait",
                     "max_camera_speed", "max_ground_share"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ConfigError(f"{name} must be a finite number >= 0, got {value!r}")
        if not self.diagnostics_period > 0.0:
            raise ConfigError(f"diagnostics_period must be positive, got {self.diagnostics_period!r}")
        if not self.world_frame:
            raise ConfigError("world_frame must not be empty")

    def pipeline(self, memory: MemoryConfig, occupancy: OccupancyConfig, lifting: LiftingParams | None = None,
                 grounder: GrounderConfig | None = None, changes: ChangeConfig | None = None) -> PipelineConfig:
        """The SceneMapper's config: these model and keyframe parameters, with the memory's, the map's,
        lifting's and the grounder's (each its parameters' ``memory.``, ``occupancy.``, ``lifting.``,
        ``grounder.``).

        The grounder skips objects seen fewer than ``memory.min_observations`` times (the memory's
        publish rule): that one grounder setting follows the memory's.
        """
        runtime = ModelChoice(model=self.model, weights=self.weights, download_weights=self.download_weights,
                              backend=self.backend, allow_fallback=self.allow_fallback, fp16=self.fp16)
        grounder = replace(grounder or GrounderConfig(), min_observations=memory.min_observations)
        return PipelineConfig(runtime=runtime, lifting=lifting or LiftingParams(), memory=memory,
                              occupancy=occupancy, grounder=grounder, keyframes=self.keyframe_policy(),
                              changes=changes or ChangeConfig())

    def keyframe_policy(self) -> KeyframePolicy:
        """The worker's keyframe rules from the keyframe_* parameters."""
        return KeyframePolicy(min_translation=self.keyframe_min_translation, min_rotation=self.keyframe_min_rotation,
                              max_interval=self.keyframe_max_interval, max_wait=self.keyframe_max_wait)

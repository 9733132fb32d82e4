"""The ``embodied_detector`` node: colour images in, vision_msgs/Detection2DArray out, on any machine.

The detector as a node of its own (as isaac_ros splits its detectors from their consumers): it
runs the configured 2D model on its runtime (TensorRT on a GPU machine, ONNX Runtime, PyTorch) and
publishes ``~/detections`` stamped with each image's header, class names as strings in
``results[0].hypothesis.class_id`` (messages/detections2d.py), so the map node (``detections_topic``)
pairs them with their depth by stamp, on this machine or another of the same ROS domain. It keeps up
by dropping, never by queueing: the image subscription keeps the newest image only. A model that
gives instance masks would publish them on ``~/detections/masks`` (docs/ros.md); no shipped model does.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.task import Future

from ..errors import EmbodiedError, FrameError
from ..mapper import ModelChoice
from ..messages.convert import header_msg, stamp_ns_from_msg
from ..messages.detections2d import detection2d_array_cdr
from ..sources.images import decode_compressed_rgb, image_to_rgb
from .conversions import to_rclpy
from .inputs import QosMatch, is_compressed
from .params import declare_config
from .spin import run_node

NODE_NAME = "embodied_detector"
_MODEL = ModelChoice()


@dataclass(frozen=True)
class DetectorConfig:
    """Parameters of the ``embodied_detector`` node (the map node's names, so one params file serves both)."""

    # Colour image topic (sensor_msgs/Image, or CompressedImage when color_compressed or its name ends in
    # /compressed).
    color_topic: str = "rgb/image_raw"
    # Subscribe to sensor_msgs/CompressedImage on color_topic instead of Image.
    color_compressed: bool = False
    # Input QoS: "auto" (reliable unless the camera offers best effort only), "reliable" or "best_effort".
    input_qos: str = "auto"
    # 2D detector name (see `embodied-ros run --help`; not embodied-perceptron).
    model: str = _MODEL.model
    # Folder (or file) with the model's files; empty: models/ and $EMBODIED_ROS_MODELS.
    weights: str = _MODEL.weights
    # Fetch missing model files from their pinned upstream URL (sha256-checked); never done silently.
    download_weights: bool = _MODEL.download_weights
    # "auto" (TensorRT when a GPU and tensorrt are present, else ONNX Runtime), "tensorrt", "onnxruntime", "torch".
    backend: str = _MODEL.backend
    # backend "tensorrt" but unusable here: run ONNX Runtime instead of stopping.
    allow_fallback: bool = _MODEL.allow_fallback
    # Half-precision TensorRT engine.
    fp16: bool = _MODEL.fp16
    # Diagnostics period (seconds) on /diagnostics.
    diagnostics_period: float = 1.0


class EmbodiedDetectorNode(Node):
    """The detector node; ``detector`` (or a callable building it) replaces the one the parameters name."""

    def __init__(self, detector: Any = None, **node_kwargs: Any) -> None:
        super().__init__(NODE_NAME, **node_kwargs)
        from diagnostic_msgs.msg import DiagnosticArray
        from sensor_msgs.msg import CompressedImage, Image
        from vision_msgs.msg import Detection2DArray

        self.config = config = declare_config(self, DetectorConfig)
        self.detector: Any = None
        self.ready, self.failed = threading.Event(), Future()
        self.counts = {"images": 0, "detected": 0, "before_ready": 0, "bad": 0}
        self.detect_s = 0.0  # moving average of one image's detection
        self.pub = self.create_publisher(Detection2DArray, "~/detections",
                                         QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        self.pub_diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.qos = QosMatch(self, config.input_qos, (config.color_topic,))
        self._type = CompressedImage if is_compressed(config.color_topic, config.color_compressed, "/compressed") \
            else Image
        self._subscription = None
        self._subscribe()
        self.create_timer(config.diagnostics_period, self._tick)
        threading.Thread(target=self._load, args=(detector,), name="embodied-detector-load", daemon=True).start()

    def _subscribe(self) -> None:
        if self._subscription is not None:
            self.destroy_subscription(self._subscription)
        # depth 1: a detector slower than the camera takes the newest image, never a queue of old ones
        self._subscription = self.create_subscription(self._type, self.config.color_topic, self._on_image,
                                                      self.qos.profile(1), **self.qos.events())

    def _load(self, detector: Any) -> None:
        c = self.config
        try:
            if detector is None:
                from pathlib import Path

                from ..network.registry import build_detector_2d

                detector = build_detector_2d(c.model, weights=Path(c.weights) if c.weights else None,
                                             download=c.download_weights, backend=c.backend,
                                             allow_fallback=c.allow_fallback, fp16=c.fp16)
            elif callable(detector) and not hasattr(detector, "detect"):
                detector = detector()
        except Exception as err:  # noqa: BLE001 - whatever stops the model loading, in one line
            message = str(err) if isinstance(err, EmbodiedError) else f"{type(err).__name__}: {err}"
            self.get_logger().fatal(f"cannot start: model {c.model}: {message}")
            self.failed.set_result(message)
            return
        self.detector = detector
        self.ready.set()
        self.get_logger().info(f"ready: {c.color_topic} -> {self.pub.topic_name} "
                               f"({len(detector.class_names)} classes, {getattr(detector, 'backend', '')})")

    def _on_image(self, msg: Any) -> None:
        self.counts["images"] += 1
        if not self.ready.is_set():
            self.counts["before_ready"] += 1
            return
        try:
            if hasattr(msg, "format"):
                rgb = decode_compressed_rgb(msg.format, msg.data)
            else:
                rgb = image_to_rgb(msg.encoding, msg.height, msg.width, msg.step, msg.data, bool(msg.is_bigendian))
        except FrameError as err:
            self.counts["bad"] += 1
            if self.counts["bad"] == 1 or self.counts["bad"] % 100 == 0:
                self.get_logger().warning(f"image skipped: {err} (x{self.counts['bad']})")
            return
        start = time.perf_counter()
        found = self.detector.detect(rgb)
        elapsed = time.perf_counter() - start
        self.detect_s = elapsed if not self.detect_s else 0.8 * self.detect_s + 0.2 * elapsed
        names = [found.class_names[k] for k in found.labels]
        # the image's stamp and frame: the map pairs by it
        self.pub.publish(detection2d_array_cdr(names, found.scores, found.boxes_xyxy, msg.header.frame_id,
                                               stamp_ns_from_msg(msg.header.stamp)))
        self.counts["detected"] += 1

    def _tick(self) -> None:
        from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

        if self.qos.best_effort_found():
            self.get_logger().warning("the camera offers best-effort QoS only: subscribing best effort")
            self.qos.fall_back()
            self._subscribe()
        state = "failed" if self.failed.done() else "ready" if self.ready.is_set() else "loading"
        values = {"state": state, **{f"images_{k}" if k != "images" else "images_received": v
                                     for k, v in self.counts.items()},
                  "detect_ms": f"{1000 * self.detect_s:.1f}", "input_qos": self.qos.reliability}
        status = DiagnosticStatus(name=f"{self.get_name()}: detector", hardware_id="embodied_ros", message=state,
                                  values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])
        header = to_rclpy(header_msg("", self.get_clock().now().nanoseconds))
        self.pub_diagnostics.publish(DiagnosticArray(header=header, status=[status]))


def main(args: list[str] | None = None) -> None:
    """``ros2 run embodied_ros embodied_detector``: spin; quiet on Ctrl-C; exit code 2 after a fatal line."""
    run_node(NODE_NAME, EmbodiedDetectorNode, SingleThreadedExecutor, args)


if __name__ == "__main__":
    main()

"""The ``embodied_perception`` node: RGB-D + poses in; markers, objects, detections, occupancy, services out.

Thin by design: callbacks turn messages into a core Frame (inputs.py) and hand it to the keyframe
worker (keyframes.py), which runs the core (scene_state.py) and publishes; services answer from
the memory's snapshot (services.py). Every output is built once by the core as a rosbags message
and converted field by field (conversions.py).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import rclpy
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, PointCloud2
from std_msgs.msg import String
from std_srvs.srv import Trigger
from visualization_msgs.msg import MarkerArray

from ..errors import EmbodiedError, FrameError
from ..frame import Frame
from ..memory.config import MemoryConfig, OccupancyConfig
from ..network.perceptor import Perceptor
from ..network.registry import build_perceptor
from . import services
from .config import InputKind, NodeConfig
from .conversions import to_rclpy
from .diagnostics import RateMeter, diagnostic_status
from .inputs import FrameAssembler, PoseLookup, start_k4a
from .keyframes import KeyframePolicy, KeyframeWorker
from .params import declare_config
from .scene_state import SceneState

NODE_NAME = "embodied_perception"


def _vision_msgs_available() -> bool:
    try:
        import vision_msgs.msg  # noqa: F401
    except ImportError:
        return False
    return True


class EmbodiedPerceptionNode(Node):
    """The perception node. ``perceptor`` overrides the one built from the ``model`` parameters (tests)."""

    def __init__(self, perceptor: Perceptor | None = None, **node_kwargs: Any) -> None:
        super().__init__(NODE_NAME, **node_kwargs)
        from embodied_ros.msg import SceneObjectArray
        from embodied_ros.srv import Describe, Ground, LoadMap, SaveMap

        self.config = config = declare_config(self, NodeConfig)
        memory_config = declare_config(self, MemoryConfig, "memory.")
        occupancy_config = declare_config(self, OccupancyConfig, "occupancy.")
        if perceptor is None:
            perceptor = build_perceptor(config.model, weights=Path(config.weights) if config.weights else None,
                                        download=config.download_weights, backend=config.backend,
                                        allow_fallback=config.allow_fallback, fp16=config.fp16)
        self.state = SceneState(perceptor, memory_config, occupancy_config)
        self.grounder = services.shared_grounder(memory_config.min_observations, memory_config.publish_confidence)
        self.problems: dict[str, int] = {}  # bad-input message kind -> count (diagnostics, tests)
        self.last_problem = ""
        self._detections_on = config.publish_detections and _vision_msgs_available()
        if config.publish_detections and not self._detections_on:
            self.get_logger().info("vision_msgs not installed: ~/detections (Detection3DArray) is off; "
                                   "~/objects carries the same objects")
        out_qos = QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE)
        self.pub_markers = self.create_publisher(MarkerArray, "~/markers", out_qos)
        self.pub_objects = self.create_publisher(SceneObjectArray, "~/objects", out_qos)
        self.pub_occupancy = self.create_publisher(PointCloud2, "~/occupancy", out_qos)
        self.pub_scene_graph = self.create_publisher(String, "~/scene_graph", out_qos)  # JSON, when subscribed
        self._min_observations = memory_config.min_observations
        if self._detections_on:
            from vision_msgs.msg import Detection3DArray
            self.pub_detections = self.create_publisher(Detection3DArray, "~/detections", out_qos)
        from diagnostic_msgs.msg import DiagnosticArray
        self.pub_diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", 10)

        policy = KeyframePolicy(config.keyframe_min_translation, config.keyframe_min_rotation,
                                config.keyframe_max_interval)
        self.worker = KeyframeWorker(self._process, policy, on_error=self.get_logger().error)
        in_qos = qos_profile_sensor_data if config.sensor_qos else QoSProfile(depth=5)
        self.poses = PoseLookup(self, config, in_qos)
        self.assembler = FrameAssembler(config, self.poses)
        if config.source == InputKind.K4A:
            start_k4a(self, config, self.poses, self.worker.submit, self._bad_input)
        else:
            color_type = CompressedImage if config.color_compressed else Image
            self.create_subscription(color_type, config.color_topic,
                                     lambda m: self._feed(self.assembler.on_color, m), in_qos)
            self.create_subscription(Image, config.depth_topic, lambda m: self._feed(self.assembler.on_depth, m),
                                     in_qos)
            self.create_subscription(CameraInfo, config.camera_info_topic, self.assembler.on_camera_info, in_qos)

        group = MutuallyExclusiveCallbackGroup()  # services never queue behind image callbacks
        self.create_service(Ground, "~/ground", self._on_ground, callback_group=group)
        self.create_service(Describe, "~/describe", lambda req, res: services.describe(
            self.state, self.grounder, int(req.object_id), res), callback_group=group)
        self.create_service(Trigger, "~/reset", lambda _req, res: services.reset(self.state, res),
                            callback_group=group)
        self.create_service(SaveMap, "~/save_map", lambda req, res: services.save_map(
            self.state, services.map_directory(req.directory, config.map_dir), res), callback_group=group)
        self.create_service(LoadMap, "~/load_map", self._on_load_map, callback_group=group)
        self._rates = (RateMeter(), RateMeter())
        self.create_timer(config.diagnostics_period, self._publish_diagnostics)
        if config.load_map_on_start:
            self._on_load_map(LoadMap.Request(), LoadMap.Response())
        self.get_logger().info(f"ready: {config.source.value} input, poses from {self.poses.mode or 'TF'}, "
                               f"model {perceptor.name}, world frame {config.world_frame}")

    # ---- input -------------------------------------------------------------------------------

    def _feed(self, add: Any, msg: Any) -> None:
        try:
            frame = add(msg)
        except FrameError as err:
            self._bad_input(str(err))
            return
        if frame is not None:
            self.worker.submit(frame)

    def _bad_input(self, message: str) -> None:
        kind = re.sub(r"\d+", "#", message)[:160]  # one count per kind of problem, whatever the stamp
        self.problems[kind] = self.problems.get(kind, 0) + 1
        self.last_problem = message
        if self.problems[kind] == 1 or self.problems[kind] % 100 == 0:  # first of a kind, then every 100th
            self.get_logger().warning(f"frame skipped: {message} (x{self.problems[kind]})")

    # ---- keyframe worker thread --------------------------------------------------------------

    def _process(self, frame: Frame) -> dict[str, float]:
        stages = self.state.process(frame)
        start = time.perf_counter()
        msgs = self.state.messages(self.config.world_frame, frame.stamp_ns, self._detections_on)
        self.pub_markers.publish(to_rclpy(msgs.markers))
        self.pub_objects.publish(to_rclpy(msgs.objects))
        self.pub_occupancy.publish(to_rclpy(msgs.occupancy))
        if self._detections_on:
            self.pub_detections.publish(to_rclpy(msgs.detections))
        if self.pub_scene_graph.get_subscription_count() > 0:
            self.pub_scene_graph.publish(String(data=services.scene_graph_json(self.state, self._min_observations)))
        stages["publish"] = time.perf_counter() - start
        return stages

    # ---- services and diagnostics ------------------------------------------------------------

    def _on_ground(self, request: Any, response: Any) -> Any:
        response = services.ground(self.state, self.grounder, request.phrase, response)
        self.get_logger().info(f"ground {request.phrase[:80]!r}: {response.message}")
        return response

    def _on_load_map(self, request: Any, response: Any) -> Any:
        response = services.load_map(self.state, services.map_directory(request.directory, self.config.map_dir),
                                     response)
        if response.success:
            self.get_logger().info(response.message)
        else:
            self.get_logger().warning(response.message)
        return response

    def _publish_diagnostics(self) -> None:
        from diagnostic_msgs.msg import DiagnosticArray

        stats = self.worker.stats
        problems = [f"{n} x {kind}" for kind, n in self.problems.items()]
        if stats.dropped:
            problems.append(f"{stats.dropped} keyframes dropped (network slower than the keyframe rate)")
        extra = {"objects": len(self.state.memory), "unpaired_images": self.assembler.n_unpaired,
                 "grounding": self.grounder.error or "ready"}
        status = diagnostic_status(f"{self.get_name()}: perception", stats, self._rates[0].rate(stats.received),
                                   self._rates[1].rate(stats.keyframes), extra, problems[:5])
        self.pub_diagnostics.publish(DiagnosticArray(header=to_rclpy(_header(self)), status=[status]))

    def destroy_node(self) -> None:
        self.worker.stop()
        super().destroy_node()


def _header(node: Node) -> Any:
    from ..messages.convert import header_msg

    return header_msg("", node.get_clock().now().nanoseconds)


def main(args: list[str] | None = None) -> None:
    """``ros2 run embodied_ros embodied_perception``: init, spin, shut down cleanly on Ctrl-C."""
    rclpy.init(args=args)
    node = None
    try:
        node = EmbodiedPerceptionNode()
        executor = MultiThreadedExecutor(num_threads=2)
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except EmbodiedError as err:
        rclpy.logging.get_logger(NODE_NAME).fatal(str(err))
        raise SystemExit(2) from None
    finally:
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()


if __name__ == "__main__":
    main()

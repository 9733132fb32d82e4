"""The ``embodied_perception`` node: RGB-D + poses in; markers, objects, detections, occupancy, services out.

Thin by design: subscriptions pair colour and depth (inputs.py) into a core Frame and hand it to
the keyframe worker (keyframes.py), which runs the core's step (mapper.py's SceneMapper) and publishes
(scene_publisher.py); services answer from the memory's snapshot (services.py). The node is up,
answering services and loading a saved map, before its network is loaded: the model loads on a
thread and the node says "ready" when it can perceive; a model or camera that cannot be had ends
the node with one line (exit code 2).
"""

from __future__ import annotations

import threading
import time
import traceback
from collections import deque
from typing import Any

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.task import Future
from std_msgs.msg import String

from ..detections import FramePerception
from ..errors import EmbodiedError, FrameError
from ..frame import Frame
from ..grounding.engine import GrounderConfig
from ..mapper import SceneMapper
from ..memory.changes import ChangeConfig
from ..memory.config import MemoryConfig
from ..network.lifting import LiftingParams
from ..occupancy.config import OccupancyConfig
from . import services
from .change_publisher import ChangePublisher
from .config import GROUNDER_FROM_MEMORY, InputKind, NodeConfig
from .conversions import to_rclpy
from .diagnostics import RateMeter, diagnostic_status
from .input_checks import FaultLog, InputChecks
from .inputs import PAIRING_QUEUE, FrameAssembler, InputSubscriptions, PoseLookup, PoseNotYet, start_k4a
from .keyframes import KeyframeWorker
from .params import declare_config
from .scene_publisher import ScenePublisher
from .spin import run_node
from .view_publisher import ViewPublisher

NODE_NAME = "embodied_perception"
UNPAIRED_WARNING = 0.05  # warn when more than this fraction of colour/depth messages go unpaired
_MIN_FOR_WARNING = 20  # ... once at least this many arrived


def _vision_msgs_available() -> bool:
    try:
        import vision_msgs.msg  # noqa: F401
    except ImportError:
        return False
    return True


class EmbodiedPerceptionNode(Node):
    """The perception node.

    Args:
        perceptor: the network, or a callable that builds it (run on the loading thread); None builds
            it from the ``model`` parameters.
        node_kwargs: rclpy Node arguments (namespace, context, parameter_overrides).
    """

    def __init__(self, perceptor: Any = None, **node_kwargs: Any) -> None:
        super().__init__(NODE_NAME, **node_kwargs)
        self.config = config = declare_config(self, NodeConfig)
        memory_config = declare_config(self, MemoryConfig, "memory.")
        occupancy_config = declare_config(self, OccupancyConfig, "occupancy.")
        lifting = declare_config(self, LiftingParams, "lifting.")
        grounder = declare_config(self, GrounderConfig, "grounder.", skip=GROUNDER_FROM_MEMORY)
        changes = declare_config(self, ChangeConfig, "changes.")
        self.mapper = SceneMapper(config.pipeline(memory_config, occupancy_config, lifting, grounder, changes))
        self.grounder = services.shared_grounder(self.mapper.config.grounder)
        self.ready = threading.Event()  # the network is loaded
        self.failed: Future = Future()  # result: the one line that ends the node
        self.faults = FaultLog(self.get_logger())  # bad input and failed keyframes: said once, in /diagnostics
        self.checks = InputChecks(config.camera_info_topic, config.max_camera_speed)
        self._camera_problem = ""  # why the latest camera_info cannot be a camera's
        self.last_problem = ""
        self._unpaired_warned = 0
        detections = config.publish_detections and _vision_msgs_available()
        if config.publish_detections and not detections:
            self.get_logger().info("vision_msgs not installed: ~/detections (Detection3DArray) is off; "
                                   "~/objects carries the same objects")
        self.scene = ScenePublisher(self, QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE), detections)
        self.changes = ChangePublisher(self, QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE),
                                       changes.marker_window_s)
        self.pub_scene_graph = self.create_publisher(String, "~/scene_graph", 2)  # JSON, when subscribed
        self.view = ViewPublisher(self, config.view_frame, config.image_min_score)
        self._min_observations = memory_config.min_observations
        from diagnostic_msgs.msg import DiagnosticArray

        self.pub_diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.worker = KeyframeWorker(self._process, self.mapper.config.keyframes, on_error=self._keyframe_failed,
                                     fuse_depth=self.mapper.integrate_depth if config.fuse_skipped_depth else None,
                                     prepare=self.mapper.prepare)
        self.detections = None  # another detector's Detection2DArrays (detections_topic), paired with the frames
        if config.detections_topic:
            from .detections_input import DetectionsInput

            self.detections = DetectionsInput(self, config, self.worker.submit, self.worker.skip,
                                              MutuallyExclusiveCallbackGroup(), ahead=self.worker.ahead)
        self.poses = PoseLookup(self, config)
        self.assembler = FrameAssembler(config, self.poses)
        self.inputs = None
        if config.source == InputKind.TOPICS:
            self.inputs = InputSubscriptions(self, config, self._on_pair, self._on_camera_info,
                                             MutuallyExclusiveCallbackGroup())
        self._before_info: tuple[Any, Any] | None = None  # the newest pair that came before any camera_info
        self._awaiting_pose: deque[tuple[Frame, float]] = deque()  # (frame, deadline) waiting for its pose
        self._assembling = threading.Lock()  # frames are posed on input and pose callbacks alike
        self.poses.on_new_pose = self._retry_awaiting_pose
        services.register(self, MutuallyExclusiveCallbackGroup())  # never queued behind image callbacks
        self._rates = (RateMeter(), RateMeter())
        self.create_timer(config.diagnostics_period, self._tick)
        self.get_logger().info(f"services up; loading model {config.model} ...")
        if config.load_map_on_start:
            services.load_map(self, _NamedMap(""), _Answer())
        threading.Thread(target=self._load, args=(perceptor,), name="embodied-load", daemon=True).start()

    # ---- start -------------------------------------------------------------------------------

    def _load(self, perceptor: Any) -> None:
        """Build the network (and open the camera for source k4a), then say ready; one line when it cannot."""
        config = self.config
        try:
            if perceptor is None and config.detections_topic:  # lift the topic's detections: no network here
                from ..network.given_detections import GivenDetectionsPerceptor

                perceptor = GivenDetectionsPerceptor(self.mapper.config.lifting,
                                                     f"detections on {config.detections_topic}")
            elif perceptor is None:
                perceptor = self.mapper.config.build_perceptor()
            elif callable(perceptor) and not hasattr(perceptor, "perceive"):
                perceptor = perceptor()
            self.mapper.perceptor = perceptor
            if config.source == InputKind.K4A:
                start_k4a(self, config, self.poses, self.worker.submit, self._bad_input)
        except EmbodiedError as err:
            what = "camera" if self.mapper.perceptor is not None else f"model {config.model}"
            self.fail(f"cannot start: {what}: {err}")
            return
        except Exception as err:  # noqa: BLE001 - anything else that stops the model loading, in one line
            self.fail(f"cannot start: model {config.model}: {type(err).__name__}: {err}")
            return
        self.ready.set()
        inputs = (f"topics {config.color_topic} + {config.depth_topic} ({self.inputs.qos.reliability} QoS, "
                  f"{self.inputs.synchronizer})" if self.inputs else "pyk4a camera")
        self.get_logger().info(f"ready: {inputs}, poses from {self.poses.mode or 'TF'}, model {perceptor.name}, "
                               f"world frame {config.world_frame}")

    def fail(self, message: str) -> None:
        """End the node with one line (main() exits with code 2)."""
        self.get_logger().fatal(message)
        if not self.failed.done():
            self.failed.set_result(message)

    # ---- input -------------------------------------------------------------------------------

    def _on_camera_info(self, msg: Any) -> None:
        self._camera_problem, unusual = self.checks.camera_info(msg)  # its images are skipped while it lasts
        if unusual:
            self.get_logger().warning(unusual)
        if self._camera_problem:
            return
        self.assembler.on_camera_info(msg)
        if self._before_info is not None:  # the first images may overtake the first camera_info
            pair, self._before_info = self._before_info, None
            self._on_pair(*pair)

    def _on_pair(self, color: Any, depth: Any) -> None:
        # message_filters' TimeSynchronizer calls this holding its lock and does not release it when the call
        # raises: one exception would stop every later pair. So a pair that fails is a fault, told and counted.
        try:
            self._take_pair(color, depth)
        except Exception as err:  # noqa: BLE001 - see above
            self.get_logger().error(f"a colour/depth pair failed:\n{traceback.format_exc()}")
            self._bad_input(f"a colour/depth pair failed: {type(err).__name__}: {err}")

    def _take_pair(self, color: Any, depth: Any) -> None:
        if not self.ready.is_set():
            self._bad_input("the network is still loading")
            return
        if self._camera_problem:
            self._bad_input(self._camera_problem)
            return
        if not self.assembler.has_camera_info:  # wait for it with the newest pair; say so when one is dropped
            if self._before_info is not None:
                stamp = self._before_info[0].header.stamp
                self._bad_input(f"frame at stamp {stamp.sec * 10**9 + stamp.nanosec}: no camera_info received yet "
                                f"on {self.config.camera_info_topic}")
            self._before_info = (color, depth)
            return
        try:
            frame = self.assembler.frame(color, depth)
        except FrameError as err:
            self._bad_input(str(err))
            return
        old = self.checks.image_age(frame, self.get_clock().now().nanoseconds)
        if old:
            self._bad_input(old)
        self._pose_and_submit(frame, time.monotonic() + self.config.pose_wait)

    def _pose_and_submit(self, frame: Frame, deadline: float) -> None:
        """Pose the frame and submit it; a frame whose pose has not come yet waits (bounded) for it."""
        with self._assembling:
            try:
                frame = self.assembler.posed(frame)
                self.checks.pose_jump(frame)
            except PoseNotYet as err:
                if time.monotonic() < deadline and len(self._awaiting_pose) < PAIRING_QUEUE:
                    self._awaiting_pose.append((frame, deadline))
                else:
                    self._bad_input(str(err))
                return
            except FrameError as err:
                self._bad_input(str(err))
                return
        (self.detections.add_frame if self.detections is not None else self.worker.submit)(frame)

    def _retry_awaiting_pose(self) -> None:
        """A pose came (or time passed): pose the frames waiting for one, oldest first."""
        with self._assembling:
            waiting, self._awaiting_pose = list(self._awaiting_pose), deque()
        for frame, deadline in waiting:
            self._pose_and_submit(frame, deadline)

    def _bad_input(self, message: str) -> None:
        self.last_problem = message
        self.faults.report(message)

    @property
    def problems(self) -> dict[str, int]:
        """Bad input and failed keyframes since start: {kind of problem: count} (diagnostics, tests)."""
        return self.faults.counts()

    # ---- keyframe worker thread --------------------------------------------------------------

    def _process(self, frame: Frame) -> dict[str, float]:
        """Network + memory, publish the objects, then fuse occupancy and publish the cloud (objects first)."""
        world, stamp = self.config.world_frame, frame.stamp_ns
        publish = 0.0

        def publish_objects(perception: FramePerception) -> None:
            nonlocal publish
            start = time.perf_counter()
            if self.context.ok():
                shown = self.mapper.published_scene()
                self.scene.publish_objects([*shown.objects, *shown.movers], shown.voxels, world, stamp, shown.structure)
                self.view.publish(frame, perception, shown.objects, shown.voxels, world)
                if self.pub_scene_graph.get_subscription_count() > 0:
                    self.pub_scene_graph.publish(String(data=services.scene_graph_json(self.mapper,
                                                                                       self._min_observations)))
            publish = time.perf_counter() - start

        step = self.mapper.step(frame, before_occupancy=publish_objects)
        stages = step.stages_s
        start = time.perf_counter()
        if self.context.ok():
            self.changes.publish(step.update.changes, self.mapper.memory.changes.log.current(), world, stamp)
            self.scene.publish_cloud(self.mapper.occupancy.occupied_voxels(), world, stamp)
        stages["publish"] = publish + time.perf_counter() - start
        return stages

    def _keyframe_failed(self, message: str) -> None:
        if self.context.ok():  # at shutdown a publish may fail: nothing to say then
            self.faults.report(message)

    # ---- diagnostics -------------------------------------------------------------------------

    def _tick(self) -> None:
        for what, subscriber in (("camera topics", self.inputs), ("pose topic", self.poses)):
            if subscriber is not None and subscriber.qos is not None and subscriber.qos.best_effort_found():
                self.get_logger().warning(f"a publisher of the {what} offers best-effort QoS only: subscribing best "
                                          "effort (messages may be lost under load)")
                subscriber.qos.fall_back()
                subscriber.subscribe()
        if self.inputs is not None:
            self._warn_unpaired()
        self._retry_awaiting_pose()  # says so for pairs whose pose never came
        self._publish_diagnostics()

    def _warn_unpaired(self) -> None:
        received, unpaired = sum(self.inputs.received), self.inputs.unpaired
        if received < _MIN_FOR_WARNING or unpaired <= UNPAIRED_WARNING * received:
            return
        if unpaired < 2 * self._unpaired_warned:  # said already; again when it doubles
            return
        self._unpaired_warned = unpaired
        self.get_logger().warning(
            f"{unpaired} of {received} colour/depth messages went unpaired (no partner with the same stamp): "
            f"{self.inputs.qos.reliability} QoS; check that both topics come from one driver at the same rate"
            + (", or set input_qos to reliable" if self.inputs.qos.reliability != "reliable" else ""))

    def _publish_diagnostics(self) -> None:
        from diagnostic_msgs.msg import DiagnosticArray

        from ..messages.convert import header_msg

        stats = self.worker.stats
        problems = self.faults.active()
        problems += self.detections.problems() if self.detections is not None else []
        if stats.dropped:
            problems.append(f"{stats.dropped} keyframes skipped ({stats.stale} stale): the network is slower than "
                            "the keyframe rate")
        state = "failed" if self.failed.done() else "ready" if self.ready.is_set() else "loading"
        extra: dict[str, Any] = {"state": state, "objects": len(self.mapper.memory),
                                 "grounding": self.grounder.error or "ready", "bad_input": sum(self.problems.values())}
        if self.inputs is not None:
            extra.update(input_qos=self.inputs.qos.reliability, images_received=self.inputs.received[0],
                         pairs=self.inputs.paired, unpaired_messages=self.inputs.unpaired)
        if self.detections is not None:
            extra.update(self.detections.diagnostics())
        status = diagnostic_status(f"{self.get_fully_qualified_name()}: perception", stats,
                                   self._rates[0].rate(stats.received), self._rates[1].rate(stats.keyframes), extra,
                                   problems[:5])
        header = to_rclpy(header_msg("", self.get_clock().now().nanoseconds))
        self.pub_diagnostics.publish(DiagnosticArray(header=header, status=[status]))

    def destroy_node(self) -> None:
        self.worker.stop()
        super().destroy_node()


class _NamedMap:
    """A LoadMap request without the generated type (load_map_on_start)."""

    def __init__(self, name: str) -> None:
        self.name = name


class _Answer:
    success = False
    message = ""


def main(args: list[str] | None = None) -> None:
    """``ros2 run embodied_ros embodied_perception``: spin; quiet on Ctrl-C; exit code 2 after a fatal line."""
    # inputs (may wait for TF), TF, services, timers
    run_node(NODE_NAME, EmbodiedPerceptionNode, lambda: MultiThreadedExecutor(num_threads=4), args)


if __name__ == "__main__":
    main()

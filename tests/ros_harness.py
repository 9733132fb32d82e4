"""Running the node in-process against real rclpy (tests and benchmarks): environment, interfaces, a frame publisher.

:func:`prepare` isolates the process's ROS graph (a domain id of its own, localhost only), builds
this package's interfaces against the ROS 2 wheels (cached in ``build/ros_interfaces``) and makes
them importable; it returns why not when ROS 2 or the build is unavailable, so callers can skip.
:class:`FramePublisher` publishes core Frames as a driver would: colour Image, registered depth
Image and CameraInfo with one stamp, and the camera pose as PoseStamped. :class:`InProcessRos` holds
one rclpy context with an executor spinning on a thread, creates nodes and calls services.
"""

from __future__ import annotations

import array
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from ros_interfaces import REPO, build_interfaces, flavour, use_interfaces

from embodied_ros.frame import Frame
from embodied_ros.messages.convert import camera_info_msg, header_msg, pose_msg
from embodied_ros.messages.types import msg_class
from embodied_ros.outputs.image_encoding import depth_to_ros, rgb_to_compressed, rgb_to_ros
from embodied_ros.ros.conversions import to_rclpy

BUILD_DIR = REPO / "build" / "ros_interfaces"  # + "/wheels" or "/sourced": the ROS 2 they were built against


def isolate_graph() -> int:
    """Give this process a ROS domain of its own (from its pid) on localhost only; returns the domain id."""
    domain = 1 + os.getpid() % 100  # 1..100: valid on Linux for every RMW
    os.environ["ROS_DOMAIN_ID"] = str(domain)
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"  # Jazzy's form of ROS_LOCALHOST_ONLY
    os.environ.pop("ROS_LOCALHOST_ONLY", None)
    return domain


def prepare(build_dir: Path | None = None) -> str:
    """Isolate the graph, build and load the interfaces. Returns "" when ready, else the reason they are not.

    Works with the venv's ROS 2 wheels (Fast DDS) and with a sourced ROS 2 (e.g. ../shared/ros2, Cyclone DDS).
    """
    try:
        import rclpy  # noqa: F401
        from sensor_msgs.msg import Image  # noqa: F401
    except ImportError as err:
        return f"ROS 2 (rclpy) is not importable: {err} (scripts/bootstrap.sh installs the ros-jazzy-* wheels)"
    isolate_graph()
    try:
        use_interfaces(build_interfaces(build_dir or BUILD_DIR / flavour()))
        from embodied_ros.msg import SceneObjectArray  # noqa: F401
    except Exception as err:  # noqa: BLE001 - any failure means "cannot test with ROS here", said once
        return f"cannot build this package's interfaces against {flavour()} ROS 2: {type(err).__name__}: {err}"
    return ""


class FramePublisher:
    """Publishes core Frames on the driver topics (relative names, so a node namespace applies).

    Args:
        node: the rclpy node to publish from.
        prefix: topic prefix, e.g. "/cam/" ("" = the node's namespace).
        color_encoding: encoding of the colour Image.
        depth_encoding: "16UC1" or "32FC1".
        compressed: publish colour as a JPEG sensor_msgs/CompressedImage instead.
    """

    def __init__(self, node: Any, prefix: str = "", color_encoding: str = "bgra8",
                 depth_encoding: str = "16UC1", compressed: bool = False, qos: Any = None) -> None:
        from geometry_msgs.msg import PoseStamped
        from rclpy.qos import QoSProfile
        from sensor_msgs.msg import CameraInfo, CompressedImage, Image

        qos = qos or QoSProfile(depth=10)
        self.node = node
        self.compressed = compressed
        self.color = node.create_publisher(CompressedImage if compressed else Image, prefix + "rgb/image_raw", qos)
        self.depth = node.create_publisher(Image, prefix + "depth_to_rgb/image_raw", qos)
        self.info = node.create_publisher(CameraInfo, prefix + "rgb/camera_info", qos)
        self.pose = node.create_publisher(PoseStamped, prefix + "camera_pose", qos)
        self.color_encoding, self.depth_encoding = color_encoding, depth_encoding

    def wait_for_subscribers(self, timeout: float = 10.0) -> bool:
        """Wait until the image and camera_info topics have a subscriber (the pose topic is optional)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if min(p.get_subscription_count() for p in (self.color, self.depth, self.info)) > 0:
                return True
            time.sleep(0.05)
        return False

    def messages(self, frame: Frame, stamp_ns: int, camera_frame: str = "rgb_camera_link") -> dict[str, Any]:
        """The rclpy messages of one frame: {"info", "pose", "depth", "color"}."""
        info = to_rclpy(camera_info_msg(frame.K, frame.width, frame.height, camera_frame, stamp_ns))
        pose = to_rclpy(_pose_stamped(frame, stamp_ns))
        depth = self._image(depth_to_ros(frame.depth, self.depth_encoding), stamp_ns, camera_frame)
        if self.compressed:
            fmt, data = rgb_to_compressed(frame.color, "jpeg")
            color = to_rclpy(msg_class("sensor_msgs/msg/CompressedImage")(
                header=header_msg(camera_frame, stamp_ns), format=fmt, data=data))
        else:
            color = self._image(rgb_to_ros(frame.color, self.color_encoding), stamp_ns, camera_frame)
        return {"info": info, "pose": pose, "depth": depth, "color": color}

    def publish(self, frame: Frame, stamp_ns: int | None = None, settle: float = 0.0, with_info: bool = True,
                with_pose: bool = True, depth: np.ndarray | None = None, with_depth: bool = True,
                **changes: Any) -> int:
        """Publish one frame: pose and camera_info, then (after ``settle`` seconds) depth and colour.

        Args:
            frame: the frame to publish.
            stamp_ns: the stamp of every message (default: now).
            settle: pause after pose/camera_info, so they arrive before the images on a fresh subscription.
            with_info: publish camera_info too.
            with_pose: publish the pose too.
            with_depth: publish the depth image too (False: an unpaired colour image).
            depth: (H, W) metres to publish instead of the frame's depth (size-mismatch tests).
            changes: fields of the colour Image to override, e.g. encoding="yuv422".

        Returns:
            the stamp used.
        """
        stamp_ns = self.node.get_clock().now().nanoseconds if stamp_ns is None else stamp_ns
        msgs = self.messages(frame, stamp_ns)
        if depth is not None:
            camera = msgs["color"].header.frame_id
            msgs["depth"] = self._image(depth_to_ros(depth, self.depth_encoding), stamp_ns, camera)
        for name, value in changes.items():
            setattr(msgs["color"], name, value)
        if with_pose:
            self.pose.publish(msgs["pose"])
        if with_info:
            self.info.publish(msgs["info"])
        if settle:
            time.sleep(settle)
        if with_depth:
            self.depth.publish(msgs["depth"])
        self.color.publish(msgs["color"])
        return stamp_ns

    def _image(self, fields: Any, stamp_ns: int, frame_id: str) -> Any:
        from sensor_msgs.msg import Image

        return Image(header=to_rclpy(header_msg(frame_id, stamp_ns)), height=fields.height, width=fields.width,
                     encoding=fields.encoding, is_bigendian=fields.is_bigendian, step=fields.step,
                     data=array.array("B", fields.data.tobytes()))


def _pose_stamped(frame: Frame, stamp_ns: int) -> Any:
    return msg_class("geometry_msgs/msg/PoseStamped")(
        header=header_msg(frame.world_frame, stamp_ns),
        pose=pose_msg(frame.T_world_camera[:3, :3], frame.T_world_camera[:3, 3]))


def wait_until(predicate: Any, timeout: float = 60.0) -> bool:
    """Poll ``predicate`` until it is true (True) or ``timeout`` seconds passed (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


class InProcessRos:
    """One rclpy context, an executor spinning on a thread, and helpers to add nodes and call services."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.executors import MultiThreadedExecutor

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.executor = MultiThreadedExecutor(num_threads=4, context=self.context)
        self.client = rclpy.create_node("test_client", context=self.context)
        self.executor.add_node(self.client)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def node(self, perceptor: Any, namespace: str = "", wait_ready: bool = True, **params: Any) -> Any:
        """A node spun by the executor; parameters as keywords, "__" for ".": memory__min_observations=1.

        ``perceptor`` may be a callable that builds it (the node loads it on a thread); ``wait_ready``
        waits until the node says ready (or failed).
        """
        from rclpy.parameter import Parameter

        from embodied_ros.ros.node import EmbodiedPerceptionNode

        overrides = [Parameter(k.replace("__", "."), value=v) for k, v in params.items()]
        node = EmbodiedPerceptionNode(perceptor, namespace=namespace, context=self.context,
                                      parameter_overrides=overrides)
        self.executor.add_node(node)
        if wait_ready:
            assert wait_until(lambda: node.ready.is_set() or node.failed.done(), 300), "node never became ready"
        return node

    def call(self, srv_type: Any, name: str, request: Any, timeout: float = 120.0) -> Any:
        client = self.client.create_client(srv_type, name)
        assert client.wait_for_service(timeout_sec=10.0), f"service {name} did not appear"
        future = client.call_async(request)
        assert wait_until(future.done, timeout), f"{name} did not answer in {timeout} s"
        self.client.destroy_client(client)
        return future.result()

    def close(self, nodes: list[Any]) -> None:
        import rclpy

        from embodied_ros.ros.spin import stop_executor

        stop_executor(self.executor, self._thread)
        for node in nodes:
            node.destroy_node()
        self.client.destroy_node()
        rclpy.shutdown(context=self.context)

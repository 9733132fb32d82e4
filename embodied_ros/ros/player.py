"""``embodied-ros play SOURCE`` / ``ros2 run embodied_ros play SOURCE``: any recording as a live Azure Kinect.

Publishes every frame of a recording the package reads (posed RGB-D folder, .mkv, rosbag2,
``synthetic:``) as the Azure Kinect ROS driver's topics (outputs/driver_topics.py), stamped with the
player's clock at ``--rate`` Hz, plus the camera pose as TF (``world_frame -> rgb_camera_link``
from a tf2_ros TransformBroadcaster; /tf directly without tf2_ros) and/or a PoseStamped topic. So
anyone can try the node without a camera:

    embodied-ros play ../shared/data/redkitchen --rate 5 --world-frame map
    ros2 launch embodied_ros perception.launch.py world_frame:=map
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import EmbodiedError, FrameError, InputError
from ..frame_detections import given_detections
from ..outputs.driver_topics import DriverTopics, Pacer, driver_fields


def add_play_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", help="posed RGB-D folder, Azure Kinect .mkv, rosbag2 folder/file, or synthetic:SEED")
    p.add_argument("--rate", type=float, default=5.0, help="frames per second published (default: %(default)s)")
    p.add_argument("--loop", action="store_true", help="start again at the end (until Ctrl-C)")
    p.add_argument("--stride", type=int, default=1, help="publish every K-th frame (default: 1)")
    p.add_argument("--max-frames", type=int, default=None, help="stop after N frames (per pass)")
    p.add_argument("--namespace", default="", help="topic namespace, e.g. /k4a (default: none)")
    p.add_argument("--world-frame", default="map",
                   help="parent frame of the camera pose in TF; also the world frame read from a bag's /tf "
                        "(default: %(default)s)")
    p.add_argument("--camera-frame", default=DriverTopics.camera_frame, help="(default: %(default)s)")
    p.add_argument("--pose-topic", default="", help="also publish the pose as PoseStamped on this topic")
    p.add_argument("--no-tf", action="store_true", help="do not publish TF (use with --pose-topic)")
    p.add_argument("--wait-subscribers", type=float, default=10.0, metavar="SECONDS",
                   help="wait up to this long for a node to subscribe before the first frame (default: %(default)s)")
    p.add_argument("--poses", type=Path, default=None, help="poses file for a .mkv recording")
    p.add_argument("--detections-topic", default=None,
                   help="a rosbag2's vision_msgs/Detection2DArray topic: publish each frame's detections on it too, "
                        "stamped like its images (for a map node with detections_topic set)")


class Player:
    """The publishers of one replay (a plain rclpy node; TF through tf2_ros where installed)."""

    def __init__(self, node: Any, args: argparse.Namespace, topics: DriverTopics | None = None) -> None:
        from rclpy.qos import QoSProfile
        from sensor_msgs.msg import CameraInfo, Image

        topics = topics or DriverTopics()
        ns = args.namespace.rstrip("/")
        name = (lambda t: f"{ns}/{t}") if ns else (lambda t: t)
        qos = QoSProfile(depth=10)  # reliable, keep last 10: the driver's image_transport default
        self.node, self.args = node, args
        self.color = node.create_publisher(Image, name(topics.color), qos)
        self.depth = node.create_publisher(Image, name(topics.depth), qos)
        self.info = node.create_publisher(CameraInfo, name(topics.camera_info), qos)
        self.pose = self.tf = self.tf_raw = self.detections = None
        if getattr(args, "detections_topic", None):
            from vision_msgs.msg import Detection2DArray  # ImportError: the caller says what to install

            self.detections = node.create_publisher(Detection2DArray, args.detections_topic, qos)
        if args.pose_topic:
            from geometry_msgs.msg import PoseStamped

            self.pose = node.create_publisher(PoseStamped, args.pose_topic, qos)
        if not args.no_tf:
            try:
                import tf2_ros
            except ImportError:
                from tf2_msgs.msg import TFMessage  # ImportError: neither -> the caller says what to do

                self.tf_raw = node.create_publisher(TFMessage, "/tf", 100)
            else:
                self.tf = tf2_ros.TransformBroadcaster(node)

    def wait_for_subscribers(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            wanted = [self.color, self.depth, self.info] + ([self.pose] if self.pose is not None else [])
            if all(p.get_subscription_count() for p in wanted):
                return True
            time.sleep(0.05)
        return False

    def publish(self, frame: Any, stamp: int | None = None) -> int:
        """Publish one frame (pose first, so a node's lookup at the image stamp finds it) stamped ``stamp`` (ns; None:
        now); returns the stamp."""
        from geometry_msgs.msg import TransformStamped
        from sensor_msgs.msg import CameraInfo, Image

        from .cdr import serialize

        stamp = self.node.get_clock().now().nanoseconds if stamp is None else stamp
        fields = driver_fields(frame, stamp, self.args.camera_frame, self.args.world_frame)
        if self.tf is not None:
            from rclpy.serialization import deserialize_message

            self.tf.sendTransform(deserialize_message(serialize(TransformStamped, fields["transform"]),
                                                      TransformStamped))
        if self.tf_raw is not None:
            from tf2_msgs.msg import TFMessage

            self.tf_raw.publish(serialize(TFMessage, {"transforms": [fields["transform"]]}))
        if self.pose is not None:
            from geometry_msgs.msg import PoseStamped

            self.pose.publish(serialize(PoseStamped, fields["pose"]))
        self.info.publish(serialize(CameraInfo, fields["camera_info"]))
        self.depth.publish(serialize(Image, fields["depth"]))
        self.color.publish(serialize(Image, fields["color"]))
        found = given_detections(frame)
        if self.detections is not None and found is not None:  # as a detector would: after the image, its stamp
            from ..messages.detections2d import detection2d_array_cdr

            names = [found.class_names[k] for k in found.labels]
            self.detections.publish(detection2d_array_cdr(names, found.scores, found.boxes_xyxy,
                                                          self.args.camera_frame, stamp))
        return stamp


def _frames(args: argparse.Namespace) -> Any:
    from ..recordings import open_source

    bag = {"detections_topic": args.detections_topic} if getattr(args, "detections_topic", None) else {}
    source = open_source(args.source, poses=args.poses, world_frame=args.world_frame, **bag)
    if bag and not getattr(source, "detections_topic", None):
        source.close()
        raise InputError(f"--detections-topic reads a rosbag2's Detection2DArray topic; {args.source} is not a rosbag2")
    with source:
        yield from source.frames(stride=args.stride, max_frames=args.max_frames)


def play(args: argparse.Namespace) -> int:
    """Publish the recording; returns the number of frames published. Raises InputError with one line."""
    try:
        import rclpy
    except ImportError as err:
        raise InputError(f"playing needs ROS 2 (rclpy): {err}; source your ROS 2 setup.bash") from None
    rclpy.init()
    node = rclpy.create_node("embodied_player")
    published = skipped = 0
    try:
        try:
            player = Player(node, args)
        except ImportError as err:
            if "vision_msgs" in str(err):
                raise InputError("--detections-topic needs vision_msgs (apt install ros-$ROS_DISTRO-vision-msgs)"
                                 ) from None
            raise InputError("no TF publisher here (neither tf2_ros nor tf2_msgs is installed): pass --no-tf "
                             "--pose-topic TOPIC and set the node's pose_topic") from None
        if args.wait_subscribers and not player.wait_for_subscribers(args.wait_subscribers):
            node.get_logger().warning(f"no subscriber after {args.wait_subscribers:g} s: publishing anyway")
        pacer = Pacer(args.rate)
        while True:
            begun = None  # the clock when the pass began: a frame on schedule is stamped with its time on it, as a
            # camera's capture clock ticks evenly (runs of one recording see the same gaps); a late one, now
            for item in pacer(_frames(args)):
                now = node.get_clock().now().nanoseconds
                begun = now if begun is None else begun
                if isinstance(item, FrameError):
                    skipped += 1
                    node.get_logger().warning(f"frame skipped: {item}")
                    continue
                due = pacer.on_schedule_s
                player.publish(item, now if due is None else begun + round(due * 1e9))
                published += 1
            if not args.loop or published == 0:
                break
        late = f"; {pacer.late} frames late (reading is slower than --rate)" if pacer.late else ""
        print(f"published {published} frames at {args.rate:g} Hz ({skipped} skipped){late}", file=sys.stderr)
    finally:
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return published


def main(argv: list[str] | None = None) -> int:
    """``ros2 run embodied_ros play SOURCE ...``: the same as ``embodied-ros play``."""
    parser = argparse.ArgumentParser(prog="play", description=__doc__.splitlines()[0])
    add_play_arguments(parser)
    if argv is None:
        from rclpy.utilities import remove_ros_args

        argv = remove_ros_args(sys.argv)[1:]
    args = parser.parse_args(argv)
    try:
        play(args)
    except EmbodiedError as err:
        print(f"play: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0

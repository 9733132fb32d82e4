"""Start the embodied_perception node (and optionally RViz with the shipped view).

    ros2 launch embodied_ros perception.launch.py world_frame:=map rviz:=true
    ros2 launch embodied_ros perception.launch.py source:=k4a
    ros2 launch embodied_ros perception.launch.py camera_namespace:=/k4a load_map_on_start:=true
    ros2 launch embodied_ros perception.launch.py detector:=node        # the detector as a node of its own
    ros2 launch embodied_ros perception.launch.py detector:=external detections_topic:=/yolo/detections

Every node parameter (config/params.yaml; params_file:=... for your own copy) can also be given
on the launch line as ``name:=value`` (``memory.iou_threshold:=0.2`` or ``memory_iou_threshold:=0.2``);
only the ones given override the params file. An argument that names no parameter is reported, not
silently dropped. ``rviz:=true`` opens config/embodied.rviz with the node's ``world_frame`` as RViz's fixed
frame (``rviz2 -f``); without rviz2 installed it starts the node alone, with a warning. When
the node ends with an error (a missing model, camera or Python module: its last line says which),
the launch ends too, with a non-zero exit code.

``detector``: ``internal`` (default) runs the model inside embodied_perception; ``node`` starts the
``embodied_detector`` node beside it (its Detection2DArray on /embodied_detector/detections is the map
node's ``detections_topic``); ``external`` starts the map node alone, listening to your detector's
``detections_topic``. The two nodes are two processes: launch_ros composes C++ components only
(rclcpp_components), not Python nodes; on one machine they talk over the middleware's loopback, as
they would across a robot's network (docs/ros.md has the two-machine set-up).
"""

import typing
from pathlib import Path

import yaml
from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
from launch.actions import DeclareLaunchArgument, OpaqueFunction, Shutdown
from launch.logging import get_logger
from launch_ros.actions import Node

from launch import LaunchDescription

SHARE = Path(get_package_share_directory("embodied_ros"))
# the parameters people change most: declared, so `ros2 launch ... --show-args` lists them
DECLARED = {
    "source": "topics (a driver's topics) or k4a (an Azure Kinect through pyk4a)",
    "model": "perceptor name",
    "weights": "folder with the model files ('' = the package's models/ and $EMBODIED_ROS_MODELS)",
    "world_frame": "fixed z-up frame; poses looked up in TF from it at each image stamp",
    "pose_topic": "PoseStamped/Odometry camera pose topic instead of TF",
    "input_qos": "auto (match the camera), reliable or best_effort",
    "map_dir": "folder of the saved maps ('' = ~/.embodied_ros/map)",
    "load_map_on_start": "true: continue the map saved as start_map",
    "start_map": "map loaded at start and used when a service call names none",
    "detections_topic": "another detector's vision_msgs/Detection2DArray (detector:=external)",
}
LAUNCH_ONLY = {
    "params_file": (str(SHARE / "config" / "params.yaml"), "node parameters (YAML)"),
    "camera_namespace": ("", "namespace of the camera topics, e.g. /k4a"),
    "rviz": ("false", "also start RViz with config/embodied.rviz (skipped with a warning without rviz2)"),
    "detector": ("internal", "internal (the model runs in the map node), node (the embodied_detector node beside "
                             "it) or external (your detector's detections_topic)"),
}
DETECTOR_TOPIC = "/embodied_detector/detections"
# parameters the embodied_detector node shares with the map node (embodied_ros/ros/detector_node.py)
DETECTOR_PARAMETERS = ("color_topic", "color_compressed", "input_qos", "model", "weights", "download_weights",
                       "backend", "allow_fallback", "fp16", "use_sim_time")
CAMERA_TOPICS = ("rgb/image_raw", "rgb/image_raw/compressed", "depth_to_rgb/image_raw",
                 "depth_to_rgb/image_raw/compressedDepth", "rgb/camera_info")  # moved under camera_namespace


def parameter_types() -> dict[str, type]:
    """Every node parameter -> its Python type, from the shipped params.yaml (which lists them all).

    Read from the YAML, not from the config dataclasses: ros2 launch runs on the system Python,
    which need not see the core's dependencies (the node says so itself when it starts).
    """
    params = yaml.safe_load((SHARE / "config" / "params.yaml").read_text())["/**"]["ros__parameters"]
    return {"use_sim_time": bool, "occupancy.bounds": list, **{name: type(value) for name, value in params.items()}}


def _value(text: str, kind: type) -> typing.Any:
    if kind is bool:
        if text.lower() not in ("true", "false"):
            raise ValueError(f"expected true or false, got {text!r}")
        return text.lower() == "true"
    if kind is list:
        return [float(v) for v in text.strip("[]").split(",") if v.strip()]
    return kind(text)


def _world_frame(params_file: str, overrides: dict[str, typing.Any]) -> str:
    """The node's world_frame: the launch line's, else the params file's, else the node's default."""
    if overrides.get("world_frame"):
        return str(overrides["world_frame"])
    try:
        params = yaml.safe_load(Path(params_file).read_text()) or {}
    except (OSError, yaml.YAMLError):
        params = {}
    for section in params.values():  # "/**", "embodied_perception", ...
        if isinstance(section, dict) and (frame := (section.get("ros__parameters") or {}).get("world_frame")):
            return str(frame)
    return "map"


def _node_ended(context: typing.Any, name: str = "embodied_perception") -> list:
    code = context.locals.event.returncode
    if code > 0:  # its own last line says why (missing model, camera, module, bad parameter)
        raise RuntimeError(f"{name} exited with code {code}")
    return [Shutdown(reason=f"{name} ended")]


def _launch(context: typing.Any) -> list:
    log = get_logger("perception.launch.py")
    types = parameter_types()
    overrides, unknown = {}, []
    for name, text in context.launch_configurations.items():
        if name in LAUNCH_ONLY:
            continue
        key = name if name in types else name.replace("_", ".", 1)  # memory_iou_threshold -> memory.iou_threshold
        if key not in types:
            unknown.append(name)
        elif text != "" or name not in DECLARED:  # a declared argument left '' keeps the params file's value
            try:
                overrides[key] = _value(text, types[key])
            except ValueError as err:
                raise RuntimeError(f"launch argument {name}:={text}: {err}") from None
    if unknown:
        log.warning(f"ignored launch argument(s) {', '.join(sorted(unknown))}: not a parameter of embodied_perception "
                    "(see config/params.yaml)")
    namespace = context.launch_configurations.get("camera_namespace", "").rstrip("/")
    remappings = [(t, f"{namespace}/{t}") for t in CAMERA_TOPICS] if namespace else []
    detector = context.launch_configurations.get("detector", "internal")
    actions = []
    if detector == "node":
        overrides["detections_topic"] = DETECTOR_TOPIC
        actions.append(Node(
            package="embodied_ros", executable="embodied_detector", name="embodied_detector", output="screen",
            parameters=[context.launch_configurations["params_file"],
                        {k: v for k, v in overrides.items() if k in DETECTOR_PARAMETERS}],
            remappings=remappings,
            on_exit=[OpaqueFunction(function=lambda c: _node_ended(c, "embodied_detector"))]))
    elif detector == "external":
        if not overrides.get("detections_topic"):
            raise RuntimeError("detector:=external needs detections_topic:=TOPIC (your detector's "
                               "vision_msgs/Detection2DArray)")
    elif detector != "internal":
        raise RuntimeError(f"detector:={detector}: expected internal, node or external")
    actions.append(Node(
        package="embodied_ros", executable="embodied_perception", name="embodied_perception", output="screen",
        parameters=[context.launch_configurations["params_file"], overrides],
        remappings=remappings,
        on_exit=[OpaqueFunction(function=_node_ended)],
    ))
    if context.launch_configurations.get("rviz", "false").lower() == "true":
        try:
            get_package_share_directory("rviz2")
        except PackageNotFoundError:
            log.warning("rviz:=true but rviz2 is not installed (apt install ros-$ROS_DISTRO-rviz2): "
                        "starting without RViz")
        else:
            world = _world_frame(context.launch_configurations["params_file"], overrides)
            actions.append(Node(package="rviz2", executable="rviz2", name="rviz2", output="screen",
                                arguments=["-d", str(SHARE / "config" / "embodied.rviz"), "-f", world]))
    return actions


def generate_launch_description() -> LaunchDescription:
    defaults = yaml.safe_load((SHARE / "config" / "params.yaml").read_text())["/**"]["ros__parameters"]
    args = [DeclareLaunchArgument(name, default_value="",
                                  description=f"{text} ('' = the params file's value; default {defaults[name]!r})")
            for name, text in DECLARED.items()]
    args += [DeclareLaunchArgument(name, default_value=default, description=text)
             for name, (default, text) in LAUNCH_ONLY.items()]
    return LaunchDescription([*args, OpaqueFunction(function=_launch)])

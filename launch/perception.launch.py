"""Start the embodied_perception node (and optionally RViz with the shipped view).

    ros2 launch embodied_ros perception.launch.py world_frame:=map rviz:=true
    ros2 launch embodied_ros perception.launch.py source:=k4a
    ros2 launch embodied_ros perception.launch.py camera_namespace:=/k4a pose_topic:=/slam/camera_pose

Every node parameter is in config/params.yaml (params_file:=... for your own copy); the arguments
below override the ones people change most.
"""

from pathlib import Path

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from launch import LaunchDescription

SHARE = Path(get_package_share_directory("embodied_ros"))

# name -> (default, description); each becomes a node parameter of the same name (dots included)
OVERRIDES = {
    "source": ("topics", "topics (Azure Kinect ROS driver) or k4a (pyk4a)"),
    "model": ("yolox-nano", "perceptor name"),
    "weights": ("", "folder with the model files ('' = the package's models/ and $EMBODIED_ROS_MODELS)"),
    "backend": ("auto", "auto (TensorRT if usable, else ONNX Runtime), tensorrt, onnxruntime or torch"),
    "world_frame": ("map", "fixed z-up frame; poses looked up in TF from it at each image stamp"),
    "pose_topic": ("", "PoseStamped/Odometry camera pose topic instead of TF ('' = TF)"),
    "color_topic": ("rgb/image_raw", "colour image topic"),
    "depth_topic": ("depth_to_rgb/image_raw", "depth registered to colour"),
    "camera_info_topic": ("rgb/camera_info", "colour camera info"),
    "memory.score_threshold": ("0.075", "detections below this score are dropped"),
    "memory.iou_threshold": ("0.15", "9-DoF IoU above which a detection is the same object"),
    "memory.max_per_class": ("10", "objects shown per class"),
}
NUMBERS = {"memory.score_threshold": float, "memory.iou_threshold": float, "memory.max_per_class": int}


def generate_launch_description() -> LaunchDescription:
    args = [DeclareLaunchArgument(name.replace(".", "_"), default_value=default, description=text)
            for name, (default, text) in OVERRIDES.items()]
    args += [
        DeclareLaunchArgument("params_file", default_value=str(SHARE / "config" / "params.yaml")),
        DeclareLaunchArgument("camera_namespace", default_value="",
                              description="namespace of the camera topics, e.g. /k4a"),
        DeclareLaunchArgument("rviz", default_value="false", description="also start RViz with config/embodied.rviz"),
    ]
    overrides = {
        name: ParameterValue(LaunchConfiguration(name.replace(".", "_")), value_type=NUMBERS.get(name, str))
        for name in OVERRIDES
    }
    node = Node(
        package="embodied_ros", executable="embodied_perception", name="embodied_perception", output="screen",
        parameters=[LaunchConfiguration("params_file"), overrides],
        remappings=[(topic, PathJoinSubstitution([LaunchConfiguration("camera_namespace"), topic]))
                    for topic in ("rgb/image_raw", "depth_to_rgb/image_raw", "rgb/camera_info")],
    )
    rviz = Node(package="rviz2", executable="rviz2", name="rviz2", output="screen",
                arguments=["-d", str(SHARE / "config" / "embodied.rviz")],
                condition=IfCondition(LaunchConfiguration("rviz")))
    return LaunchDescription([*args, node, rviz])

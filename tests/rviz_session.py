"""RViz 2 as users see it, headless: the overlay of ../shared/ros2 on the ROS 2 tree, Xvfb, a screenshot.

:func:`capture` runs the README's launch line (``rviz:=true``) in the environment that tests/ros2_tree.py
prepares plus the RViz overlay (unpacked into ``build/ros2_tree/rviz``), on an X screen of its own (Xvfb,
Mesa's software OpenGL), plays the redkitchen frames with the README's player line, waits until the
node's markers stop changing, and takes one screenshot of the screen, together with what
tests/rviz_probe.py saw the node send RViz at that moment. tests/test_rviz.py checks the picture;
scripts/render_rviz_kitchen.py keeps it for the docs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import ros2_tree
import yaml
from ros2_tree import BUILD, REPO, SHARED, Tree

OVERLAY = SHARED / "ros2" / "rviz2-jazzy-debian12-overlay.tar.zst"
SCREEN = (1280, 800)  # the Xvfb screen; config/embodied.rviz's window fills it
# the overlay's README: runtime libraries, then what headless rendering and screenshots need
DEBIAN = ("libogre1.12.10", "libqt5core5a", "libqt5gui5", "libqt5widgets5", "libqt5svg5", "libassimp5",
          "liburdfdom-model3.0", "liborocos-kdl1.5", "libcurl4", "libfreetype6", "libgl1", "libx11-6", "fontconfig",
          "fonts-dejavu-core", "xvfb", "libgl1-mesa-dri", "x11-utils", "x11-apps", "imagemagick")


def why_not() -> str:
    """Why RViz cannot be run headless here ("" when it can)."""
    if reason := ros2_tree.why_not():
        return reason
    if not OVERLAY.is_file():
        return f"the RViz overlay {OVERLAY} is absent (a user's machine has its own rviz2)"
    status = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n", *DEBIAN],
                            capture_output=True, text=True).stdout
    installed = {line.split()[0] for line in status.splitlines() if line.endswith(" installed")}
    missing = [p for p in DEBIAN if p not in installed]
    if missing:
        return (f"Debian packages for RViz and headless rendering missing: {' '.join(missing)} (as root: apt-get "
                f"install --no-install-recommends {' '.join(missing)}; scripts/bootstrap.sh does it when run as root)")
    for tool in ("Xvfb", "xdpyinfo", "xwd", "convert"):
        if not shutil.which(tool):
            return f"{tool} not found on PATH (Debian packages xvfb, x11-utils, x11-apps, imagemagick)"
    return ""


def _unpack() -> Path:
    rviz_dir = BUILD / "rviz"
    stamp = rviz_dir / ".archive.sha256"
    want = hashlib.sha256(OVERLAY.read_bytes()).hexdigest()
    if not (stamp.is_file() and stamp.read_text() == want):
        shutil.rmtree(rviz_dir, ignore_errors=True)
        rviz_dir.mkdir(parents=True)
        subprocess.run(f"zstd -dc '{OVERLAY}' | tar -x -C '{rviz_dir}'", shell=True, check=True)
        stamp.write_text(want)
    return rviz_dir / "install"


def _free_display() -> int:
    for n in range(120 + os.getpid() % 50, 400):
        if not Path(f"/tmp/.X{n}-lock").exists() and not Path(f"/tmp/.X11-unix/X{n}").exists():
            return n
    raise RuntimeError("no free X display number")


def with_rviz(tree: Tree) -> Tree:
    """The recipe's environment with the overlay sourced on top (as the overlay's README says) and an X
    display of its own (started here; stop it with :func:`stop`)."""
    overlay = _unpack()
    env_file = BUILD / "rviz.env"
    done = tree.sh(f"set -e\nsource {overlay}/local_setup.bash\nenv -0 > {env_file}", name="source the RViz overlay")
    if done.returncode:
        raise RuntimeError(f"sourcing the RViz overlay failed:\n{done.stdout[-2000:]}")
    env = dict(item.split("=", 1) for item in env_file.read_text().split("\0") if "=" in item)
    display = f":{_free_display()}"
    env.update(DISPLAY=display, LIBGL_ALWAYS_SOFTWARE="1", QT_QPA_PLATFORM="xcb")
    rviz = Tree(env=env, ws=tree.ws, log=tree.log)
    rviz.started = [rviz.start(f"Xvfb {display} -screen 0 {SCREEN[0]}x{SCREEN[1]}x24 -nolisten tcp", "xvfb")]
    deadline = time.monotonic() + 20
    while rviz.sh(f"xdpyinfo -display {display} > /dev/null 2>&1", name="xdpyinfo").returncode:
        if time.monotonic() > deadline:
            raise RuntimeError(f"Xvfb did not start on {display}: {rviz.started[0].output()[-1000:]}")
        time.sleep(0.3)
    return rviz


def stop(rviz: Tree) -> None:
    """Stop what :func:`with_rviz` and :func:`capture` started, newest first."""
    for process in reversed(rviz.started):
        if process.popen.poll() is None:
            process.interrupt(30)
        process.kill()


def screenshot(rviz: Tree, path: Path) -> Path:
    """The whole X screen as a PNG."""
    done = rviz.sh(f"xwd -root -display {rviz.env['DISPLAY']} -silent | convert xwd:- png:'{path}'",
                   name="screenshot (xwd | convert)")
    if done.returncode or not path.is_file():
        raise RuntimeError(f"screenshot failed: {done.stdout[-1000:]}")
    return path


def rviz_config(path: Path) -> dict:
    """An .rviz file (YAML)."""
    return yaml.safe_load(path.read_text())


@dataclass
class Capture:
    """One screenshot and what RViz had been sent when it was taken."""

    screenshot: Path
    sent: dict  # rviz_probe.py's record: latest boxes and labels, view frames
    launch_output: str
    config: Path  # the RViz config the launch opened (installed by colcon)


def capture(rviz: Tree, launch: str, play: str, out: Path, quiet: float = 4.0, timeout: float = 300) -> Capture:
    """Launch (RViz included), play, wait for the markers to settle, screenshot; leaves the processes running.

    Args:
        rviz: the environment of :func:`with_rviz`.
        launch: the README's launch line with ``rviz:=true``.
        play: the README's player line.
        out: the PNG to write.
        quiet: seconds without a new MarkerArray before the screenshot (RViz has drawn the last one).
        timeout: seconds for the whole stream.
    """
    record = out.with_suffix(".sent.json")
    record.unlink(missing_ok=True)
    rviz.started.append(rviz.start(f"python {REPO}/tests/rviz_probe.py {record}", "rviz probe"))
    node = rviz.start(launch, "launch with rviz")
    rviz.started.append(node)
    if not node.wait_for("ready:", 240):
        raise RuntimeError(f"the node did not get ready:\n{node.output()[-3000:]}")
    player = rviz.start(play, "play for rviz")
    rviz.started.append(player)
    if player.wait(timeout) != 0:
        raise RuntimeError(f"the player failed:\n{player.output()[-3000:]}")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the node may still work through the last keyframe
        sent = json.loads(record.read_text()) if record.is_file() else {}
        if sent.get("received") and time.monotonic() - sent["received"] > quiet:
            break
        time.sleep(0.5)
    else:
        raise RuntimeError("the node's markers never settled")
    screenshot(rviz, out)
    after = json.loads(record.read_text())
    if after["count"] != sent["count"]:
        raise RuntimeError("new markers arrived while the screenshot was taken")
    config = rviz.ws / "install" / "embodied_ros" / "share" / "embodied_ros" / "config" / "embodied.rviz"
    return Capture(out, after, node.output(), config)

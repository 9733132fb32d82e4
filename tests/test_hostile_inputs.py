"""Hostile inputs, second round: cameras no camera has, the picture paths, what --out may hold, forged
markers, terminal escapes, broken bag metadata, the order of the checks, exit codes.

Each case runs `embodied-ros` as a user would, on copies of the real recordings, and checks the exit
code, the one line it prints and the files before and after (docs/run_folder.md lists every case and
its test). Skips with the reason where ../shared/data is absent.
"""

from __future__ import annotations

import json
import logging
import shutil
import signal
import sqlite3
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA, DETECTOR, KITCHEN, copy_kitchen
from filesystems import tmpfs
from test_cli_faults import _error, _files, _run, _run_args

from embodied_ros.occupancy import raycast
from embodied_ros.sources.camera_checks import check_camera

MARKER = "embodied_ros_run.json"
needs_data = pytest.mark.skipif(not (KITCHEN.is_dir() and DETECTOR.is_dir()),
                                reason=f"real data not found in {DATA} (set EMBODIED_ROS_DATA)")
KITCHEN_K = "585 0 320\n0 585 240\n0 0 1\n"


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBODIED_ROS_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def _kitchen(dst: Path, intrinsics: str = KITCHEN_K, frames: int = 3) -> Path:
    folder = copy_kitchen(dst, range(0, 10 * frames, 10))
    (folder / "camera-intrinsics.txt").write_text(intrinsics)
    return folder


# ---- a camera must be a camera ----------------------------------------------------------------------

IMPOSSIBLE = {  # intrinsics file -> what the line must say
    "f = 1e12": ("1e12 0 320\n0 1e12 240\n0 0 1\n", "a field of view of 3.67e-08 x 2.75e-08 deg"),
    "f = 0.001": ("0.001 0 320\n0 0.001 240\n0 0 1\n", "up to 90 deg from the optical axis"),
    "normalised": ("0.914 0 0.5\n0 1.219 0.5\n0 0 1\n", "they look normalised (divided by the image size): in "
                   "pixels of these 640x480 images they would be fx 585.0 fy 585.1 cx 320.0 cy 240.0"),
    "cx = 99999": ("585 0 99999\n0 585 240\n0 0 1\n", "cx 99999 lies outside the 640 px of the image"),
}


@needs_data
@pytest.mark.parametrize("command", ["run", "inspect"])
@pytest.mark.parametrize("case", list(IMPOSSIBLE))
def test_intrinsics_no_camera_has_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          caplog: pytest.LogCaptureFixture, command: str,
                                                          case: str) -> None:
    text, expect = IMPOSSIBLE[case]
    kitchen, out = _kitchen(tmp_path / "k", text), tmp_path / "out"
    argv = _run_args(kitchen, out) if command == "run" else ["inspect", kitchen]
    with caplog.at_level(logging.INFO):
        rc, stdout, err = _run(argv, capsys)
    line = _error(err)
    assert rc == 2 and f"the intrinsics ({kitchen / 'camera-intrinsics.txt'}) cannot be a camera's" in line, line
    assert expect in line, line
    assert not out.exists() and stdout == ""  # nothing written, no report that reads as "go ahead"
    assert not [r for r in caplog.records if "runtime backend" in r.getMessage()]  # stopped before the model
    assert not [r for r in caplog.records if "poses:" in r.getMessage()]  # no pose check that reads as the fault


@needs_data
def test_an_unusual_camera_runs_with_one_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 caplog: pytest.LogCaptureFixture) -> None:
    kitchen = _kitchen(tmp_path / "k", "585 0 150\n0 585 240\n0 0 1\n", frames=2)  # principal point off-centre
    rc, text, _ = _run(["inspect", kitchen], capsys)
    assert rc == 0 and "camera:       field of view 54.3 x 44.6 deg: unusual: cx 150 is 27% of the image" in text
    rc, _, err = _run(_run_args(kitchen, tmp_path / "out", "--no-inputs"), capsys)
    warned = [r.getMessage() for r in caplog.records if "an unusual camera" in r.getMessage()]
    assert rc == 0 and len(warned) == 1 and "cx 150 is 27% of the image from its centre" in warned[0], err


@needs_data
def test_a_frame_whose_camera_changes_to_no_cameras_is_skipped(tmp_path: Path) -> None:
    """A bag whose camera_info changes mid-way: the frame with intrinsics no camera has is skipped and named,
    never run (the recording's first camera was checked before the run)."""
    from dataclasses import replace

    from embodied_ros.errors import FrameError
    from embodied_ros.recordings import open_source
    from embodied_ros.sources.base import FrameSource
    from embodied_ros.sources.preflight import RecordingOptions, prepare

    kitchen = open_source(_kitchen(tmp_path / "k"))

    class Changing(FrameSource):
        name, poses_need_check = "changing", False

        def __len__(self) -> int:
            return len(kitchen)

        def read(self, index: int):  # noqa: ANN202 - a Frame
            frame = kitchen.read(index)
            return replace(frame, K=frame.K * np.array([[1e-6], [1e-6], [1]])) if index == 1 else frame

    items = list(prepare(Changing(), RecordingOptions(estimate_gravity=False)).source.frames())
    assert [type(i).__name__ for i in items] == ["Frame", "FrameError", "Frame"]
    assert isinstance(items[1], FrameError) and "frame 1" in str(items[1]) and "cannot be a camera's" in str(items[1])


def test_the_camera_bounds_know_real_cameras() -> None:
    """Every RGB-D camera of camera_checks' table passes without a warning; the bounds' edges are where they say."""
    real = {"Kinect v1": (585, 640, 480), "Azure Kinect 720p": (605, 1280, 720), "Azure Kinect 3072p": (1940, 4096,
            3072), "Azure Kinect NFOV": (504, 640, 576), "RealSense D435 depth": (425, 848, 480),
            "Kinect v2 depth": (365, 512, 424), "ZED 2 HD1080": (1060, 1920, 1080), "iPhone LiDAR": (1450, 1920, 1440)}
    for name, (f, w, h) in real.items():
        found = check_camera(np.array([[f, 0, w / 2], [0, f, h / 2], [0, 0, 1]]), w, h)
        assert not found.problem and not found.unusual, (name, found)
    K = np.array([[585.0, 0, 320], [0, 585, 240], [0, 0, 1]])
    assert check_camera(K, 8193, 480).problem and check_camera(K, 15, 480).problem
    wide = np.array([[320 / np.tan(np.radians(84.9)), 0, 320], [0, 585, 240], [0, 0, 1]])
    assert not check_camera(wide, 640, 480).problem and check_camera(wide, 640, 480).unusual
    wider = np.array([[320 / np.tan(np.radians(85.1)), 0, 320], [0, 585, 240], [0, 0, 1]])
    assert "up to 85.1 deg from the optical axis" in check_camera(wider, 640, 480).problem


def test_raycast_work_is_bounded_whatever_the_rays_say() -> None:
    """A ray a billion voxels long (intrinsics no camera has, a pose in another galaxy) is cut, gives no hit,
    and the samples of a call stay under the cap: memory and time per frame do not follow a file's values."""
    rng = np.random.default_rng(0)
    seg = rng.normal(size=(5000, 3)) * 1e9
    seg[:10] = rng.normal(size=(10, 3)) * 5  # a few ordinary rays
    hit = np.ones(len(seg), dtype=bool)
    hits, free = raycast.trace_rays(np.zeros(3), seg.T, hit)  # (3, R): one row per axis
    assert len(hits) == len(np.unique(np.floor(seg[:10]).astype(np.int64), axis=0))  # only the ordinary rays hit
    assert np.abs(free).max() <= raycast._MAX_RAY_VOXELS + 2
    assert len(free) <= raycast._MAX_SAMPLES
    short = rng.normal(size=(2000, 3)) * 20  # ordinary rays: the cap changes nothing
    a_hits, a_free = raycast.trace_rays(np.array([0.5, 0.5, 0.5]), short.T, np.ones(len(short), dtype=bool))
    limit = raycast._MAX_RAY_VOXELS
    try:
        raycast._MAX_RAY_VOXELS = 1e12
        b_hits, b_free = raycast.trace_rays(np.array([0.5, 0.5, 0.5]), short.T, np.ones(len(short), dtype=bool))
    finally:
        raycast._MAX_RAY_VOXELS = limit
    np.testing.assert_array_equal(a_hits, b_hits)
    np.testing.assert_array_equal(a_free, b_free)


# ---- pictures -----------------------------------------------------------------------------------------


@needs_data
def test_picture_names_a_file_with_a_supported_suffix_or_a_folder(kitchen_run: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(["ground", kitchen_run, "the chair", "--picture", tmp_path / "ans.xyz"], capsys)
    assert rc == 2 and ".png, .jpg, .jpeg" in _error(err) and list(tmp_path.iterdir()) == []
    folder = tmp_path / "pictures"
    folder.mkdir()
    rc, out, _ = _run(["ground", kitchen_run, "the chair", "--picture", folder], capsys)
    written = sorted(p.name for p in folder.iterdir())
    assert rc in (0, 1) and written[0] == "answer.png"
    assert f"pictures: {folder / 'answer.png'}" in out and not (tmp_path / "pictures.png").exists()
    assert all(str(folder / name) in out for name in written)  # every path printed is a file written
    rc, out, _ = _run(["ground", kitchen_run, "the chair", "--picture", tmp_path / "ans.jpg"], capsys)
    assert (tmp_path / "ans.jpg").read_bytes()[:2] == b"\xff\xd8"  # a JPEG, as its name says


# ---- what --out may hold ------------------------------------------------------------------------------


@needs_data
@pytest.mark.parametrize("source", ["the bag file", "the bag folder", "the frames", "a --poses file"])
def test_out_holding_what_the_run_reads_is_refused_even_with_overwrite(
        kitchen_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str) -> None:
    run = tmp_path / "run"
    shutil.copytree(kitchen_run, run)
    more: list[object] = ["--world-frame", "world"]
    if source == "the bag file":
        read, out = run / "scene.mcap", run
    elif source == "the bag folder":
        read, out = run, run
    elif source == "the frames":
        read = out = _kitchen(tmp_path / "k")
        more = []
    else:
        read, out = _kitchen(tmp_path / "k"), run
        (run / "traj.txt").write_text("0 0 0 0 0 0 0 1\n")
        more = ["--poses", run / "traj.txt"]
    before = _files(tmp_path)
    rc, _, err = _run(_run_args(read, out, "--overwrite", *more), capsys)
    assert rc == 2 and f"--out {out} holds what the run reads" in _error(err) and "even with --overwrite" in _error(err)
    assert _files(tmp_path) == before


# ---- markers ------------------------------------------------------------------------------------------


@needs_data
def test_a_forged_marker_touches_nothing_outside_and_a_later_overwrite_recovers(
        kitchen_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(kitchen_run, run)
    (tmp_path / "victim.txt").write_text("keep")
    (run / "sub").mkdir()
    (run / "sub" / "x.txt").write_text("keep")
    (run / "notes.txt").write_text("keep")
    marker = json.loads((run / MARKER).read_text())
    forged = ["../victim.txt", str(tmp_path / "victim.txt"), "sub", "sub/x.txt", "notes.txt", ".hidden"]
    (run / MARKER).write_text(json.dumps({**marker, "state": "being replaced", "files": marker["files"] + forged}))
    kitchen = _kitchen(tmp_path / "k", frames=2)
    for _ in range(2):  # the folder stays one a later --overwrite can use
        rc, _, err = _run(_run_args(kitchen, run, "--overwrite", "--no-inputs"), capsys)
        assert rc == 0, err
        assert (tmp_path / "victim.txt").read_text() == "keep" and (run / "sub" / "x.txt").read_text() == "keep"
        assert (run / "notes.txt").read_text() == "keep"
        doc = json.loads((run / MARKER).read_text())
        assert doc["state"] == "complete" and not set(doc["files"]) & set(forged)


@needs_data
@pytest.mark.parametrize("marker", ["cut short", "not this tool's", "files not a list"])
def test_a_broken_marker_is_one_line_with_the_manual_step(kitchen_run: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str], marker: str) -> None:
    run = tmp_path / "run"
    shutil.copytree(kitchen_run, run)
    text = (run / MARKER).read_text()
    broken = {"cut short": text[:100], "not this tool's": json.dumps({"format": "something/else"}),
              "files not a list": json.dumps({**json.loads(text), "files": 3})}[marker]
    (run / MARKER).write_text(broken)
    before = _files(run)
    rc, _, err = _run(_run_args(_kitchen(tmp_path / "k", frames=1), run, "--overwrite"), capsys)
    line = _error(err)
    assert rc == 2 and f"its {MARKER} cannot be read" in line
    assert "remove its run's files and the marker yourself" in line
    assert _files(run) == before


@needs_data
def test_a_folder_with_a_run_files_name_is_refused_before_the_run(kitchen_run: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(kitchen_run, run)
    (run / "objects.json").unlink()
    (run / "objects.json").mkdir()  # listed in the marker, but a folder: no run can replace it
    before = _files(run)
    rc, _, err = _run(_run_args(_kitchen(tmp_path / "k", frames=1), run, "--overwrite"), capsys)
    assert rc == 2 and "objects.json has a name a run writes but is a folder" in _error(err)
    assert _files(run) == before and (run / "objects.json").is_dir()


# ---- terminal safety ----------------------------------------------------------------------------------


@needs_data
def test_user_text_never_reaches_the_terminal_raw(kitchen_run: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    title = "\x1b]0;PWNED\x07"
    rc, out, err = _run(["ground", kitchen_run, f"the {title} chair\x1b[2J\u202e"], capsys)
    assert "\x1b" not in out + err and "\x07" not in out + err and "\u202e" not in out + err
    assert "\\x1b" in out  # shown, escaped: the user sees what the phrase held
    rc, out, err = _run(["run", tmp_path / f"in{title}", "--out", tmp_path / "out"], capsys)
    assert rc == 2 and "\x1b" not in err and "in\\x1b]0;PWNED\\x07" in _error(err)


# ---- recordings ---------------------------------------------------------------------------------------


@needs_data
def test_an_empty_metadata_yaml_reads_the_mcap_beside_it(kitchen_run: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str],
                                                         caplog: pytest.LogCaptureFixture) -> None:
    bag = tmp_path / "bag"
    bag.mkdir()
    shutil.copy(kitchen_run / "scene.mcap", bag / "scene.mcap")
    (bag / "metadata.yaml").write_text("")
    rc, text, err = _run(["inspect", bag, "--world-frame", "world", "--max-frames", "2"], capsys)
    warned = [r.getMessage() for r in caplog.records if "metadata.yaml" in r.getMessage()]
    assert rc == 0 and "a run would:  go ahead" in text, err
    assert len(warned) == 1 and "its metadata.yaml is empty: reading scene.mcap on its own" in warned[0]
    db = tmp_path / "db"
    db.mkdir()
    (db / "metadata.yaml").write_text("")
    with sqlite3.connect(db / "bag_0.db3") as storage:  # a storage file whose metadata never got written
        storage.execute("CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT)")
    rc, _, err = _run(["inspect", db], capsys)
    assert rc == 2 and "metadata.yaml is empty" in _error(err) and f"ros2 bag reindex {db}" in _error(err)
    assert "NoneType" not in err


@needs_data
def test_free_space_is_checked_before_the_frames_and_the_model(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str],
                                                               caplog: pytest.LogCaptureFixture) -> None:
    kitchen = _kitchen(tmp_path / "k")
    (kitchen / "frame-000000.pose.txt").write_text("1 0 0 0\n0 1 0 0\n0 0 1 0\n")  # what the pose check reads
    with tmpfs(tmp_path / "disk", 1 << 20) as root, caplog.at_level(logging.INFO):
        rc, _, err = _run(["run", kitchen, "--out", root / "run", "--weights", tmp_path / "typo"], capsys)
        assert rc == 2 and "MB free" in _error(err) and "a run of 3 frames" in _error(err)
    assert not [r for r in caplog.records if r.name.endswith(("preflight", "select"))]


@needs_data
def test_pictures_of_a_name_the_font_cannot_draw_warn_nothing(kitchen_run: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    kitchen = _kitchen(tmp_path / "厨房", frames=1)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        rc, _, err = _run(_run_args(kitchen, tmp_path / "出力", "--no-inputs"), capsys)
        assert rc == 0, err
        rc, _, _ = _run(["ground", kitchen_run, "the 椅子 chair", "--picture", tmp_path / "答え.png"], capsys)
    assert not [w for w in seen if "Glyph" in str(w.message)], [str(w.message) for w in seen]
    assert (tmp_path / "出力" / "top_down.png").is_file() and (tmp_path / "答え.png").is_file()


# ---- exit codes ---------------------------------------------------------------------------------------


@needs_data
def test_describe_exit_codes_serve_a_set_e_script(kitchen_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(["describe", kitchen_run, "--json"], capsys)
    found = json.loads(out)
    assert rc == 0 and found  # not-unique descriptions are a result, counted, not a failure
    rc, out, _ = _run(["describe", kitchen_run], capsys)
    assert rc == 0 and f"of {len(found)} descriptions pick out their object" in out
    rc, out, err = _run(["describe", kitchen_run, "--id", "99999"], capsys)
    assert rc == 1 and "no object #99999 among the objects of" in err and out == ""


@needs_data
def test_ctrl_c_while_the_model_loads_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     caplog: pytest.LogCaptureFixture) -> None:
    class _InterruptOnLoad(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "runtime backend" in record.getMessage():
                signal.raise_signal(signal.SIGINT)

    handler = _InterruptOnLoad()
    logging.getLogger("embodied_ros").addHandler(handler)
    # Python's own Ctrl-C handler, as in a terminal (a shell's background job starts with SIGINT ignored)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with caplog.at_level(logging.INFO):
            rc, _, err = _run(_run_args(_kitchen(tmp_path / "k"), tmp_path / "out"), capsys)
    finally:
        logging.getLogger("embodied_ros").removeHandler(handler)
        signal.signal(signal.SIGINT, previous)
    assert rc == 130 and "interrupted" in err and not (tmp_path / "out").exists()

"""`ground_command` (embodied-ros ground RUN_DIR "phrase") on a saved memory: text, JSON, picture, errors."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import pytest
from grounding_scenes import kitchen, write_memory

from embodied_ros.cli.ground import ground_command


@pytest.fixture(autouse=True)
def embedding_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The commands' text-embedding cache goes to a temporary folder, not the user's home."""
    monkeypatch.setenv("EMBODIED_ROS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "text_embeddings.npz"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    write_memory(tmp_path / "memory.json", kitchen())
    return tmp_path


def test_text_answer_and_picture(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    picture = run_dir / "pics" / "answer.png"
    assert ground_command(run_dir, "the cup on the table next to the tv", False, picture) == 0
    out = capsys.readouterr().out
    assert out.startswith("cup #1: on diningtable #0, next to tvmonitor #4") and "centre (0.50, 0.10, 0.80)" in out
    assert "parser: " in out
    image = cv2.imread(str(picture))
    assert image is not None and image.shape[0] > 500
    assert not (run_dir / "pics" / "answer_frame.png").exists()  # no scene.mcap: no frame picture


def test_json_answer(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert ground_command(run_dir, "the lamp above the table", True, None) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["success"] and data["best"]["id"] == 8 and data["best"]["anchor_ids"] == [0]
    assert data["parsed"]["relations"] == [{"relation": "above", "type": "vertical", "anchors": ["table"],
                                            "negated": False}]
    assert len(data["best"]["box"]) == 9


def test_no_answer_and_bad_run_dir(run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert ground_command(run_dir, "", False, None) == 1
    assert "empty phrase" in capsys.readouterr().out
    assert ground_command(tmp_path / "nothing", "the cup", False, None) == 2
    err = capsys.readouterr().err
    assert err.startswith("embodied-ros: error:") and len(err.strip().splitlines()) == 1


def test_viewer_words_from_the_runs_last_or_a_chosen_frame(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """camera_poses.json gives the viewpoint: the last frame by default, --from-frame another."""
    import numpy as np

    from embodied_ros.outputs.camera_poses import CameraPose, write_camera_poses

    def pose(index: int, facing_north: bool) -> CameraPose:
        R = np.array([[1, 0, 0], [0, 0, 1], [0, -1, 0]], float)  # optical z = world +y (north), x = east
        if not facing_north:
            R = np.diag([-1.0, -1.0, 1.0]) @ R  # turned around: looking south
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = R, (0.0, -3.0 if facing_north else 5.0, 1.2)
        return CameraPose(index, index, T, np.array([[500.0, 0, 320], [0, 500.0, 240], [0, 0, 1]]), 640, 480)

    write_camera_poses(run_dir / "camera_poses.json", "world", [pose(0, True), pose(7, False)])
    assert ground_command(run_dir, "the chair on the left", True, None) == 0  # the last frame looks south
    data = json.loads(capsys.readouterr().out)
    assert data["best"]["id"] == 6 and "frame 7" in data["message"]
    assert ground_command(run_dir, "the chair on the left", True, None, from_frame=0) == 0
    assert json.loads(capsys.readouterr().out)["best"]["id"] == 5
    assert ground_command(run_dir, "the chair on the left", False, None, from_frame=3) == 2
    assert "not a processed frame" in capsys.readouterr().err


def test_describe_and_scene_graph_commands(run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from embodied_ros.cli.ground import describe_command, scene_graph_command
    from embodied_ros.outputs.scanrefer import SCANNET18

    captions = tmp_path / "benchmark_val.json"
    code = describe_command(run_dir, json_out=True, dense_captions=captions, scene_id="scene0000_00")
    found = json.loads(capsys.readouterr().out)
    assert code in (0, 1) and len(found) == 11 and sum(d["unique"] for d in found) >= 9
    doc = json.loads(captions.read_text())
    assert list(doc) == ["scene0000_00"] and len(doc["scene0000_00"]) == 11
    record = doc["scene0000_00"][0]
    assert record["caption"].startswith("sos the ") and record["caption"].endswith(" eos")
    assert len(record["box"]) == 8 and all(len(c) == 3 for c in record["box"])
    assert len(record["sem_prob"]) == len(SCANNET18) and abs(sum(record["sem_prob"]) - 1) < 1e-9
    assert record["sem_prob"][SCANNET18.index("table")] == 1.0  # object 0 is the diningtable
    assert len(record["obj_prob"]) == 2 and abs(sum(record["obj_prob"]) - 1) < 1e-9
    assert describe_command(run_dir, 1) == 0 and capsys.readouterr().out.startswith("cup #1: the ")
    assert describe_command(run_dir, 99) == 1
    capsys.readouterr()
    assert scene_graph_command(run_dir, tmp_path / "graph.json", with_descriptions=True) == 0
    graph = json.loads((tmp_path / "graph.json").read_text())
    assert len(graph["objects"]) == 11 and graph["relations"] and "description" in graph["objects"][0]


def test_embedding_cache_saves_the_model_load(embedding_cache: Path, run_dir: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The first call that needs the encoder fills the cache; a later one answers the same without the model."""
    from embodied_ros.grounding.text_encoder import CachedTextEncoder

    assert ground_command(run_dir, "the flatscreen on the table", True, None) == 0  # not in the synonym table
    first = json.loads(capsys.readouterr().out)
    if not first["encoder_used"]:
        pytest.skip("text encoder not installed")
    assert embedding_cache.is_file()
    cached = CachedTextEncoder(embedding_cache)
    assert cached.encode(["flatscreen"]).shape == (1, 384) and cached.n_calls == 0  # from the file, no model
    assert ground_command(run_dir, "the flatscreen on the table", True, None) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["best"]["id"] == first["best"]["id"] and second["encoder_seconds"] == 0.0


def test_the_command_imports_only_what_grounding_needs(run_dir: Path) -> None:
    """`embodied-ros ground` is a quick call: no network runtimes, bag libraries, ROS or scipy.spatial."""
    import subprocess
    import sys

    code = ("import sys; from embodied_ros.cli import main; "
            "sys.argv = ['embodied-ros', 'ground', sys.argv[1], 'the cup']; code = main(); "
            "heavy = ('torch', 'onnx', 'onnxruntime', 'rosbags', 'rclpy', 'scipy.spatial', 'av'); "
            "print(sorted(m for m in heavy if m in sys.modules)); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code, str(run_dir)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"

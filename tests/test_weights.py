"""Model-file resolution: sha256 checks, the known-model registry, and downloads only with consent."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from embodied_ros.errors import ModelError
from embodied_ros.network import weights
from embodied_ros.network.weights import KNOWN_MODELS, resolve_file, resolve_known_model, verify_sha256
from embodied_ros.runtime import engine_cache
from embodied_ros.runtime.engine_cache import cache_dir, sha256_file

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
YOLO = DATA / "yolo_fastest"
needs_yolo = pytest.mark.skipif(not YOLO.is_dir(), reason=f"Yolo-Fastest files not found in {YOLO}")
XL = KNOWN_MODELS["yolo-fastest-1.1-xl"]


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exports go to a per-session cache, not the user's home."""
    monkeypatch.setenv("EMBODIED_ROS_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


# Each model's files, the commit its URLs are pinned to (the data README's), and its reader.
PINNED = {
    "yolo-fastest-1.1-xl": ("darknet", "96a2900d163196c396e73f3fdab04ca4dd9a2f70", DATA / "yolo_fastest"),
    "yolo-fastest-1.1": ("darknet", "96a2900d163196c396e73f3fdab04ca4dd9a2f70", DATA / "yolo_fastest"),
    "yolox-nano": ("yolox", "3d4f1119d0694200671c08069ecb847aa0d8495a", DATA / "yolox_nano"),
    "nanodet-plus-m-416": ("nanodet", "25654004a310a7bdc3217e071005fa45b3367627", DATA / "nanodet_plus"),
}


def test_registry_lists_every_model_with_pinned_urls() -> None:
    assert weights.DEFAULT_MODEL == "yolox-nano"  # best on the redkitchen ground truth (bench_real_map)
    assert set(KNOWN_MODELS) == set(PINNED)
    for name, model in KNOWN_MODELS.items():
        family, commit, _ = PINNED[name]
        assert model.family == family and model.names.filename == "coco.names"
        assert (model.graph is None) == (family == "yolox")
        for f in model.files:
            assert len(f.sha256) == 64 and f.url.endswith("/" + f.filename)
            assert commit in f.url or f is model.names  # the names file comes from the Yolo-Fastest commit


@pytest.mark.parametrize("name", ["yolox-nano", "nanodet-plus-m-416"])
def test_new_models_verify_every_file_and_refuse_a_corrupted_one(name: str, tmp_path: Path) -> None:
    folder = PINNED[name][2]
    if not folder.is_dir():
        pytest.skip(f"{name}'s files not found in {folder}")
    files = resolve_known_model(name, search_dirs=[folder], cache=tmp_path)
    assert files.family == PINNED[name][0] and files.weights.parent == folder and files.names.parent == folder
    for known in KNOWN_MODELS[name].files:  # a copy with one byte changed, file by file
        copy = tmp_path / name / known.filename.replace(".", "_")
        copy.mkdir(parents=True)
        for other in KNOWN_MODELS[name].files:
            shutil.copy(folder / other.filename, copy)
        data = bytearray((copy / known.filename).read_bytes())
        data[len(data) // 2] ^= 0x01
        (copy / known.filename).write_bytes(bytes(data))
        with pytest.raises(ModelError, match=f"{known.filename}: sha256 .* does not match"):
            resolve_known_model(name, search_dirs=[copy], cache=tmp_path)


@pytest.mark.parametrize("name", ["yolox-nano", "nanodet-plus-m-416"])
def test_new_models_are_never_downloaded_without_consent(name: str, tmp_path: Path) -> None:
    from embodied_ros.network.registry import build_perceptor

    with pytest.raises(ModelError, match="download=True") as err:
        resolve_known_model(name, search_dirs=[tmp_path], cache=tmp_path)
    assert KNOWN_MODELS[name].weights.url.split("/raw/")[1].split("/")[0] == PINNED[name][1]
    with pytest.raises(ModelError, match=f"--weights {tmp_path} has no .* which --model {name} needs") as err:
        build_perceptor(name, weights=tmp_path)
    for known in KNOWN_MODELS[name].files:
        assert known.filename in str(err.value)
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


def test_cache_dir_env_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(engine_cache.CACHE_ENV, str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.delenv(engine_cache.CACHE_ENV)
    assert cache_dir() == Path.home() / ".cache" / "embodied_ros"


@needs_yolo
def test_real_weights_verify_and_a_corrupted_copy_does_not(tmp_path: Path) -> None:
    real = YOLO / XL.weights.filename
    verify_sha256(real, XL.weights.sha256)
    assert resolve_file(real, sha256=XL.weights.sha256) == real
    bad = tmp_path / XL.weights.filename
    data = bytearray(real.read_bytes())
    data[1000] ^= 0xFF
    bad.write_bytes(bytes(data))
    with pytest.raises(ModelError, match="does not match"):
        resolve_file(bad, sha256=XL.weights.sha256)
    for f in (XL.graph, XL.names):
        shutil.copy(YOLO / f.filename, tmp_path)
    with pytest.raises(ModelError, match=f"{XL.weights.filename}: sha256 .* does not match"):
        resolve_known_model("yolo-fastest-1.1-xl", search_dirs=[tmp_path, YOLO], cache=tmp_path)


@needs_yolo
def test_known_model_found_in_a_search_dir() -> None:
    for name, model in KNOWN_MODELS.items():
        if model.family != "darknet":
            continue
        files = resolve_known_model(name, search_dirs=["/nonexistent", YOLO])
        assert files.weights == YOLO / model.weights.filename and files.names.name == "coco.names"


def test_url_without_consent_raises_and_says_how(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="download=True"):
        resolve_file(XL.weights.url, sha256=XL.weights.sha256, cache=tmp_path)
    with pytest.raises(ModelError, match="download=True"):
        resolve_known_model(search_dirs=[tmp_path], cache=tmp_path)
    with pytest.raises(ModelError, match="sha256 is required"):
        resolve_file("https://example.invalid/x.weights", download=True, cache=tmp_path)
    assert not any(tmp_path.rglob("*.weights"))


def test_missing_file_and_unknown_model(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="model file not found"):
        resolve_file(tmp_path / "absent.weights")
    with pytest.raises(ModelError, match="unknown model 'yolo-v99'"):
        resolve_known_model("yolo-v99")


@needs_yolo
def test_download_with_consent_verifies_and_caches(tmp_path: Path) -> None:
    # A file:// URL exercises the download path without the network.
    src = tmp_path / "upstream" / "coco.names"
    src.parent.mkdir()
    shutil.copy(YOLO / "coco.names", src)
    cache = tmp_path / "cache"
    got = resolve_file(src.as_uri(), sha256=XL.names.sha256, download=True, cache=cache)
    assert got.is_relative_to(cache) and sha256_file(got) == XL.names.sha256
    src.unlink()  # a second call is served from the cache, even without consent
    assert resolve_file(src.as_uri(), sha256=XL.names.sha256, cache=cache) == got
    shutil.copy(YOLO / "coco.names", src)
    with pytest.raises(ModelError, match="expected 0{64}; not used"):
        resolve_file(src.as_uri(), sha256="0" * 64, download=True, cache=cache)
    assert not [p for p in cache.rglob("*") if p.is_file() and p != got]  # no partial file left behind
    with pytest.raises(ModelError, match="download of .* failed"):
        resolve_file((tmp_path / "gone.names").as_uri(), sha256="1" * 64, download=True, cache=cache)

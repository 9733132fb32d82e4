"""Model files: a registry of known checkpoints, sha256 checks, and downloads only when asked."""

from __future__ import annotations

import os
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from ..errors import ModelError
from ..runtime.engine_cache import cache_dir, sha256_file

_URL_SCHEMES = ("http", "https", "file")
_YOLO_FASTEST_URL = (
    "https://github.com/dog-qiuqiu/Yolo-Fastest/raw/96a2900d163196c396e73f3fdab04ca4dd9a2f70/"
    "ModelZoo/yolo-fastest-1.1_coco/"
)
_YOLOX_URL = (
    "https://github.com/Kazuhito00/YOLOX-ONNX-TFLite-Sample/raw/3d4f1119d0694200671c08069ecb847aa0d8495a/model/"
)
_NANODET_URL = (
    "https://github.com/Qengineering/NanoDetPlus-ncnn-Raspberry-Pi-4/raw/25654004a310a7bdc3217e071005fa45b3367627/"
)


@dataclass(frozen=True)
class KnownFile:
    """One published file: its name, where it can be fetched and its sha256 (hex)."""

    filename: str
    url: str
    sha256: str


@dataclass(frozen=True)
class KnownModel:
    """A published detector: its network files and its class-name file, all checksummed.

    Attributes:
        name: the ``--model`` name.
        family: which reader runs it: "darknet" (cfg + weights), "yolox" (an ONNX file as it is) or
            "nanodet" (ncnn .param + .bin).
        weights: the file holding the weights (for "yolox" the whole ONNX graph).
        names: the model's class vocabulary, one name a line, in output order.
        graph: the file describing the layers ("darknet": .cfg, "nanodet": .param), or None.
        score_threshold: the model's own 2D score below which its boxes are not lifted: scores are
            not comparable between models (NanoDet-Plus gives ~73 boxes a frame above 0.1 on
            redkitchen, YOLOX-Nano ~10), and the scene memory weighs what is lifted by score.
    """

    name: str
    family: str
    weights: KnownFile
    names: KnownFile
    graph: KnownFile | None = None
    score_threshold: float = 0.1

    @property
    def files(self) -> tuple[KnownFile, ...]:
        return tuple(f for f in (self.graph, self.weights, self.names) if f is not None)


@dataclass(frozen=True)
class ModelFiles:
    """Local, verified paths of one model's files (``graph`` None for a model that is a single ONNX file)."""

    graph: Path | None
    weights: Path
    names: Path
    family: str = "darknet"


def _yolo_fastest_file(filename: str, sha256: str) -> KnownFile:
    return KnownFile(filename, _YOLO_FASTEST_URL + filename, sha256)


_COCO_NAMES = _yolo_fastest_file("coco.names", "634a1132eb33f8091d60f2c346ababe8b905ae08387037aed883953b7329af84")

KNOWN_MODELS: dict[str, KnownModel] = {
    # Yolo-Fastest 1.1 (dog-qiuqiu/Yolo-Fastest, commit 96a2900), COCO, 320x320 input, Darknet files.
    "yolo-fastest-1.1-xl": KnownModel(
        "yolo-fastest-1.1-xl",
        "darknet",
        _yolo_fastest_file(
            "yolo-fastest-1.1-xl.weights", "fac5fb41786c1f38f04972a658443b189f48720d7d117f9a044100e98a35b0c5"
        ),
        _COCO_NAMES,
        _yolo_fastest_file(
            "yolo-fastest-1.1-xl.cfg", "c458427acc4fbeabceff4528ef7b65b066c0308ce599460f8ba299eba63abad3"
        ),
    ),
    "yolo-fastest-1.1": KnownModel(
        "yolo-fastest-1.1",
        "darknet",
        _yolo_fastest_file(
            "yolo-fastest-1.1.weights", "1c445c42bbd6df63edea2cc69f99667b5650d663ca11e34b116240740cd42890"
        ),
        _COCO_NAMES,
        _yolo_fastest_file("yolo-fastest-1.1.cfg", "f6df5775c1e862998cf69046eba9265be3ae84dfe8b2caab7529823f0795bf70"),
    ),
    # YOLOX-Nano (Megvii's weights, Apache-2.0) exported to ONNX by Kazuhito00/YOLOX-ONNX-TFLite-Sample
    # (commit 3d4f111), 416x416; run as it is. Its class names are the same 80 COCO names.
    "yolox-nano": KnownModel(
        "yolox-nano",
        "yolox",
        KnownFile("yolox_nano.onnx", _YOLOX_URL + "yolox_nano.onnx",
                  "695e750a5d5754bb5a8d5325643b59282191a7e7a564e435a415fd3c578eab14"),
        _COCO_NAMES,
    ),
    # NanoDet-Plus-m 416 (RangiLyu/nanodet, Apache-2.0) in ncnn form from
    # Qengineering/NanoDetPlus-ncnn-Raspberry-Pi-4 (commit 2565400); read into PyTorch by ncnn.py.
    "nanodet-plus-m-416": KnownModel(
        "nanodet-plus-m-416",
        "nanodet",
        KnownFile("nanodet-plus-m_416.bin", _NANODET_URL + "nanodet-plus-m_416.bin",
                  "f7555ca6cb9650ee41e2f0a53fdf46b6e187a2a09792208d8c3eec033b6ac615"),
        _COCO_NAMES,
        KnownFile("nanodet-plus-m_416.param", _NANODET_URL + "nanodet-plus-m_416.param",
                  "d79e18ecd8595081bb29fdf0c790a47fcea96fbf58598350569a92e71e915b72"),
        score_threshold=0.3,
    ),
}
# The default detector: it scores best on the redkitchen ground truth (benchmarks/bench_real_map.py:
# precision 0.89 and recall 0.32 with the object map, against 0.70 / 0.28 for Yolo-Fastest-1.1-XL).
DEFAULT_MODEL = "yolox-nano"


def verify_sha256(path: str | Path, expected: str) -> None:
    """Raise ModelError unless ``path`` hashes to ``expected`` (hex sha256, case-insensitive)."""
    actual = sha256_file(path)
    if actual != expected.lower():
        raise ModelError(
            f"{path}: sha256 {actual} does not match the expected {expected.lower()}; corrupt or wrong file"
        )


def is_url(source: str | Path) -> bool:
    """Whether ``source`` is a URL this module can fetch (http, https or file)."""
    return isinstance(source, str) and urlparse(source).scheme in _URL_SCHEMES


def resolve_file(
    source: str | Path,
    *,
    sha256: str | None = None,
    download: bool = False,
    cache: str | Path | None = None,
    timeout_s: float = 60.0,
) -> Path:
    """A local path to a model file, verified; a URL is fetched into the cache only if ``download``.

    Args:
        source: a local path, or an http(s)/file URL.
        sha256: expected hex digest; required for URLs (an unchecked download is never used).
        download: allow fetching ``source`` when it is a URL and not already cached.
        cache: cache directory (default ``cache_dir()``); downloads go to ``<cache>/downloads/``.
        timeout_s: network timeout for one download.

    Returns:
        Path of the verified file.

    Raises:
        ModelError: missing file, checksum mismatch, download not allowed or failed.
    """
    if not is_url(source):
        path = Path(source).expanduser()
        if not path.is_file():
            raise ModelError(f"model file not found: {path}")
        if sha256:
            verify_sha256(path, sha256)
        return path
    url = str(source)
    if not sha256:
        raise ModelError(f"{url}: a sha256 is required to use a downloaded model file")
    name = Path(urlparse(url).path).name or "download"
    target = Path(cache or cache_dir()) / "downloads" / sha256.lower()[:16] / name
    if target.is_file() and sha256_file(target) == sha256.lower():
        return target
    if not download:
        raise ModelError(
            f"{name} is not cached at {target}; downloading {url} needs explicit consent: "
            "pass download=True (CLI: --download-weights) or give a local path"
        )
    _download(url, target, sha256.lower(), timeout_s)
    return target


def resolve_known_model(
    name: str = DEFAULT_MODEL,
    *,
    search_dirs: Iterable[str | Path] = (),
    download: bool = False,
    cache: str | Path | None = None,
) -> ModelFiles:
    """Find a registered model's files locally (``search_dirs``, then the cache), or download them if allowed.

    Every file is verified against the registry's sha256, wherever it was found.

    Raises:
        ModelError: unknown name, a file not found (and ``download`` not given), or a checksum mismatch.
    """
    if name not in KNOWN_MODELS:
        raise ModelError(f"unknown model {name!r}; known: {', '.join(sorted(KNOWN_MODELS))}")
    model = KNOWN_MODELS[name]
    dirs = [Path(d) for d in search_dirs]

    def resolve(known: KnownFile) -> Path:
        local = next((d / known.filename for d in dirs if (d / known.filename).is_file()), None)
        if local is not None:
            return resolve_file(local, sha256=known.sha256)
        return resolve_file(known.url, sha256=known.sha256, download=download, cache=cache)

    graph = resolve(model.graph) if model.graph is not None else None
    return ModelFiles(graph, resolve(model.weights), resolve(model.names), model.family)


def _download(url: str, target: Path, sha256: str, timeout_s: float) -> None:
    """Stream ``url`` to a temporary file beside ``target``, check it, then move it into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout_s) as response:
            shutil.copyfileobj(response, out, length=1 << 20)
        actual = sha256_file(tmp)
        if actual != sha256:
            raise ModelError(f"download of {url} has sha256 {actual}, expected {sha256}; not used")
        os.replace(tmp, target)
    except (OSError, urllib.error.URLError) as exc:
        raise ModelError(f"download of {url} failed: {getattr(exc, 'reason', None) or exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)

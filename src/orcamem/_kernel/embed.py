"""Embedders: text to unit-length float32 vectors.

The default is a static (model2vec) distillation of all-MiniLM-L6-v2 shipped inside the
package (``assets/m2v-minilm-l6-v2``, built by ``scripts/build_embedder.py``): no download,
a query costs microseconds. It is loaded with ``tokenizers`` + ``safetensors`` + numpy,
exactly as model2vec's ``StaticModel.encode`` does it, so the query path carries no hub
client. Others plug in by ``embedder=`` spec strings:

- ``static`` / ``static:<folder>`` — a model2vec folder (the default ships with orcamem)
- ``openai:<model>@<base_url>`` — any OpenAI-compatible ``/v1/embeddings`` (Ollama,
  llama.cpp, vLLM); key from ``OPENAI_API_KEY`` if set
- ``st:<name or path>`` — sentence-transformers (``pip install 'orcamem[st]'``)
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from ..errors import DimensionMismatchError, EmbedderError, InvalidInputError
from .env import openai_api_key

__all__ = [
    "DEFAULT_MODEL_DIR",
    "Embedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "StaticEmbedder",
    "check_spec",
    "embed_texts",
    "make_embedder",
]

DEFAULT_MODEL_DIR = Path(__file__).parent / "assets" / "m2v-minilm-l6-v2"
_PLAIN_ASCII = re.compile(r"[\t\n\r\x20-\x7e]*")
"""Text the BERT normaliser changes only by lower-casing (no control characters, no accents)."""
_PRE_TOKEN = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")
"""BERT's pre-tokens of lower-cased plain ASCII: words, and each punctuation mark alone."""
_CACHED_WORDS = 500_000
"""Words whose pieces a static embedder keeps (a few hundred bytes each); then it starts over."""


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into an ``(n, dim)`` float32 array of unit vectors."""

    @property
    def id(self) -> str:
        """A stable name for the model and its weights; recorded per space."""
        ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _normalise(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


class StaticEmbedder:
    """A model2vec static embedding model: token vectors, mean-pooled, L2-normalised."""

    def __init__(self, folder: str | Path = DEFAULT_MODEL_DIR, *, max_tokens: int = 512) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = Path(folder)
        self.folder = folder
        """The model's folder (a bulk ingest's child process loads the same one)."""
        self.max_tokens = max_tokens
        weights = folder / "model.safetensors"
        if not weights.is_file() or not (folder / "tokenizer.json").is_file():
            raise EmbedderError(
                f"no model2vec model in {folder}: it needs model.safetensors and tokenizer.json "
                "(reinstall orcamem, or rebuild the default with scripts/build_embedder.py)"
            )
        tensors = load_file(str(weights))
        self._vectors = np.asarray(
            tensors.get("embeddings", next(iter(tensors.values()))), dtype=np.float32
        )
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        config = (
            json.loads((folder / "config.json").read_text())
            if (folder / "config.json").is_file()
            else {}
        )
        self._normalize_tokens = bool(config.get("normalize", True))
        unk = self._tokenizer.token_to_id("[UNK]")
        self._unk = -1 if unk is None else unk
        self._pieces: dict[str, list[int]] = {}  # word -> its token ids (see _token_ids)
        checksum = hashlib.sha256(weights.read_bytes()).hexdigest()[:12]
        self._id = f"static:{folder.name}@{checksum}"

    @property
    def id(self) -> str:
        return self._id

    @property
    def dim(self) -> int:
        return int(self._vectors.shape[1])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Mean-pooled token vectors of each text, the batch pooled together.

        The texts are taken longest first and their ``k``-th tokens added in one step for
        every ``k``: each text's vectors are summed in its own order, as ``mean`` sums them,
        so a vector is the same to the bit whatever batch it was embedded in."""
        token_ids = self._token_ids(texts)
        counts = np.fromiter(map(len, token_ids), dtype=np.int64, count=len(token_ids))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = np.argsort(-counts, kind="stable")[: int(np.count_nonzero(counts))]
        if not len(order):
            return out
        lengths = counts[order]
        padded = np.zeros((len(order), int(lengths[0])), dtype=np.int64)
        for row, text in enumerate(order.tolist()):
            padded[row, : lengths[row]] = token_ids[text]
        sums = self._vectors[padded[:, 0]]
        taking = np.searchsorted(-lengths, -np.arange(1, int(lengths[0])), side="left")
        for k, rows in enumerate(taking.tolist(), start=1):  # rows: texts with > k tokens
            sums[:rows] += self._vectors[padded[:rows, k]]
        out[order] = sums / lengths[:, None]
        return _normalise(out)

    def _token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids (the first ``max_tokens``, unknown pieces dropped).

        The tokenizer costs ~80 µs a chat line, most of a bulk ingest. The BERT normaliser
        leaves an ASCII text without control characters as it is but for case, and the
        pre-tokeniser splits it into runs of letters and digits and single punctuation marks,
        each word-pieced alone: so such a text is split here and each word's pieces kept from
        the first time the tokenizer made them. Any other text goes to the tokenizer whole
        (``tests/test_ingest.py`` checks both ways give the same ids on any text)."""
        plain = [_PLAIN_ASCII.fullmatch(text) is not None for text in texts]
        split = [
            _PRE_TOKEN.findall(text.lower()) if is_plain else []
            for text, is_plain in zip(texts, plain, strict=True)
        ]
        needed = {word for words in split for word in words}
        pieces = self._pieces  # this call's cache: another thread may start a new one
        if len(pieces) + len(needed) > _CACHED_WORDS:
            pieces = self._pieces = {}
        if missing := sorted(needed.difference(pieces)):
            made = self._tokenizer.encode_batch_fast(missing, add_special_tokens=False)
            pieces.update(zip(missing, (encoding.ids for encoding in made), strict=True))
        others = iter(
            self._tokenizer.encode_batch_fast(
                [text for text, is_plain in zip(texts, plain, strict=True) if not is_plain],
                add_special_tokens=False,
            )
        )
        found = []
        for is_plain, words in zip(plain, split, strict=True):
            if is_plain:
                ids = list(chain.from_iterable(map(pieces.__getitem__, words)))
            else:
                ids = next(others).ids
            ids = ids[: self.max_tokens]
            found.append([i for i in ids if i != self._unk] if self._unk in ids else ids)
        return found


class OpenAIEmbedder:
    """Any OpenAI-compatible ``POST {base_url}/embeddings`` server (Ollama, llama.cpp, vLLM)."""

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        batch_size: int = 64,
    ) -> None:
        from .http import client

        self._model = model
        self._url = base_url.rstrip("/") + "/embeddings"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client(timeout=timeout, headers=headers)
        self._batch = batch_size
        self._dim: int | None = None

    @property
    def id(self) -> str:
        return f"openai:{self._model}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import httpx

        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch):
            chunk = list(texts[start : start + self._batch])
            try:
                response = self._client.post(self._url, json={"model": self._model, "input": chunk})
            except httpx.HTTPError as exc:
                raise EmbedderError(
                    f"embedding server {self._url} unreachable ({exc}): start it or fix the URL"
                ) from exc
            if response.status_code != 200:
                raise EmbedderError(
                    f"embedding server {self._url} answered {response.status_code}: "
                    f"{response.text[:300]}"
                )
            try:
                data = sorted(response.json()["data"], key=lambda item: item.get("index", 0))
                rows.extend(item["embedding"] for item in data)
            except (ValueError, KeyError, TypeError) as exc:
                raise EmbedderError(
                    f"embedding server {self._url} sent no OpenAI-style 'data' list: "
                    f"{response.text[:300]}"
                ) from exc
        if len(rows) != len(texts):
            raise EmbedderError(
                f"embedding server returned {len(rows)} vectors for {len(texts)} texts"
            )
        matrix = (
            _normalise(np.asarray(rows, dtype=np.float32))
            if rows
            else np.zeros((0, self._dim or 0), dtype=np.float32)
        )
        if rows:
            self._dim = matrix.shape[1]
        return matrix

    def close(self) -> None:
        self._client.close()


class SentenceTransformerEmbedder:
    """A sentence-transformers model from a local path or the local cache (optional extra)."""

    def __init__(self, name: str) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise EmbedderError(
                "sentence-transformers is not installed: pip install 'orcamem[st]'"
            ) from None
        self._name = name
        self._model = SentenceTransformer(name, device="cpu")
        self._dim_value = int(self._model.get_sentence_embedding_dimension())

    @property
    def id(self) -> str:
        return f"st:{self._name}"

    @property
    def dim(self) -> int:
        return self._dim_value

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return _normalise(self._model.encode(list(texts), normalize_embeddings=True))


def embed_texts(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """``embedder.embed(texts)``, checked: one row per text, each of the declared dimension.

    Raises:
        DimensionMismatchError: the embedder returned vectors of another length than ``dim``
            (nothing is written with them).
        EmbedderError: a vector holds NaN, an infinity or a value past float16's ±65504,
            which vectors are stored as (PostgreSQL refused the write with its own message;
            SQLite stored a vector that scores nothing).
    """
    matrix = np.asarray(embedder.embed(texts), dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != len(texts) or matrix.shape[1] != embedder.dim:
        raise DimensionMismatchError(
            f"embedder {embedder.id} declares dim {embedder.dim} but returned an array of shape "
            f"{matrix.shape} for {len(texts)} texts: fix the embedder (or its dim) and retry"
        )
    unusable = ~(np.abs(matrix) <= _FLOAT16_MAX).all(axis=1)  # NaN compares False
    if unusable.any():
        raise EmbedderError(
            f"embedder {embedder.id} returned NaN, infinity or values past ±65504 for "
            f"{int(unusable.sum())} of {len(texts)} texts: nothing was written; check the "
            "embedding server and retry"
        )
    return matrix


_FLOAT16_MAX = 65504.0
"""The largest float16, what a stored vector's values are (``vector_index.encode_vector``)."""


def check_spec(spec: str) -> str:
    """``spec`` if it has the form of an embedder spec (see module docs), else the error that
    lists the forms; nothing is loaded or contacted (settings check it before any command)."""
    kind, _, rest = spec.partition(":") if isinstance(spec, str) else ("", "", "")
    if not (
        spec == "static"
        or kind == "static"
        or (kind == "openai" and "@" in rest)
        or (kind == "st" and rest)
    ):
        raise InvalidInputError(
            f"unknown embedder spec {spec!r}: use 'static', 'static:<folder>', "
            "'openai:<model>@<base_url>' or 'st:<model>'"
        )
    return spec


def make_embedder(spec: str | Embedder | None = None) -> Embedder:
    """Build an embedder from a spec string (see module docs) or pass one through."""
    if spec is None or spec == "static":
        return _default_static()
    if not isinstance(spec, str):
        if isinstance(spec, Embedder):
            return spec
        raise InvalidInputError(f"embedder must be a spec string or an Embedder, got {spec!r}")
    kind, _, rest = check_spec(spec).partition(":")
    if kind == "static":
        return StaticEmbedder(rest)
    if kind == "openai":
        model, _, url = rest.partition("@")
        return OpenAIEmbedder(model, url, api_key=openai_api_key())
    return SentenceTransformerEmbedder(rest)


_DEFAULT: StaticEmbedder | None = None


def _default_static() -> StaticEmbedder:
    """The shipped model, loaded once per process (it is read-only and thread-safe)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = StaticEmbedder()
    return _DEFAULT

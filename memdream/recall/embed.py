"""Semantic card ranking, the optional extra ``memdream[embed]`` (docs/recall.md, "Semantic ranking").

A question rarely uses the card's words ("what database do we use" for "billing keeps its rows in
Firebird 4"; memdream.recall.text's table of related words knows a few dozen tools, not every one).
With ``recall.embed.enabled``, a small static embedding model (model2vec: a token table and a mean,
numpy only, no torch) places both near each other; recall fuses that ranking with the word ranking
by reciprocal rank (:func:`fuse`), and a card close enough in meaning counts as answering.

Where the work happens, and why there:

- **dream** (:func:`prepare`, after the run) loads the model through model2vec (a Hugging Face name is
  downloaded once into its cache; a folder is read as it is), keeps a snapshot of it under
  ``.memdream/cache/recall/embed/`` and embeds the cards that are new or changed;
- **recall** (:func:`open_semantic`) reads that snapshot with numpy and ``tokenizers`` only (importing
  model2vec, joblib and huggingface_hub would cost more than the rest of a recall) and spends one
  query vector and one matrix-vector product; it embeds the few cards changed since the last dream
  itself, with the same encoder, and never downloads anything.

Raw events are ranked by meaning too (:meth:`Semantic.raw_fused`): the events closest to the query get a
bonus on their word score before the raw ranking goes on, so that a turn that answers in other words ("we
moved to Denver" for "where does the user live") is among the candidates. Their vectors are made by recall
the first time a segment is ranked by meaning, with the same encoder, and kept beside the card vectors, one
file per segment (segments never change once written: a file is of one segment's sha256 and one model).

Card and query vectors come from one :class:`Encoder` (model2vec's mean pooling, tested against
``StaticModel.encode``), so they always agree. Card vectors are a cache keyed by the card index's stamp
and the model's fingerprint: a file of another stamp or model is never used as it is; its rows are
reused only for cards whose embedded text (digest) is unchanged under the same model.

Without the extra or with the setting off, nothing here is imported (numpy neither).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdream.memory import cachefile
from memdream.memory.paths import MemoryPaths
from memdream.recall.index import CardDoc, CardIndex, SegmentIndex, cache_dir, event_text, read_events

if TYPE_CHECKING:
    import numpy as np

    from memdream.memory.store import Memory
    from memdream.recall.rank import RawRanker

# Reciprocal rank fusion's constant (Cormack, Clarke & Büttcher, SIGIR 2009, and the default of most
# hybrid search engines): 1/(60 + rank) makes the first and the tenth place of one ranking worth almost
# the same (1/61 vs 1/70), so a card that both rankings place well beats one that only one places first.
# That is what two rankings of unlike scales (BM25 on words, cosine on meaning) can be trusted for.
RRF_K = 60
# The cards closest in meaning that take part in the fusion (and may answer without a shared word):
# more would let a vague likeness crowd the room the word ranking and the raw events need.
SEMANTIC_HEAD = 20
# The raw events closest in meaning that get a bonus, and its size: the best of them gets this share of the
# best word score, the twentieth almost none. Chosen on LoCoMo with a real model (README, "Recall quality on
# LoCoMo"): 0.2-0.3 and 10-20 events all gained at 2, 4 and 8 KB; fusing by reciprocal rank instead of
# adding lost 3 points, the flat scale of ranks misleading the feedback and episode steps after it.
RAW_SEMANTIC_HEAD = 20
RAW_SEMANTIC_WEIGHT = 0.3
VECTORS_VERSION = 1
EXTRA = "pip install 'memdream[embed]'"
MODEL_POINTER = "model.pickle"  # which snapshot folder holds the model of which setting


class EmbedUnavailable(Exception):
    """Embedding is on but cannot run (the extra, the model or its snapshot is missing): one line."""


@dataclass(frozen=True)
class EmbedSettings:
    """``recall.embed`` of memdream.yaml, when enabled."""

    model: str  # a Hugging Face model name or a local folder
    min_similarity: float  # cosine at which a card answers by meaning alone

    @classmethod
    def of(cls, section: dict[str, Any]) -> EmbedSettings | None:
        if not section.get("enabled"):
            return None
        return cls(str(section["model"]), float(section["min_similarity"]))


def extra_installed() -> bool:
    """Whether model2vec (and so numpy and tokenizers) is installed, without importing it."""
    return importlib.util.find_spec("model2vec") is not None


def embed_dir(paths: MemoryPaths) -> Path:
    return cache_dir(paths) / "embed"


# -- the encoder -----------------------------------------------------------------------------------
class Encoder:
    """A model2vec static model as recall uses it: token ids from its tokenizer, the mean of their
    vectors (through the vocabulary mapping and token weights when the model has them), as
    ``StaticModel.encode`` computes it; rows come back unit length (zero for a text with no known token)."""

    def __init__(self, folder: Path) -> None:
        import numpy as np
        from tokenizers import Tokenizer

        info = json.loads((folder / "info.json").read_text(encoding="utf-8"))
        self.fingerprint: str = info["fingerprint"]
        self.max_length: int | None = info["max_length"]
        self.median_token_length: int = info["median_token_length"]
        self.unknown: int | None = info["unknown"]
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        if self.max_length is None:
            self.tokenizer.no_truncation()
        else:
            self.tokenizer.enable_truncation(self.max_length)
        # Memory-mapped: a query touches a few rows of the table, not all of it.
        self.vectors = np.load(folder / "vectors.npy", mmap_mode="r")
        self.weights = np.load(folder / "weights.npy") if (folder / "weights.npy").exists() else None
        self.mapping = np.load(folder / "mapping.npy") if (folder / "mapping.npy").exists() else None

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def encode(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        if self.max_length is not None:  # as model2vec: characters beyond what max_length tokens can hold
            texts = [text[: self.max_length * self.median_token_length] for text in texts]
        found = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, encoding in enumerate(self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)):
            ids = [token for token in encoding.ids if token != self.unknown]
            if ids:
                found[row] = self._mean(ids)
        norms = np.linalg.norm(found, axis=1, keepdims=True)
        return found / np.where(norms > 0, norms, 1.0)

    def _mean(self, ids: list[int]) -> np.ndarray:
        import numpy as np

        rows = np.asarray(self.vectors[ids if self.mapping is None else self.mapping[ids]], dtype=np.float32)
        if self.weights is not None:
            rows = rows * self.weights[ids][:, None]
        mean: np.ndarray = rows.mean(axis=0)
        return mean


def write_snapshot(model: Any, name: str, where: Path) -> str:
    """Keep ``model`` (a loaded ``StaticModel``) under ``where`` as :class:`Encoder` reads it; its
    fingerprint. A new model goes into a folder of its own, then the pointer moves to it (atomic), so a
    recall running meanwhile reads the old model or the new one, never half of each."""
    import numpy as np

    fingerprint = model_fingerprint(model)
    current = _pointer(where)
    if current is not None and current.get("fingerprint") == fingerprint and (where / current["folder"]).is_dir():
        return fingerprint
    folder = where / f"model-{fingerprint[:16]}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    np.save(folder / "vectors.npy", np.ascontiguousarray(model.embedding))
    if model.weights is not None:
        np.save(folder / "weights.npy", np.ascontiguousarray(model.weights, dtype=np.float32))
    if model.token_mapping is not None:
        np.save(folder / "mapping.npy", np.ascontiguousarray(model.token_mapping, dtype=np.int64))
    model.tokenizer.save(str(folder / "tokenizer.json"))
    info = {"fingerprint": fingerprint, "max_length": model.max_length, "unknown": model.unk_token_id,
            "median_token_length": int(model.median_token_length)}
    (folder / "info.json").write_text(json.dumps(info), encoding="utf-8")
    cachefile.write(where / MODEL_POINTER, VECTORS_VERSION, {"model": name, "fingerprint": fingerprint,
                                                             "folder": folder.name})
    for old in where.glob("model-*"):
        if old != folder:
            shutil.rmtree(old, ignore_errors=True)
    return fingerprint


def model_fingerprint(model: Any) -> str:
    """What the vectors depend on: the token table, mapping, weights, tokenizer and length limit."""
    import numpy as np

    digest = hashlib.blake2b(digest_size=16)
    for part in (model.embedding, model.weights, model.token_mapping):
        digest.update(b"-" if part is None else np.ascontiguousarray(part).tobytes())
    digest.update(model.tokenizer.to_str().encode("utf-8"))
    digest.update(str(model.max_length).encode())
    return digest.hexdigest()


def _pointer(where: Path) -> dict[str, str] | None:
    found = cachefile.read(where / MODEL_POINTER, VECTORS_VERSION)
    return found if isinstance(found, dict) else None


def open_encoder(paths: MemoryPaths, model: str) -> Encoder:
    """The snapshot that dream prepared for ``model``; :class:`EmbedUnavailable` when there is none."""
    where = embed_dir(paths)
    pointer = _pointer(where)
    if pointer is None or pointer.get("model") != model:
        raise EmbedUnavailable(f"recall.embed: model {model} is not prepared yet (`memdream dream` prepares it)")
    try:
        return Encoder(where / pointer["folder"])
    except Exception as error:  # a damaged snapshot: numpy, json and tokenizers raise their own kinds
        raise EmbedUnavailable(f"recall.embed: the prepared model cannot be read ({error}); "
                               "`memdream dream` prepares it again") from None


# -- card vectors ------------------------------------------------------------------------------------
@dataclass
class CardVectors:
    """One unit vector per card of one card index build (rows in its doc numbers)."""

    stamp: str  # CardIndex.stamp: the cards these rows are of
    model: str  # Encoder.fingerprint: the model that made them
    digests: list[str]  # per row, the digest of the card text embedded
    matrix: Any  # numpy array (cards, dim), float32


@dataclass
class EmbedCounter:
    """Cards this process embedded (tests: only new and changed cards are)."""

    cards: int = 0


EMBEDDED = EmbedCounter()


def card_text(doc: CardDoc) -> str:
    """What a card means: its statement, and the parts of its fact key the statement does not name."""
    statement = doc.statement
    extra = [part for part in (doc.subject, doc.attribute, doc.value) if part and part.lower() not in statement.lower()]
    return " ".join([statement, *extra])


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


def card_vectors(paths: MemoryPaths, index: CardIndex, encoder: Encoder) -> CardVectors:
    """The vectors of ``index``'s cards: read when made for this index and model; else made again,
    reusing the rows of cards whose text is unchanged, and written for the next recall."""
    path = embed_dir(paths) / "cards.pickle"
    cached = cachefile.read(path, VECTORS_VERSION)
    if isinstance(cached, CardVectors) and cached.stamp == index.stamp and cached.model == encoder.fingerprint:
        return cached
    reusable = cached if isinstance(cached, CardVectors) and cached.model == encoder.fingerprint else None
    vectors = _embed_cards(index, encoder, reusable)
    cachefile.write(path, VECTORS_VERSION, vectors)
    return vectors


def _embed_cards(index: CardIndex, encoder: Encoder, old: CardVectors | None) -> CardVectors:
    import numpy as np

    texts = [card_text(index.doc(number)) for number in range(len(index))]
    digests = [_digest(text) for text in texts]
    rows = {digest: row for row, digest in enumerate(old.digests)} if old is not None else {}
    matrix = np.zeros((len(texts), encoder.dim), dtype=np.float32)
    missing = []
    for number, digest in enumerate(digests):
        row = rows.get(digest)
        if row is None or old is None:
            missing.append(number)
        else:
            matrix[number] = old.matrix[row]
    if missing:
        matrix[missing] = encoder.encode([texts[number] for number in missing])
        EMBEDDED.cards += len(missing)
    return CardVectors(stamp=index.stamp, model=encoder.fingerprint, digests=digests, matrix=matrix)


# -- recall: the cards closest in meaning, and the fusion ----------------------------------------------
class Semantic:
    """The meaning side of one memory's card ranking: the encoder and the card vectors, loaded once."""

    def __init__(self, index: CardIndex, encoder: Encoder, vectors: CardVectors, min_similarity: float) -> None:
        self.index = index
        self.encoder = encoder
        self.matrix = vectors.matrix
        self.min_similarity = min_similarity
        self._query: tuple[str, Any] | None = None  # the last query and its vector: cards and raw events share it

    def query_vector(self, query: str) -> np.ndarray:
        """The query's unit vector, made once for the card side and the raw side of one recall."""
        if self._query is None or self._query[0] != query:
            self._query = (query, self.encoder.encode([query])[0])
        vector: np.ndarray = self._query[1]
        return vector

    def closest(self, query: str, accept: Callable[[int], bool] | None) -> dict[int, float]:
        """The cards (at most SEMANTIC_HEAD) whose cosine with ``query`` is at least the setting's,
        closest first, each with its cosine; ``accept`` as :func:`memdream.recall.rank.rank_cards`'s."""
        import numpy as np

        if not len(self.index):
            return {}
        cosines = self.matrix @ self.query_vector(query)
        if accept is None:
            cosines = np.where(np.frombuffer(self.index.active, dtype=np.uint8) == 1, cosines, -1.0)
        above = np.flatnonzero(cosines >= self.min_similarity)
        found: dict[int, float] = {}
        for number in above[np.argsort(-cosines[above], kind="stable")]:
            if accept is None or accept(int(number)):
                found[int(number)] = float(cosines[number])
                if len(found) == SEMANTIC_HEAD:
                    break
        return found

    def fused(self, query: str, relevance: dict[int, float], accept: Callable[[int], bool] | None
              ) -> tuple[dict[int, float], dict[int, float]]:
        """(relevance, closest): the word relevance of the cards fused with their closeness in meaning
        (:func:`fuse`), and the cards close enough to answer by meaning alone, with their cosine. The one
        place where recall's card ranking meets meaning."""
        closest = self.closest(query, accept)
        if not closest:
            return relevance, closest
        active = self.index.active
        # Ranks among the cards that can be shown: an archived card above would only push the others down.
        eligible = {number: value for number, value in relevance.items()
                    if (active[number] if accept is None else accept(number))}
        return fuse(eligible, closest), closest


    def raw_fused(self, paths: MemoryPaths, ranker: RawRanker, query: str, scores: dict[int, float]
                  ) -> dict[int, float]:
        """``scores`` (the raw ranking's first stage: BM25 per global event number) with a bonus for the
        :data:`RAW_SEMANTIC_HEAD` events closest to ``query`` in meaning: :data:`RAW_SEMANTIC_WEIGHT` of the
        best word score for the closest, falling to none. A new dict; with no word score at all, the
        bonus alone (an answer in none of the question's words is still found)."""
        import numpy as np

        if not ranker.documents:
            return scores
        vector = self.query_vector(query)
        cosines = np.concatenate([segment_vectors(paths, segment, self.encoder) @ vector
                                  for segment in ranker.segments])
        head = min(RAW_SEMANTIC_HEAD, len(cosines))
        closest = np.argpartition(-cosines, head - 1)[:head]
        closest = closest[np.argsort(-cosines[closest], kind="stable")]
        best = max(scores.values(), default=0.0) or 1.0
        fused = dict(scores)
        for place, event in enumerate(closest.tolist()):
            if cosines[event] <= 0.0:
                break  # nothing in common with the query at all
            fused[event] = fused.get(event, 0.0) + RAW_SEMANTIC_WEIGHT * best * (1 - place / RAW_SEMANTIC_HEAD)
        return fused


def segment_vectors(paths: MemoryPaths, segment: SegmentIndex, encoder: Encoder) -> np.ndarray:
    """One unit vector (float16: half the bytes, the same order) per event of the segment's index, in its
    doc numbers. A ``.npy`` file per segment, named by the segment's sha256 and the model's fingerprint,
    mapped rather than read (a recall touches it once, in one product; unpickling 50,000 rows a call cost
    more than the rest of the recall), and kept per process for a batch or the MCP server; made again when
    it is missing, damaged or of another shape."""
    import numpy as np

    stem = Path(segment.segment).stem
    path = embed_dir(paths) / f"raw-{stem}-{segment.sha256[:16]}-{encoder.fingerprint[:16]}.npy"
    key = str(path)
    matrix: np.ndarray | None = _SEGMENT_VECTORS.get(key)
    if matrix is not None:
        return matrix
    try:
        matrix = np.load(path, mmap_mode="r", allow_pickle=False)
        if matrix.shape != (len(segment.offsets), encoder.dim) or matrix.dtype != np.float16:
            matrix = None
    except (OSError, ValueError):
        matrix = None
    if matrix is None:
        offsets = list(segment.offsets)
        events = read_events(paths, segment.segment, offsets)
        matrix = encoder.encode([event_text(events[offset]) for offset in offsets]).astype(np.float16)
        _write_vectors(path, matrix, stale=path.parent.glob(f"raw-{stem}-*.npy"))
    _SEGMENT_VECTORS[key] = matrix
    return matrix


# Segment vectors this process has read, by file: a batch of queries or the MCP server maps each once.
_SEGMENT_VECTORS: dict[str, Any] = {}


def _write_vectors(path: Path, matrix: np.ndarray, stale: Iterable[Path]) -> None:
    """Write the ``.npy`` file whole or not at all (a temporary file renamed), and drop the segment's files
    of another content or model. A read-only or full disk only costs the next recall the work again."""
    import numpy as np

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for old in stale:
            if old != path:
                old.unlink(missing_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(temporary, "wb") as handle:
            np.save(handle, matrix, allow_pickle=False)
        os.replace(temporary, path)
    except OSError:
        pass


def fuse(lexical: dict[int, float], closest: dict[int, float], k: int = RRF_K) -> dict[int, float]:
    """Reciprocal rank fusion of the word ranking (``lexical``: relevance per card) and the meaning
    ranking (``closest``: cosine per card): Σ 1/(k + rank) over the rankings a card is in, rank 1 the
    best, cards of equal score at the same rank; scaled so that the best card has 1 (the scale relevance
    has in a card's score). Nothing close in meaning: the word ranking, unchanged."""
    if not closest:
        return lexical
    fused: dict[int, float] = {}
    for ranking in (lexical, closest):
        for number, rank in _ranks(ranking).items():
            fused[number] = fused.get(number, 0.0) + 1.0 / (k + rank)
    best = max(fused.values())
    return {number: value / best for number, value in fused.items()}


def _ranks(scores: dict[int, float]) -> dict[int, int]:
    """1 for the best; equal scores share the better rank (1, 2, 2, 4)."""
    ranks: dict[int, int] = {}
    previous: float | None = None
    rank = 0
    for place, (number, score) in enumerate(sorted(scores.items(), key=lambda pair: (-pair[1], pair[0])), 1):
        if score != previous:
            rank, previous = place, score
        ranks[number] = rank
    return ranks


_WARNED: set[str] = set()


def warn(message: str) -> None:
    """One line on stderr, once per process (recall serves many queries; the hook runs every turn)."""
    if message not in _WARNED:
        _WARNED.add(message)
        sys.stderr.write(f"memdream: warning: {message}\n")


def open_semantic(paths: MemoryPaths, index: CardIndex, settings: EmbedSettings) -> Semantic | None:
    """The meaning side for recall, or None (and a warning: recall then ranks by words, as without
    the extra) when the extra is missing or dream has not prepared the model."""
    if not extra_installed():
        warn(f"recall.embed is enabled but the embed extra is not installed ({EXTRA}): ranking by words only")
        return None
    try:
        encoder = open_encoder(paths, settings.model)
    except EmbedUnavailable as error:
        warn(f"{error}: ranking by words only")
        return None
    return Semantic(index, encoder, card_vectors(paths, index, encoder), settings.min_similarity)


# -- dream: the model, and the vectors of new and changed cards -----------------------------------------
def model_source(root: Path, model: str) -> str:
    """A model setting as model2vec takes it: a folder (``~`` expanded; relative to the memory when it
    is there), else the Hugging Face name as written."""
    path = Path(os.path.expanduser(model))
    if not path.is_absolute() and (root / path).is_dir():
        path = root / path
    return str(path) if path.is_dir() else model


def load_model(root: Path, model: str) -> Any:
    """The ``StaticModel`` of the setting: a local folder, or a Hugging Face name downloaded on first
    use into the Hugging Face cache and read from there afterwards."""
    if not extra_installed():
        raise EmbedUnavailable(f"recall.embed is enabled but the embed extra is not installed ({EXTRA})")
    from model2vec import StaticModel

    try:
        return StaticModel.from_pretrained(model_source(root, model), force_download=False)
    except Exception as error:  # a missing folder, no network, a broken file: model2vec and the hub raise many kinds
        raise EmbedUnavailable(f"recall.embed: model {model} cannot be loaded: "
                               f"{' '.join(str(error).split())[:300]}") from None


@dataclass
class Prepared:
    """What :func:`prepare` did: cards embedded now, cards in the index, or why it could not."""

    embedded: int = 0
    cards: int = 0
    warning: str | None = None


def prepare(memory: Memory) -> Prepared | None:
    """After a dream: the model snapshot (made again when the model changed) and the vectors of the
    cards new or changed since (building the card index, which the next recall would build anyway).
    None when embedding is off; never raises for a model that cannot be had: dream's work is done and
    committed, and recall ranks by words until the model is there (``warning`` says why)."""
    settings = EmbedSettings.of(memory.settings.get("recall.embed"))
    if settings is None:
        return None
    from memdream.recall.index import load_card_index

    try:
        model = load_model(memory.root, settings.model)
        write_snapshot(model, settings.model, embed_dir(memory.paths))
        encoder = open_encoder(memory.paths, settings.model)
    except EmbedUnavailable as error:
        return Prepared(warning=f"{error}: recall ranks by words only")
    index = load_card_index(memory.paths, lambda: memory)
    before = EMBEDDED.cards
    card_vectors(memory.paths, index, encoder)
    return Prepared(embedded=EMBEDDED.cards - before, cards=len(index))

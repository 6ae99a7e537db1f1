"""Semantic card ranking (recall.embed, the extra memdream[embed]) on a real memory, with a tiny model2vec
model this test builds itself: a numpy matrix and a `tokenizers` WordLevel vocabulary, saved with
save_pretrained and loaded by path from memdream.yaml as a user's local model is (no download here).

The tiny model places "database" next to "firebird" (a database the word table of recall.text does not
list), and "pasta" next to "cooking": the words that decide the tests; every other word is unknown to it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memdream import yamlio
from memdream.memory.paths import MemoryPaths
from memdream.recall import embed
from memdream.recall.embed import fuse
from tests.recall.helpers import commit_all, message, write_events

needs_model2vec = pytest.mark.skipif(not embed.extra_installed(),
                                     reason="model2vec is not installed (pip install 'memdream[embed]')")

QUESTION = "what database do we use"  # not one word in common with the Firebird card
WORD_VECTORS = {
    "[UNK]": [0.0, 0.0, 0.0, 0.0],
    "database": [1.0, 0.1, 0.0, 0.0],
    "firebird": [0.9, 0.2, 0.0, 0.0],
    "pasta": [0.0, 0.0, 1.0, 0.0],
    "cooking": [0.0, 0.0, 0.9, 0.3],
    "deploy": [0.0, 1.0, 0.0, 0.2],
}


def build_model(folder: Path, weights: list[float] | None = None, mapping: list[int] | None = None) -> Any:
    """A model2vec StaticModel made of WORD_VECTORS, saved in ``folder`` (with token weights and a
    vocabulary mapping, as quantized models have, when given)."""
    import numpy as np
    from model2vec import StaticModel
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    words = list(WORD_VECTORS)
    tokenizer = Tokenizer(models.WordLevel({word: number for number, word in enumerate(words)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    vectors = np.array([WORD_VECTORS[word] for word in words], dtype=np.float32)
    model = StaticModel(vectors=vectors if mapping is None else vectors[: max(mapping) + 1], tokenizer=tokenizer,
                        normalize=True, weights=None if weights is None else np.array(weights, dtype=np.float32),
                        token_mapping=None if mapping is None else np.array(mapping, dtype=np.int64))
    model.save_pretrained(folder)
    return model


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not embed.extra_installed():
        pytest.skip("model2vec is not installed")
    folder = tmp_path_factory.mktemp("models") / "tiny"
    build_model(folder)
    return folder


@pytest.fixture(autouse=True)
def fresh_warnings() -> None:
    embed._WARNED.clear()  # warnings are once per process: each test is a process of its own here
    embed._SEGMENT_VECTORS.clear()  # and so are the raw vectors read


def remember(run: Any, memory: Path, subject: str, attribute: str, value: str, text: str) -> None:
    result = run("remember", text, "--subject", subject, "--attribute", attribute, "--value", value, "-m", memory)
    assert result.exit_code == 0, result.stderr


@pytest.fixture
def dreamed(memory: Path, run: Any, tmp_path: Path) -> Path:
    """A memory whose dream made cards of three notes (one is the database, in none of the question's
    words), and a raw event that holds a word of the question: a card must answer as well as it does."""
    said = [message("s-1", "m1", "2026-11-20T10:00:00Z", "the database migration ran on Tuesday")]
    assert run("ingest", write_events(tmp_path / "chat.jsonl", said), "-m", memory).exit_code == 0
    remember(run, memory, "billing-service", "storage", "Firebird 4 on port 3050",
             "The billing service keeps its rows in Firebird 4 on port 3050")
    remember(run, memory, "pasta", "cooking-time", "nine minutes", "Pasta cooking takes nine minutes")
    remember(run, memory, "release", "command", "make deploy ENV=prod", "Releases deploy with make deploy ENV=prod")
    dream(run, memory)
    return memory


def dream(run: Any, memory: Path) -> dict[str, Any]:
    result = run("dream", "-m", memory, "--format", "json")
    assert result.exit_code == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def enable(memory: Path, model: Path | str, **more: Any) -> None:
    config = yamlio.load_file(memory / "memdream.yaml")
    config["recall"]["embed"] = {"enabled": True, "model": str(model), **more}
    yamlio.dump_file(memory / "memdream.yaml", config)
    commit_all(memory)


def recall(run: Any, memory: Path, query: str, *args: str) -> tuple[dict[str, Any], str]:
    result = run("recall", query, "-m", memory, "--format", "json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def card_statements(data: dict[str, Any]) -> list[str]:
    return [item["text"] for item in data["items"] if item["source"] == "card"]


def firebird_card(memory: Path) -> Path:
    return next(path for path in (memory / "cards" / "facts").glob("*.yaml") if "Firebird" in path.read_text())


# -- the encoder is model2vec's ---------------------------------------------------------------------------
@needs_model2vec
@pytest.mark.parametrize("quantized", [False, True])
def test_encoder_computes_what_static_model_encode_does(tmp_path: Path, quantized: bool) -> None:
    """Recall's encoder reads the snapshot without model2vec: its vectors are StaticModel.encode's (with
    a vocabulary mapping and token weights too, as vocabulary-quantized models have)."""
    import numpy as np
    from model2vec import StaticModel

    if quantized:
        build_model(tmp_path / "model", weights=[0.0, 2.0, 1.0, 0.5, 1.5, 1.0], mapping=[0, 1, 1, 2, 3, 4])
    else:
        build_model(tmp_path / "model")
    model = StaticModel.from_pretrained(tmp_path / "model", force_download=False)
    embed.write_snapshot(model, "tiny", tmp_path / "snapshot")
    pointer = embed._pointer(tmp_path / "snapshot")
    assert pointer is not None
    encoder = embed.Encoder(tmp_path / "snapshot" / pointer["folder"])
    texts = ["What DATABASE do we use?", "firebird 4, pasta and cooking", "nothing known here", ""]
    expected = model.encode(texts, normalize=False)
    norms = np.linalg.norm(expected, axis=1, keepdims=True)
    expected = expected / np.where(norms > 0, norms, 1.0)
    assert np.allclose(encoder.encode(texts), expected, atol=1e-6)


# -- ranking by meaning ---------------------------------------------------------------------------------
@needs_model2vec
def test_a_card_that_shares_no_word_with_the_question_is_found_by_meaning(dreamed: Path, run: Any,
                                                                          tiny_model: Path) -> None:
    without, _ = recall(run, dreamed, QUESTION)
    assert not any("Firebird" in text for text in card_statements(without))
    enable(dreamed, tiny_model)
    dream(run, dreamed)  # prepares the model and the cards' vectors
    found, stderr = recall(run, dreamed, QUESTION, "--explain")
    assert stderr == ""
    cards = [item for item in found["items"] if item["source"] == "card"]
    assert len(cards) == 1 and "Firebird" in cards[0]["text"]
    relevance = cards[0]["explain"]["relevance"]
    assert relevance["matched"] == [] and relevance["meaning_similarity"] > 0.9
    # Words still rank as before: a question in the card's own words finds it first.
    assert "Firebird" in card_statements(recall(run, dreamed, "firebird port")[0])[0]
    # A question close to nothing in meaning or in words gets no card.
    assert card_statements(recall(run, dreamed, "weather tomorrow")[0]) == []


@needs_model2vec
def test_min_similarity_bounds_what_answers_by_meaning(dreamed: Path, run: Any, tiny_model: Path) -> None:
    enable(dreamed, tiny_model, min_similarity=0.999)  # database vs firebird: 0.99
    dream(run, dreamed)
    assert not any("Firebird" in text for text in card_statements(recall(run, dreamed, QUESTION)[0]))


# -- vectors: computed at dream time, only for new and changed cards; a stale file never used -------------
@needs_model2vec
def test_dream_embeds_only_new_and_changed_cards(dreamed: Path, run: Any, tiny_model: Path) -> None:
    enable(dreamed, tiny_model)
    before = embed.EMBEDDED.cards
    dream(run, dreamed)
    assert embed.EMBEDDED.cards - before == 3
    assert (dreamed / ".memdream" / "cache" / "recall" / "embed" / "cards.pickle").exists()
    recall(run, dreamed, QUESTION)
    dream(run, dreamed)  # nothing new
    assert embed.EMBEDDED.cards - before == 3
    remember(run, dreamed, "pasta", "brand", "Barilla", "The pasta brand is Barilla")
    dream(run, dreamed)
    assert embed.EMBEDDED.cards - before == 4  # the new card alone
    recall(run, dreamed, QUESTION)
    assert embed.EMBEDDED.cards - before == 4  # recall read what dream made


@needs_model2vec
def test_a_stale_vector_file_is_not_used(dreamed: Path, run: Any, tiny_model: Path) -> None:
    """The card changes meaning after the dream that embedded it: recall embeds that card again (its
    row in the old file belongs to another text) and no longer finds it for the database question."""
    enable(dreamed, tiny_model)
    dream(run, dreamed)
    assert any("Firebird" in text for text in card_statements(recall(run, dreamed, QUESTION)[0]))
    path = firebird_card(dreamed)
    path.write_text(path.read_text().replace("Firebird 4 on port 3050", "pasta cooking at home"))
    commit_all(dreamed)
    before = embed.EMBEDDED.cards
    data, _ = recall(run, dreamed, QUESTION)
    assert not any("pasta cooking at home" in text for text in card_statements(data))
    assert embed.EMBEDDED.cards - before == 1  # that card only: the others' texts are unchanged


@needs_model2vec
def test_vectors_of_another_model_or_a_damaged_file_are_made_again(dreamed: Path, run: Any,
                                                                    tiny_model: Path) -> None:
    enable(dreamed, tiny_model)
    dream(run, dreamed)
    vectors = dreamed / ".memdream" / "cache" / "recall" / "embed" / "cards.pickle"
    vectors.write_bytes(b"not a pickle")
    before = embed.EMBEDDED.cards
    assert any("Firebird" in text for text in card_statements(recall(run, dreamed, QUESTION)[0]))
    assert embed.EMBEDDED.cards - before == 3
    # Another model (a changed table under the same setting): every card is embedded again.
    build_model(tiny_model.parent / "other")
    enable(dreamed, tiny_model.parent / "other")
    dream(run, dreamed)
    assert embed.EMBEDDED.cards - before == 3  # the same vectors: same fingerprint, rows reused
    import numpy as np
    from model2vec import StaticModel

    changed = StaticModel.from_pretrained(tiny_model.parent / "other", force_download=False)
    changed.embedding = changed.embedding * np.float32(2.0)
    changed.save_pretrained(tiny_model.parent / "other")
    dream(run, dreamed)
    assert embed.EMBEDDED.cards - before == 6


# -- enabled but not there: a warning, and ranking by words ------------------------------------------------
@needs_model2vec
def test_enabled_before_any_dream_warns_and_ranks_by_words(dreamed: Path, run: Any, tiny_model: Path) -> None:
    words_only, _ = recall(run, dreamed, QUESTION)
    enable(dreamed, tiny_model)
    data, stderr = recall(run, dreamed, QUESTION)
    assert stderr == (f"memdream: warning: recall.embed: model {tiny_model} is not prepared yet "
                      "(`memdream dream` prepares it): ranking by words only\n")
    assert data["items"] == words_only["items"]


def test_enabled_without_the_extra_warns_at_dream_and_recall(dreamed: Path, run: Any,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    words_only, _ = recall(run, dreamed, QUESTION)
    enable(dreamed, "minishlab/potion-base-8M")
    monkeypatch.setattr(embed, "extra_installed", lambda: False)
    report = dream(run, dreamed)
    hint = "recall.embed is enabled but the embed extra is not installed (pip install 'memdream[embed]')"
    assert report["warnings"] == [f"{hint}: recall ranks by words only"]
    data, stderr = recall(run, dreamed, QUESTION)
    assert stderr == f"memdream: warning: {hint}: ranking by words only\n"
    assert data["items"] == words_only["items"]


@needs_model2vec
def test_a_model_that_cannot_be_had_is_a_warning_of_the_dream(dreamed: Path, run: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # as on a machine without the network: no download tried
    enable(dreamed, "nobody/no-such-model")
    report = dream(run, dreamed)
    assert len(report["warnings"]) == 1, report["warnings"]
    assert report["warnings"][0].startswith("recall.embed: model nobody/no-such-model cannot be loaded: ")
    assert report["warnings"][0].endswith(": recall ranks by words only")


# -- off: nothing imported -------------------------------------------------------------------------------
PROBE = ("import sys\nfrom memdream.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
         "print(sorted(name for name in ('numpy', 'model2vec', 'tokenizers', 'memdream.recall.embed') "
         "if name in sys.modules))\n")


def _imported(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True)
    found: list[str] = json.loads(done.stdout.strip().splitlines()[-1].replace("'", '"'))
    return found


def test_with_embedding_off_recall_and_dream_import_none_of_it(dreamed: Path) -> None:
    assert _imported("recall", QUESTION, "-m", str(dreamed)) == []
    assert _imported("dream", "-m", str(dreamed)) == []


@needs_model2vec
def test_with_embedding_on_recall_imports_numpy_and_tokenizers_not_model2vec(dreamed: Path, run: Any,
                                                                            tiny_model: Path) -> None:
    enable(dreamed, tiny_model)
    dream(run, dreamed)
    assert _imported("recall", QUESTION, "-m", str(dreamed)) == ["memdream.recall.embed", "numpy", "tokenizers"]


# -- the fusion --------------------------------------------------------------------------------------------
def test_reciprocal_rank_fusion() -> None:
    lexical = {1: 1.0, 2: 0.5, 3: 0.5, 4: 0.1}
    closest = {5: 0.9, 2: 0.8}
    fused = fuse(lexical, closest)
    raw = {1: 1 / 61, 2: 1 / 62 + 1 / 62, 3: 1 / 62, 4: 1 / 64, 5: 1 / 61}  # 2 and 3 share rank 2
    assert fused == pytest.approx({number: value / raw[2] for number, value in raw.items()})
    assert max(fused, key=fused.__getitem__) == 2  # placed well by both rankings: first
    assert fuse(lexical, {}) is lexical  # nothing close in meaning: the word ranking as it was


def test_model_setting_is_a_folder_or_a_hub_name(tmp_path: Path) -> None:
    (tmp_path / "models" / "mine").mkdir(parents=True)
    assert embed.model_source(tmp_path, "models/mine") == str(tmp_path / "models" / "mine")
    assert embed.model_source(tmp_path, str(tmp_path / "models" / "mine")) == str(tmp_path / "models" / "mine")
    assert embed.model_source(tmp_path, "minishlab/potion-base-8M") == "minishlab/potion-base-8M"


# -- raw events by meaning --------------------------------------------------------------------------------
@pytest.fixture
def chat_only(memory: Path, run: Any, tmp_path: Path) -> Path:
    """A memory of raw events only: one says where the rows live, in none of the question's words; the
    rest are about other things (words the tiny model does not know)."""
    said = [message("s-1", f"m{number}", f"2026-11-20T10:{number:02d}:00Z", text) for number, text in enumerate(
        ["billing keeps its rows in firebird", "lunch was good today", "the printer on floor two is jammed",
         "remember the offsite next spring", "our standup moved to ten"])]
    assert run("ingest", write_events(tmp_path / "chat.jsonl", said), "-m", memory).exit_code == 0
    dream(run, memory)
    return memory


def raw_texts(data: dict[str, Any]) -> list[str]:
    return [item["text"] for item in data["items"] if item["source"] == "raw"]


@needs_model2vec
def test_a_raw_event_in_other_words_is_found_by_meaning(chat_only: Path, run: Any, tiny_model: Path) -> None:
    without, _ = recall(run, chat_only, QUESTION)
    assert not any("firebird" in text for text in raw_texts(without))
    enable(chat_only, tiny_model)
    dream(run, chat_only)  # prepares the model
    found, stderr = recall(run, chat_only, QUESTION)
    assert stderr == ""
    assert "firebird" in raw_texts(found)[0]
    # Meaning adds to words, it does not replace them: a question in an event's own words finds that event.
    assert "printer" in raw_texts(recall(run, chat_only, "printer jammed")[0])[0]


@needs_model2vec
def test_raw_vectors_are_made_once_a_segment_and_model(chat_only: Path, run: Any, tiny_model: Path) -> None:
    enable(chat_only, tiny_model)
    dream(run, chat_only)
    recall(run, chat_only, QUESTION)
    [made] = list(embed.embed_dir(MemoryPaths(chat_only)).glob("raw-*.npy"))
    first = made.stat().st_mtime_ns
    embed._SEGMENT_VECTORS.clear()  # as a new process would: the file is read, not made again
    recall(run, chat_only, "where do the rows live")
    assert made.stat().st_mtime_ns == first
    made.write_bytes(b"damaged")
    embed._SEGMENT_VECTORS.clear()
    again, stderr = recall(run, chat_only, QUESTION)
    assert stderr == "" and "firebird" in raw_texts(again)[0]  # a damaged file is made again
    assert made.read_bytes() != b"damaged"
    assert [path.name for path in made.parent.glob("raw-*")] == [made.name]

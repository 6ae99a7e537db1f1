from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memdream import yamlio
from memdream.memory.card import Card
from tests.conftest import card_data


def test_timestamps_stay_strings() -> None:
    data = yamlio.loads("created_at: 2026-11-07T09:40:00Z\nday: 2026-11-07\n")
    assert data == {"created_at": "2026-11-07T09:40:00Z", "day": "2026-11-07"}


def test_dump_is_block_style_without_aliases_and_keeps_unicode() -> None:
    shared = ["a", "b"]
    text = yamlio.dumps({"x": shared, "y": shared, "name": "Zoë ✓", "body": "line one\nline two"})
    assert "&" not in text and "*" not in text
    assert "Zoë ✓" in text
    assert "body: |-\n  line one\n  line two\n" in text
    assert "{" not in text and "[" not in text


def test_card_dump_has_fixed_key_order_and_round_trips() -> None:
    card = Card.from_dict(card_data(tags=["aws"], supersedes=["f-000000"]))
    text = yamlio.dumps(card.to_dict())
    keys = [line.split(":")[0] for line in text.splitlines() if line and not line.startswith((" ", "-"))]
    assert keys == ["id", "type", "subject", "attribute", "value", "statement", "status", "confidence",
                    "evidence", "created_at", "updated_at", "ttl_policy", "supersedes", "tags"]
    assert Card.from_dict(yamlio.loads(text)) == card
    assert yamlio.dumps(Card.from_dict(yamlio.loads(text)).to_dict()) == text


def test_values_that_look_like_other_types_stay_strings() -> None:
    card = Card.from_dict(card_data(value="no", statement="yes"))
    loaded = yamlio.loads(yamlio.dumps(card.to_dict()))
    assert loaded["value"] == "no" and loaded["statement"] == "yes"


def test_write_atomic_leaves_old_file_when_writing_fails(tmp_path: Path) -> None:
    target = tmp_path / "plan.yaml"
    target.write_text("old\n")

    with pytest.raises(TypeError):
        yamlio.write_atomic(target, 42)  # type: ignore[arg-type]
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.yaml"]


_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x85\u2028\u2029\r"),
                max_size=80)


@given(statement=_text.filter(lambda s: s.strip() != ""), value=_text, subject=_text.filter(bool))
def test_any_card_text_round_trips(statement: str, value: str, subject: str) -> None:
    card = Card.from_dict(card_data(statement=statement, value=value, subject=subject))
    assert Card.from_dict(yamlio.loads(yamlio.dumps(card.to_dict()))) == card


# -- hostile memory files: refused before a document is built ------------------------------------

BILLION_LAUGHS = "".join(
    [f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 9 if level else ['"lol"'] * 9) + "]\n"
     for level in range(9)]
)


def _refused(text: str) -> yamlio.UnsafeYAML:
    with pytest.raises(yamlio.UnsafeYAML) as caught:
        yamlio.loads(text)
    return caught.value


@pytest.mark.parametrize("text", [BILLION_LAUGHS, "a: &x 1\n", "a: *x\n", "a: !!str &x 1\n"])
def test_aliases_and_anchors_are_refused(text: str) -> None:
    error = _refused(text)
    assert error.problem == yamlio.ALIAS_PROBLEM
    assert error.problem_mark is not None and error.problem_mark.line == 0


def test_ampersands_and_stars_in_text_are_fine() -> None:
    assert yamlio.loads("a: R&D uses *.py and 'x &y *z'\n") == {"a": "R&D uses *.py and 'x &y *z'"}


def test_duplicate_keys_are_refused_where_they_repeat() -> None:
    error = _refused("id: f-1\nstatus: verified\nnested:\n  x: 1\n  x: 2\n")
    assert error.problem == "duplicate key 'x'"
    assert error.problem_mark is not None and (error.problem_mark.line, error.problem_mark.column) == (4, 2)


@pytest.mark.parametrize("text", ["a: " + "[" * 40 + "]" * 40 + "\n", "- " * 40 + "x\n",
                                  "a: " + "[" * 40 + "'&'" + "]" * 40 + "\n"])
def test_deep_nesting_is_refused(text: str) -> None:
    assert "nested deeper than 32 levels" in str(_refused(text).problem)


def test_nesting_up_to_the_limit_is_fine() -> None:
    data = yamlio.loads("[" * 32 + "]" * 32)
    for _ in range(31):
        data = data[0]
    assert data == []


def test_oversized_text_is_refused_before_parsing(tmp_path: Path) -> None:
    assert "larger than 1 MiB" in str(_refused("a: " + "x" * yamlio.MAX_YAML_BYTES).problem)
    big = tmp_path / "big.yaml"
    big.write_text("a: " + "x" * (2 * yamlio.MAX_YAML_BYTES))
    with pytest.raises(yamlio.UnsafeYAML, match="larger than 1 MiB"):
        yamlio.load_file(big)


def test_load_file_reads_no_further_than_the_limit() -> None:
    with pytest.raises(yamlio.UnsafeYAML, match="larger than 1 MiB"):
        yamlio.load_file(Path("/dev/zero"))


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640)])
def test_the_files_of_a_memory_follow_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    """Issue 21.5: cards, plan and INDEX were written 0600 (mkstemp's mode) whatever the umask. Real
    processes under a given umask: init, ingest a session, dream; every tracked file, and a rewritten one."""
    import os
    import stat
    import subprocess
    import sys

    from tests.gitutil import git
    from tests.transcripts import billing_api_project

    def memdream(*args: str | Path) -> None:
        subprocess.run([sys.executable, "-m", "memdream", *map(str, args)], check=True, capture_output=True,
                       preexec_fn=lambda: os.umask(umask), timeout=300)

    memory = tmp_path / "mem"
    logs = billing_api_project(tmp_path / "logs", small=True)
    memdream("init", memory)
    memdream("ingest", *logs[:2], "-m", memory)
    memdream("dream", "-m", memory)
    memdream("ingest", *logs[2:], "-m", memory)
    memdream("dream", "-m", memory)  # rewrites the plan, the index and some cards
    tracked = [memory / name for name in git(memory, "ls-files").splitlines()]
    written = [path for path in tracked if path.name in ("plan.yaml", "INDEX.md")
               or path.parent.parent.name in ("cards", "archive") or path.parent.name == "audit"]
    assert len(written) > 5 and any("cards" in path.parts for path in written)
    modes = {path.relative_to(memory).as_posix(): oct(stat.S_IMODE(path.stat().st_mode)) for path in tracked}
    assert set(modes.values()) == {oct(mode)}, modes

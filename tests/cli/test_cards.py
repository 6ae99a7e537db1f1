from __future__ import annotations

import json
from pathlib import Path


def _seed(write_card) -> None:
    write_card(id="f-000001", updated_at="2026-11-01T00:00:00Z")
    write_card(id="f-000002", subject="postgres", attribute="version", value="16", status="inferred",
               updated_at="2026-11-05T00:00:00Z")
    write_card(id="s-000003", type="strategy", subject="nightly-export", attribute=None, value=None,
               scope="export jobs", statement="Read the region with a tool before exporting.",
               updated_at="2026-11-03T00:00:00Z")
    write_card(archived=True, id="f-000000", status="superseded", value="eu-west-1",
               superseded_by=["f-000001"], updated_at="2026-11-06T00:00:00Z")


def _ids(result) -> list[str]:
    return [card["id"] for card in json.loads(result.stdout)]


def test_cards_lists_active_cards_newest_first(memory: Path, write_card, run) -> None:
    _seed(write_card)
    result = run("cards", "--memory", memory, "--format", "json")
    assert result.exit_code == 0
    assert _ids(result) == ["f-000002", "s-000003", "f-000001"]
    assert json.loads(result.stdout)[0]["path"] == "cards/facts/f-000002.yaml"


def test_cards_filters(memory: Path, write_card, run) -> None:
    _seed(write_card)
    assert _ids(run("cards", "-m", memory, "-f", "json", "--type", "strategy")) == ["s-000003"]
    assert _ids(run("cards", "-m", memory, "-f", "json", "--status", "inferred")) == ["f-000002"]
    assert _ids(run("cards", "-m", memory, "-f", "json", "--subject", "POSTGRES")) == ["f-000002"]
    assert _ids(run("cards", "-m", memory, "-f", "json", "--status", "superseded")) == ["f-000000"]
    assert "f-000000" in _ids(run("cards", "-m", memory, "-f", "json", "--archived"))


def test_cards_table_for_people(memory: Path, write_card, run) -> None:
    _seed(write_card)
    result = run("cards", "-m", memory)
    assert result.exit_code == 0
    assert "postgres.version" in result.stdout and "3 card(s)" in result.stdout


def test_cards_rejects_unknown_filter_values(memory: Path, run) -> None:
    result = run("cards", "-m", memory, "--type", "note")
    assert result.exit_code == 2
    assert result.stderr == "memdream: --type must be one of fact, strategy, lesson, not 'note'\n"


def test_the_filters_help_names_every_card_type_and_status(run) -> None:
    """cli/options.py spells them out (importing the card model would slow every command's start)."""
    from memdream.memory.card import CARD_TYPES, STATUSES

    text = " ".join(run("cards", "--help").stdout.split())
    assert f"{', '.join(CARD_TYPES[:-1])} or {CARD_TYPES[-1]}." in text
    assert f"{', '.join(STATUSES[:-1])} or {STATUSES[-1]}." in text


def test_show_prints_the_card_and_its_path(memory: Path, write_card, run) -> None:
    _seed(write_card)
    result = run("show", "f-000000", "-m", memory)
    assert result.exit_code == 0
    assert result.stdout.startswith("# archive/facts/f-000000.yaml\nid: f-000000\n")
    data = json.loads(run("show", "f-000002", "-m", memory, "-f", "json").stdout)
    assert data["value"] == "16" and data["path"] == "cards/facts/f-000002.yaml"


def test_show_unknown_card(memory: Path, run) -> None:
    result = run("show", "f-nope", "-m", memory)
    assert result.exit_code == 1
    assert result.stderr.startswith("memdream: no card with id 'f-nope'")

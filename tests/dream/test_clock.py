"""Dream against a wrong clock: a jump of years archives nothing, decay moves a card one step per dream,
and a future timestamp never pins a card. Real cards, real git, real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from memdream import yamlio
from memdream.dream import state as state_mod
from memdream.dream.decay import CLOCK_JUMP_DAYS
from memdream.memory.paths import dream_state_path
from tests.conftest import card_data
from tests.gitutil import git

START = "2026-11-30T12:00:00Z"
OLD = "2026-01-01T00:00:00Z"  # cards last touched eleven months before START


def memdream(memory: Path, now: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMDREAM_NOW": now}
    return subprocess.run([sys.executable, "-m", "memdream", *args, "-m", str(memory)], capture_output=True,
                          text=True, env=env, timeout=120)


def dream(memory: Path, now: str) -> dict[str, Any]:
    done = memdream(memory, now, "dream", "-f", "json")
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def first_dream(memory: Path, tmp_path: Path) -> None:
    """One dream that commits (a card from an ingested fact), so that the memory knows when it dreamed."""
    events = [{"session": "a", "ts": "2026-11-30T10:00:00Z", "kind": "tool_result", "id": "r1", "tool": "cat",
               "ok": True, "fact": {"subject": "api", "attribute": "owner", "value": "team-a"}},
              {"session": "a", "ts": "2026-11-30T10:01:00Z", "kind": "feedback", "id": "f1", "verdict": "confirm",
               "target": "r1"}]
    log = tmp_path / "a.jsonl"
    log.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    assert memdream(memory, START, "ingest", str(log)).returncode == 0
    assert dream(memory, START)["commit"]


def write_cards(memory: Path, count: int, **overrides: Any) -> list[str]:
    """``count`` decaying fact cards, committed; their ids."""
    ids = []
    for n in range(count):
        data = card_data(id=f"f-{n + 100:06d}", subject=f"service-{n}", attribute="region", value="eu",
                         statement=f"Service {n} runs in eu.", created_at=OLD, updated_at=OLD,
                         ttl_policy="decay-90d",
                         evidence=[{"ref": "log://a#r1", "stance": "supports", "kind": "observation"}], **overrides)
        path = memory / "cards" / "facts" / f"{data['id']}.yaml"
        path.write_text(yamlio.dumps(data), encoding="utf-8")
        ids.append(data["id"])
    git(memory, "add", "cards")
    git(memory, "commit", "-q", "-m", "cards written by hand")
    return ids


def status(memory: Path, card_id: str) -> str:
    found = [*memory.glob(f"cards/*/{card_id}.yaml"), *memory.glob(f"archive/*/{card_id}.yaml")]
    assert len(found) == 1, found
    data: dict[str, Any] = yaml.safe_load(found[0].read_text(encoding="utf-8"))
    return str(data["status"])


def ops(report: dict[str, Any]) -> Counter[str]:
    return Counter(operation["op"] for operation in report["operations"])


def test_a_clock_years_ahead_archives_nothing_and_says_so(memory: Path, tmp_path: Path) -> None:
    first_dream(memory, tmp_path)
    verified = write_cards(memory, 24, status="verified")
    inferred = [card_id.replace("f-0001", "f-0002") for card_id in verified]
    for old, new in zip(verified, inferred):  # 24 more, already inferred: archived by decay without the guard
        text = (memory / "cards" / "facts" / f"{old}.yaml").read_text(encoding="utf-8")
        data = yaml.safe_load(text)
        data.update(id=new, status="inferred", subject=data["subject"] + "-b")
        (memory / "cards" / "facts" / f"{new}.yaml").write_text(yamlio.dumps(data), encoding="utf-8")
    git(memory, "add", "cards")
    git(memory, "commit", "-q", "-m", "inferred cards")

    jumped = dream(memory, "2031-06-01T00:00:00Z")
    assert any(warning.startswith("clock jump:") for warning in jumped["warnings"]), jumped["warnings"]
    assert ops(jumped)["archive"] == 0
    assert ops(jumped)["demote"] == 25  # one step (re-verification undoes it): the 24 and the first card
    assert [status(memory, card_id) for card_id in inferred] == ["inferred"] * 24
    assert [status(memory, card_id) for card_id in verified] == ["inferred"] * 24

    # The next dream trusts the clock again (the last one ran at it): each card moves one more step at most.
    again = dream(memory, "2031-06-01T01:00:00Z")
    assert not any(warning.startswith("clock jump:") for warning in again["warnings"])
    assert ops(again) == Counter({"archive": 24})
    assert [status(memory, card_id) for card_id in inferred] == ["archived"] * 24
    assert [status(memory, card_id) for card_id in verified] == ["inferred"] * 24  # demoted an hour ago
    assert memdream(memory, "2031-06-01T01:00:00Z", "lint").returncode == 0


def test_a_gap_within_the_limit_decays_as_usual(memory: Path, tmp_path: Path) -> None:
    first_dream(memory, tmp_path)
    inferred = write_cards(memory, 3, status="inferred")
    report = dream(memory, "2027-11-29T12:00:00Z")  # 364 days later
    assert CLOCK_JUMP_DAYS == 365 and report["warnings"] == []
    assert ops(report)["archive"] == 3  # (the first dream's own card, past its TTL too, is demoted)
    assert [status(memory, card_id) for card_id in inferred] == ["archived"] * 3


def test_the_previous_dream_is_found_in_git_when_the_local_state_is_lost(memory: Path, tmp_path: Path) -> None:
    first_dream(memory, tmp_path)
    write_cards(memory, 2, status="inferred")
    dream_state_path(memory / ".memdream").unlink()
    assert state_mod.previous_run(memory / ".memdream") == START
    report = dream(memory, "2030-01-01T00:00:00Z")
    assert any(warning.startswith("clock jump:") for warning in report["warnings"])
    assert ops(report)["archive"] == 0


def test_a_future_verification_does_not_pin_a_card(memory: Path, tmp_path: Path) -> None:
    first_dream(memory, tmp_path)
    inferred = write_cards(memory, 2, status="inferred", last_verified_at="2099-01-01T00:00:00Z")
    report = dream(memory, "2026-12-15T00:00:00Z")  # 15 days later: no jump
    assert report["warnings"] == []
    assert ops(report) == Counter({"archive": 2})  # unverified since OLD, whatever the card claims
    assert [status(memory, card_id) for card_id in inferred] == ["archived"] * 2


def test_state_keeps_last_run_and_reads_states_without_it(tmp_path: Path) -> None:
    state = state_mod.DreamState(consumed=3, last_run=START)
    state_mod.save(tmp_path, state)
    loaded = state_mod.load(tmp_path)
    assert loaded is not None and loaded.last_run == START and loaded.consumed == 3
    data = json.loads(dream_state_path(tmp_path).read_text(encoding="utf-8"))
    del data["last_run"]
    dream_state_path(tmp_path).write_text(json.dumps(data), encoding="utf-8")
    older = state_mod.load(tmp_path)
    assert older is not None and older.last_run is None and older.consumed == 3
    assert state_mod.previous_run(tmp_path) is None  # no state's time and no git repository


def test_decay_s_shortcut_on_the_text_of_times_agrees_with_parsing_them() -> None:
    """Decay tells most cards fresh from the text of their time alone; for every time around the cutoff
    (a second either side of each whole day, the future, and forms memdream does not write) the shortcut
    says fresh only where the parsed age says so too."""
    from datetime import timedelta

    from memdream.clock import format_timestamp, parse_timestamp
    from memdream.dream.decay import _ages, _fresh
    from memdream.memory.card import Card

    now_text, days = START, 90
    now = parse_timestamp(now_text)
    cutoff = format_timestamp(now - timedelta(days=days + 1))
    times = [format_timestamp(now - timedelta(days=day, seconds=second))
             for day in range(days - 2, days + 3) for second in (-1, 0, 1)]
    times += [time[:-1] + ".918Z" for time in times]  # as logs give them: a fraction of a second
    times += [format_timestamp(now + timedelta(days=3)), "2026-09-01T00:00:00+00:00", "2026-09-01 00:00:00Z",
              "2026-11-29T12:00:00.5Z", START[:-1] + ".5Z", cutoff[:-1] + ".001Z"]
    shortcuts = 0
    for verified in times:
        card = Card.from_dict(card_data(updated_at=OLD, last_verified_at=verified, ttl_policy="decay-90d"))
        if _fresh(card, cutoff, now_text):
            shortcuts += 1
            assert _ages(card, now)[0] <= days, verified
    assert shortcuts > 0  # the shortcut is taken at all

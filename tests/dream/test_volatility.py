"""Volatility learned per attribute: a key read once cannot show that it changes, its attribute can.

Real memories under tmp_path, logs ingested and dreamed through the command line, cards and audit
files read back from disk.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from memdream import yamlio
from tests import transcripts as scenario
from tests.gitutil import git
from tests.transcripts import ClaudeSession

START = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)


class Log:
    """A memdream-format log: one session per reading, as an agent re-reads a metric now and then."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def _add(self, session: str, kind: str, **fields: Any) -> None:
        at = START + timedelta(hours=len(self.events))
        self.events.append({"session": session, "ts": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "kind": kind,
                            "id": f"e{len(self.events)}", **fields})

    def reading(self, session: str, subject: str, attribute: str, value: str, note: bool = True) -> None:
        """A tool reads the value and the agent notes it: the shape of the issue's 44 cards."""
        fact = {"subject": subject, "attribute": attribute, "value": value}
        self._add(session, "tool_result", tool="metrics", ok=True, text=f"{attribute} {value}", fact=fact)
        if note:
            self._add(session, "note", text=f"The {attribute} of {subject} is {value}.", fact=fact)

    def user_says(self, session: str, subject: str, attribute: str, value: str) -> None:
        self._add(session, "feedback", actor="user", text=f"the {attribute} of {subject} is {value}",
                  fact={"subject": subject, "attribute": attribute, "value": value})

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(event) + "\n" for event in self.events), encoding="utf-8")
        return path


def _dream(run: Any, memory: Path, log: Path) -> dict[str, Any]:
    assert run("ingest", log, "-m", memory).exit_code == 0
    result = run("dream", "-m", memory, "--format", "json")
    assert result.exit_code == 0, result.stderr
    return dict(json.loads(result.stdout))


def _cards(memory: Path, folder: str) -> list[dict[str, Any]]:
    return [yamlio.load_file(path) for path in sorted((memory / folder).rglob("*.yaml"))]


def _attributes(cards: list[dict[str, Any]]) -> list[str]:
    return sorted(card.get("attribute", "") for card in cards)


def _audit(memory: Path, op: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for path in sorted((memory / "audit").glob("*.jsonl"))
             for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [line for line in lines if line.get("op") == op]


def _state(memory: Path) -> dict[str, Any]:
    return dict(json.loads((memory / ".memdream" / "dream" / "state.json").read_text(encoding="utf-8")))


def _loads(log: Log, subjects: list[str], first: int, session: str) -> None:
    """Each subject's cpu-load read once, each time another value."""
    for number, subject in enumerate(subjects):
        log.reading(f"{session}-{subject}", subject, "cpu-load", str(first + 37 * number))


def test_no_card_for_a_volatile_attribute_not_even_for_a_subject_read_once(memory: Path, tmp_path: Path,
                                                                             run: Any) -> None:
    log = Log()
    twice, once = ["sso-bridge", "billing", "search", "auth"], ["cache", "mailer", "gateway", "ledger"]
    _loads(log, twice + once, 7600, "a")
    _loads(log, twice, 4100, "b")  # re-read later: every value changed
    for subject in [*twice, "cache"]:  # stable attributes read across subjects, some re-read unchanged
        log.reading(f"a-{subject}", subject, "region", "eu-central-1")
        log.reading(f"c-{subject}", subject, "version", "2.4.1", note=False)
    for subject in twice:  # re-read as often as the loads, never changed: not volatile
        log.reading(f"d-{subject}", subject, "version", "2.4.1")
    log.user_says("u-1", "sso-bridge", "cpu-load", "7643")  # a user's reading is a reading
    log.user_says("u-1", "sso-bridge", "cpu-load-limit", "80")  # a limit is another attribute: memory
    report = _dream(run, memory, log.write(tmp_path / "log.jsonl"))

    everything = _cards(memory, "cards") + _cards(memory, "archive")
    assert "cpu-load" not in _attributes(everything)
    assert report["not_admitted"]["volatile attribute"] == 8  # all eight subjects, read once or twice
    active = _attributes(_cards(memory, "cards"))
    assert active.count("region") == 5 and active.count("version") == 5 and "cpu-load-limit" in active
    assert _state(memory)["attributes"]["cpu-load"] == {"re_reads": 4, "changes": 4, "subjects": 4}
    assert _state(memory)["attributes"]["version"] == {"re_reads": 4, "changes": 0, "subjects": 4}
    assert run("lint", memory).exit_code == 0


def test_one_subject_changing_or_a_few_upgrades_do_not_make_an_attribute_volatile(memory: Path, tmp_path: Path,
                                                                                   run: Any) -> None:
    """Two services upgraded once each, read before and after: updates, not state."""
    log = Log()
    for subject, old, new in [("postgres", "15.4", "16.1"), ("redis", "7.0", "7.2")]:
        log.reading(f"a-{subject}", subject, "version", old)
        log.reading(f"b-{subject}", subject, "version", new)
    log.reading("a-nginx", "nginx", "version", "1.27")
    _dream(run, memory, log.write(tmp_path / "log.jsonl"))
    versions = {card["subject"]: card["value"] for card in _cards(memory, "cards")}
    assert versions == {"postgres": "16.1", "redis": "7.2", "nginx": "1.27"}


def test_cards_of_an_attribute_that_becomes_volatile_are_archived_with_the_reason(memory: Path, tmp_path: Path,
                                                                                  run: Any) -> None:
    first = Log()
    subjects = ["ingest", "export", "billing", "mailer", "search"]
    for subject in subjects:  # each queue read once: nothing shows yet that the depth changes
        first.reading(f"a-{subject}", subject, "queue-depth", "12")
    first.reading("a-export", "export", "region", "eu-central-1")
    _dream(run, memory, first.write(tmp_path / "first.jsonl"))
    cards = {card["subject"]: card for card in _cards(memory, "cards") if card["attribute"] == "queue-depth"}
    assert sorted(cards) == sorted(subjects)
    # A person pins one of them: keep cards are never forgotten by a rule.
    pinned = memory / "cards" / "facts" / f"{cards['search']['id']}.yaml"
    pinned.write_text(yamlio.dumps({**cards["search"], "ttl_policy": "keep"}), encoding="utf-8")
    git(memory, "commit", "-qam", "pin the search queue card")

    second = Log()
    for number, subject in enumerate(["ingest", "export", "billing"]):  # re-read: every depth changed
        second.reading(f"b-{subject}", subject, "queue-depth", str(40 + number))
    second.reading("b-new", "scheduler", "queue-depth", "3")  # read once, after the attribute proved volatile
    report = _dream(run, memory, second.write(tmp_path / "second.jsonl"))

    active = [card for card in _cards(memory, "cards") if card["attribute"] == "queue-depth"]
    assert [card["subject"] for card in active] == ["search"]  # only the pinned card stays
    archived = {card["subject"]: card for card in _cards(memory, "archive") if card["status"] == "archived"}
    assert {"ingest", "export", "billing", "mailer"} <= set(archived)  # mailer was not even re-read
    reason = "volatile attribute queue-depth: readings changed on 3 of 3 re-reads"
    archives = _audit(memory, "archive")
    assert {line["card"] for line in archives} == {card["id"] for card in archived.values()}
    assert all(line["reason"] == reason for line in archives)
    assert archived["mailer"]["id"] in {line["card"] for line in archives}
    assert report["not_admitted"]["volatile attribute"] == 1  # the scheduler
    assert "region" in _attributes(_cards(memory, "cards"))
    assert run("lint", memory).exit_code == 0


def test_state_saved_before_attribute_statistics_existed_still_loads(memory: Path, tmp_path: Path, run: Any) -> None:
    first = Log()
    for subject, old, new in [("sso-bridge", "7643", "5120"), ("billing", "310", "925")]:
        first.reading(f"a-{subject}", subject, "cpu-load", old)
        first.reading(f"b-{subject}", subject, "cpu-load", new)
    _dream(run, memory, first.write(tmp_path / "first.jsonl"))
    assert _attributes(_cards(memory, "cards")) == ["cpu-load", "cpu-load"]  # two re-reads: too few to tell
    state = _state(memory)
    del state["attributes"]  # what a dream before this feature saved
    (memory / ".memdream" / "dream" / "state.json").write_text(json.dumps(state), encoding="utf-8")

    second = Log()
    second.reading("c-search", "search", "cpu-load", "77")
    second.reading("d-search", "search", "cpu-load", "1290")
    _dream(run, memory, second.write(tmp_path / "second.jsonl"))
    assert _state(memory)["attributes"]["cpu-load"] == {"re_reads": 3, "changes": 3, "subjects": 3}
    assert _cards(memory, "cards") == []  # the earlier runs' readings counted: both cards archived
    assert [line["reason"] for line in _audit(memory, "archive")] == [
        "volatile attribute cpu-load: readings changed on 3 of 3 re-reads"] * 2


def test_transcripts_carry_no_tool_readings_of_fact_keys(memory: Path, tmp_path: Path, run: Any) -> None:
    """Claude Code sessions in which a tool prints a load and the agent repeats it: the adapters make
    no ``fact`` of tool output, so nothing is a tool reading and no card holds the load."""
    for day in range(3, 9):
        session = ClaudeSession(f"4c1e7c2a-9f41-4d6e-b8a3-2c7d1e9f0a{day:02d}", scenario.PROJECT_CWD,
                                START.replace(day=day))
        session.user("How loaded is the sso-bridge right now?")
        load = 7000 + 311 * day
        session.bash("curl -s http://sso-bridge.internal/metrics | grep cpu_load", f"cpu_load {load}")
        session.assistant(f"The cpu-load of sso-bridge is {load}.")
        session.write(tmp_path / "logs")
    _dream(run, memory, tmp_path / "logs")
    assert not [card for card in _cards(memory, "cards") if "load" in json.dumps(card)]
    assert _state(memory)["attributes"] == {}

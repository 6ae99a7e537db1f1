"""Benchmark: values that change over time, through the real pipeline (issue 11, item 1).

A. An ~80-session agent log in memdream's JSONL format: facts whose value changes every few sessions
   (read by tools, noted by the agent), stable facts, volatile readings (cpu-load, queue-depth,
   open-connections of many workers) and chatter. `init`, `ingest`, `dream` (subprocesses, MEMDREAM_NOW
   set), then one question per fact key ("what is the <attribute> of <subject>?") through
   `recall --format json --budget B`. Measured: the share of questions whose context holds the current
   value; the share whose context holds an older value of the same key unmarked (and, apart, marked
   "superseded"); the same over a plain BM25 over the raw events; active card bytes against log bytes;
   active cards of volatile attributes.
B. Knowledge updates with no cards: multi-session chats in which a person's situation changes ("I live
   in Boston" ... "we moved to Denver last week"), with distractor turns; ingested, not dreamt. For each
   question ("where does the user live now?"), the positions of the old and the new statement among the
   recall items: the share of questions (of those with both in the context) with the older one first.
   The same over a plain BM25 over the turns. Each person's chat is a memory of its own, as LongMemEval
   gives one user's history per question; all of them in one memory is measured too, apart: there "the
   user" of a question is any of 15 people, so another person's newer move ranks beside this one's.

Targets (README, issue 11): A. a superseded value in <= 5 % of contexts, active cards >= 20x smaller than the
log, no active card of a volatile attribute; B. the older answer first in <= 15 % of questions. Baseline: the
plain BM25, same run.

Usage: python bench/knowledge_bench.py [--sessions 80] [--budget 2000] [--seed 7] [--keep DIR] [--json [FILE]]
(--json alone prints one JSON object instead of the table; --json FILE prints the table and writes the figures
for bench/results.py)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import Figures, at_least, at_most, exactly  # noqa: E402

START = datetime(2026, 6, 1, 9, 0, tzinfo=timezone.utc)
VOLATILE = ("cpu-load", "queue-depth", "open-connections")
CHANGING = [("export-bucket", "region"), ("billing-db", "host"), ("auth-service", "version"),
            ("payments-api", "endpoint"), ("search-cluster", "node-count"), ("ci-runner", "image"),
            ("staging", "db-host"), ("frontend", "node-version"), ("redis-cache", "max-memory"),
            ("reports-job", "schedule"), ("ledger-service", "owner"), ("mail-relay", "port"),
            ("cdn", "origin"), ("metrics-store", "retention"), ("vpn-gateway", "address"),
            ("invoice-worker", "replicas"), ("api-gateway", "timeout"), ("backup-job", "bucket")]
STABLE = [("monorepo", "default-branch"), ("billing-api", "language"), ("deploy", "command"),
          ("lint", "command"), ("oncall", "channel"), ("docs-site", "generator"), ("license", "kind"),
          ("test-suite", "runner"), ("container-registry", "host"), ("issue-tracker", "project-key")]
WORKERS = [f"worker-{number:02d}" for number in range(1, 41)]
CHATTER = ["Let's look at the flaky test again before lunch.", "I pushed the branch, can you review it?",
           "The standup got moved to ten.", "Please keep the changelog short.",
           "Can you summarize what we did yesterday?", "Good, merge it when the checks pass.",
           "I think the dashboard is slow today.", "Let's not touch the release notes yet.",
           "Remind me to rotate the tokens on Friday.", "Nice, that fixed the import error."]
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "NO_COLOR": "1"}
_TOKEN = re.compile(r"[a-z0-9]+")


def stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


# -- A: the agent log -----------------------------------------------------------------------------
@dataclass
class FactHistory:
    subject: str
    attribute: str
    values: list[str] = field(default_factory=list)  # in the order they became current


def value_of(rng: random.Random, attribute: str, number: int) -> str:
    """A value no other value contains as a word: a tag of letters and the value's own number."""
    tag = "".join(rng.choice("bcdfghjkmnpqrstvwxz") for _ in range(3))
    return f"{attribute.split('-')[0][:4]}-{tag}{number:03d}"


def agent_log(sessions: int, seed: int) -> tuple[list[dict[str, Any]], list[FactHistory], str]:
    """The events, each changing or stable fact's history, and the time of the last event."""
    rng = random.Random(seed)
    counter = iter(range(1, 1_000_000))
    histories = [FactHistory(s, a) for s, a in CHANGING + STABLE]
    changing = {(h.subject, h.attribute) for h in histories[:len(CHANGING)]}
    next_change = {(h.subject, h.attribute): rng.randint(1, 4) for h in histories}
    events: list[dict[str, Any]] = []
    at = START
    for number in range(1, sessions + 1):
        session = f"s-{number:03d}"
        at = START + timedelta(days=number - 1)
        minute = iter(range(0, 600, 2))

        def add(kind: str, at: datetime = at, session: str = session, minute: Any = minute, **fields: Any
                ) -> None:
            events.append({"session": session, "id": f"e{next(counter)}",
                           "ts": stamp(at + timedelta(minutes=next(minute))), "kind": kind, **fields})

        add("goal", goal=rng.choice(["keep the nightly export green", "ship the billing release",
                                     "tidy the infrastructure"]))
        for history in histories:
            key = (history.subject, history.attribute)
            fact, changed = None, False
            if number == next_change[key] and (not history.values or key in changing):
                history.values.append(value_of(rng, history.attribute, next(counter)))
                next_change[key] = number + (rng.randint(6, 16) if key in changing else 10**9)
                fact, changed = history.values[-1], True
            elif history.values and rng.random() < 0.3:
                fact = history.values[-1]  # re-read or re-noted, unchanged
            if fact is None:
                continue
            body = {"subject": history.subject, "attribute": history.attribute, "value": fact}
            # A change is seen by a tool (the cards can be right); the agent notes values too.
            if changed or rng.random() < 0.6:
                add("tool_result", tool=rng.choice(["kubectl", "aws", "terraform"]), ok=True,
                    text=f"{history.attribute} of {history.subject}: {fact}", fact=body)
            else:
                add("note", text=f"The {history.attribute} of {history.subject} is {fact} now.", fact=body)
        for worker in rng.sample(WORKERS[:8], 3) + rng.sample(WORKERS, 4):  # a few re-read, many once
            attribute = rng.choice(VOLATILE)
            reading = str(rng.randint(1, 900))
            add("tool_result", tool="monitor", ok=True, text=f"{attribute} of {worker}: {reading}",
                fact={"subject": worker, "attribute": attribute, "value": reading})
        for line in rng.sample(CHATTER, 4):
            add("message", actor=rng.choice(["user", "agent"]), text=line)
        history = rng.choice(histories)
        add("message", actor="user", text=f"Did anyone touch the {history.attribute} of {history.subject}?")
    return events, [h for h in histories if h.values], stamp(at + timedelta(hours=12))


# -- B: knowledge updates ----------------------------------------------------------------------------
# (query, old statements, new statements); {old}/{new} are the values, which never repeat.
TOPICS: list[tuple[list[str], list[str], list[str], list[str]]] = [
    (["where does the user live now?", "which city does the user live in?"],
     ["I live in {old} these days.", "Our flat in {old} is tiny but I love it."],
     ["We moved to {new} last week.", "I live in {new} now, the move went fine.",
      "Just settled into our new place in {new}."],
     ["Boston", "Denver", "Austin", "Chicago", "Seattle", "Portland", "Atlanta", "Phoenix", "Toronto", "Dublin",
      "Lisbon", "Oslo", "Madrid", "Vienna", "Prague", "Munich"]),
    (["what is the user's job?", "where does the user work now?"],
     ["I work as a nurse at {old}.", "My job at {old} keeps me busy."],
     ["I started a new job at {new} on Monday.", "I work at {new} now.",
      "I accepted the offer from {new}, first week done."],
     ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark", "Wayne", "Tyrell", "Cyberdyne",
      "Soylent", "Wonka", "Gringotts", "Oscorp"]),
    (["what is the name of the user's dog?", "what is the user's dog called?"],
     ["My dog {old} chewed my shoes again.", "Walking {old}, my dog, every morning."],
     ["We renamed the dog {new}, it suits him better.", "My dog answers to {new} now.",
      "The dog is called {new} since we rehomed him."],
     ["Biscuit", "Rex", "Pepper", "Luna", "Max", "Bella", "Rocky", "Daisy", "Milo", "Zeus", "Coco", "Ziggy",
      "Nala", "Bruno"]),
    (["what car does the user drive?", "which car does the user have now?"],
     ["I drive a {old} to work.", "My {old} needs new tires, the car is old."],
     ["I sold my old car and bought a {new}.", "I drive a {new} now.", "Picked up the new car yesterday, a {new}."],
     ["Civic", "Corolla", "Golf", "Outback", "Mustang", "Prius", "Tacoma", "Jetta", "Camry", "Miata", "Forester",
      "Leaf", "Wrangler", "Beetle"]),
    (["when does the user go to the gym?", "what is the user's gym schedule?"],
     ["I go to the gym on {old}.", "Gym days for me are {old}."],
     ["I switched my gym schedule to {new}.", "I go to the gym on {new} now.", "New gym routine: {new}."],
     ["Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays", "Saturdays", "Sundays", "weekends",
      "weekday mornings", "weekday evenings", "lunch breaks", "alternate days"]),
    (["what instrument is the user learning?", "which instrument does the user practice?"],
     ["I'm learning the {old}, practice every night.", "My {old} lessons are on Thursdays."],
     ["I gave up that instrument and started the {new}.", "I'm learning the {new} now.",
      "Bought a {new}, lessons start soon."],
     ["piano", "violin", "cello", "guitar", "flute", "trumpet", "drums", "ukulele", "banjo", "harp", "clarinet",
      "saxophone", "accordion", "mandolin"]),
    (["what is the user's favorite coffee drink?", "what coffee does the user order?"],
     ["I always order a {old} at the cafe.", "A {old} is my favorite coffee."],
     ["These days my coffee order is a {new}.", "I switched to a {new}, my favorite coffee now.",
      "My new favorite coffee is the {new}."],
     ["latte", "cappuccino", "espresso", "mocha", "macchiato", "cortado", "americano", "flat white", "cold brew",
      "affogato"]),
]
DISTRACTORS = ["How was your weekend?", "The weather is awful today.", "Can you recommend a book?",
               "My sister visited on Sunday.", "I watched a great documentary last night.",
               "Work was hectic this week.", "I'm thinking of learning to cook Thai food.",
               "My neighbour has a loud parrot.", "I finally cleaned the garage.",
               "We had pizza for dinner.", "The train was late again.", "I need a new phone case."]
REPLIES = ["That sounds nice!", "Good to know, thanks for telling me.", "Got it.", "Interesting, tell me more.",
           "I'll remember that."]


@dataclass
class Update:
    query: str
    old_ref: str
    new_ref: str


def updates(people: int, seed: int) -> tuple[list[dict[str, Any]], list[Update], str]:
    """Conversations of ``people`` users (7 sessions each, a week apart), each with several topics
    whose old statement comes in one session and the new one two or more sessions later."""
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    cases: list[Update] = []
    last = START
    for person in range(people):
        conversation = f"chat-{person:02d}"
        plan: dict[int, list[tuple[str, str]]] = {}  # session -> (event id, text)
        for topic, (queries, olds, news, values) in enumerate(rng.sample(TOPICS, 4)):
            old_value, new_value = rng.sample(values, 2)
            first = rng.randint(1, 3)
            second = rng.randint(first + 2, 7)
            old_id, new_id = f"t{topic}-old", f"t{topic}-new"
            plan.setdefault(first, []).append((old_id, rng.choice(olds).format(old=old_value)))
            plan.setdefault(second, []).append((new_id, rng.choice(news).format(new=new_value)))
            query = rng.choice(queries)
            cases.append(Update(query, f"log://{conversation}/s{first}#{old_id}",
                                f"log://{conversation}/s{second}#{new_id}"))
        for number in range(1, 8):
            session = f"{conversation}/s{number}"
            at = START + timedelta(days=7 * (number - 1) + person)
            turns = [(f"d{index}", text) for index, text in enumerate(rng.sample(DISTRACTORS, 4))]
            for statement in plan.get(number, []):
                turns.insert(rng.randint(0, len(turns)), statement)
            for position, (event_id, text) in enumerate(turns):
                moment = at + timedelta(minutes=4 * position)
                events.append({"session": session, "id": event_id, "ts": stamp(moment), "kind": "message",
                               "actor": "user", "speaker": "user", "text": text})
                events.append({"session": session, "id": f"{event_id}-r", "ts": stamp(moment + timedelta(minutes=1)),
                               "kind": "message", "actor": "agent", "speaker": "assistant",
                               "text": rng.choice(REPLIES)})
            last = max(last, at)
    return events, cases, stamp(last + timedelta(days=1))


# -- the real pipeline ----------------------------------------------------------------------------------
def memdream(*args: str, now: str) -> str:
    done = subprocess.run([sys.executable, "-m", "memdream", *args], capture_output=True, text=True,
                          env={**ENV, "MEMDREAM_NOW": now})
    if done.returncode != 0:
        raise SystemExit(f"memdream {' '.join(args[:2])} failed: {done.stderr.strip()}")
    return done.stdout


def build_memory(root: Path, events: list[dict[str, Any]], now: str, dream: bool) -> Path:
    log = root.with_suffix(".jsonl")
    log.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    memdream("init", str(root), now=now)
    memdream("ingest", str(log), "-m", str(root), now=now)
    if dream:
        memdream("dream", "-m", str(root), now=now)
    return log


def recall_all(root: Path, queries: list[str], budget: int, now: str) -> list[dict[str, Any]]:
    path = root.with_suffix(".queries")
    path.write_text("".join(query + "\n" for query in queries), encoding="utf-8")
    out = memdream("recall", "--queries", str(path), "--budget", str(budget), "--format", "json",
                   "-m", str(root), now=now)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


# -- a plain BM25 over raw events (the baseline) --------------------------------------------------------
def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class PlainBM25:
    """rank_bm25's Okapi BM25 (k1 1.5, b 0.75), in a few lines: no new dependency."""

    def __init__(self, documents: list[list[str]], k1: float = 1.5, b: float = 0.75) -> None:
        self.documents = [Counter(document) for document in documents]
        self.lengths = [len(document) for document in documents]
        self.average = sum(self.lengths) / max(1, len(self.lengths))
        frequency: Counter[str] = Counter(token for document in self.documents for token in document)
        count = len(documents)
        self.idf = {token: math.log((count - seen + 0.5) / (seen + 0.5) + 1) for token, seen in frequency.items()}
        self.k1, self.b = k1, b

    def top(self, query: list[str]) -> list[int]:
        scores = []
        for number, (document, length) in enumerate(zip(self.documents, self.lengths)):
            norm = self.k1 * (1 - self.b + self.b * length / self.average)
            score = sum(self.idf.get(token, 0.0) * document[token] * (self.k1 + 1) / (document[token] + norm)
                        for token in query if token in document)
            if score > 0:
                scores.append((score, number))
        return [number for _, number in sorted(scores, reverse=True)]


def event_line(event: dict[str, Any]) -> str:
    speaker = event.get("speaker") or event.get("actor") or event["kind"]
    return f"- [{event['ts'][:10]}] {speaker}: {event.get('text', '')}"


def baseline_contexts(events: list[dict[str, Any]], queries: list[str], budget: int
                      ) -> list[list[dict[str, Any]]]:
    """For each query, the events a plain BM25 over their text ranks best, while their lines fit."""
    searchable = [event for event in events if event.get("text")]
    bm25 = PlainBM25([tokens(event["text"]) for event in searchable])
    found = []
    for query in queries:
        used, shown = 0, []
        for number in bm25.top(tokens(query)):
            cost = len(event_line(searchable[number]).encode()) + 1
            if used + cost <= budget:
                used += cost
                shown.append(searchable[number])
        found.append(shown)
    return found


# -- measuring ----------------------------------------------------------------------------------------
def has_value(text: str, value: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", text) is not None


def fact_scores(contexts: list[list[str]], histories: list[FactHistory]) -> dict[str, float]:
    """Shares of questions: current value present; a stale value present unmarked; marked only."""
    current = stale = marked = 0
    for lines, history in zip(contexts, histories):
        now, older = history.values[-1], history.values[:-1]
        current += any(has_value(line, now) for line in lines)
        plain = [line for line in lines if "(superseded" not in line]
        flagged = [line for line in lines if "(superseded" in line]
        if any(has_value(line, value) for line in plain for value in older):
            stale += 1
        elif any(has_value(line, value) for line in flagged for value in older):
            marked += 1
    total = len(histories)
    return {"current": current / total, "stale": stale / total, "stale_marked": marked / total}


def active_cards(root: Path) -> tuple[int, int]:
    """(bytes of active cards, active cards of volatile attributes)."""
    size = volatile = 0
    for path in (root / "cards").rglob("*.yaml"):
        text = path.read_text(encoding="utf-8")
        status = re.search(r"^status: *(\S+)", text, re.MULTILINE)
        if status and status.group(1) in ("superseded", "archived"):
            continue
        size += len(text.encode())
        attribute = re.search(r"^attribute: *(\S+)", text, re.MULTILINE)
        volatile += bool(attribute and attribute.group(1).strip("'\"") in VOLATILE)
    return size, volatile


def part_a(work: Path, sessions: int, seed: int, budget: int) -> dict[str, Any]:
    events, histories, now = agent_log(sessions, seed)
    root = work / "agent"
    log = build_memory(root, events, now, dream=True)
    queries = [f"what is the {h.attribute} of {h.subject}?" for h in histories]
    results = recall_all(root, queries, budget, now)
    recalled = fact_scores([result["context"].splitlines() for result in results], histories)
    plain = fact_scores([[event_line(event) for event in shown]
                         for shown in baseline_contexts(events, queries, budget)], histories)
    size, volatile = active_cards(root)
    withheld = sum(len(result.get("superseded", [])) for result in results)
    return {"sessions": sessions, "events": len(events), "questions": len(queries),
            "changing_keys": len(CHANGING), "values_per_changing_key": round(
                sum(len(h.values) for h in histories[:len(CHANGING)]) / len(CHANGING), 1),
            "recall": recalled, "bm25": plain, "withheld_superseded_items": withheld,
            "active_card_bytes": size, "log_bytes": log.stat().st_size,
            "card_to_log_ratio": round(size / log.stat().st_size, 4), "volatile_active_cards": volatile}


def older_first(orders: list[list[str]], cases: list[Update]) -> dict[str, Any]:
    """Of the questions with both statements in the context, the share with the older one first (and the
    counts, for summing over memories)."""
    both = older = newer_only = 0
    for order, case in zip(orders, cases):
        if case.old_ref in order and case.new_ref in order:
            both += 1
            older += order.index(case.old_ref) < order.index(case.new_ref)
        elif case.new_ref in order:
            newer_only += 1
    return {"both": both, "older_first": older / both if both else 0.0, "newer_only": newer_only / len(cases),
            "older": older, "newer_only_count": newer_only, "questions": len(cases)}


def part_b(work: Path, people: int, seed: int, budget: int) -> dict[str, Any]:
    """Each person's conversation in a memory of its own, as LongMemEval gives one user's history per
    question; and, apart, all of them in one memory, where "the user" of a question names no one."""
    events, cases, now = updates(people, seed)
    per_person = [_older_first_in(work / f"updates-{person}", [e for e in events if _person(e["session"]) == person],
                                  [case for case in cases if _person(case.new_ref) == person], budget, now)
                  for person in sorted({_person(event["session"]) for event in events})]
    together = _older_first_in(work / "updates", events, cases, budget, now)
    one = {name: _summed([result[name] for result in per_person], len(cases)) for name in ("recall", "bm25")}
    undated = sum(result["raw_items_without_date"] for result in per_person)
    return {"questions": len(cases), **one, "raw_items_without_date": undated,
            "cards": sum(result["cards"] for result in per_person), "one_memory_for_all": together}


def _person(session_or_ref: str) -> str:
    """The conversation (``chat-03``) of a session id or an evidence reference."""
    return session_or_ref.removeprefix("log://").split("/", 1)[0]


def _summed(rows: list[dict[str, Any]], questions: int) -> dict[str, Any]:
    both, older = sum(row["both"] for row in rows), sum(row["older"] for row in rows)
    newer_only = sum(row["newer_only_count"] for row in rows)
    return {"both": both, "older_first": older / both if both else 0.0, "newer_only": newer_only / questions,
            "older": older, "newer_only_count": newer_only, "questions": questions}


def _older_first_in(root: Path, events: list[dict[str, Any]], cases: list[Update], budget: int,
                    now: str) -> dict[str, Any]:
    build_memory(root, events, now, dream=False)
    results = recall_all(root, [case.query for case in cases], budget, now)
    orders = [[item["id"] for item in result["items"]] for result in results]
    undated = sum(1 for result in results for item in result["items"]
                  if item["source"] == "raw" and not re.match(r"\[\d{4}-\d\d-\d\d\]", item["text"]))
    cards = len(list((root / "cards").rglob("*.yaml")))
    plain = [[f"log://{event['session']}#{event['id']}" for event in shown]
             for shown in baseline_contexts(events, [case.query for case in cases], budget)]
    return {"questions": len(cases), "recall": older_first(orders, cases), "bm25": older_first(plain, cases),
            "raw_items_without_date": undated,
            "cards": cards}


def machine() -> str:
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, load {load}"


def report(a: dict[str, Any], b: dict[str, Any], budget: int) -> None:
    print(f"A. agent log: {a['sessions']} sessions, {a['events']} events, {a['questions']} fact questions "
          f"({a['changing_keys']} changing keys, {a['values_per_changing_key']} values each), budget {budget} B")
    print(f"{'':>8} {'current':>8} {'stale':>8} {'stale, marked':>14}")
    for name in ("recall", "bm25"):
        row = a[name]
        print(f"{name:>8} {row['current']:8.0%} {row['stale']:8.0%} {row['stale_marked']:14.0%}")
    print(f"withheld superseded raw items (JSON 'superseded'): {a['withheld_superseded_items']}")
    print(f"active cards {a['active_card_bytes']} B / log {a['log_bytes']} B = {a['card_to_log_ratio']:.2%}; "
          f"active cards of volatile attributes: {a['volatile_active_cards']}")
    print(f"B. knowledge updates, no dream: {b['questions']} questions, {b['cards']} cards")
    print(f"{'':>8} {'both shown':>10} {'older first':>12} {'newer only':>11}")
    for name in ("recall", "bm25"):
        row = b[name]
        print(f"{name:>8} {row['both']:10d} {row['older_first']:12.0%} {row['newer_only']:11.0%}")
    print(f"raw items without a date: {b['raw_items_without_date']}")
    together = b["one_memory_for_all"]
    print(f"all conversations in one memory (questions name no one): older first "
          f"{together['recall']['older_first']:.0%} of {together['recall']['both']} "
          f"(BM25 {together['bm25']['older_first']:.0%} of {together['bm25']['both']})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=80)
    parser.add_argument("--people", type=int, default=15, help="B: conversations (4 questions each)")
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="Build the memories here and keep them.")
    parser.add_argument("--json", nargs="?", const="-", metavar="FILE",
                        help="Alone: one JSON object instead of the table. "
                             "With FILE: the figures for bench/results.py.")
    args = parser.parse_args()
    figures = Figures(__file__, "recall quality")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as name:
        work = args.keep or Path(name)
        work.mkdir(parents=True, exist_ok=True)
        a = part_a(work, args.sessions, args.seed, args.budget)
        b = part_b(work, args.people, args.seed, args.budget)
    if args.json == "-":
        print(json.dumps({"agent_log": a, "knowledge_updates": b, "machine": machine(),
                          "wall_s": round(time.perf_counter() - start, 1)}))
        return
    report(a, b, args.budget)
    print(f"machine: {machine()}; wall {time.perf_counter() - start:.1f} s")
    if args.json:
        add_figures(figures, a, b, args.budget)
        figures.write(Path(args.json), agent_log=a, knowledge_updates=b)


def add_figures(figures: Figures, a: dict[str, Any], b: dict[str, Any], budget: int) -> None:
    about = f"{a['sessions']} sessions, {a['questions']} fact questions, budget {budget} B"
    figures.add(f"changing facts ({about}): a superseded value unmarked in the context", a["recall"]["stale"], "share",
                target=at_most(0.05, "<= 5 %"), floor=("plain BM25 over the raw events", a["bm25"]["stale"], "share"))
    figures.add("changing facts: the current value in the context", a["recall"]["current"], "share",
                floor=("plain BM25 over the raw events", a["bm25"]["current"], "share"))
    ratio = a["log_bytes"] / max(1, a["active_card_bytes"])
    figures.add("changing facts: active card bytes, log / cards", round(ratio, 1), "x",
                target=at_least(20, ">= 20x smaller than the log"), floor=("the log", a["log_bytes"], "bytes"),
                note=f"{a['active_card_bytes']:,} bytes of active cards")
    figures.add("changing facts: active cards of volatile attributes", a["volatile_active_cards"], "cards",
                target=exactly(0, "0"))
    figures.add(f"situation changes, no cards ({b['questions']} questions, a memory per person): the older answer "
                "ranked first", b["recall"]["older_first"], "share", target=at_most(0.10, "<= 10 % (issue 23)"),
                floor=("plain BM25 over the turns", b["bm25"]["older_first"], "share"),
                note=f"both answers shown for {b['recall']['both']} questions (BM25 {b['bm25']['both']})")
    together = b["one_memory_for_all"]
    figures.add("situation changes, all 15 people in one memory (questions name no one): the older answer ranked first",
                together["recall"]["older_first"], "share",
                floor=("plain BM25 over the turns", together["bm25"]["older_first"], "share"),
                note=f"both answers shown for {together['recall']['both']} questions (BM25 {together['bm25']['both']})")


if __name__ == "__main__":
    main()

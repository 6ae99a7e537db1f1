"""Synthetic memories for benchmarks: realistic card shapes, deterministic content."""

from __future__ import annotations

import random
from pathlib import Path

from memdream import yamlio
from memdream.commands.init import init_memory
from memdream.memory.card import Card, Evidence

_SUBJECTS = ["export-bucket", "postgres", "ci", "api", "deploy", "cache", "queue", "auth", "billing", "search"]
_ATTRIBUTES = ["region", "version", "owner", "endpoint", "timeout", "schedule", "command", "limit"]


def synthetic_card(index: int, rng: random.Random) -> Card:
    """Card ``index``: facts, strategies and lessons in a 6:2:2 mix, 1-4 evidence items each."""
    kind = ("fact", "fact", "fact", "strategy", "lesson")[index % 5]
    prefix = {"fact": "f", "strategy": "s", "lesson": "l"}[kind]
    subject = f"{rng.choice(_SUBJECTS)}-{index // 40}"
    session = f"s-{index // 25:05d}"
    evidence = [
        Evidence(ref=f"log://{session}#e{index}-{n}", stance="supports",
                 kind=rng.choice(["observation", "note", "feedback"]), ts="2026-11-07T09:13:41Z")
        for n in range(rng.randint(1, 4))
    ]
    card = Card(
        id=f"{prefix}-{index:06x}", type=kind, subject=subject,
        statement=f"Card {index}: {subject} behaves this way in the nightly job; checked against tool output.",
        status=rng.choice(["verified", "inferred"]), confidence=round(rng.random(), 2), evidence=evidence,
        created_at="2026-11-07T09:40:00Z", updated_at="2026-11-07T09:40:00Z", ttl_policy="decay-90d",
        tags=["bench", subject.split("-")[0]],
    )
    if kind == "fact":
        card.attribute = f"{_ATTRIBUTES[index % len(_ATTRIBUTES)]}-{index}"
        card.value = f"value-{rng.randint(0, 10_000)}"
    else:
        card.scope = f"tasks touching {subject}"
    return card


def synthetic_cards(count: int, seed: int = 7) -> list[Card]:
    """The ``count`` cards :func:`build_card_memory` writes for ``seed``."""
    rng = random.Random(seed)
    return [synthetic_card(index, rng) for index in range(count)]


def build_card_memory(root: Path, count: int, seed: int = 7) -> None:
    """An initialized memory holding ``count`` valid cards."""
    init_memory(root)
    folders = {"fact": "facts", "strategy": "strategies", "lesson": "lessons"}
    for card in synthetic_cards(count, seed):
        (root / "cards" / folders[card.type] / f"{card.id}.yaml").write_text(yamlio.dumps(card.to_dict()))


def card_readings(cards: list[Card], every: int = 2) -> list[dict[str, object]]:
    """Tool readings that confirm every ``every``-th fact card's value, in sessions of 50: a dream
    over them re-verifies those cards and so writes their files (as a dream that made them would)."""
    events: list[dict[str, object]] = []
    facts = [card for card in cards if card.attribute is not None and card.value is not None][::every]
    for index, card in enumerate(facts):
        minute, hour = index % 50, (index // 50) % 24
        events.append({
            "session": f"reread-{index // 50:05d}", "ts": f"2026-12-20T{hour:02d}:{minute:02d}:00Z",
            "id": f"r{index}", "kind": "tool_result", "tool": "shell", "ok": True,
            "text": f"{card.attribute}: {card.value}",
            "fact": {"subject": card.subject, "attribute": card.attribute, "value": card.value},
        })
    return events


def synthetic_events(count: int, seed: int = 11) -> list[dict[str, object]]:
    """``count`` raw events in sessions of 50: messages, tool calls, notes and tool readings of facts
    from a pool of keys that grows with the log (about one key per 10 events), some feedback."""
    rng = random.Random(seed)
    events: list[dict[str, object]] = []
    keys = max(10, count // 10)
    for index in range(count):
        session = f"bench-{index // 50:06d}"
        minute = index % 50
        day, hour = divmod(index // 50, 24)
        ts = f"2026-{1 + (day // 28) % 12:02d}-{1 + day % 28:02d}T{hour:02d}:{minute:02d}:00Z"
        key = rng.randrange(keys)
        subject, attribute = f"{_SUBJECTS[key % len(_SUBJECTS)]}-{key // 80}", _ATTRIBUTES[key % len(_ATTRIBUTES)]
        value = f"v{(key * 7 + (index // 20000)) % 13}"
        roll = rng.random()
        event: dict[str, object] = {"session": session, "ts": ts, "id": f"e{index}"}
        if roll < 0.35:
            event.update(kind="message", actor="user", text=f"please look at {subject} and its {attribute} again")
        elif roll < 0.55:
            event.update(kind="tool_call", tool="shell", args={"cmd": f"inspect {subject}"}, call_id=f"c{index}")
        elif roll < 0.75:
            event.update(kind="tool_result", tool="shell", ok=rng.random() > 0.1, text=f"{attribute}: {value}",
                         fact={"subject": subject, "attribute": attribute, "value": value})
        elif roll < 0.92:
            event.update(kind="note", text=f"{subject} {attribute} is {value}",
                         fact={"subject": subject, "attribute": attribute, "value": value})
        else:
            event.update(kind="feedback", verdict="confirm", target=f"e{index - 1}", text="yes")
        events.append(event)
    return events

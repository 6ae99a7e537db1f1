"""Property: whatever the cards and the budget, the context fits and holds every item, plan first."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdream.recall.engine import Recaller, RecallOptions
from tests.recall.helpers import check_contract, fact, write_card, write_plan

WORDS = ["export", "bucket", "région", "postgres", "version", "deploy", "queue", "日本", "ok", "x" * 40, "🙂"]
text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=60).map(" ".join)
cards = st.lists(st.tuples(st.sampled_from(["export-bucket", "postgres", "queue", "deploy"]),
                           st.sampled_from(["region", "version", "owner"]), text,
                           st.sampled_from(["verified", "inferred", "conflicting"])), max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cards=cards, budget=st.integers(64, 5000), query=text, goal=text, plan_next=st.lists(text, max_size=3))
def test_context_fits_every_budget(cards: list[tuple[str, str, str, str]], budget: int, query: str, goal: str,
                                   plan_next: list[str]) -> None:
    with tempfile.TemporaryDirectory() as name:
        root = Path(name)  # a bare memory folder: plan and cards are all recall reads
        write_plan(root, goal, plan_next)
        for number, (subject, attribute, statement, status) in enumerate(cards):
            write_card(root, **fact(f"f-{number}", subject, attribute, statement[:30], statement=statement,
                                    status=status, evidence=[{"ref": f"log://s#{number % 4}"}]))
        result = Recaller(root, RecallOptions(budget=budget)).recall(query)
        data = result.to_dict()
        check_contract(data)
        assert data["items"] and data["items"][0]["source"] == "plan"
        keys = [item["id"] for item in data["items"]]
        assert len(keys) == len(set(keys))

"""Dream never writes what lint would reject: every card and the plan pass their schema first,
and a tag that held a secret is dropped rather than written as a placeholder."""

from __future__ import annotations

import pytest

from memdream.dream.pipeline import _redacted_fields, _valid
from memdream.errors import InvalidMemory
from memdream.memory.settings import Settings
from memdream.redact import Redactor
from tests.conftest import card_data


def test_an_invalid_card_stops_the_run_before_anything_is_written() -> None:
    assert _valid("card f-000001", "card", card_data()) == card_data()
    with pytest.raises(InvalidMemory, match=r"dream made an invalid card f-000001 \(confidence: .*nothing was written"):
        _valid("card f-000001", "card", card_data(confidence=1.7))


def test_a_tag_holding_a_secret_is_dropped_and_the_text_redacted() -> None:
    redactor = Redactor.from_settings(Settings.defaults())
    data = card_data(statement="Deploy with ghp_0123456789abcdefghijABCDEFGHIJ012345 as the token.",
                     tags=["ops", "ghp_0123456789abcdefghijABCDEFGHIJ012345"])
    redacted = _redacted_fields(redactor, data, ("statement", "tags"))
    assert redacted["tags"] == ["ops"] and "[REDACTED:github-token]" in redacted["statement"]
    assert _valid("card f-000001", "card", redacted) == redacted

"""What the extractors share: reading scope and commands off events, and making pieces."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from memdream.dream.model import Piece
from memdream.harness import own_words
from memdream.memory.project import is_temporary_name
from memdream.memory.raw import canonical_bytes, event_hash
from memdream.memory.refs import event_ref
from memdream.memory.tags import COMMAND_TAG, PROJECT_TAG, SIDECHAIN_TAG, SUMMARY_TAG, UNTRUSTED
from memdream.toolcalls import command_line, is_shell

GLOBAL_SCOPE = "global"
PROJECT_LOOKAHEAD = 16
# Sentences end at . ! ? followed by space (not after "e.g." and the like), or at a line break.
_SENTENCE = re.compile(r"(?<![.\s][a-z]\.[a-z]\.)(?<!\betc\.)(?<=[.!?])\s+(?=\S)|\n+")


def project_of(event: dict[str, Any]) -> str | None:
    for tag in event.get("tags", ()):
        if tag.startswith(PROJECT_TAG) and len(tag) > len(PROJECT_TAG):
            return str(tag[len(PROJECT_TAG):])
    return None


def session_project(events: list[dict[str, Any]]) -> str | None:
    """The project a session ran in: adapters tag every event of a transcript, so the first few
    events name it or none does (a log in memdream's own format may carry no project). A temporary
    folder's name, as raw layers ingested before ingest knew better may hold it, is no project."""
    found = next((found for found in map(project_of, events[:PROJECT_LOOKAHEAD]) if found), None)
    return None if found is None or is_temporary_name(found) else found


def scope_tags(scope: str | None) -> tuple[str, ...]:
    return (f"{PROJECT_TAG}{scope}",) if scope and scope != GLOBAL_SCOPE else ()


def trusted(event: dict[str, Any]) -> bool:
    """Events an extractor may learn from: not text that tried to instruct, not a summary's retelling."""
    tags = event.get("tags", ())
    return UNTRUSTED not in tags and SUMMARY_TAG not in tags


def user_words(event: dict[str, Any]) -> str | None:
    """The text of a message the user typed (not tool output, not harness text: a template's
    expansion yields only the section it left for the user, :mod:`memdream.harness`; not a
    sub-agent's prompt, which the main agent wrote; not a slash command they ran, whose arguments
    are a request to that command, "/review always run the tests", never a rule of theirs), or of a
    note the user asked memory to keep (`memdream remember`): their own word, with the same authority."""
    if not (_user_message(event) or user_note(event)) or not trusted(event):
        return None
    if SIDECHAIN_TAG in event.get("tags", ()) or COMMAND_TAG in event.get("tags", ()):
        return None
    text = own_words(event.get("text") if isinstance(event.get("text"), str) else None)
    return text if text is not None and text.strip() else None


def _user_message(event: dict[str, Any]) -> bool:
    return bool(event["kind"] == "message" and event.get("actor", "user") == "user")


def user_note(event: dict[str, Any]) -> bool:
    """A note the user wrote (`memdream remember`). Only an explicit ``actor: user``: a note's
    actor defaults to the agent, whose notes are weak evidence and never the user's word."""
    return bool(event["kind"] == "note" and event.get("actor") == "user")


def sentences(text: str) -> Iterator[str]:
    for part in _SENTENCE.split(text):
        sentence = " ".join(part.split())
        if sentence:
            yield sentence


def result_command(event: dict[str, Any], calls: dict[str, dict[str, Any]]) -> str | None:
    """The command line of the call a tool result answers: copied by ingest, else from the call."""
    args = event.get("args")
    if isinstance(args, dict) and isinstance(args.get("command"), str) and args["command"]:
        return str(args["command"])
    call = calls.get(str(event.get("call_id") or ""))
    if call is None:
        return None
    return command_line(call.get("tool"), call.get("args"))


def shell_result(event: dict[str, Any], calls: dict[str, dict[str, Any]]) -> bool:
    """Whether a tool result answers a shell command (its tool, or its call's tool, is a shell)."""
    tool = event.get("tool") or calls.get(str(event.get("call_id") or ""), {}).get("tool")
    return is_shell(tool)


def calls_by_id(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str(event["call_id"]): event for event in events
            if event["kind"] == "tool_call" and isinstance(event.get("call_id"), str)}


def piece(event: dict[str, Any], value: str, *, kind: str, layer: str, statement: str, scope: str | None,
          tags: tuple[str, ...], source: str, stance: str = "supports") -> Piece:
    return Piece(
        ref=event_ref(event["session"], event["id"]), session=event["session"], ts=event["ts"], kind=kind,
        stance=stance, value=value, hash=event_hash(canonical_bytes(event)), layer=layer,
        statement=statement, scope=scope or GLOBAL_SCOPE, tags=tags, source=source,
    )


def quote(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"

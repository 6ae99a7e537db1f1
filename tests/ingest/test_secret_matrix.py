"""Every kind of secret in every field of every log format: after a real ``init`` + ``ingest`` +
``dream`` (subprocesses), nothing of any of them is left in the memory folder (``.git``
included), in ``git log -p --all`` or in any git object."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memdream.redact import BUILTIN_KINDS

# kind -> (a sample as it appears in a log, the part of it that must not survive anywhere)
SECRETS: dict[str, tuple[str, str]] = {
    "private-key": ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
                    "-----END RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"),
    "aws-key": ("AKIAMATRIX7Q2W4E6R8T", "AKIAMATRIX7Q2W4E6R8T"),
    "github-token": ("ghp_Mx7rA3tB5cD7eF9gH1jK3mN5pQ7rS9tU1vW3", "ghp_Mx7rA3tB5cD7eF9gH1jK3mN5pQ7rS9tU1vW3"),
    "slack-token": ("xoxb-118833557799-2244668800-MatrixSlackQ7w9E1r3T5y7",
                    "xoxb-118833557799-2244668800-MatrixSlackQ7w9E1r3T5y7"),
    "api-key": ("sk-proj-MatrixAb3De5Gh7Jk9Mn1Pq3St5Vw7", "sk-proj-MatrixAb3De5Gh7Jk9Mn1Pq3St5Vw7"),
    "google-api-key": ("AIzaSyMatrix0123456789abcdefghijklmnopq", "AIzaSyMatrix0123456789abcdefghijklmnopq"),
    "stripe-key": ("sk_live_Matrix51Hq7Lyj4WDarjtT1zdp7dc", "sk_live_Matrix51Hq7Lyj4WDarjtT1zdp7dc"),
    "huggingface-token": ("hf_MatrixQwErTyUiOpAsDfGhJkLzXcVbNm12", "hf_MatrixQwErTyUiOpAsDfGhJkLzXcVbNm12"),
    "gitlab-token": ("glpat-Matrix7x9Kq2Lm4Np6R8", "glpat-Matrix7x9Kq2Lm4Np6R8"),
    "npm-token": ("npm_Matrix0123456789abcdefghijklmnopqrstu"[:40], "npm_Matrix0123456789abcdefghijklmnopqrstu"[:40]),
    "azure-key": ("AccountName=acct;AccountKey=TWF0cml4QXp1cmVLZXkwMTIzNDU2Nzg5MA==",
                  "TWF0cml4QXp1cmVLZXkwMTIzNDU2Nzg5MA"),
    "jwt": ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJtYXRyaXgifQ.MatrixSigQ7w9E1r3T5y7U9i",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJtYXRyaXgifQ"),
    "bearer-token": ("Authorization: Bearer MatrixBearer7Q2w4E6r8T0y", "MatrixBearer7Q2w4E6r8T0y"),
    "secret": ("password=MatrixPw7Q2w4E", "MatrixPw7Q2w4E"),
    "email": ("matrix.person@example.org", "matrix.person@example.org"),
    "card-number": ("4111111111111111", "4111111111111111"),
    "id-number": ("SSN 219-09-9999", "219-09-9999"),
    "phone": ("+14155550132", "4155550132"),
    "address": ("742 Evergreen Street, Springfield", "742 Evergreen Street"),
}
# Sessions and ids hold no whitespace: the samples that do go there without it where they can.
NO_SPACE = {kind: sample for kind, (sample, _) in SECRETS.items() if not any(c.isspace() for c in sample)}
NO_SPACE["id-number"] = SECRETS["id-number"][1]
NEEDLES = [needle for _, needle in SECRETS.values()]


def test_every_builtin_kind_is_in_the_matrix() -> None:
    assert set(SECRETS) == set(BUILTIN_KINDS)


def _memdream_events() -> Iterator[dict[str, Any]]:
    ts = "2026-11-07T09:12:03Z"
    for number, (kind, (sample, _)) in enumerate(SECRETS.items()):
        session = f"s-{number}"
        yield {"session": session, "ts": ts, "kind": "message", "id": f"m{number}", "text": f"see {sample} here"}
        yield {"session": session, "ts": ts, "kind": "tool_call", "id": f"c{number}", "tool": sample[:256],
               "call_id": f"k{number}", "args": {"command": f"run {sample}", sample: "value"},
               "meta": {sample: "x", "note": sample}, "tags": [sample]}
        yield {"session": session, "ts": ts, "kind": "tool_result", "id": f"r{number}", "call_id": f"k{number}",
               "ok": False, "error": f"failed: {sample}"}
        for field in ("subject", "attribute", "value"):
            fact = {"subject": "db", "attribute": "host", "value": "db1"}
            fact[field] = sample if field != "subject" else sample[:200]
            yield {"session": session, "ts": ts, "kind": "note", "id": f"f{number}{field}",
                   "text": "noted", "fact": fact}
        yield {"session": session, "ts": ts, "kind": "feedback", "id": f"fb{number}", "verdict": "confirm",
               "target": sample[:200], "text": "right"}
        yield {"session": session, "ts": ts, "kind": "tool_result", "id": f"t{number}", "call_id": sample[:256],
               "ok": True, "text": "done"}
        if kind in NO_SPACE:
            yield {"session": NO_SPACE[kind], "ts": ts, "kind": "message", "id": f"sid{number}", "text": "in session"}
            yield {"session": session, "ts": ts, "kind": "message", "id": NO_SPACE[kind], "text": "in id"}


def _claude_code_lines() -> Iterator[dict[str, Any]]:
    base = {"cwd": "/home/dana/src/app", "sessionId": "7f3c2a91-5d4e-4b8a-9c61-2e8f0d4b7a13", "version": "2.0.31"}
    for number, (sample, _) in enumerate(SECRETS.values()):
        ts = f"2026-11-07T09:{10 + number:02d}:03.000Z"
        yield {**base, "type": "user", "uuid": f"u-{number}", "timestamp": ts,
               "message": {"role": "user", "content": f"please use {sample}"}}
        yield {**base, "type": "assistant", "uuid": f"a-{number}", "timestamp": ts,
               "message": {"role": "assistant", "type": "message", "content": [
                   {"type": "tool_use", "id": f"toolu_{number}", "name": "Bash",
                    "input": {"command": f"deploy {sample}", sample: "flag"}}]}}
        yield {**base, "type": "user", "uuid": f"r-{number}", "timestamp": ts,
               "message": {"role": "user", "content": [
                   {"tool_use_id": f"toolu_{number}", "type": "tool_result", "content": f"got {sample}",
                    "is_error": True}]}}


def _codex_lines() -> Iterator[dict[str, Any]]:
    yield {"timestamp": "2026-11-07T09:12:03.118Z", "type": "session_meta",
           "payload": {"id": "019a5d1e-3b7c-7e42-a8f1-6c2d9b0e4f57", "timestamp": "2026-11-07T09:12:03.104Z",
                       "cwd": "/home/dana/src/app", "originator": "codex_cli_rs", "cli_version": "0.58.0"}}
    for number, (sample, _) in enumerate(SECRETS.values()):
        ts = f"2026-11-07T09:{10 + number:02d}:03.000Z"
        yield {"timestamp": ts, "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": f"use {sample}"}]}}
        yield {"timestamp": ts, "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "call_id": f"call_{number}",
            "arguments": json.dumps({"command": ["bash", "-lc", f"deploy {sample}"], sample: 1})}}
        yield {"timestamp": ts, "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": f"call_{number}",
            "output": json.dumps({"output": f"out {sample}", "metadata": {"exit_code": 1}})}}


def _openai_chat_lines() -> Iterator[dict[str, Any]]:
    for number, (sample, _) in enumerate(SECRETS.values()):
        ts = f"2026-11-07T14:{10 + number:02d}:11Z"
        yield {"role": "user", "content": f"remember {sample}", "timestamp": ts}
        yield {"role": "assistant", "content": None, "timestamp": ts, "tool_calls": [
            {"id": f"call_{number}", "type": "function",
             "function": {"name": "lookup", "arguments": json.dumps({"q": sample, sample: "k"})}}]}
        yield {"role": "tool", "tool_call_id": f"call_{number}", "content": f"found {sample}", "timestamp": ts}


FORMATS = {
    "memdream": _memdream_events,
    "claude-code": _claude_code_lines,
    "codex": _codex_lines,
    "openai-chat": _openai_chat_lines,
}


def _memdream(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "memdream", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ}, timeout=300)
    assert done.returncode == 0, f"memdream {' '.join(args)}: {done.stdout}{done.stderr}"
    return done


def _leaks(data: bytes) -> list[str]:
    return [needle for needle in NEEDLES if needle.encode() in data]


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_no_secret_survives_ingest_and_dream(tmp_path: Path, fmt: str) -> None:
    log = tmp_path / "logs" / ("rollout-2026-11-07T09-12-03-019a5d1e-3b7c-7e42-a8f1-6c2d9b0e4f57.jsonl"
                               if fmt == "codex" else "session.jsonl")
    log.parent.mkdir()
    log.write_text("".join(json.dumps(line) + "\n" for line in FORMATS[fmt]()), encoding="utf-8")
    memory = tmp_path / "mem"
    _memdream("init", str(memory), cwd=tmp_path)
    ingested = json.loads(_memdream("ingest", str(log), "--format", fmt, "-m", str(memory), "--format", "json",
                                    cwd=tmp_path).stdout)
    assert ingested["added"] > 0, ingested
    _memdream("dream", "-m", str(memory), cwd=tmp_path)

    leaks = {str(path.relative_to(memory)): found for path in sorted(memory.rglob("*"))
             if path.is_file() and (found := _leaks(path.read_bytes()))}
    history = subprocess.run(["git", "log", "-p", "--all"], cwd=memory, capture_output=True, check=True).stdout
    objects = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=memory,
                             capture_output=True, check=True).stdout
    assert leaks == {}
    assert _leaks(history) == []
    assert _leaks(objects) == []


def test_parallel_ingest_redacts_every_field_and_a_rerun_adds_nothing(tmp_path: Path) -> None:
    """The worker fast path (memdream format in chunks) redacts what the inline path does, and
    redacted ids are stable: the same input again is all duplicates."""
    log = tmp_path / "events.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in _memdream_events()), encoding="utf-8")
    memory = tmp_path / "mem"
    _memdream("init", str(memory), cwd=tmp_path)
    config = memory / "memdream.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("workers: auto", "workers: 2"), encoding="utf-8")
    first = json.loads(_memdream("ingest", str(log), "-m", str(memory), "--format", "json", cwd=tmp_path).stdout)
    again = json.loads(_memdream("ingest", str(log), "-m", str(memory), "--format", "json", cwd=tmp_path).stdout)
    assert first["added"] == first["read"] > 0
    assert (again["added"], again["duplicates"]) == (0, first["added"])
    raw = b"".join(path.read_bytes() for path in (memory / "raw" / "segments").glob("*.jsonl"))
    assert _leaks(raw) == []
    sessions = {json.loads(line)["session"] for line in raw.splitlines()}
    assert "[REDACTED:email]" in " ".join(sessions)


def _git(memory: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=memory, check=True,
                   capture_output=True)


def test_dream_redacts_with_a_rule_added_after_ingest(tmp_path: Path) -> None:
    """Dream's own gate: a value that ingest let through (no rule then) is redacted in the cards,
    plan, INDEX.md and audit that dream writes once memdream.yaml has a rule for it."""
    log = tmp_path / "events.jsonl"
    events = [
        {"session": f"s-{number}", "ts": f"2026-11-0{number + 1}T09:00:00Z", "kind": "note", "id": f"n{number}",
         "text": "badge of alice is EMP-123456",
         "fact": {"subject": "alice EMP-123456", "attribute": "badge", "value": "EMP-123456"}}
        for number in range(3)
    ] + [{"session": "s-0", "ts": "2026-11-01T09:01:00Z", "kind": "plan", "id": "p1",
          "next": ["give EMP-123456 access"], "done": []}]
    log.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    memory = tmp_path / "mem"
    _memdream("init", str(memory), cwd=tmp_path)
    _memdream("ingest", str(log), "-m", str(memory), cwd=tmp_path)
    config = memory / "memdream.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace(
        "extra_patterns: []", 'extra_patterns: [{name: employee-id, pattern: "EMP-[0-9]{6}"}]'), encoding="utf-8")
    _git(memory, "commit", "-qam", "a rule for employee ids")
    _memdream("dream", "-m", str(memory), cwd=tmp_path)

    written = [path for path in memory.rglob("*") if path.is_file() and ".git" not in path.parts
               and path.parts[len(memory.parts)] in ("cards", "audit", "plan.yaml", "INDEX.md")]
    assert [path for path in written if b"EMP-123456" in path.read_bytes()] == []
    cards = [path.read_text(encoding="utf-8") for path in (memory / "cards").rglob("*.yaml")]
    assert any("[REDACTED:employee-id]" in card for card in cards), cards
    _memdream("lint", "-m", str(memory), cwd=tmp_path)

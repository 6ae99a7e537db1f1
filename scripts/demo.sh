#!/usr/bin/env bash
# `make demo`: a new memory, the sample logs in, and dream's own work out. No hand-written cards: every
# card shown here was made by `memdream dream` from sample-memory/logs/ (see its README.md).
set -euo pipefail
BIN=${1:-.venv/bin}
BIN="$(cd "$BIN" && pwd)"
MEMDREAM="$BIN/memdream"
# memdream as the hints at the end print it: the venv is not on PATH, so its path (relative when the
# venv is under this folder, as `make demo` makes it), which runs as printed.
SHOWN="${MEMDREAM#"$PWD"/}"
DEMO=demo-memory
LOGS=sample-memory/logs
# The night after the newest sample session, as if cron ran the dream then.
export NO_COLOR=1 MEMDREAM_NOW=2026-11-17T03:00:00Z
# Secrets and personal data the sample logs carry on purpose: none may reach the memory.
SECRETS='AKIA[0-9A-Z]{16}|wJalrXUtnFEMI|ghp_[A-Za-z0-9]{36}|4111 1111 1111 1111|4111111111111111|@acme-shop\.example'

step() { printf '\n== %s\n' "$*"; }
git_demo() { git -C "$DEMO" -c user.name=memdream -c user.email=memdream@localhost "$@"; }
# "<id> <path>" of the first card listed whose type is one of the arguments, or nothing.
first_card() {
  "$MEMDREAM" cards --memory "$DEMO" --format json | "$BIN/python" -c '
import json, sys
found = [card for card in json.load(sys.stdin) if card["type"] in sys.argv[1:]]
if found:
    print(found[0]["id"], found[0]["path"])
' "$@"
}

step "memdream init $DEMO (a new memory), with the sample's settings"
rm -rf "$DEMO"
"$MEMDREAM" init "$DEMO"
cp sample-memory/memdream.yaml "$DEMO/memdream.yaml"
if ! git_demo diff --quiet -- memdream.yaml; then
  git_demo add memdream.yaml
  git_demo commit -qm "Settings of the sample memory"
fi
"$MEMDREAM" lint "$DEMO"

step "memdream ingest $LOGS (Claude Code, Codex, OpenAI chat and memdream logs; secrets redacted before anything is written)"
"$MEMDREAM" ingest "$LOGS" --memory "$DEMO"
if grep -rqE "$SECRETS" "$DEMO" --exclude-dir=.git; then
  echo "secret found in the memory!"
  grep -rnoE "$SECRETS" "$DEMO" --exclude-dir=.git | head -5
  exit 1
fi
echo "(checked: no AWS key, secret key, GitHub token, card number or e-mail anywhere in $DEMO)"

step "memdream dream --dry-run (what the dream would change)"
"$MEMDREAM" dream --dry-run --memory "$DEMO"

step "memdream dream (one audited commit)"
"$MEMDREAM" dream --memory "$DEMO"

step "git show --stat HEAD (review the dream with git)"
git -C "$DEMO" --no-pager show --stat --format='%s%n%n%b' HEAD

step "memdream dream again (nothing new: no commit)"
"$MEMDREAM" dream --memory "$DEMO"

step "memdream cards --memory $DEMO"
"$MEMDREAM" cards --memory "$DEMO"

learned=$(first_card lesson strategy)
if [ -n "$learned" ]; then
  step "memdream show ${learned%% *} (a lesson or strategy dream learned from the transcripts)"
  "$MEMDREAM" show "${learned%% *}" --memory "$DEMO"
else
  step "memdream show"
  echo "(no lesson or strategy yet: dream has not learned one from these logs)"
fi

step "memdream recall \"how do I run the tests in billing-api\" --scope billing-api --budget 1500 (what an agent would get)"
"$MEMDREAM" recall "how do I run the tests in billing-api" --scope billing-api --budget 1500 --memory "$DEMO"

step "lint as a CI gate: a card with confidence 1.7"
card=$(first_card lesson strategy fact)
if [ -n "$card" ]; then
  path="$DEMO/${card#* }"
  cp "$path" "$path.orig"
  sed 's/^confidence: .*/confidence: 1.7/' "$path.orig" > "$path"
  ( cd "$DEMO" && "$MEMDREAM" lint ) && status=0 || status=$?
  echo "exit status: $status (1 = findings)"
  mv "$path.orig" "$path"
else
  echo "(no card to break: dream made none)"
fi

step "memdream audit --verify (provenance: every card traced to its raw events and to the dream that made it)"
"$MEMDREAM" audit --verify --memory "$DEMO"

step "memdream review (what a person should look at)"
"$MEMDREAM" review --memory "$DEMO" | head -n 16

fact=$(first_card fact)
if [ -n "$fact" ]; then
  step "memdream audit ${fact%% *} (where this fact came from, why, and since when)"
  "$MEMDREAM" audit "${fact%% *}" --memory "$DEMO"
  step "memdream reject ${fact%% *}, then dream (the user's verdict is a raw event; the dream applies it)"
  "$MEMDREAM" reject "${fact%% *}" --note "not true any more" --memory "$DEMO"
  "$MEMDREAM" dream --memory "$DEMO"
fi

step "memdream log (the history of dreams)"
"$MEMDREAM" log --memory "$DEMO"

step "memdream diff (what the last dream changed)"
"$MEMDREAM" diff --memory "$DEMO"

printf '\nDemo memory left in %s/ (a git repository): try `git -C %s log -p`, `%s rollback --dry-run -m %s`.\n' \
  "$DEMO" "$DEMO" "$SHOWN" "$DEMO"
if ! command -v memdream > /dev/null; then
  printf 'memdream is not on your PATH: run it as %s, or install it for everyday use with `pipx install .` or\n' \
    "$SHOWN"
  printf '`uv tool install .` (see the Quickstart in README.md).\n'
fi


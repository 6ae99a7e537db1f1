#!/usr/bin/env bash
# `make demo`: the main job on a copy of sample-memory/, never on the sample itself.
set -euo pipefail
BIN=${1:-.venv/bin}
MEMDREAM="$(cd "$BIN" && pwd)/memdream"
DEMO=demo-memory
export NO_COLOR=1 MEMDREAM_NOW=2026-11-15T03:00:00Z

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

rm -rf "$DEMO"
cp -R sample-memory "$DEMO"
rm -rf "$DEMO/logs"
git -C "$DEMO" init -q -b main
git -C "$DEMO" add -A
git -C "$DEMO" -c user.name=memdream -c user.email=memdream@localhost commit -qm "sample memory"

step "memdream init (a fresh, empty memory)"
rm -rf "$DEMO-empty"
"$MEMDREAM" init "$DEMO-empty"
"$MEMDREAM" lint "$DEMO-empty"
rm -rf "$DEMO-empty"

step "memdream lint $DEMO"
"$MEMDREAM" lint "$DEMO"

step "memdream cards --memory $DEMO"
"$MEMDREAM" cards --memory "$DEMO"

step "memdream cards --status superseded (the version chain in the archive)"
"$MEMDREAM" cards --memory "$DEMO" --status superseded

first=$("$MEMDREAM" cards --memory "$DEMO" --type fact --format json | "$BIN/python" -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
step "memdream show $first"
"$MEMDREAM" show "$first" --memory "$DEMO"

step "lint as a CI gate: a card with confidence 1.7"
sed -i.bak 's/^confidence: .*/confidence: 1.7/' "$DEMO/cards/facts/$first.yaml" && rm -f "$DEMO/cards/facts/$first.yaml.bak"
( cd "$DEMO" && "$MEMDREAM" lint ) && status=0 || status=$?
echo "exit status: $status (1 = findings)"
git -C "$DEMO" checkout -q -- .

printf '\nDemo memory left in %s/ (a git repository: try `git -C %s log`).\n' "$DEMO" "$DEMO"

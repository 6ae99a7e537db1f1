#!/usr/bin/env bash
# `make demo`: the main job on a copy of sample-memory/, never on the sample itself.
set -euo pipefail
BIN=${1:-.venv/bin}
MEMDREAM="$(cd "$BIN" && pwd)/memdream"
DEMO=demo-memory
export NO_COLOR=1 MEMDREAM_NOW=2026-11-15T03:00:00Z

step() { printf '\n== %s\n' "$*"; }

rm -rf "$DEMO" "$DEMO-logs"
cp -R sample-memory "$DEMO"
mv "$DEMO/logs" "$DEMO-logs"
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

step "memdream ingest $DEMO-logs (four log formats; secrets redacted before anything is written)"
"$MEMDREAM" ingest "$DEMO-logs" --memory "$DEMO"
if grep -rqE 'AKIA[0-9A-Z]{16}|4111 1111 1111 1111|wJalrXUtnFEMI|@acme-shop.example' "$DEMO" --exclude-dir=.git; then echo "secret found in the memory!"; exit 1; fi
echo "(checked: no AWS key, secret key, card number or e-mail anywhere in $DEMO)"

step "memdream dream --dry-run (what the dream would change)"
"$MEMDREAM" dream --dry-run --memory "$DEMO"

step "memdream dream (one audited commit)"
"$MEMDREAM" dream --memory "$DEMO"

step "git show --stat HEAD (review the dream with git)"
git -C "$DEMO" --no-pager show --stat --format='%s%n%n%b' HEAD

step "memdream dream again (nothing new: no commit)"
"$MEMDREAM" dream --memory "$DEMO"

step "memdream recall \"which region is the export bucket in\" --budget 700 (what an agent would get)"
"$MEMDREAM" recall "which region is the export bucket in" --budget 700 --memory "$DEMO"

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

rm -rf "$DEMO-logs"
printf '\nDemo memory left in %s/ (a git repository: try `git -C %s log -p`).\n' "$DEMO" "$DEMO"

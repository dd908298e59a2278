#!/usr/bin/env bash
# Build yoi and walk a throwaway demo workspace: a git repository, `yoi init`, three tickets
# with a dependency, one queued, one refused, then the list, the blockers and doctor; then
# `yoi serve` routes the queued tickets (one accepted onto its own worktree, one waiting on it).
# Nothing outside a temporary folder is touched; the folder is printed so you can look around.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --quiet -p yoi-cli
YOI="$PWD/target/debug/yoi"
DEMO="$(mktemp -d -t yoi-demo-XXXXXX)"
export USER="${USER:-demo}"

run() { printf '\n$ yoi %s\n' "$*"; "$YOI" -C "$DEMO" "$@"; }

git -C "$DEMO" init -q -b main
git -C "$DEMO" -c user.name=demo -c user.email=demo@example.invalid commit -q --allow-empty -m "initial commit"
run init

BRIEF='## Intent
Store ticket files atomically.

## Acceptance criteria
- a killed writer never leaves half a file

## Validation
`cargo test -p yoi-store`
'
CORE=$(printf '%s' "$BRIEF" | "$YOI" -C "$DEMO" ticket create --title "Atomic writes in the store" --body-file -)
printf '\n$ yoi ticket create --title "Atomic writes in the store" --body-file -\n%s\n' "$CORE"
CLI=$(printf '%s' "$BRIEF" | "$YOI" -C "$DEMO" ticket create --title "CLI on top of the store" --depends-on "$CORE" --body-file -)
printf '\n$ yoi ticket create --title "CLI on top of the store" --depends-on %s --body-file -\n%s\n' "$CORE" "$CLI"
DOCS=$("$YOI" -C "$DEMO" ticket create --title "Write the docs")
printf '\n$ yoi ticket create --title "Write the docs"\n%s\n' "$DOCS"

run ticket mark-ready "$CLI"
echo "# the CLI ticket waits on the store ticket, which is still in planning:"
run ticket queue "$CLI" || true
run ticket mark-ready "$CORE"
run ticket queue "$CORE"
echo "# with its dependency queued, the CLI ticket may queue behind it:"
run ticket queue "$CLI"
echo "# the docs ticket has no brief yet:"
run ticket mark-ready "$DOCS" || true
run ticket relation add "$DOCS" related "$CLI" --note "document the CLI once it exists"
run ticket list
run ticket list --blocked
run ticket blockers "$CLI"
run ticket show "$CLI"
run ticket doctor

echo "# what routing would do with the queued store ticket (nothing is written):"
run ticket route "$CORE" --dry-run
echo "# start the server: its orchestrator routes the queued tickets by itself"
"$YOI" -C "$DEMO" serve --listen 127.0.0.1:0 >"$DEMO/.yoi/local/demo-serve.out" 2>"$DEMO/.yoi/local/demo-serve.log" &
SERVE=$!
trap 'kill -TERM "$SERVE" 2>/dev/null || true' EXIT
for _ in $(seq 1 200); do
  if "$YOI" -C "$DEMO" ticket list --state inprogress | grep -q "$CORE"; then break; fi
  sleep 0.05
done
run ticket show "$CORE"
echo "# the CLI ticket now waits on work in progress:"
run ticket route "$CLI" --dry-run
run worktree list
kill -TERM "$SERVE"
wait "$SERVE" || true
trap - EXIT
printf '\nDemo workspace: %s (server log: .yoi/local/demo-serve.log)\n' "$DEMO"

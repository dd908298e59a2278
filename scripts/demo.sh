#!/usr/bin/env bash
# Build yoi and walk a throwaway demo workspace: a git repository, `yoi init`, three tickets
# with a dependency, one queued, one refused, then the list, the blockers and doctor; then
# `yoi serve` routes the queued tickets and its supervised pods finish them, with no one asking:
# a coder pod runs a scripted agent (`yoi-fake-agent`, standing in for a real agent CLI) that
# implements the ticket, the verifier runs the brief's validation commands at that commit, a
# reviewer agent approves it, and the service merges it into main; then the dependent ticket is
# accepted and goes the same way. The end shows `git log` of main.
# Nothing outside a temporary folder is touched; the folder is printed so you can look around.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --quiet -p yoi-cli -p yoi-tests --bin yoi --bin yoi-fake-agent
YOI="$PWD/target/debug/yoi"
AGENT="$PWD/target/debug/yoi-fake-agent"
DEMO="$(mktemp -d -t yoi-demo-XXXXXX)"
# The scripted agents' scripts live beside the workspace: agents run sandboxed and cannot read
# .yoi/local (docs/security.md).
AGENTS="$(mktemp -d -t yoi-demo-agents-XXXXXX)"
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
`test -n "$(ls notes)"`
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

echo "# a coder pod runs a scripted agent (any CLI agent fits: \`yoi agent list\`); a reviewer approves:"
cat >"$AGENTS/demo-agent.txt" <<'SCRIPT'
write notes/$YOI_TICKET.md // written for ticket $YOI_TICKET\n
say I added notes/$YOI_TICKET.md.
say Tokens: 1.2k sent, 310 received. Cost: $0.01 message, $0.01 session.
done added the note
SCRIPT
cat >"$AGENTS/demo-review.txt" <<'SCRIPT'
say The note is there and says what it should.
say YOI-VERDICT: approve
done reviewed the change
SCRIPT
sed -i 's/^\[pods.agent\]$/[pods.agent]\ncoder = "demo"\nreviewer = "demo-review"/' "$DEMO/.yoi/workspace.toml"
cat >>"$DEMO/.yoi/workspace.toml" <<TOML

[agents.demo]
program = "$AGENT"
argv = ["{program}", "$AGENTS/demo-agent.txt"]
output = "text"

[agents.demo-review]
program = "$AGENT"
argv = ["{program}", "$AGENTS/demo-review.txt"]
output = "text"
TOML
git -C "$DEMO" add -A .yoi/workspace.toml
git -C "$DEMO" -c user.name=demo -c user.email=demo@example.invalid commit -q -m "yoi workspace"
run agent check demo

echo "# what routing would do with the queued store ticket (nothing is written):"
run ticket route "$CORE" --dry-run
echo "# start the server: it routes the queued tickets and its pods finish them"
"$YOI" -C "$DEMO" serve --listen 127.0.0.1:0 >"$DEMO/.yoi/local/demo-serve.out" 2>"$DEMO/.yoi/local/demo-serve.log" &
SERVE=$!
trap 'kill -TERM "$SERVE" 2>/dev/null || true' EXIT
for _ in $(seq 1 200); do grep -q '^dashboard:' "$DEMO/.yoi/local/demo-serve.out" 2>/dev/null && break; sleep 0.05; done
echo "# yoi serve prints the dashboard's one-time login link (yoi dashboard makes another):"
grep '^dashboard:' "$DEMO/.yoi/local/demo-serve.out" || true
state() { "$YOI" -C "$DEMO" ticket show "$1" --json | grep -o '"state": *"[a-z]*"' | head -1 | grep -o '[a-z]*"$' | tr -d '"'; }
for _ in $(seq 1 1200); do
  if [ "$(state "$CLI")" = done ]; then break; fi
  sleep 0.05
done
run ticket show "$CORE"
run assignment list --ticket "$CORE"
run ticket cost "$CORE"
run ticket list --state all
printf '\n$ git log --stat main\n'
git -C "$DEMO" log --stat main
printf '\n# The merged tickets'"'"' worktrees are gone; the verifier and the reviewer keep their own, moved\n# to each commit they check (docs/flows.md).\n'
run worktree list
run pod list
kill -TERM "$SERVE"
wait "$SERVE" || true
trap - EXIT
[ "$(state "$CORE")" = done ] && [ "$(state "$CLI")" = done ] || { echo "the demo tickets did not finish; see $DEMO/.yoi/local/demo-serve.log" >&2; exit 1; }
printf '\nDemo workspace: %s (server log: .yoi/local/demo-serve.log)\n' "$DEMO"
printf 'The web dashboard of this workspace: %s -C %s serve, then open the login link it prints\n(docs/dashboard.md).\n' "$YOI" "$DEMO"

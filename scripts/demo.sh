#!/usr/bin/env bash
# Build yoi and walk a throwaway demo workspace: a git repository, `yoi init`, three tickets
# with a dependency, one queued, one refused, then the list, the blockers and doctor; then
# `yoi serve` routes the queued tickets (one accepted onto its own worktree, one waiting on it)
# and its supervised coder pod runs a scripted agent (`yoi-fake-agent`, standing in for a real
# agent CLI) that implements the accepted ticket; the server moves its branch to the pod's commit.
# Nothing outside a temporary folder is touched; the folder is printed so you can look around.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --quiet -p yoi-cli -p yoi-tests --bin yoi --bin yoi-fake-agent
YOI="$PWD/target/debug/yoi"
AGENT="$PWD/target/debug/yoi-fake-agent"
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

echo "# a coder pod runs a scripted agent (any CLI agent fits: \`yoi agent list\`):"
cat >"$DEMO/.yoi/local/demo-agent.txt" <<'SCRIPT'
write src/atomic.rs // write to a temp file, fsync, rename\n
say I added src/atomic.rs.
say Tokens: 1.2k sent, 310 received. Cost: $0.01 message, $0.01 session.
done added the atomic write helper
SCRIPT
sed -i 's/^\[pods.agent\]$/[pods.agent]\ncoder = "demo"/' "$DEMO/.yoi/workspace.toml"
cat >>"$DEMO/.yoi/workspace.toml" <<TOML

[agents.demo]
program = "$AGENT"
argv = ["{program}", "$DEMO/.yoi/local/demo-agent.txt"]
output = "text"
TOML
run agent check demo

echo "# what routing would do with the queued store ticket (nothing is written):"
run ticket route "$CORE" --dry-run
echo "# start the server: its orchestrator routes the queued tickets by itself"
"$YOI" -C "$DEMO" serve --listen 127.0.0.1:0 >"$DEMO/.yoi/local/demo-serve.out" 2>"$DEMO/.yoi/local/demo-serve.log" &
SERVE=$!
trap 'kill -TERM "$SERVE" 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  if "$YOI" -C "$DEMO" assignment list --ticket "$CORE" | grep -q completed; then break; fi
  sleep 0.05
done
run ticket show "$CORE"
run assignment list --ticket "$CORE"
run ticket cost "$CORE"
BRANCH=$(git -C "$DEMO" branch --list 'yoi/*' --format '%(refname:short)' | head -1)
printf '\n$ git log --stat -1 %s\n' "$BRANCH"
git -C "$DEMO" log --stat -1 "$BRANCH"
echo "# the CLI ticket now waits on work in progress:"
run ticket route "$CLI" --dry-run
run worktree list
run pod list
kill -TERM "$SERVE"
wait "$SERVE" || true
trap - EXIT
printf '\nDemo workspace: %s (server log: .yoi/local/demo-serve.log)\n' "$DEMO"

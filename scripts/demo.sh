#!/usr/bin/env bash
# make demo: a non-interactive tour of intercom on a temporary INTERCOM_HOME.
# Every step is checked; the script exits non-zero at the first failure and
# leaves no process behind.
set -euo pipefail
BIN="$(cd "$(dirname "$0")/../bin" && pwd)"
export PATH="$BIN:$PATH"
WORK="$(mktemp -d)"
export INTERCOM_HOME="$WORK/home"
unset INTERCOM_SESSION INTERCOM_SOCKET
PIDS=()

cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -f "$INTERCOM_HOME/broker.pid" ]; then
    bp=$(head -1 "$INTERCOM_HOME/broker.pid")
    kill "$bp" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$bp" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
fail() { echo "DEMO FAILED: $*" >&2; exit 1; }
# wait_for FILE PATTERN: wait up to 10 s for PATTERN to appear in FILE.
wait_for() {
  for _ in $(seq 100); do grep -q -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "--- $1:"; cat "$1" || true
  fail "timed out waiting for '$2' in $1"
}
json_field() { sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p" "$1" | head -1; }

step "1. First call auto-spawns the broker (no daemon to manage)"
intercom list
test -f "$INTERCOM_HOME/broker.pid" || fail "broker.pid missing"
echo "broker pid $(head -1 "$INTERCOM_HOME/broker.pid"), state dir $INTERCOM_HOME"

step "2. Two sessions attach: planner and worker"
intercom attach --name planner --json >"$WORK/planner.out" 2>"$WORK/planner.err" & PIDS+=($!)
intercom attach --name worker --json >"$WORK/worker.out" 2>"$WORK/worker.err" & PIDS+=($!)
wait_for "$WORK/planner.out" '"event":"attached"'
wait_for "$WORK/worker.out" '"event":"attached"'
WORKER_ID=$(json_field "$WORK/worker.out" id)
intercom list

step "3. planner sends worker a steer message (returns once durably stored)"
intercom --session planner send worker "Please run the test suite and report back." 
wait_for "$WORK/worker.out" 'Please run the test suite'
echo "worker received:"; grep '"event":"message"' "$WORK/worker.out" | tail -1

step "4. planner asks, worker answers with reply"
intercom --session planner ask worker "Did the tests pass?" >"$WORK/ask.out" 2>&1 & ASK=$!
wait_for "$WORK/worker.out" 'Did the tests pass'
intercom --session worker pending
intercom --session worker reply "Yes: 42 passed, 0 failed."
wait "$ASK" || { cat "$WORK/ask.out"; fail "ask failed"; }
cat "$WORK/ask.out"
grep -q "42 passed" "$WORK/ask.out" || fail "ask did not print the reply"

step "5. worker goes offline; a message waits in its durable inbox"
kill "${PIDS[1]}"; wait "${PIDS[1]}" 2>/dev/null || true
intercom list --all
intercom --session planner send worker "While you were away: rebase on main." | tee "$WORK/send.out"
grep -q "offline" "$WORK/send.out" || fail "send to offline session did not say so"

step "6. worker resumes by id and gets the message"
intercom attach --resume "$WORKER_ID" --json >"$WORK/worker2.out" 2>&1 & PIDS+=($!)
wait_for "$WORK/worker2.out" 'rebase on main'
grep '"event":"message"' "$WORK/worker2.out"

step "7. Topics: a quiet hold, then a release hand-off"
T=browser/shared-profile/tab-4
intercom --session planner subscribe "$T" --await-release
intercom --session worker publish "$T" --resource tab-4 --ownership held "Reviewing the sign-in flow; keep this tab open."
intercom topics "$T" | tee "$WORK/topics.out"
grep -q "tab-4: held by worker" "$WORK/topics.out" || fail "topics does not show the hold"
intercom --session worker publish "$T" --event release --resource tab-4 --ownership released "Sign-in check complete; this tab is available."
wait_for "$WORK/planner.out" '"event":"release"'
echo "planner was woken by the release:"; grep '"event":"release"' "$WORK/planner.out"
intercom topics "$T" | grep -q "tab-4: released" || fail "tab-4 not released"

step "8. Supervised run: a child asks its supervisor and continues with the answer"
cat >"$WORK/child.sh" <<'CHILD'
#!/bin/sh
echo "child $INTERCOM_CHILD_AGENT of run $INTERCOM_RUN_ID starting"
answer=$(intercom contact-supervisor --reason need_decision -m "Target the stable API or the experimental one?")
echo "$answer"
echo "child continues with: ${answer#Reply from supervisor: }"
CHILD
chmod +x "$WORK/child.sh"
RUN=$(agent-runs --supervisor planner start --agent worker -- "$WORK/child.sh")
echo "started run $RUN"
for _ in $(seq 100); do agent-runs questions --json | grep -q '"state":"awaiting_input"' && break; sleep 0.1; done
agent-runs questions
intercom --session planner pending
intercom --session planner reply "Use the stable API."
for _ in $(seq 100); do agent-runs status "$RUN" --json | grep -q '"state":"completed"' && break; sleep 0.1; done
agent-runs list
cat "$INTERCOM_HOME/runs/$RUN/output.log"
grep -q "child continues with: Use the stable API." "$INTERCOM_HOME/runs/$RUN/output.log" || fail "child did not get the answer"

step "9. Status"
intercom --session planner status

printf '\n\033[1mDemo finished: every step worked.\033[0m\n'

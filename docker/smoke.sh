#!/bin/bash
# The Docker deployment end to end, as a person runs it: builds the image, starts the stack,
# waits for every service to be healthy, chats from the host, restarts the stack and checks the
# conversation is still there, kills the Mind's process inside its container and checks that it
# comes back by itself, then tears everything down. One line per step; exits non-zero at the
# first step that fails, with what it saw.
#
#   bash docker/smoke.sh              # or --no-build: test the tobe image built already
#
# Needs Docker Engine with BuildKit and Compose v2.24 or later. It runs as its own compose
# project (tobe-smoke: its own containers and volumes, removed at the end), publishes Face on a
# free loopback port and nothing else, so it leaves a running `tobe` deployment alone; the
# image it builds is tagged as compose.yaml tags it, as `docker compose build` would.
# Chat from the host uses a `tobe` on PATH if there is one, else the image on the host's
# network. The Mind answers with its offline demo model: docker/.env is left out.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROJECT="${TOBE_SMOKE_PROJECT:-tobe-smoke}"
HEALTH_DEADLINE="${TOBE_SMOKE_HEALTH_DEADLINE:-180}"
SERVICES=(mind awareness face hand)
MARKER="smoke test $(date +%s)-$$"
WORK="$(mktemp -d)"
FAILED_STEP=""

# Only what the smoke run changes: the Mind plays its offline demo (docker/.env is not read,
# so no model is called), publishes no port, and Face is published on a free loopback port.
cat > "$WORK/compose.smoke.yaml" <<'YAML'
services:
  mind:
    env_file: !reset []
    ports: !reset []
  face:
    ports: !override
      - "127.0.0.1::7420"
YAML

compose() {
  docker compose -p "$PROJECT" -f "$REPO/docker/compose.yaml" -f "$WORK/compose.smoke.yaml" "$@"
}

step() { printf '%-10s %s\n' "$1" "$2"; }

fail() {
  trap - ERR
  step "${FAILED_STEP:-setup}" "FAILED: $1"
  exit 1
}

teardown() {
  local code=$?
  if [[ $code -ne 0 && -n "${TOBE_SMOKE_KEEP:-}" ]]; then
    step teardown "kept (TOBE_SMOKE_KEEP): docker compose -p $PROJECT down -v removes it"
  elif compose down --volumes --remove-orphans >"$WORK/down.log" 2>&1; then
    step teardown "ok: containers and volumes of $PROJECT removed"
  else
    step teardown "FAILED: $(tail -n 3 "$WORK/down.log" | tr '\n' ' ')"
    code=1
  fi
  rm -rf "$WORK"
  exit "$code"
}

# The health of every service's container: "mind=healthy face=starting …".
health_states() {
  local service id states=""
  for service in "${SERVICES[@]}"; do
    id="$(compose ps -q "$service" 2>/dev/null || true)"
    if [[ -z "$id" ]]; then
      states+="$service=absent "
    else
      states+="$service=$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' "$id") "
    fi
  done
  echo "${states% }"
}

wait_healthy() {
  local waited=0 states
  while true; do
    states="$(health_states)"
    if [[ "$states" != *=* || "$states" =~ =(starting|unhealthy|absent|created|restarting|exited) ]]; then
      if ((waited >= HEALTH_DEADLINE)); then
        fail "not all healthy after ${HEALTH_DEADLINE}s: $states"
      fi
      sleep 2
      waited=$((waited + 2))
    else
      echo "$states"
      return
    fi
  done
}

# `tobe chat` from the host against the published Face, fed the lines given.
chat() {
  local address
  address="$(compose port face 7420)"
  if command -v tobe >/dev/null 2>&1; then
    printf '%s\n' "$@" | TOBE_CHAT_TOKEN="$TOKEN" tobe chat --summary --address "$address"
  else
    printf '%s\n' "$@" | TOBE_CHAT_TOKEN="$TOKEN" docker run --rm -i --network host \
      -e TOBE_CHAT_TOKEN "$IMAGE" tobe chat --summary --address "$address"
  fi
}

# The Mind's process in its container: not PID 1, the init (compose.yaml: `init: true`) that
# ends the container when its child dies, nor this shell.
mind_process_id() {
  compose exec -T mind bash -c '
    for dir in /proc/[0-9]*; do
      pid="${dir#/proc/}"
      [[ "$pid" == 1 || "$pid" == "$$" || "$pid" == "$BASHPID" ]] && continue
      words="$(tr "\0" " " < "$dir/cmdline" 2>/dev/null)" || continue
      [[ "$words" == *"tobe mind serve"* ]] && echo "$pid"
    done'
}

trap teardown EXIT
# Any other command that fails ends the step it belongs to, named.
trap 'fail "exit $? from: $BASH_COMMAND"' ERR
cd "$REPO"

FAILED_STEP=build
# Every service runs the one image (read whole: cutting compose's output short fails it).
IMAGE="$(compose config --images | sort -u)"
[[ "$IMAGE" != *$'\n'* ]] || fail "the services name more than one image: $IMAGE"
if [[ "${1:-}" == "--no-build" ]]; then
  built="skipped (--no-build)"
else
  if ! compose build --quiet mind >"$WORK/build.log" 2>&1; then
    if grep -q "requires BuildKit" "$WORK/build.log"; then
      fail "the image needs BuildKit: install Docker's buildx plugin (docker-buildx-plugin)"
    fi
    fail "$(tail -n 2 "$WORK/build.log" | tr '\n' ' ')"
  fi
  built="ok"
fi
size="$(docker image inspect -f '{{.Size}}' "$IMAGE" 2>/dev/null)" || fail "no image $IMAGE"
step build "$built: $IMAGE, $(awk '{printf "%.0f MB", $1 / 1e6}' <<<"$size")"

FAILED_STEP=up
compose up -d >"$WORK/up.log" 2>&1 || fail "$(tail -n 5 "$WORK/up.log" | tr '\n' ' ')"
step up "ok: project $PROJECT started"

FAILED_STEP=health
step health "ok: $(wait_healthy)"

FAILED_STEP=chat
created="$(compose exec -T mind tobe admin credentials create --kind client --principal tobe \
  --scope chat --label "smoke test" --json)" || fail "no client credential: $created"
TOKEN="$(grep -o '"secret": *"[^"]*"' <<<"$created" | sed 's/.*"\([^"]*\)"$/\1/')"
[[ -n "$TOKEN" ]] || fail "no secret in the credential's JSON"
chat "$MARKER" /quit >"$WORK/chat.log" 2>&1 || fail "tobe chat failed: $(tail -n 5 "$WORK/chat.log" | tr '\n' ' ')"
grep -qi "demo" "$WORK/chat.log" || fail "no reply from the demo model: $(tail -n 5 "$WORK/chat.log")"
step chat "ok: a message and the demo model's reply, from the host through Face at $(compose port face 7420)"

FAILED_STEP=restart
compose restart >"$WORK/restart.log" 2>&1 || fail "$(tail -n 5 "$WORK/restart.log" | tr '\n' ' ')"
wait_healthy >/dev/null
chat /quit >"$WORK/history.log" 2>&1 || fail "tobe chat failed: $(tail -n 5 "$WORK/history.log" | tr '\n' ' ')"
grep -q "$MARKER" "$WORK/history.log" || fail "the conversation lost the message: $(tail -n 10 "$WORK/history.log")"
step restart "ok: healthy again, the conversation still holds the message"

FAILED_STEP=crash
container="$(compose ps -q mind)"
restarts="$(docker inspect -f '{{.RestartCount}}' "$container")"
pid="$(mind_process_id)"
[[ "$pid" =~ ^[0-9]+$ ]] || fail "no 'tobe mind serve' process found in the mind container: $pid"
# bash's kill: the image has no kill program. The exec may end with the container.
compose exec -T mind bash -c "kill -KILL $pid" >/dev/null 2>&1 || true
waited=0
until [[ "$(docker inspect -f '{{.RestartCount}}' "$container")" -gt "$restarts" ]]; do
  ((waited < HEALTH_DEADLINE)) || fail "the mind container was not restarted after its process was killed"
  sleep 1
  waited=$((waited + 1))
done
wait_healthy >/dev/null
chat /quit >"$WORK/recovered.log" 2>&1 || fail "tobe chat failed: $(tail -n 5 "$WORK/recovered.log" | tr '\n' ' ')"
grep -q "$MARKER" "$WORK/recovered.log" || fail "the conversation lost the message: $(tail -n 10 "$WORK/recovered.log")"
step crash "ok: the killed Mind (pid $pid) came back by itself, healthy, the conversation intact"

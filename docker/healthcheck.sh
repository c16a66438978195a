#!/bin/bash
# The image's HEALTHCHECK (installed as /usr/local/bin/tobe-healthcheck): reads the health
# status the ToBe service of this container answers in plain text on its probe address, one
# line (SERVING or NOT_SERVING), with bash's /dev/tcp: no program starts, so a check every few
# seconds costs next to nothing (a `tobe health` would start a Python interpreter each time).
# One image runs every service, so the container names its service in TOBE_SERVICE
# (compose.yaml sets it beside each command; the image's default is the Mind, like its CMD);
# the image sets each service's probe address, TOBE_<SERVICE>__PROBE_LISTEN, to a loopback port.
# Exits 0 only when the service answers SERVING, and prints what it answered.
set -u

# Seconds to wait for the answer: a service whose event loop is stuck never gives one.
ANSWER_TIMEOUT=3

service="${TOBE_SERVICE:-mind}"
case "$service" in
  mind) listen="${TOBE_MIND__PROBE_LISTEN:-}" ;;
  face) listen="${TOBE_FACE__PROBE_LISTEN:-}" ;;
  awareness) listen="${TOBE_AWARENESS__PROBE_LISTEN:-}" ;;
  hand) listen="${TOBE_HAND__PROBE_LISTEN:-}" ;;
  channels) listen="${TOBE_CHANNELS__PROBE_LISTEN:-}" ;;
  *)
    echo "TOBE_SERVICE is '$service': set it to mind, face, awareness, hand or channels" >&2
    exit 1 ;;
esac
variable="TOBE_${service^^}__PROBE_LISTEN"
port="${listen##*:}"
host="${listen%:*}"
host="${host#[}"
host="${host%]}"
if [[ -z "$listen" || "$listen" != *:* || ! "$port" =~ ^[0-9]+$ ]]; then
  echo "$variable is '$listen': set it to the host:port the $service answers probes on" >&2
  exit 1
fi
case "$host" in
  "" | 0.0.0.0) host=127.0.0.1 ;;
  ::) host=::1 ;;
esac

status=""
{ IFS= read -r -t "$ANSWER_TIMEOUT" status <&3; } 2>/dev/null 3<"/dev/tcp/$host/$port"
if [[ -z "$status" ]]; then
  echo "the $service gave no health answer on $listen (not started, stopped or stuck)"
  exit 1
fi
echo "$status"
[[ "${status%% *}" == "SERVING" ]]

#!/bin/sh
# The image's HEALTHCHECK (installed as /usr/local/bin/tobe-healthcheck): probes, over the
# gRPC health protocol, the ToBe service this container runs. One image runs all four, so the
# container names its service in TOBE_SERVICE (compose.yaml sets it beside each command; the
# image's default is the Mind, like its CMD). Each is probed where it listens inside the
# container: the port of its TOBE_<SERVICE>__LISTEN, else the default, and the Hand's health
# socket `tobe hand serve --health-listen unix:$TOBE_DATA_DIR/hand-health.sock` (as `tobe up`).
set -eu

# The port of a listen address ($1, host:port), or $2 when it is unset.
port() {
  case "$1" in
    *:*) echo "${1##*:}" ;;
    *) echo "$2" ;;
  esac
}

service="${TOBE_SERVICE:-mind}"
case "$service" in
  mind)
    exec tobe health --service tobe.v1.Mind \
      --target "127.0.0.1:$(port "${TOBE_MIND__LISTEN:-}" 7410)" ;;
  face)
    exec tobe health --service tobe.v1.FaceGateway \
      --target "127.0.0.1:$(port "${TOBE_FACE__LISTEN:-}" 7420)" ;;
  awareness)
    exec tobe health --service tobe.v1.Awareness \
      --target "127.0.0.1:$(port "${TOBE_AWARENESS__LISTEN:-}" 7430)" ;;
  hand)
    exec tobe health --target "unix:${TOBE_DATA_DIR:-/data}/hand-health.sock" ;;
  *)
    echo "TOBE_SERVICE is '$service': set it to mind, face, awareness or hand" >&2
    exit 1 ;;
esac

#!/usr/bin/env bash
# The Matrix homeserver the Matrix transport's end-to-end tests run against
# (tests/helpers/synapse.py): Synapse from PyPI, pinned, in a virtualenv of its own
# (<repo>/.synapse-venv) because its dependencies are many and pinned and must not shape
# ToBe's. Does nothing when that version is already installed.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="1.163.2"
VENV=".synapse-venv"

if [ -x "$VENV/bin/python" ] \
  && "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('matrix-synapse') != '$VERSION')" 2> /dev/null; then
  exit 0
fi
python3 -m venv --clear "$VENV"
"$VENV/bin/pip" install -q "matrix-synapse==$VERSION"

#!/usr/bin/env bash
# make demo: start a local 3-broker test cluster, show every log dir's space, stop the cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
DEMO_DIR=.demo/cluster
volume=()
# Each log dir gets its own small filesystem when we may mount one (root), so sizes are real and distinct.
if [ "$(id -u)" = "0" ]; then volume=(--volume-size 64M); fi

"$PY" -m kafka_sim down --dir "$DEMO_DIR" >/dev/null 2>&1 || true
rm -rf "$DEMO_DIR"
trap '"$PY" -m kafka_sim down --dir "$DEMO_DIR" >/dev/null 2>&1 || true' EXIT
"$PY" -m kafka_sim up --dir "$DEMO_DIR" --brokers 3 --log-dirs-per-broker 2 "${volume[@]}"
echo
"$PY" scripts/demo_produce.py "$DEMO_DIR/cluster.json"
"$PY" scripts/demo_log_dirs.py "$DEMO_DIR/cluster.json"
echo
echo "Look at: the table above (one row per broker and log dir). Each broker's server.properties and log are under $DEMO_DIR/."

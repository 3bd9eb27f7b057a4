#!/usr/bin/env bash
# make demo: start a local 3-broker Apache Kafka cluster (two combined broker+controller nodes; HEADROOM_TEST_ENGINE=sim
# for the model), run playbooks/site.yml against it twice (the second run changes nothing; its last play runs the usage
# pipeline over the cluster's snapshot topic into .demo/pipeline-live), and show the cluster's volume state. Then a
# volume fills: volume_limits says PAUSE and the real Strimzi plugin throttles a real producer until it is freed. Then generate a synthetic fleet history
# (2 clusters, 12 hours, client traffic with a client over its quota) and run the usage pipeline on it: decisions,
# forecast, client and topic analyses and an HTML report in .demo/pipeline.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
DEMO_DIR=.demo/cluster
volume=()
# Each log dir gets its own small filesystem when we may mount one (root), so sizes are real and distinct.
if [ "$(id -u)" = "0" ]; then volume=(--volume-size 64M); fi

"$PY" -m kafka_testbed down --dir "$DEMO_DIR" >/dev/null 2>&1 || true
rm -rf "$DEMO_DIR"
trap '"$PY" -m kafka_testbed down --dir "$DEMO_DIR" >/dev/null 2>&1 || true' EXIT
"$PY" -m kafka_testbed up --dir "$DEMO_DIR" --brokers 3 --combined 2 --log-dirs-per-broker 2 --catch-up-ms 1000 "${volume[@]}"
"$PY" scripts/demo_produce.py "$DEMO_DIR/cluster.json"
"$PY" scripts/demo_inventory.py "$DEMO_DIR/cluster.json" .demo/inventory.yml

mkdir -p build/pytest-collections/ansible_collections/headroom
ln -sfn "$PWD" build/pytest-collections/ansible_collections/headroom/kafka
export ANSIBLE_COLLECTIONS_PATH="$PWD/build/pytest-collections" ANSIBLE_NOCOLOR=1 PYTHONPATH="$PWD"

echo
echo "== site.yml, first run: configures the quota plugin, rolls the brokers one at a time, applies client quotas,"
echo "   records a usage snapshot and runs the usage pipeline over the snapshot topic (.demo/pipeline-live)"
.venv/bin/ansible-playbook -i .demo/inventory.yml playbooks/site.yml | tee .demo/site-first.log | grep -E '^(TASK|changed|PLAY RECAP)|: ok=' || true
echo
echo "== site.yml, second run: nothing to change, nothing restarted"
.venv/bin/ansible-playbook -i .demo/inventory.yml playbooks/site.yml | tee .demo/site-second.log | grep -E ': ok=' || true
echo
"$PY" scripts/demo_log_dirs.py "$DEMO_DIR/cluster.json"
echo
if grep -q '"engine": "kafka"' "$DEMO_DIR/cluster.json" && [ ${#volume[@]} -gt 0 ]; then
  "$PY" scripts/demo_throttle.py "$DEMO_DIR/cluster.json" 0.1
  echo
fi
echo "== the usage pipeline on a synthetic fleet history: 2 clusters of 3 brokers, 12 hours"
FLEET=.demo/fleet
rm -rf "$FLEET" .demo/pipeline
"$PY" -m headroom_pipeline generate --out "$FLEET" --clusters 2 --brokers 3 --hours 12 >/dev/null
"$PY" -m headroom_pipeline run --snapshots "$FLEET/snapshots.jsonl" --traffic "$FLEET/traffic.jsonl" --quotas "$FLEET/quotas.json" \
    --topic-thresholds "$FLEET/topic-thresholds.json" --min-available-ratio 0.1 --out .demo/pipeline
echo
echo "Look at: the PLAY RECAP lines (the second run has changed=0), the volume table and the throttle story above, the managed block at the"
echo "end of each broker's server.properties under $DEMO_DIR/, and the full logs in .demo/site-first.log and .demo/site-second.log."
echo "The pipeline on the synthetic fleet: .demo/pipeline/report/index.html (the report) and .demo/pipeline/summary.json"
echo "(the counts); on the live cluster's snapshot topic (site.yml's last play): .demo/pipeline-live/."

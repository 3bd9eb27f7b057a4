#!/usr/bin/env bash
# make demo: start a local 3-broker test cluster (two combined broker+controller nodes), run playbooks/site.yml
# against it twice (the second run changes nothing), and show the cluster's volume state.
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
"$PY" -m kafka_sim up --dir "$DEMO_DIR" --brokers 3 --combined 2 --log-dirs-per-broker 2 --catch-up-ms 1000 "${volume[@]}"
"$PY" scripts/demo_produce.py "$DEMO_DIR/cluster.json"
"$PY" scripts/demo_inventory.py "$DEMO_DIR/cluster.json" .demo/inventory.yml

mkdir -p build/pytest-collections/ansible_collections/headroom
ln -sfn "$PWD" build/pytest-collections/ansible_collections/headroom/kafka
export ANSIBLE_COLLECTIONS_PATH="$PWD/build/pytest-collections" ANSIBLE_NOCOLOR=1 PYTHONPATH="$PWD"

echo
echo "== site.yml, first run: configures the quota plugin, rolls the brokers one at a time, applies client quotas"
.venv/bin/ansible-playbook -i .demo/inventory.yml playbooks/site.yml | tee .demo/site-first.log | grep -E '^(TASK|changed|PLAY RECAP)|: ok=' || true
echo
echo "== site.yml, second run: nothing to change, nothing restarted"
.venv/bin/ansible-playbook -i .demo/inventory.yml playbooks/site.yml | tee .demo/site-second.log | grep -E ': ok=' || true
echo
"$PY" scripts/demo_log_dirs.py "$DEMO_DIR/cluster.json"
echo
echo "Look at: the PLAY RECAP lines (the second run has changed=0), the volume table above, the managed block at the"
echo "end of each broker's server.properties under $DEMO_DIR/, and the full logs in .demo/site-first.log and .demo/site-second.log."

#!/usr/bin/env bash
# make demo-hosts: the demo's story on hosts as users run Kafka. Starts a fleet of test hosts (containers with systemd
# and sshd, Kafka in the Apache layout under kafka.service, no quota plugin and no metrics exporter), runs
# playbooks/site.yml over SSH twice (the first installs the plugin's jar and the JMX exporter and restarts every node
# through systemd; the second changes nothing), then fills a broker's volume until the real plugin throttles a real
# producer, as the brokers' exporters show, and frees it. HEADROOM_DEMO_KEEP=1 leaves the fleet running.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
FLEET=.demo/fleet

"$PY" -m kafka_testbed hosts down --dir "$FLEET" >/dev/null 2>&1 || true
rm -rf "$FLEET"
if [ "${HEADROOM_DEMO_KEEP:-0}" != "1" ]; then
  trap '"$PY" -m kafka_testbed hosts down --dir "$FLEET" >/dev/null 2>&1 || true' EXIT
fi
"$PY" -m kafka_testbed hosts up --dir "$FLEET" --brokers 3 --controllers 1
BOOTSTRAP=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['bootstrap_servers'])" "$FLEET/cluster.json")
cat > "$FLEET/site-vars.yml" <<VARS
# The site's settings, layered over the fleet's inventory (ansible-playbook -i inventory.yml -i site-vars.yml).
kafka:
  vars:
    kafka_quotas:
      type: strimzi
      producer_byte_rate: 1048576
      min_available_ratio_per_volume: 0.1
      excluded_principals: ["User:ops"]
      check_interval: 5
    quota_plugin_admin:
      bootstrap_servers: "$BOOTSTRAP"
    kafka_jmx_exporter: true
    kafka_preflight_limits: {min_available_ratio: 0.05, fail_on: pause}
VARS

mkdir -p build/pytest-collections/ansible_collections/headroom
ln -sfn "$PWD" build/pytest-collections/ansible_collections/headroom/kafka
export ANSIBLE_COLLECTIONS_PATH="$PWD/build/pytest-collections" ANSIBLE_NOCOLOR=1 PYTHONPATH="$PWD"

echo
echo "== site.yml over SSH, first run: the plugin's jar and the JMX exporter installed, each node restarted by systemd"
.venv/bin/ansible-playbook -i "$FLEET/inventory.yml" -i "$FLEET/site-vars.yml" playbooks/site.yml \
  | tee .demo/hosts-site-first.log | grep -E '^(TASK|changed|PLAY RECAP)|: ok=' || true
echo
echo "== site.yml, second run: nothing to change, nothing restarted"
.venv/bin/ansible-playbook -i "$FLEET/inventory.yml" -i "$FLEET/site-vars.yml" playbooks/site.yml \
  | tee .demo/hosts-site-second.log | grep -E ': ok=' || true
echo
"$PY" scripts/demo_throttle.py "$FLEET/cluster.json" 0.1
echo
echo "Look at: the PLAY RECAP lines (the second run has changed=0), the throttle story above, the hosts' exporters"
echo "(curl http://ADDRESS:7071/metrics | grep strimzi_quotas), and the inventory a user would write: $FLEET/inventory.yml."
echo "Reach a host as Ansible does: ssh -i $FLEET/ssh/id_ed25519 -o UserKnownHostsFile=$FLEET/ssh/known_hosts headroom@ADDRESS"

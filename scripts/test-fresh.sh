#!/usr/bin/env bash
# make test as on a fresh machine, which is where CI may run it: a clean clone of this checkout's HEAD (no build/, no
# .venv, no downloaded Kafka), an empty HOME (no pip, Maven, Ansible or molecule caches) and a Docker daemon of its own
# on an empty store (no images: the test hosts' base image is built again with debootstrap). What stays is what a
# fresh machine of ours has or what make test installs with apt (Python, Java, Maven, docker.io, debootstrap,
# prometheus). Prints the wall time at the end; exits with make test's status.
#
#   FRESH_DIR=DIR   work in DIR (default: a new temporary directory, removed at the end)
#   FRESH_KEEP=1    keep the clone, HOME and Docker store afterwards (to look at what failed)
#   FRESH_TARGET    the make target to run in the clone (default: test)
#   FRESH_CPUS=0    run it on these CPUs only (taskset's list): a machine with less CPU, as make test-one-core does
# make test's JUnit XML (each test's time) is copied to build/test-fresh-results of this checkout.
set -uo pipefail

checkout=$(git -C "$(dirname "${BASH_SOURCE[0]}")/.." rev-parse --show-toplevel)
if [ -n "$(git -C "$checkout" status --porcelain --untracked-files=no)" ]; then
    echo "test-fresh: note: uncommitted changes are not in the clean clone; it tests HEAD $(git -C "$checkout" rev-parse --short HEAD)" >&2
fi
if docker info >/dev/null 2>&1; then
    echo "test-fresh: a Docker daemon already answers (${DOCKER_HOST:-the default socket}); stop it first: a second" \
        "daemon would fight it over the default bridge, and the tests must start their own on an empty store" >&2
    exit 2
fi

work=${FRESH_DIR:-$(mktemp -d -t headroom-fresh-XXXXXX)}
mkdir -p "$work/home" "$work/docker"
started=$(date +%s)

stop_daemon() {
    # The daemon the tests started on the fresh store (make test stops it too; this is for a make that was killed).
    if [ -f "$work/docker/dockerd.pid" ]; then
        pid=$(cat "$work/docker/dockerd.pid")
        kill "$pid" 2>/dev/null && for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -9 "$pid" 2>/dev/null
    fi
}
cleanup() {
    stop_daemon
    if [ -z "${FRESH_KEEP:-}" ] && [ -z "${FRESH_DIR:-}" ]; then
        # The store holds the containers' layers; some are read-only until unmounted.
        grep -o " $work/[^ ]*" /proc/self/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

git clone --quiet --no-hardlinks "$checkout" "$work/clone" || exit 2
echo "test-fresh: make ${FRESH_TARGET:-test} in a clean clone of $(git -C "$work/clone" rev-parse --short HEAD) at $work/clone"

status=0
pin=()
if [ -n "${FRESH_CPUS:-}" ]; then pin=(taskset -c "$FRESH_CPUS"); fi
"${pin[@]}" env -u XDG_CACHE_HOME -u PIP_CACHE_DIR -u MAVEN_OPTS -u ANSIBLE_HOME -u MOLECULE_EPHEMERAL_DIRECTORY \
    HOME="$work/home" HEADROOM_DOCKER_ROOT="$work/docker" DOCKER_HOST="unix://$work/docker/docker.sock" \
    make -C "$work/clone" "${FRESH_TARGET:-test}" || status=$?

# Each test's time (make test's JUnit XML), kept beside the checkout: the clone goes with the fresh machine.
if [ -d "$work/clone/build/test-results" ]; then
    rm -rf "$checkout/build/test-fresh-results" && mkdir -p "$checkout/build" &&
        cp -r "$work/clone/build/test-results" "$checkout/build/test-fresh-results"
fi
elapsed=$(($(date +%s) - started))
printf 'test-fresh: make %s on a fresh machine: exit %d in %d min %02d s\n' \
    "${FRESH_TARGET:-test}" "$status" $((elapsed / 60)) $((elapsed % 60))
trap - EXIT
cleanup
exit "$status"

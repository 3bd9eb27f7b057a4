#!/usr/bin/env bash
# The collection on each ansible-core release it supports: for every release, a virtualenv of its own with that
# ansible-core and what make venv installs (requirements/dev.txt, then this checkout's package, editable), then
# ansible-test sanity and the unit lane in it; on the oldest and the newest release, a play on real Kafka too (the
# integration target role_client_quotas: the collection's role and modules against a local test cluster). Prints one
# line per release and step, and fails when any step failed.
#
# Usage: scripts/ansible-core-matrix.sh            (make ansible-core-matrix)
#
# Environment:
#   CORE_RELEASES  the ansible-core releases, oldest first (default: "2.17 2.18 2.19 2.20 2.21"); each gets its newest
#                  patch release
#   CORE_PLAY      the integration target run on the oldest and the newest (default: role_client_quotas; none: no play)
#
# ansible-core 2.20 and later need Python 3.12 or newer on the control node: the matrix takes python3.12 (or 3.13) from
# PATH, or from pyenv's versions, and fails naming the release when there is none. Older releases run on python3.11.
# The virtualenvs are kept in build/ansible-core-<release> and reused while requirements/ is unchanged.
set -uo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
read -ra releases <<<"${CORE_RELEASES:-2.17 2.18 2.19 2.20 2.21}"
play="${CORE_PLAY:-role_client_quotas}"

# A python3.<minor> that runs: from PATH, else from pyenv's versions (whose shims refuse versions not enabled).
find_python() {
    local minor=$1 candidate
    for candidate in "$(command -v "python3.${minor}" 2>/dev/null)" \
        "$(pyenv root 2>/dev/null)"/versions/3."${minor}".*/bin/python3."${minor}"; do
        if [[ -n "${candidate}" && -x "${candidate}" ]] && "${candidate}" -c '' 2>/dev/null; then
            echo "${candidate}"
            return 0
        fi
    done
    return 1
}

python_for() {
    local release=$1
    if [[ "$(printf '%s\n' "${release}" 2.20 | sort -V | head -1)" == 2.20 ]]; then
        find_python 12 || find_python 13
    else
        find_python 11
    fi
}

# The release's virtualenv, by make venv's own rule (installed again when requirements/ or pyproject.toml changed).
prepare_venv() {
    local release=$1 python=$2 venv=$3
    make --no-print-directory -C "${repo_root}" venv VENV="${venv}" PYTHON="${python}" \
        VENV_EXTRA="ansible-core~=${release}.0"
}

cd "${repo_root}" || exit 2
status=0
report=()
note() {  # note RELEASE WHAT STARTED STATUS: one line of the report
    local outcome=passed
    if (($4 != 0)); then
        outcome=FAILED
        status=1
    fi
    report+=("ansible-core $1: $2 ${outcome} ($((SECONDS - $3)) s)")
    echo "${report[-1]}"
}
step() {  # step RELEASE WHAT COMMAND...: run it and note how it went
    local release=$1 what=$2 started=${SECONDS} rc=0
    shift 2
    "$@" || rc=$?
    note "${release}" "${what}" "${started}" "${rc}"
}

for index in "${!releases[@]}"; do
    release=${releases[${index}]}
    if ! python=$(python_for "${release}"); then
        report+=("ansible-core ${release}: FAILED: no Python to run it on (2.20 and later need python3.12 or newer)")
        echo "${report[-1]}"
        status=1
        continue
    fi
    started=${SECONDS} rc=0
    prepare_venv "${release}" "${python}" "build/ansible-core-${release}" || rc=$?  # make's VENV: in the checkout
    venv="${repo_root}/build/ansible-core-${release}"
    note "${release}" "install ($(basename "${python}"))" "${started}" "${rc}"
    ((rc == 0)) || continue
    installed=$("${venv}/bin/python" -c 'import ansible.release; print(ansible.release.__version__)')
    echo "ansible-core ${release}: ${installed} on $("${venv}/bin/python" --version)"
    python_version=$("${venv}/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    step "${release}" sanity env SANITY_VENV="${venv}" SANITY_PYTHON="${python_version}" \
        SANITY_LOG="ansible-test-sanity-${release}.log" "${repo_root}/scripts/ansible-test-sanity.sh"
    lane=(env PATH="${venv}/bin:${PATH}" "${venv}/bin/python" -m pytest
        -p no:cacheprovider -q -n 2 --dist loadfile)
    step "${release}" "unit lane" "${lane[@]}" -m unit "${repo_root}/tests"
    if [[ "${play}" != none ]] && { ((index == 0)) || ((index == ${#releases[@]} - 1)); }; then
        step "${release}" "play on real Kafka (${play})" "${lane[@]}" -m integration \
            "${repo_root}/tests/integration/test_integration_targets.py" -k "test_target and ${play}"
    fi
done

echo
printf '%s\n' "${report[@]}"
exit "${status}"

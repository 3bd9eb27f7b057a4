#!/usr/bin/env bash
# Run `ansible-test sanity` for the headroom.kafka collection with the
# ansible-test from the project virtualenv (.venv, see `make venv`).
#
# Usage: scripts/ansible-test-sanity.sh [extra `ansible-test sanity` options]
#   e.g. scripts/ansible-test-sanity.sh --test pylint --test pep8
#
# Environment:
#   SANITY_PYTHON   Python version to test with (default: 3.11).
#   SANITY_VERBOSE  1 = stream the full ansible-test output instead of a summary.
#   SANITY_VENV     the virtualenv whose ansible-test runs (default: .venv; make ansible-core-matrix gives one per
#                   ansible-core release).
#   SANITY_LOG      the log's name under build/ (default: ansible-test-sanity.log).
#
# What it takes care of:
# * Layout. ansible-test only accepts a collection that sits at
#   .../ansible_collections/<namespace>/<name>, and it resolves symlinks in
#   the working directory (a symlink to the repository root is rejected once
#   --venv re-runs ansible-test inside its virtualenv). So each run copies the
#   files to test into build/ansible_collections/headroom/kafka (a few hundred
#   KB) and runs from there; error paths are relative to the collection root,
#   i.e. the same as in the repository.
# * Files tested: git-tracked files plus untracked files that are not ignored
#   (what ansible-test itself tests in a git work tree). Nothing has to be
#   committed or staged first; ignored paths (.venv, build, tests/output, ...)
#   are never tested. Outside a git work tree, everything but those paths.
# * Offline pip bootstrap. Each virtualenv ansible-test creates is bootstrapped
#   with ~/.ansible/test/cache/get_pip_<X_Y>.py, normally downloaded from
#   Ansible's CI file server. If that file is missing, a stand-in
#   (scripts/sanity/get_pip_standin.py) is installed there together with the
#   matching pip wheel, downloaded from the package index.
# * Python versions. --venv makes ansible-test build virtualenvs with its own
#   pinned sanity requirements (from the package index), cached under
#   ~/.ansible/test/venv. Only one Python version is tested, 3.11 (the
#   control-node Python) by default: without --python, ansible-test would also
#   try every other python3.X it finds on PATH, and pyenv's shims for versions
#   that are installed but not enabled fail ("pyenv: python3.12: command not
#   found"). Another version costs a fresh set of virtualenvs on a cold cache
#   and only affects the version-dependent tests (compile, import); use
#   SANITY_PYTHON=3.12 where a working python3.12 is on PATH.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
venv_bin="${SANITY_VENV:-${repo_root}/.venv}/bin"
python_version="${SANITY_PYTHON:-3.11}"
cache_dir="${HOME}/.ansible/test/cache"
collection_dir="${repo_root}/build/ansible_collections/headroom/kafka"
log_file="${repo_root}/build/${SANITY_LOG:-ansible-test-sanity.log}"

if [[ ! -x "${venv_bin}/ansible-test" ]]; then
    echo "sanity: ${venv_bin}/ansible-test not found; run 'make venv' first." >&2
    exit 2
fi

# --- offline pip bootstrap --------------------------------------------------
# The pip version ansible-test bootstraps into its virtualenvs.
if ! pip_version="$("${venv_bin}/python" - 2>&1 <<'EOF'
import types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version='3'))['pip'])
EOF
)"; then
    printf 'sanity: cannot tell which pip version ansible-test bootstraps:\n%s\n' "${pip_version}" >&2
    exit 2
fi
get_pip="${cache_dir}/get_pip_${pip_version//./_}.py"
standin="${repo_root}/scripts/sanity/get_pip_standin.py"
mkdir -p "${cache_dir}"

# A genuine upstream bootstrap script, if cached, is left alone. Otherwise
# install (or refresh) the stand-in and the wheel it needs. Files are moved
# into place whole, so a concurrent run never sees a partial one.
if [[ ! -e "${get_pip}" ]] || grep -q 'Offline stand-in for the pip bootstrap' "${get_pip}"; then
    if ! compgen -G "${cache_dir}/pip-${pip_version}-*.whl" >/dev/null; then
        echo "sanity: downloading the pip ${pip_version} wheel into ${cache_dir}"
        tmp_dir="$(mktemp -d "${cache_dir}/.download.XXXXXX")"
        if ! out="$("${venv_bin}/python" -m pip download --quiet --disable-pip-version-check \
            --no-deps --only-binary=:all: --dest "${tmp_dir}" "pip==${pip_version}" 2>&1)"; then
            printf '%s\n' "${out}" >&2
            rm -rf "${tmp_dir}"
            exit 2
        fi
        mv "${tmp_dir}"/pip-"${pip_version}"-*.whl "${cache_dir}/"
        rm -rf "${tmp_dir}"
    fi
    if ! cmp -s "${standin}" "${get_pip}"; then
        cp "${standin}" "${get_pip}.tmp.$$"
        mv -f "${get_pip}.tmp.$$" "${get_pip}"
    fi
fi

# --- collection layout --------------------------------------------------------
# A fresh copy of the files to test, so ansible-test sees a real directory at
# .../ansible_collections/headroom/kafka. Test results (tests/output) go to the
# repository's tests/output through a symlink.
list_files() {
    if git -C "${repo_root}" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        # Tracked and untracked-but-not-ignored files; skip deleted ones.
        git -C "${repo_root}" ls-files -z --cached --others --exclude-standard |
            while IFS= read -r -d '' path; do
                if [[ -e "${path}" || -L "${path}" ]]; then
                    printf '%s\0' "${path}"
                fi
            done
    else
        find . -mindepth 1 \( -path ./.git -o -path ./.venv -o -path ./build -o -path ./tests/output \
            -o -path ./.demo -o -name __pycache__ -o -name .pytest_cache \) -prune \
            -o \( -type f -o -type l \) ! -name '*.pyc' ! -name '*.tar.gz' -printf '%P\0'
    fi
}

rm -rf "${collection_dir}"
mkdir -p "${collection_dir}" "${repo_root}/tests/output"
(cd "${repo_root}" && list_files | tar --null --no-recursion --files-from=- -cf -) |
    tar -C "${collection_dir}" -xf -
mkdir -p "${collection_dir}/tests"
ln -s "${repo_root}/tests/output" "${collection_dir}/tests/output"

cd "${collection_dir}"
export PATH="${venv_bin}:${PATH}"
# Pin the content root to the copy. Otherwise ansible-test searches upwards for
# version control, finds the repository's .git (where build/ is ignored) and
# tests nothing. (ansible-test sets this variable itself when it delegates.)
export ANSIBLE_TEST_CONTENT_ROOT="${collection_dir}"

cmd=("${venv_bin}/ansible-test" sanity --venv --python "${python_version}" --color no "$@")

if [[ "${SANITY_VERBOSE:-0}" == 1 ]]; then
    exec "${cmd[@]}" </dev/null
fi

# --- run, then summarise ---------------------------------------------------------
junit_dir="${repo_root}/tests/output/junit"
rm -f "${junit_dir}"/ansible-test-sanity-*.xml

start=${SECONDS}
rc=0
"${cmd[@]}" --junit </dev/null >"${log_file}" 2>&1 || rc=$?
elapsed=$((SECONDS - start))

summary_rc=0
"${venv_bin}/python" "${repo_root}/scripts/sanity/junit_summary.py" "${junit_dir}" \
    "Python ${python_version}, ${elapsed}s, log: build/$(basename "${log_file}")" \
    "${log_file}" || summary_rc=$?

if ((rc != 0)) && ! grep -q '<failure' "${junit_dir}"/ansible-test-sanity-*.xml 2>/dev/null; then
    # ansible-test failed before or outside the tests themselves: show why.
    echo "sanity: ansible-test exited with status ${rc}; last lines of its output:" >&2
    tail -n 40 "${log_file}" >&2
fi

if ((rc == 0 && summary_rc != 0)); then
    rc=${summary_rc}
fi
exit "${rc}"

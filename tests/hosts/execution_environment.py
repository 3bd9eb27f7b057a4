"""An execution environment (EE) with the collection, built as AWX and Automation Controller users build theirs: with
ansible-builder 3, from a definition that lists the collection's Galaxy artifact. ansible-builder reads what the
collection needs from the artifact's meta/execution-environment.yml (requirements.txt and bindep.txt) and installs
it. No image registry is reachable here, so the base image is the test hosts' own, made from Debian packages
(bookworm's Python 3.11 with python3-venv): ansible-builder then installs ansible-core and ansible-runner itself, into a
virtual environment the definition makes first.

A module of its own (not conftest): test files import helpers by module name."""

import os
import ssl
import subprocess
import sys
import uuid

import yaml
from ansible.release import __version__ as ANSIBLE_CORE_VERSION
from fleet_playbooks import galaxy_artifact

from kafka_testbed import test_run
from kafka_testbed.hosts import image
from kafka_testbed.hosts.docker import client_environment
from kafka_testbed.hosts.fleet import LABEL

BIN = os.path.dirname(sys.executable)
BUILD_TIMEOUT = 900  # 150 s measured on two cores with PyPI's wheels downloaded; the stages run pip four times
# Debian disables ensurepip for its system Python, which ansible-builder runs first: the EE's Python is a virtual
# environment of Debian's (python3-venv), first on PATH so that the stages find ansible-galaxy and bindep in it.
EE_VENV = "/opt/ansible"
EE_PYTHON = f"{EE_VENV}/bin/python3"
# One tag, moved by each build: the next build reuses the layers that did not change (pip's installs of ansible-core
# and ansible-runner), and a machine keeps one such image.
EE_TAG = "headroom-kafka-ee:tests"


def trusted_certificates():
    """The CA bundle this machine trusts, as PIP_CERT or OpenSSL name it: where a network's proxy re-signs HTTPS,
    the image's pip must trust what the build's host trusts, as a user's EE built behind such a proxy does."""
    for candidate in (
        os.environ.get("PIP_CERT"),
        os.environ.get("SSL_CERT_FILE"),
        ssl.get_default_verify_paths().cafile,
    ):
        if candidate and os.path.isfile(candidate):
            return candidate
    return None


def definition(base, artifact, certificates):
    """ansible-builder 3's execution-environment.yml: the collection from its artifact, ansible-core as on this
    control node, and the collection's own requirements, which ansible-builder finds in the artifact. ``artifact`` and
    ``certificates`` are paths; ansible-builder copies them into the build context."""
    build_files = [{"src": artifact, "dest": "collections"}]
    prepend = [f"RUN python3 -m venv {EE_VENV}", f"ENV PATH={EE_VENV}/bin:$PATH"]
    if certificates:
        build_files.append({"src": certificates, "dest": "certificates"})
        bundle = "/etc/ssl/certs/ca-certificates.crt"
        prepend += [
            f"COPY _build/certificates/{os.path.basename(certificates)} {bundle}",
            f"ENV PIP_CERT={bundle} SSL_CERT_FILE={bundle}",
        ]
    return {
        "version": 3,
        "images": {"base_image": {"name": base}},
        "dependencies": {
            "python_interpreter": {"python_path": EE_PYTHON},
            "ansible_core": {"package_pip": f"ansible-core=={ANSIBLE_CORE_VERSION}"},
            "ansible_runner": {"package_pip": "ansible-runner"},
            "galaxy": {
                "collections": [{"name": f"collections/{os.path.basename(artifact)}", "type": "file"}],
            },
        },
        # Debian's package manager: ansible-builder installs the system packages bindep.txt lists with it.
        "options": {"package_manager_path": "/usr/bin/apt-get"},
        "additional_build_files": build_files,
        "additional_build_steps": {"prepend_base": prepend},
    }


def build_execution_environment(work):
    """Build the EE with ``ansible-builder build`` on Docker; returns its tag. The definition and the build context
    are kept in ``work``; ansible-builder's output is in the error when it fails."""
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "execution-environment.yml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(
            definition(image.base_image(), galaxy_artifact(), trusted_certificates()), handle, sort_keys=False
        )
    command = [
        os.path.join(BIN, "ansible-builder"),
        "build",
        "--file",
        path,
        "--context",
        os.path.join(work, "context"),
        "--tag",
        EE_TAG,
        "--container-runtime",
        "docker",
        "--verbosity",
        "2",
    ]
    result = subprocess.run(
        command,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        check=False,
        env=client_environment(),
    )
    if result.returncode != 0:
        raise AssertionError(f"ansible-builder build failed:\n{(result.stdout + result.stderr)[-6000:]}")
    return EE_TAG


def run_in_execution_environment(tag, fleet, command, files, timeout=1200):
    """``command`` inside the EE, as AWX runs a job: a container on the fleet's network, root so that it may read
    the fleet's SSH key, with each of ``files`` (inventories, key, known_hosts) mounted read-only at its own path. The
    container carries the fleet's label, so the fleet's removal also removes it if a timeout leaves it behind."""
    mounts = []
    for directory in sorted({os.path.dirname(os.path.abspath(path)) for path in files}):
        mounts += ["--volume", f"{directory}:{directory}:ro"]
    docker = [
        "docker",
        "run",
        "--rm",
        "--name",
        f"headroom-ee-{uuid.uuid4().hex[:8]}",
        "--label",
        f"{LABEL}={fleet.directory}",
        *test_run.container_labels(),
        "--network",
        fleet.network,
        "--user",
        "0",
        "--env",
        "ANSIBLE_NOCOLOR=1",
        "--env",
        "ANSIBLE_HOST_KEY_CHECKING=True",
        *mounts,
        tag,
        *command,
    ]
    return subprocess.run(docker, capture_output=True, text=True, timeout=timeout, check=False)

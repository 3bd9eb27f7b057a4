# Offline stand-in for the pip bootstrap script ansible-test downloads.
#
# ansible-test bootstraps pip into each virtual environment it creates by
# running ``~/.ansible/test/cache/get_pip_<X_Y>.py`` (normally fetched from
# Ansible's CI file server, which is not reachable from every network).
# scripts/ansible-test-sanity.sh installs a copy of this file under that name,
# next to the matching pip wheel downloaded from PyPI.  Like the upstream
# get-pip.py it runs ``pip install --upgrade --force-reinstall`` with the
# given arguments, using pip from the wheel itself (and installing pip from
# that wheel when the requested version matches).
"""Install pip into the running interpreter from a pip wheel next to this file."""

from __future__ import annotations

import glob
import os
import sys

PREFIX = "get_pip_"
# get-pip.py options that have no pip install equivalent.
DROPPED_ARGS = ("--no-setuptools", "--no-wheel")


def main():
    """Run pip from the cached wheel to install the requested packages."""
    here = os.path.dirname(os.path.abspath(__file__))
    name = os.path.splitext(os.path.basename(__file__))[0]

    if not name.startswith(PREFIX):
        sys.exit("%s: file name must start with %s" % (__file__, PREFIX))

    version = name[len(PREFIX) :].replace("_", ".")
    wheels = sorted(glob.glob(os.path.join(here, "pip-%s-*.whl" % version)))

    if not wheels:
        sys.exit("%s: no pip %s wheel found in %s" % (__file__, version, here))

    sys.path.insert(0, wheels[0])

    from pip._internal.cli.main import main as pip_main  # pylint: disable=import-outside-toplevel

    # Install pip itself from the wheel file, so bootstrapping needs no index.
    args = [wheels[0] if arg == "pip==" + version else arg for arg in sys.argv[1:] if arg not in DROPPED_ARGS]

    sys.exit(pip_main(["install", "--upgrade", "--force-reinstall"] + args))


if __name__ == "__main__":
    main()

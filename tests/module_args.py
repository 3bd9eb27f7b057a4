"""patch_module_args on every ansible-core the collection supports: the arguments a module run in this process reads,
as Ansible hands them over. ansible-core 2.19 ships the helper; before it, the arguments are the ones AnsibleModule
parses from basic._ANSIBLE_ARGS."""

import contextlib
import json

from ansible.module_utils import basic

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core < 2.19

    @contextlib.contextmanager
    def patch_module_args(args):
        from unittest import mock

        with mock.patch.object(basic, "_ANSIBLE_ARGS", json.dumps({"ANSIBLE_MODULE_ARGS": args}).encode()):
            yield


__all__ = ["patch_module_args"]

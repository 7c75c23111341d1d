# -*- coding: utf-8 -*-
# Copyright (c) 2026 the ponywrite authors
# ISC License (see LICENSE at the root of the ponywrite project)
"""What the modules of ponywrite.durable share: finding ponywrite, its
options from the module's parameters, and its exit statuses as failures."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import grp
import os
import pwd

MISSING = ("ponywrite is not installed on this host: install it (make install in its "
           "source tree, or its package) or set PATH for the task")

# parameter -> ponywrite's flag, for the boolean parameters a module has
FLAGS = (('backup', '-b'), ('no_empty', '-E'), ('lock', '-l'), ('parents', '-p'),
         ('no_sync', '--no-sync'))


def ponywrite_path(module):
    """ponywrite on the host's PATH; fails the task with how to get it."""
    exe = module.get_bin_path('ponywrite')
    if exe is None:
        module.fail_json(msg=MISSING)
    return exe


def mode_arg(mode):
    """-m's argument: a YAML integer (0644 read as 420) in octal, else as given."""
    return '%04o' % mode if isinstance(mode, int) else str(mode)


def options(params):
    """ponywrite's options for the module's parameters (those it has)."""
    argv = []
    if params.get('mode') is not None:
        argv += ['-m', mode_arg(params['mode'])]
    if params.get('owner') is not None:
        argv += ['-o', params['owner']]
    if params.get('group') is not None:
        argv += ['-g', params['group']]
    return argv + [flag for name, flag in FLAGS if params.get(name)]


def exit_with(module, rc, err, result):
    """End the task from ponywrite's exit status RC and its messages ERR."""
    err = err.strip()
    if rc == 4:
        module.fail_json(msg='partly replaced: ' + err, rc=rc, **result)
    if rc == 3:
        module.fail_json(msg='replaced but not durable: ' + err, rc=rc, **result)
    if rc != 0:
        module.fail_json(msg=err or 'ponywrite exited %d' % rc, rc=rc, **result)
    module.exit_json(**result)


def user_id(name, getent):
    """The number of user or group NAME (getent: pwd.getpwnam or grp.getgrnam), or NAME as a number."""
    try:
        return getent(name)[2]
    except KeyError:
        return int(name) if name.isdigit() else None


def would_change(dest, data, params):
    """Check mode: would DEST's content (DATA, bytes), or its mode, owner or
    group as PARAMS set them, change?"""
    try:
        st = os.lstat(dest)
        with open(dest, 'rb') as f:
            if f.read() != data:
                return True
    except (IOError, OSError):
        return True
    if params.get('owner') is not None and user_id(params['owner'], pwd.getpwnam) != st.st_uid:
        return True
    if params.get('group') is not None and user_id(params['group'], grp.getgrnam) != st.st_gid:
        return True
    # a symbolic mode is left to ponywrite: only an octal one is compared
    mode = mode_arg(params['mode']) if params.get('mode') is not None else ''
    return mode.isdigit() and int(mode, 8) != (st.st_mode & 0o7777)


def common_spec(**more):
    """The argument_spec of the options every module takes (doc_fragments/ponywrite.py), and MORE."""
    return dict(mode=dict(type='raw'), owner=dict(type='str'), group=dict(type='str'),
                backup=dict(type='bool', default=False), no_sync=dict(type='bool', default=False),
                parents=dict(type='bool', default=False), **more)

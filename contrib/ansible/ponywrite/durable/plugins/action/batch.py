# -*- coding: utf-8 -*-
# Copyright (c) 2026 the ponywrite authors
# ISC License (see LICENSE at the root of the ponywrite project)
"""The controller's side of ponywrite.durable.batch: every src on the
controller goes to the host once, all of them in one file (the bundle),
whatever the number of files; the module cuts it up on the host."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import shutil
import tempfile

from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible import constants as C

MODULE = 'ponywrite.durable.batch'


class ActionModule(ActionBase):

    TRANSFERS_FILES = True

    def bundle(self, files, out):
        """FILES with each src replaced by its [offset, size] in OUT, where
        each distinct source file is written once."""
        at = {}
        shipped = []
        for i, f in enumerate(files):
            if not isinstance(f, dict) or f.get('src') is None:
                shipped.append(f)
                continue
            try:
                path = self._find_needle('files', f['src'])
            except AnsibleError as e:
                raise AnsibleError('files[%d]: %s' % (i, to_text(e)))
            if os.path.isdir(path):
                raise AnsibleError('files[%d]: %s is a directory' % (i, f['src']))
            key = os.path.realpath(path)
            if key not in at:
                real = self._loader.get_real_file(path)  # decrypted, if in a vault
                start = out.tell()
                with open(real, 'rb') as fp:
                    shutil.copyfileobj(fp, out)
                self._loader.cleanup_tmp_file(real)
                at[key] = [start, out.tell() - start]
            g = dict(f)
            del g['src']
            g['_bundle'] = at[key]
            shipped.append(g)
        return shipped, bool(at)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        files = args.get('files')
        if boolean(args.get('remote_src', False), strict=False) or not isinstance(files, list):
            result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
            return result
        fd, local = tempfile.mkstemp(prefix='ponywrite-bundle.', dir=C.DEFAULT_LOCAL_TMP)
        try:
            with os.fdopen(fd, 'wb') as out:
                args['files'], any_src = self.bundle(files, out)
            if any_src:
                if not self._connection._shell.tmpdir:
                    self._make_tmp_path()
                remote = self._connection._shell.join_path(self._connection._shell.tmpdir, 'bundle')
                self._transfer_file(local, remote)
                self._fixup_perms2((self._connection._shell.tmpdir, remote))
                args['_bundle'] = remote
            result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
        except AnsibleError as e:
            result.update(failed=True, msg=to_text(e))
        finally:
            os.unlink(local)
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

# -*- coding: utf-8 -*-
# Copyright (c) 2026 the ponywrite authors
# ISC License (see LICENSE at the root of the ponywrite project)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: batch
short_description: Write many files atomically and durably with one ponywrite batch
description:
  - Replaces or creates every file of I(files) on the managed host in one
    C(ponywrite --batch) run, so the device flushes are those of one replace
    per file system, whatever the number of files, and no file is renamed
    before every new file is on the disk.
  - After a crash each file holds its old or its new content (the set is not
    atomic as a whole).
  - Needs the C(ponywrite) program on the managed host.
version_added: "0.1.0"
author: the ponywrite authors
options:
  files:
    description: The files, each a dict with I(dest) and one of I(content) or I(src) (a file on the managed host).
    type: list
    elements: dict
    required: true
extends_documentation_fragment:
  - ponywrite.durable.ponywrite
notes:
  - Check mode runs C(ponywrite --check) on the batch; C(changed) then comes
    from comparing each file's content.
  - If a rename fails after others succeeded (ponywrite's exit status 4),
    the task fails with C(changed) true and the lists of files replaced and
    not replaced.
'''

EXAMPLES = r'''
- name: Write the application's configuration files in one batch
  ponywrite.durable.batch:
    mode: "0644"
    files:
      - dest: /etc/app/a.conf
        content: "{{ lookup('template', 'a.conf.j2') }}"
      - dest: /etc/app/b.conf
        src: /var/lib/app/b.conf.new
'''

RETURN = r'''
changed_files:
  description: The files that changed.
  returned: always
  type: list
  elements: str
not_replaced:
  description: The files left untouched when the batch stopped part way (exit status 4).
  returned: failure with exit status 4
  type: list
  elements: str
'''

import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible_collections.ponywrite.durable.plugins.module_utils.ponywrite import (
    common_spec, exit_with, options, ponywrite_path)


def pairs(module, tmp):
    """[(dest, source path)]: each content written to a file in TMP."""
    out = []
    for i, f in enumerate(module.params['files']):
        dest = f.get('dest')
        if not dest or ('content' in f) == ('src' in f):
            module.fail_json(msg='files[%d]: needs dest and one of content or src' % i)
        if 'content' in f:
            src = os.path.join(tmp, str(i))
            with open(src, 'wb') as fp:
                fp.write(to_bytes(f['content'], errors='surrogate_or_strict'))
        else:
            src = f['src']
        out.append((os.path.expanduser(dest), src))
    return out


def differs(dest, src):
    try:
        with open(dest, 'rb') as a, open(src, 'rb') as b:
            return a.read() != b.read()
    except (IOError, OSError):
        return True


def main():
    module = AnsibleModule(
        argument_spec=common_spec(files=dict(type='list', elements='dict', required=True)),
        supports_check_mode=True,
    )
    exe = ponywrite_path(module)
    tmp = tempfile.mkdtemp(prefix='ponywrite-batch.')
    try:
        files = pairs(module, tmp)
        lst = b''.join(to_bytes(d) + b'\0' + to_bytes(s) + b'\0' for d, s in files)
        if module.check_mode:
            rc, out, err = module.run_command([exe, '--check', '-z'] + options(module.params) + ['--batch=-'],
                                              data=lst, binary_data=True)
            if rc != 0:
                module.fail_json(msg=err.strip() or 'ponywrite --check exited %d' % rc, rc=rc)
            changed = [d for d, s in files if differs(d, s)]
            module.exit_json(changed=bool(changed), changed_files=changed)
        rc, out, err = module.run_command([exe, '-C', '--print-changed', '-z'] + options(module.params) +
                                          ['--batch=-'], data=lst, binary_data=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    changed = [to_native(x) for x in to_bytes(out).split(b'\0') if x]
    result = dict(changed=bool(changed), changed_files=changed)
    if rc == 4:
        result['not_replaced'] = [d for d, s in files if d not in changed]
    exit_with(module, rc, err, result)


if __name__ == '__main__':
    main()

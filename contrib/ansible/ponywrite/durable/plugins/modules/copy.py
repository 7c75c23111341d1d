# -*- coding: utf-8 -*-
# Copyright (c) 2026 the ponywrite authors
# ISC License (see LICENSE at the root of the ponywrite project)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: copy
short_description: Write one file atomically and durably with ponywrite
description:
  - Replaces or creates I(dest) on the managed host through ponywrite(1).
    After a crash or power cut at any moment the file holds its complete old
    or its complete new content, and once the task reports success the new
    content is on the disk.
  - The options are those of M(ansible.builtin.copy) where they mean the
    same; C(changed) is ponywrite's own if-changed report.
  - Needs the C(ponywrite) program on the managed host.
version_added: "0.1.0"
author: the ponywrite authors
options:
  dest:
    description: The file to write.
    type: path
    required: true
  content:
    description: The new content. One of I(content) and I(src).
    type: str
  src:
    description: A file on the managed host holding the new content.
    type: path
  validate:
    description:
      - A command run on the new content before it replaces I(dest); C(%s)
        is the path of a temporary file holding it. If it fails, I(dest) is
        untouched.
    type: str
  follow:
    description: Follow a symbolic link at I(dest) and write the file it points to; false replaces the link itself (ponywrite -P).
    type: bool
    default: false
  no_empty:
    description: Refuse to replace I(dest) with empty content (ponywrite -E).
    type: bool
    default: false
  lock:
    description: Serialize with other ponywrite -l runs on I(dest) (ponywrite -l).
    type: bool
    default: false
extends_documentation_fragment:
  - ponywrite.durable.ponywrite
notes:
  - Check mode runs C(ponywrite --check), which writes nothing and reports
    the failures a run would meet; C(changed) then comes from comparing the
    content, mode and owner.
  - Exit status 3 of ponywrite (replaced, but a flush failed) is reported as
    a failure with C(changed=true); the new content is in place but may not
    survive a crash.
'''

EXAMPLES = r'''
- name: Write the application's configuration
  ponywrite.durable.copy:
    dest: /etc/app/app.conf
    content: "{{ lookup('template', 'app.conf.j2') }}"
    mode: "0644"
    owner: root
    group: root
    backup: true
    validate: /usr/sbin/app --check-config %s
'''

RETURN = r'''
dest:
  description: The file written.
  returned: always
  type: str
backup_file:
  description: Where the previous version was kept (I(backup)).
  returned: changed and a previous version existed
  type: str
check:
  description: The line C(ponywrite --check) printed (check mode).
  returned: check mode
  type: str
'''

import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible_collections.ponywrite.durable.plugins.module_utils.ponywrite import (
    common_spec, exit_with, options, ponywrite_path, would_change)


def new_content(module):
    """The new content, as bytes."""
    p = module.params
    if p['content'] is not None:
        return to_bytes(p['content'], errors='surrogate_or_strict')
    try:
        with open(p['src'], 'rb') as f:
            return f.read()
    except (IOError, OSError) as e:
        module.fail_json(msg='%s: %s' % (p['src'], to_native(e)))


def validate(module, data):
    """Run validate on a temporary copy of the new content; fail if it fails."""
    cmd = module.params['validate']
    if cmd is None:
        return
    if '%s' not in cmd:
        module.fail_json(msg='validate must contain %%s: %s' % cmd)
    d = tempfile.mkdtemp(prefix='ponywrite-validate.')
    try:
        path = os.path.join(d, 'content')
        with open(path, 'wb') as f:
            f.write(data)
        rc, out, err = module.run_command(cmd % path)
        if rc != 0:
            module.fail_json(msg='failed to validate', exit_status=rc, stdout=out, stderr=err)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def diff(module, data):
    """Diff mode: the old and new text, where both are text."""
    before = b''
    try:
        with open(module.params['dest'], 'rb') as f:
            before = f.read()
    except (IOError, OSError):
        pass
    if b'\0' in before or b'\0' in data:
        return {'before': '(binary)', 'after': '(binary)'}
    return {'before_header': module.params['dest'], 'after_header': module.params['dest'],
            'before': to_native(before, errors='surrogate_or_replace'),
            'after': to_native(data, errors='surrogate_or_replace')}


def main():
    module = AnsibleModule(
        argument_spec=common_spec(
            dest=dict(type='path', required=True),
            content=dict(type='str', no_log=False),
            src=dict(type='path'),
            validate=dict(type='str'),
            follow=dict(type='bool', default=False),
            no_empty=dict(type='bool', default=False),
            lock=dict(type='bool', default=False),
        ),
        required_one_of=[('content', 'src')],
        mutually_exclusive=[('content', 'src')],
        supports_check_mode=True,
    )
    p = module.params
    exe = ponywrite_path(module)
    argv = options(p) + ([] if p['follow'] else ['-P'])
    data = new_content(module)
    result = dict(dest=p['dest'], changed=False)
    existed = os.path.lexists(p['dest'])
    if module._diff:
        result['diff'] = diff(module, data)
    if module.check_mode:
        rc, out, err = module.run_command([exe, '--check'] + argv + ['--', p['dest']],
                                          data=b'', binary_data=True)
        result['check'] = out.rstrip('\n')
        if rc != 0:
            module.fail_json(msg=err.strip() or 'ponywrite --check exited %d' % rc, rc=rc, **result)
        dest = os.path.realpath(p['dest']) if p['follow'] else p['dest']
        result['changed'] = would_change(dest, data, p)
        module.exit_json(**result)
    validate(module, data)
    rc, out, err = module.run_command([exe, '-C', '--print-changed'] + argv + ['--', p['dest']],
                                      data=data, binary_data=True)
    result['changed'] = out != ''
    if result['changed'] and p['backup'] and existed:
        result['backup_file'] = p['dest'] + '~'
    exit_with(module, rc, err, result)


if __name__ == '__main__':
    main()

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
  - Files whose I(mode), I(owner) and I(group) differ go in one batch for
    each combination, every batch checked with C(ponywrite --check) before
    the first is run.
  - The I(src) files on the controller are sent to the host in one transfer,
    each once however many files it is the source of.
  - Needs the C(ponywrite) program on the managed host.
version_added: "0.1.0"
author: the ponywrite authors
options:
  files:
    description:
      - The files, each a dict with I(dest) and one of I(content) or I(src),
        and optionally its own I(mode), I(owner) and I(group), which take
        the place of the task's.
      - I(src) is a file on the controller, looked up as
        M(ansible.builtin.copy) looks it up (a role's C(files/) first), or on
        the managed host with I(remote_src).
    type: list
    elements: dict
    required: true
    suboptions:
      dest:
        description: The file to write.
        type: path
        required: true
      content:
        description: Its new content. One of I(content) and I(src).
        type: str
      src:
        description: A file holding its new content.
        type: path
      mode:
        description: Its mode, instead of the task's I(mode).
        type: raw
      owner:
        description: Its owner, instead of the task's I(owner).
        type: str
      group:
        description: Its group, instead of the task's I(group).
        type: str
  remote_src:
    description: Each I(src) is a file on the managed host.
    type: bool
    default: false
extends_documentation_fragment:
  - ponywrite.durable.ponywrite
notes:
  - Check mode runs C(ponywrite --check) on the batch; C(changed) then comes
    from comparing each file's content, mode and owner.
  - If a rename fails after others succeeded (ponywrite's exit status 4),
    the task fails with C(changed) true and the lists of files replaced and
    not replaced.
  - For a template, render it on the controller with
    C(lookup('template', ...)) as I(content).
'''

EXAMPLES = r'''
- name: Write the application's configuration files in one batch
  ponywrite.durable.batch:
    mode: "0644"
    files:
      - dest: /etc/app/a.conf
        content: "{{ lookup('template', 'a.conf.j2') }}"
      - dest: /etc/app/b.conf
        src: b.conf
      - dest: /etc/app/secret.conf
        src: secret.conf
        mode: "0600"

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
    common_spec, exit_with, mode_arg, options, ponywrite_path, would_change)

META = ('mode', 'owner', 'group')
# an entry of files; _bundle, [offset, size] in the bundle, is the action plugin's
FILE_SPEC = dict(dest=dict(type='path', required=True), content=dict(type='str'), src=dict(type='path'),
                 mode=dict(type='raw'), owner=dict(type='str'), group=dict(type='str'),
                 _bundle=dict(type='list', elements='int'))


def cut(bundle, piece, path):
    """Write PIECE ([offset, size]) of the file BUNDLE to PATH."""
    offset, size = piece
    with open(bundle, 'rb') as b, open(path, 'wb') as out:
        b.seek(offset)
        while size > 0:
            buf = b.read(min(size, 1 << 20))
            if not buf:
                raise IOError('%s: shorter than its index' % bundle)
            out.write(buf)
            size -= len(buf)


def sources(module, tmp):
    """[(dest, source path, (mode, owner, group))]: each content, and each
    piece of the bundle the controller sent, written to a file in TMP."""
    p = module.params
    out = []
    pieces = {}
    for i, f in enumerate(p['files']):
        given = [k for k in ('content', 'src', '_bundle') if f.get(k) is not None]
        if len(given) != 1:
            module.fail_json(msg='files[%d]: needs one of content or src' % i)
        if given[0] == 'content':
            src = os.path.join(tmp, str(i))
            with open(src, 'wb') as fp:
                fp.write(to_bytes(f['content'], errors='surrogate_or_strict'))
        elif given[0] == '_bundle':
            key = tuple(f['_bundle'])
            if key not in pieces:
                pieces[key] = os.path.join(tmp, str(i))
                cut(p['_bundle'], key, pieces[key])
            src = pieces[key]
        else:
            src = f['src']
        meta = tuple(f[k] if f.get(k) is not None else p[k] for k in META)
        if meta[0] is not None:
            meta = (mode_arg(meta[0]),) + meta[1:]
        out.append((f['dest'], src, meta))
    return out


def batches(files):
    """FILES grouped by (mode, owner, group), in the order first met."""
    groups = {}
    for f in files:
        groups.setdefault(f[2], []).append(f)
    return list(groups.items())


def pairs(files):
    """ponywrite's batch list for FILES."""
    return b''.join(to_bytes(d) + b'\0' + to_bytes(s) + b'\0' for d, s, m in files)


def foresee(module, exe, groups):
    """ponywrite --check on each batch: fail, writing nothing, where a run would."""
    for meta, files in groups:
        params = dict(module.params, **dict(zip(META, meta)))
        rc, out, err = module.run_command([exe, '--check', '-z'] + options(params) + ['--batch=-'],
                                          data=pairs(files), binary_data=True)
        if rc != 0:
            module.fail_json(msg=err.strip() or 'ponywrite --check exited %d' % rc, rc=rc)


def would_change_files(module, groups):
    """Check mode: the files whose content, mode, owner or group would change."""
    changed = []
    for meta, files in groups:
        params = dict(module.params, **dict(zip(META, meta)))
        for d, s, m in files:
            with open(s, 'rb') as fp:
                if would_change(d, fp.read(), params):
                    changed.append(d)
    return changed


def run(module, exe, groups):
    """Each batch in turn, stopping at the first that fails."""
    changed = []
    for k, (meta, files) in enumerate(groups):
        params = dict(module.params, **dict(zip(META, meta)))
        rc, out, err = module.run_command([exe, '-C', '--print-changed', '-z'] + options(params) +
                                          ['--batch=-'], data=pairs(files), binary_data=True)
        changed += [to_native(x) for x in to_bytes(out).split(b'\0') if x]
        if rc == 0:
            continue
        later = [d for g in groups[k + 1:] for d, s, m in g[1]]
        result = dict(changed=bool(changed), changed_files=changed)
        if rc == 4:
            named = set(err.splitlines())
            result['not_replaced'] = [d for d, s, m in files
                                      if 'ponywrite: %s: not replaced' % d in named] + later
        elif rc == 1 and changed:
            # an earlier batch was replaced: this one and the later ones not
            rc, result['not_replaced'] = 4, [d for d, s, m in files] + later
        elif rc == 3 and later:
            result['not_replaced'] = later
        exit_with(module, rc, err, result)
    exit_with(module, 0, '', dict(changed=bool(changed), changed_files=changed))


def main():
    module = AnsibleModule(
        argument_spec=common_spec(files=dict(type='list', elements='dict', required=True, options=FILE_SPEC),
                                  remote_src=dict(type='bool', default=False),
                                  _bundle=dict(type='path')),
        supports_check_mode=True,
    )
    exe = ponywrite_path(module)
    tmp = tempfile.mkdtemp(prefix='ponywrite-batch.')
    try:
        groups = batches(sources(module, tmp))
        if module.check_mode or len(groups) > 1:
            # with more than one batch, each is checked before any is run
            foresee(module, exe, groups)
        if module.check_mode:
            changed = would_change_files(module, groups)
            module.exit_json(changed=bool(changed), changed_files=changed)
        run(module, exe, groups)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()

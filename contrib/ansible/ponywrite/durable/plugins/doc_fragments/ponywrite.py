# -*- coding: utf-8 -*-
# Copyright (c) 2026 the ponywrite authors
# ISC License (see LICENSE at the root of the ponywrite project)

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    # The options every module of ponywrite.durable takes, as ponywrite does.
    DOCUMENTATION = r'''
options:
  mode:
    description: Mode of each new file, octal or symbolic, as chmod(1) takes it. Default, the old file's, or what open(2) gives a new one.
    type: raw
  owner:
    description: Owner of each new file. Default, the old file's.
    type: str
  group:
    description: Group of each new file. Default, the old file's.
    type: str
  backup:
    description: Keep each previous version as its I(dest)~ (ponywrite -b).
    type: bool
    default: false
  no_sync:
    description: Keep old-or-new but skip the final flush (ponywrite --no-sync).
    type: bool
    default: false
  parents:
    description: Create missing parent directories (ponywrite -p).
    type: bool
    default: false
'''

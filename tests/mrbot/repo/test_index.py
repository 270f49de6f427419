# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The import index: each file's facts as a typed record, kept in a cache that is rebuilt when it is not believed."""

from __future__ import annotations

import hashlib
import json

from mrbot.records.reading import JsonObject
from mrbot.repo.index import CACHE_PATH, Dispatch, FileFacts, Imported, JitFunction, load_index, parse_file

BACKEND = '''\
import os
import fla.ops.common as common
from ..utils import exp, log
from fla.ops.backends import dispatch
import triton


class FastBackend:
    def chunk_kda(self, x):
        from fla.ops.kda.fast import kernel
        return kernel(x)


@dispatch('kda', module='fla.ops.kda.backends')
def chunk_kda(x):
    return importlib.import_module('fla.ops.kda.extra')


@triton.jit
def square_kernel(x):
    return tl.load(x)
'''


def test_a_files_facts_read_from_its_source_and_back_from_their_json():
    facts = parse_file('fla/ops/kda/backends/fast.py', BACKEND)
    assert facts.imports == (Imported('os', ()), Imported('fla.ops.common', ()),
                             Imported('fla.ops.kda.utils', ('exp', 'log')), Imported('fla.ops.backends', ('dispatch',)),
                             Imported('triton', ()))
    assert facts.method_imports == {'chunk_kda': (Imported('fla.ops.kda.fast', ('kernel',)),)}
    assert (facts.dispatch, facts.dispatched, facts.methods) == (
        (Dispatch('kda', 'fla.ops.kda.backends'),), ('chunk_kda',), ('chunk_kda',))
    assert facts.kernels == (JitFunction('square_kernel', 20, ('load',)),)
    assert (facts.dynamic, facts.aliased, facts.runs_code) == (('fla.ops.kda.extra',), ('fla.ops.common',), False)
    assert FileFacts.from_json(JsonObject(json.loads(json.dumps(facts.to_json())), 'cache')) == facts


def test_a_file_that_does_not_parse_has_no_facts_and_runs_code():
    assert parse_file('fla/broken.py', 'def (') == FileFacts(runs_code=True)


def test_a_cached_entry_that_is_not_what_the_index_writes_is_parsed_again(repo):
    repo.commit({'pkg/a.py': repo.HEADER + 'from pkg.b import X\n', 'pkg/b.py': repo.HEADER + 'X = 1\n'})
    assert load_index(repo.root)['pkg/a.py'].imports == (Imported('pkg.b', ('X',)),)
    stored = json.loads((repo.root / CACHE_PATH).read_text())
    # the digest matches, so only reading the entry can tell that it is not an index entry
    stored['files']['pkg/a.py']['imports'] = [['pkg.b', 'X']]
    stored['digest'] = hashlib.sha1(json.dumps(stored['files'], sort_keys=True).encode()).hexdigest()
    (repo.root / CACHE_PATH).write_text(json.dumps(stored))
    assert load_index(repo.root)['pkg/a.py'].imports == (Imported('pkg.b', ('X',)),)
    assert json.loads((repo.root / CACHE_PATH).read_text())['files']['pkg/a.py']['imports'] == [['pkg.b', ['X']]]

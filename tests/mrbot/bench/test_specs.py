# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The declared ops as the bench stage sees them: listed, and matched to a change."""

from __future__ import annotations

import pytest

from mrbot.bench.specs import format_specs, touched_ops
from mrbot.config import load_config
from mrbot.repo.ops import OpSpec, load_specs
from mrbot.repo.workspace import Workspace

OP_A = ('[tool.mrbot.bench.ops.op]\ncallable = "fla.ops.a:chunk_a"\n[tool.mrbot.bench.ops.op.inputs]\n'
        'x = { shape = ["B", "T"] }\n[tool.mrbot.bench.ops.op.shapes]\nsmall = { B = 2, T = 8 }\n')


def test_format_specs_lists_each_op_with_its_shapes_and_stars_the_defaults():
    spec = OpSpec(name='chunk_simple_gla', callable='fla.ops.simple_gla:chunk_simple_gla', source='config',
                  modes=('fwd', 'fwdbwd'), varlen=True, gate='tests/ops/test_simple_gla.py',
                  shapes={'B8-T2048-H16-K128': {'B': 8, 'T': 2048, 'H': 16, 'K': 128, 'V': 128},
                          'B4-T4096-H32-K64': {'B': 4, 'T': 4096, 'H': 32, 'K': 64, 'V': 64},
                          'varlen-T8192-N8-H16-K128': {'B': 1, 'T': 8192, 'N': 8, 'H': 16, 'K': 128, 'V': 128},
                          'tiny-T100': {'B': 1, 'T': 100, 'H': 2, 'K': 32, 'V': 32}},
                  default_shapes=('B8-T2048-H16-K128', 'B4-T4096-H32-K64', 'varlen-T8192-N8-H16-K128'))
    assert format_specs([spec]) == (
        'chunk_simple_gla: fla.ops.simple_gla:chunk_simple_gla (config)\n'
        '  modes fwd, fwdbwd; varlen yes; gate tests/ops/test_simple_gla.py\n'
        '  * B8-T2048-H16-K128         B=8 T=2048 H=16 K=128 V=128\n'
        '  * B4-T4096-H32-K64          B=4 T=4096 H=32 K=64 V=64\n'
        '  * varlen-T8192-N8-H16-K128  B=1 T=8192 N=8 H=16 K=128 V=128\n'
        '    tiny-T100                 B=1 T=100 H=2 K=32 V=32\n'
        '1 op; * marks the shapes timed by default\n')


def test_format_specs_stars_every_shape_when_none_is_marked_default_and_says_when_there_are_no_ops():
    spec = OpSpec(name='op', callable='pkg:fn', source='config', modes=('fwd',), shapes={'a': {'T': 8}, 'bb': {'T': 16}})
    assert format_specs([spec, spec]).splitlines()[1:4] == ['  modes fwd; varlen no; gate none', '  * a   T=8',
                                                            '  * bb  T=16']
    assert format_specs([]) == 'no benchmarkable ops: declare them in [tool.mrbot.bench.ops.<name>] of pyproject.toml\n'


LIBRARY = {
    'fla/__init__.py': 'from fla.ops import chunk_a, chunk_b, fused_a\n',
    'fla/utils.py': 'DEVICE = "cpu"\n',
    # like upstream's: importing anything under fla.ops runs this, which imports every op
    'fla/ops/__init__.py': 'from .a import chunk_a, fused_a\nfrom .b import chunk_b\n',
    'fla/ops/backends/__init__.py': 'def dispatch(op):\n    return lambda f: f\n',
    'fla/ops/common/__init__.py': '',
    'fla/ops/common/state.py': 'from fla.utils import DEVICE\n',
    'fla/ops/a/__init__.py': 'from .chunk import chunk_a\nfrom .fused import fused_a\n',
    'fla/ops/a/chunk.py': ('from fla.ops.backends import dispatch\nfrom fla.ops.common.state import DEVICE\n\n\n'
                           '@dispatch("a")\ndef chunk_a(x):\n    return x\n\n\ndef helper(x):\n    return x\n'),
    'fla/ops/a/fused.py': 'def fused_a(x):\n    return x\n',
    'fla/ops/a/backends/__init__.py': 'from .fast import FastBackend\n',
    'fla/ops/a/backends/fast.py': 'class FastBackend:\n    pass\n',
    'fla/ops/a/README.md': '# a\n',
    'fla/ops/b/__init__.py': 'from .chunk import chunk_b\n',
    'fla/ops/b/chunk.py': 'import json\nfrom fla.ops.a.chunk import helper\n\n\ndef chunk_b(x):\n    return helper(x)\n',
    'fla/ops/b/tuned.json': '{"BT": 64}\n',
    'fla/ops/b/naive.py': 'def naive_b(x):\n    return x\n',
    'tests/ops/test_a.py': 'from fla.ops.a import chunk_a, fused_a\n',
    'tests/ops/test_b.py': 'from fla.ops.b import chunk_b\n',
    'pyproject.toml': '[tool.mrbot.data-files]\n"fla/ops/b/*.json" = ["fla/ops/b/chunk.py"]\n',
}
SPECS = [
    OpSpec(name='chunk_a', callable='fla.ops.a:chunk_a', source='config', gate='tests/ops/test_a.py'),
    OpSpec(name='fused_a', callable='fla.ops.a:fused_a', source='config', gate='tests/ops/test_a.py'),
    OpSpec(name='chunk_b', callable='fla.ops.b:chunk_b', source='config', gate='tests/ops/test_b.py'),
    OpSpec(name='flash', callable='flash_attn:flash_attn_func', source='config', gate='tests/ops/test_flash.py'),
]


def _workspace(repo, specs: list[OpSpec]) -> Workspace:
    """The repository's workspace with `specs` as its benchmarkable ops."""
    workspace = Workspace.load(repo.root)
    workspace.specs = specs
    return workspace


@pytest.mark.parametrize(('changed', 'touched'), [
    # chunk_b imports a helper from a's chunk.py
    (['fla/ops/a/chunk.py'], ['chunk_a', 'chunk_b']),
    # same package, but chunk_a's file does not import it
    (['fla/ops/a/fused.py'], ['fused_a']),
    (['fla/ops/a/backends/fast.py'], ['chunk_a', 'chunk_b']),
    (['fla/ops/common/state.py'], ['chunk_a', 'chunk_b']),
    (['fla/utils.py'], ['chunk_a', 'chunk_b']),
    # the re-export that names the function
    (['fla/ops/a/__init__.py'], ['chunk_a', 'fused_a']),
    (['fla/ops/b/tuned.json'], ['chunk_b']),
    (['tests/ops/test_a.py'], ['chunk_a', 'fused_a']),
    (['tests/ops/test_flash.py'], ['flash']),
    # run on the way by every import under fla.ops, but no op's code
    (['fla/ops/__init__.py'], []),
    (['fla/__init__.py'], []),
    (['fla/ops/a/README.md', 'fla/ops/b/naive.py'], []),
    ([], []),
], ids=['op-code', 'same-package', 'backend', 'shared-kernel', 'utils', 're-export', 'data-file', 'gate',
        'gate-of-external-op', 'ops-init', 'root-init', 'readme-and-unimported-file', 'no-change'])
def test_an_op_is_touched_by_what_its_defining_file_imports_and_by_its_gate(repo, changed, touched):
    repo.commit(LIBRARY)
    assert [s.name for s in touched_ops(_workspace(repo, SPECS), changed)] == touched


def test_a_deleted_module_touches_the_ops_that_imported_it(repo):
    repo.commit({**LIBRARY, 'fla/ops/b/extra.py': 'X = 1\n',
                 'fla/ops/b/chunk.py': 'from fla.ops.b.extra import X\n\n\ndef chunk_b(x):\n    return x\n'})
    repo.write({'fla/ops/b/extra.py': None})
    assert [s.name for s in touched_ops(_workspace(repo, SPECS), ['fla/ops/b/extra.py'])] == ['chunk_b']


def test_ops_declared_in_pyproject_are_touched_by_a_change_of_their_code(repo):
    repo.commit({**LIBRARY, 'pyproject.toml': OP_A})
    specs = load_specs(repo.root, load_config(repo.root))
    assert [s.name for s in touched_ops(_workspace(repo, specs), ['fla/ops/a/chunk.py'])] == ['op']


def test_a_change_to_an_ops_tests_alone_does_not_touch_its_code(repo):
    repo.commit(LIBRARY)
    assert [s.name for s in touched_ops(_workspace(repo, SPECS), ['tests/ops/test_a.py'], gates=False)] == []
    changed = ['tests/ops/test_a.py', 'fla/ops/a/fused.py']
    assert [s.name for s in touched_ops(_workspace(repo, SPECS), changed, gates=False)] == ['fused_a']

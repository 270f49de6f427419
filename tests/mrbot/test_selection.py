# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Dependent-test selection on small synthetic repositories: every kind of edge, and upstream's zero-selection cases."""

from __future__ import annotations

import hashlib
import json

import pytest

from mrbot import git
from mrbot.records import MrbotError
from mrbot.repo.index import CACHE_PATH
from mrbot.repo.workspace import Workspace
from mrbot.selection import expand_paths, format_selection, select, select_change

LIBRARY = {
    'fla/__init__.py': '',
    'fla/utils.py': 'device = "cpu"\n',
    'fla/ops/__init__.py': '',
    'fla/ops/backends/__init__.py': 'def dispatch(op, module=None):\n    return lambda f: f\n',
    'fla/ops/utils/__init__.py': '',
    # everything defined under conditions, as in upstream's fla/ops/utils/op.py
    'fla/ops/utils/op.py': 'import os\nif os.environ.get("X"):\n    def exp(x):\n        return x\nelse:\n    exp = abs\n',
    'fla/ops/utils/constant.py': 'RCP_LN2 = 1.4426950216\n',
    'fla/ops/kda/__init__.py': 'from .chunk import chunk_kda\n\n__all__ = ["chunk_kda"]\n',
    'fla/ops/kda/chunk.py': ('from fla.ops.backends import dispatch\nfrom ..utils.op import exp\n\n\n'
                             '@dispatch("kda")\ndef chunk_kda(x):\n    return exp(x)\n'),
    'fla/ops/kda/backends/__init__.py': 'from .flash import FlashBackend\n',
    'fla/ops/kda/backends/flash.py': 'class FlashBackend:\n    def chunk_kda(self, x):\n        return x\n',
    'fla/ops/gdn/__init__.py': '',
    'fla/ops/gdn/chunk.py': 'def chunk_gdn(x):\n    from fla.ops.utils.constant import RCP_LN2\n    return x * RCP_LN2\n',
    'fla/modules/__init__.py': '',
    'fla/modules/conv/__init__.py': '',
    'fla/modules/conv/kernels.py': 'def conv(x):\n    return x\n',
    'fla/modules/conv/ops.py': 'from .kernels import conv\n',
    'fla/configs/kda.json': '{"BT": 64}\n',
    'fla/ops/gdn/tuned.py': 'import fla.ops.gdn.chunk as gdn_chunk\n',
    'tests/conftest.py': '',
    'tests/ops/conftest.py': '',
    'tests/ops/test_kda.py': 'from fla.ops.kda import chunk_kda\n',
    'tests/ops/test_gdn.py': 'def test_gdn():\n    from fla.ops.gdn.chunk import chunk_gdn\n',
    'tests/ops/test_tuned.py': 'from fla.ops.gdn import tuned\n',
    'tests/modules/test_conv.py': 'from fla.modules.conv.ops import conv\n',
    'tests/models/test_plain.py': 'import json\n',
    'tests/test_utils.py': 'from fla.utils import device\n',
    'docs/notes.md': 'notes\n',
}
DATA_CONFIG = '[tool.mrbot]\nglobal-paths = []\n[tool.mrbot.data-files]\n"fla/configs/*" = ["fla/ops/kda/chunk.py"]\n'


@pytest.fixture
def library(repo):
    repo.commit({**LIBRARY, 'pyproject.toml': DATA_CONFIG})
    return repo


def _tests(library, *changed):
    return [t.test for t in select(Workspace.load(library.root), changed).tests]


def _because(library, changed, test):
    selection = select(Workspace.load(library.root), [changed])
    return next(t.because for t in selection.tests if t.test == test)


def test_an_op_change_selects_the_tests_that_import_it_through_its_package(library):
    assert _tests(library, 'fla/ops/kda/chunk.py') == ['tests/ops/test_kda.py']
    assert _because(library, 'fla/ops/kda/chunk.py', 'tests/ops/test_kda.py') == ('fla/ops/kda/chunk.py:chunk_kda',)


@pytest.mark.parametrize(('changed', 'expected'), [
    # upstream selects nothing for each of these
    ('fla/ops/utils/op.py', ['tests/ops/test_kda.py']),
    ('fla/ops/utils/constant.py', ['tests/ops/test_gdn.py', 'tests/ops/test_tuned.py']),
    ('fla/ops/backends/__init__.py', ['tests/ops/test_kda.py']),
    ('fla/ops/kda/__init__.py', ['tests/ops/test_kda.py']),
    ('fla/modules/conv/kernels.py', ['tests/modules/test_conv.py']),
    ('fla/ops/gdn/chunk.py', ['tests/ops/test_gdn.py', 'tests/ops/test_tuned.py']),
])
def test_upstreams_zero_selection_cases_select_their_tests(library, changed, expected):
    assert _tests(library, changed) == expected


def test_a_backend_change_selects_the_dispatched_ops_tests(library):
    assert _tests(library, 'fla/ops/kda/backends/flash.py') == ['tests/ops/test_kda.py']
    assert _because(library, 'fla/ops/kda/backends/flash.py', 'tests/ops/test_kda.py') == (
        'fla/ops/kda/chunk.py:chunk_kda',
        'fla/ops/kda/backends/flash.py:backend chunk_kda')


# upstream's shape: a backend class's methods import their kernels lazily, and dispatch calls only the method named
# like the dispatched function (and its verifier) after asking every backend whether it is available
BACKEND_METHODS = {
    'fla/__init__.py': '',
    'fla/utils.py': 'IS_NPU = False\n',
    'fla/ops/__init__.py': '',
    'fla/ops/backends/__init__.py': 'def dispatch(op):\n    return lambda f: f\n',
    'fla/ops/common/__init__.py': '',
    'fla/ops/common/fwd_h.py': '@dispatch("common")\ndef fwd_h(x):\n    return x\n',
    'fla/ops/common/plain.py': '@dispatch("common")\ndef plain(x):\n    return x\n',
    'fla/ops/common/backends/__init__.py': 'from .npu import NpuBackend\n\nREGISTERED = [NpuBackend()]\n',
    'fla/ops/common/backends/npu/__init__.py': (
        'class NpuBackend:\n'
        '    def is_available(self):\n        from fla.utils import IS_NPU\n        return IS_NPU\n\n'
        '    def fwd_h_verifier(self, x):\n        from .checks import shape_ok\n        return shape_ok(x)\n\n'
        '    def fwd_h(self, x):\n        from .fwd_h import fwd_h_npu\n        return fwd_h_npu(x)\n'),
    'fla/ops/common/backends/npu/fwd_h.py': 'def fwd_h_npu(x):\n    return x\n',
    'fla/ops/common/backends/npu/checks.py': 'def shape_ok(x):\n    return True, None\n',
    'tests/test_fwd_h.py': 'from fla.ops.common.fwd_h import fwd_h\n',
    'tests/test_plain.py': 'from fla.ops.common.plain import plain\n',
    'tests/test_npu_backend.py': 'from fla.ops.common.backends.npu import NpuBackend\n',
}


@pytest.mark.parametrize(('changed', 'expected'), [
    # no backend has a `plain` method: dispatching it never runs the NPU kernel or its verifier
    ('fla/ops/common/backends/npu/fwd_h.py', ['tests/test_fwd_h.py', 'tests/test_npu_backend.py']),
    ('fla/ops/common/backends/npu/checks.py', ['tests/test_fwd_h.py', 'tests/test_npu_backend.py']),
    # `is_available` runs for every dispatched call, and the class itself is every dispatcher's
    ('fla/utils.py', ['tests/test_fwd_h.py', 'tests/test_npu_backend.py', 'tests/test_plain.py']),
    ('fla/ops/common/backends/npu/__init__.py', ['tests/test_fwd_h.py', 'tests/test_npu_backend.py',
                                                 'tests/test_plain.py']),
])
def test_a_backend_methods_kernel_reaches_only_the_functions_dispatched_to_that_method(repo, changed, expected):
    repo.commit({**BACKEND_METHODS, 'pyproject.toml': '[tool.mrbot]\nglobal-paths = []\n'})
    assert _tests(repo, changed) == expected


def test_conftest_selects_every_test_below_its_folder(library):
    assert _tests(library, 'tests/ops/conftest.py') == ['tests/ops/test_gdn.py', 'tests/ops/test_kda.py',
                                                         'tests/ops/test_tuned.py']
    assert len(_tests(library, 'tests/conftest.py')) == 6


@pytest.mark.parametrize('changed', ['pyproject.toml', 'Makefile', '.ci/run', 'requirements-dev.txt'])
def test_packaging_and_ci_select_the_full_suite(library, changed):
    selection = select(Workspace.load(library.root), [changed])
    assert selection.full_suite and len(selection.tests) == 6
    assert selection.tests[0].because == (f'{changed} (full suite: packaging or CI)',)


def test_configured_global_paths_select_the_full_suite(repo):
    repo.commit(LIBRARY)
    selection = select(Workspace.load(repo.root), ['fla/utils.py'])
    assert selection.full_suite and selection.tests[0].because == ('fla/utils.py (full suite: global path)',)


def test_global_paths_match_whole_segments(repo):
    repo.commit({**LIBRARY, 'fla/ops/common/__init__.py': '', 'fla/ops/common/launch.py': 'BLOCK = 64\n',
                 'fla/ops/common/backends/triton_ascend/chunk.py': 'BLOCK = 32\n',
                 'pyproject.toml': '[tool.mrbot]\nglobal-paths = ["fla/ops/common/*"]\n'})
    workspace = Workspace.load(repo.root)
    assert select(workspace, ['fla/ops/common/launch.py']).full_suite
    ascend = select(workspace, ['fla/ops/common/backends/triton_ascend/chunk.py'])
    assert not ascend.full_suite and ascend.unselected == ('fla/ops/common/backends/triton_ascend/chunk.py',)


AGGREGATOR = {'fla/ops/__init__.py': 'from .gdn.chunk import chunk_gdn\nfrom .kda import chunk_kda\n',
              'tests/ops/test_kda.py': 'from fla.ops import chunk_kda\n',
              'tests/ops/test_all.py': 'import fla.ops\n',
              'tests/ops/test_star.py': 'from fla.ops import *\n'}


def test_a_name_from_an_aggregator_links_a_test_to_its_definition_not_to_every_op(repo):
    repo.commit({**LIBRARY, **AGGREGATOR, 'pyproject.toml': DATA_CONFIG})
    all_, gdn, kda, star, tuned = (f'tests/ops/test_{name}.py' for name in ('all', 'gdn', 'kda', 'star', 'tuned'))
    assert _tests(repo, 'fla/ops/gdn/chunk.py') == [all_, gdn, star, tuned]
    assert _tests(repo, 'fla/ops/kda/chunk.py') == [all_, kda, star]
    # the aggregator itself runs for every test that imports anything under it
    assert _tests(repo, 'fla/ops/__init__.py') == [all_, gdn, kda, star, tuned]


def _selected_by_change(repo, files: dict[str, str]) -> list[str]:
    """The tests `mrbot test --list` picks for writing `files` over the committed tree."""
    repo.write(files)
    change = git.changeset(repo.root, git.resolve(repo.root, 'HEAD'), None)
    return [t.test for t in select_change(Workspace.load(repo.root), change).tests]


def test_an_aggregator_that_gains_a_re_export_selects_only_the_tests_of_that_name(repo):
    repo.commit({**LIBRARY, **AGGREGATOR, 'pyproject.toml': DATA_CONFIG,
                 'fla/ops/gdn/fused.py': 'def fused_gdn(x):\n    return x\n',
                 'tests/ops/test_fused.py': 'from fla.ops import fused_gdn\n'})
    aggregator = AGGREGATOR['fla/ops/__init__.py'] + 'from .gdn.fused import fused_gdn\n'
    # importers of other names do not notice; a whole-package or star import does
    assert _selected_by_change(repo, {'fla/ops/__init__.py': aggregator}) == [
        'tests/ops/test_all.py', 'tests/ops/test_fused.py', 'tests/ops/test_star.py']


def test_a_name_added_to_a_multi_name_import_alters_that_name_only(repo):
    repo.commit({**LIBRARY, 'pyproject.toml': DATA_CONFIG, 'fla/ops/kda/extra.py': 'def extra(x):\n    return x\n',
                 'fla/ops/kda/__init__.py': 'from .chunk import chunk_kda\n',
                 'tests/ops/test_extra.py': 'from fla.ops.kda import extra\n'})
    init = 'from .chunk import chunk_kda\nfrom .extra import extra\n'
    assert _selected_by_change(repo, {'fla/ops/kda/__init__.py': init}) == ['tests/ops/test_extra.py']


def test_a_module_that_only_gains_a_function_selects_no_test_of_its_other_names(library):
    conv = LIBRARY['fla/modules/conv/kernels.py']
    assert _selected_by_change(library, {'fla/modules/conv/kernels.py': conv + '\n\ndef conv2(x):\n    return x\n'}) == []
    # an edit of an existing function is a change of the module: every test of any of its names may notice it
    edited = conv.replace('return x', 'return x + 0')
    assert _selected_by_change(library, {'fla/modules/conv/kernels.py': edited + '\n\ndef conv2(x):\n    return x\n'}) == [
        'tests/modules/test_conv.py']


def test_a_comment_in_a_module_still_selects_its_tests_as_upstream_does(library):
    conv = LIBRARY['fla/modules/conv/kernels.py']
    assert _selected_by_change(library, {'fla/modules/conv/kernels.py': '# the identity\n' + conv}) == [
        'tests/modules/test_conv.py']


def test_a_backend_method_named_like_another_ops_dispatched_function_selects_its_tests(repo):
    gdn = ('from fla.ops.backends import dispatch\n\n\n@dispatch("gdn")\ndef recompute_w_u(x):\n    return x\n')
    backend = 'class FlashBackend:\n    def recompute_w_u(self, x):\n        return x\n'
    repo.commit({**LIBRARY, 'fla/ops/gdn/wy_fast.py': gdn, 'fla/ops/kda/backends/flash.py': backend,
                 'tests/ops/test_wy.py': 'from fla.ops.gdn.wy_fast import recompute_w_u\n', 'pyproject.toml': DATA_CONFIG})
    assert 'tests/ops/test_wy.py' in _tests(repo, 'fla/ops/kda/backends/flash.py')


def test_a_data_file_selects_the_tests_of_the_modules_reading_it(library):
    assert _tests(library, 'fla/configs/kda.json') == ['tests/ops/test_kda.py']
    assert _because(library, 'fla/configs/kda.json', 'tests/ops/test_kda.py')[-1] == (
        'fla/ops/kda/chunk.py:chunk_kda (reads fla/configs/kda.json)')


def test_a_changed_test_selects_itself_and_documentation_selects_nothing(library):
    assert _tests(library, 'tests/models/test_plain.py') == ['tests/models/test_plain.py']
    assert _tests(library, 'docs/notes.md') == []


def test_a_deleted_module_selects_its_importers(library):
    library.write({'fla/ops/utils/constant.py': None})
    assert _tests(library, 'fla/ops/utils/constant.py') == ['tests/ops/test_gdn.py', 'tests/ops/test_tuned.py']


def test_a_source_change_no_test_reaches_is_reported(library):
    library.write({'fla/ops/orphan.py': 'x = 1\n'})
    selection = select(Workspace.load(library.root), ['fla/ops/orphan.py', 'docs/notes.md'])
    assert (selection.tests, selection.unselected) == ((), ('fla/ops/orphan.py',))
    assert format_selection(selection, 'text').splitlines() == [
        'no test reaches fla/ops/orphan.py', '0 test files selected for 2 changed files']


def test_literal_dynamic_imports_are_followed(repo):
    repo.commit({
        'pkg/__init__.py': '', 'pkg/plugins/__init__.py': '', 'pkg/plugins/a.py': '', 'pkg/plugins/b.py': '',
        'pkg/loader.py': 'import importlib\n\ndef load(n):\n    return importlib.import_module(f"pkg.plugins.{n}")\n',
        'pkg/named.py': 'import importlib\nmodule = importlib.import_module("pkg.plugins.b")\n',
        'tests/test_loader.py': 'from pkg.loader import load\n', 'tests/test_named.py': 'import pkg.named\n',
        'pyproject.toml': '[tool.mrbot]\nsource-roots = ["pkg"]\n',
    })
    assert _tests(repo, 'pkg/plugins/a.py') == ['tests/test_loader.py']
    assert _tests(repo, 'pkg/plugins/b.py') == ['tests/test_loader.py', 'tests/test_named.py']


def test_an_import_only_a_type_checker_reads_links_nothing(repo):
    # upstream's utilities imported the package's version under `if TYPE_CHECKING:`; at run time they never import
    # the package, whose `__init__` imports every layer, so a layer's change does not reach every test
    repo.commit({
        'pkg/__init__.py': 'from pkg.layer import Layer\n__version__ = "1"\n', 'pkg/layer.py': 'class Layer:\n    pass\n',
        'pkg/utils.py': 'from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from pkg import __version__\n'
                        'else:\n    import os\n\nSIZE = 1\n',
        'tests/test_utils.py': 'from pkg.utils import SIZE\n', 'tests/test_layer.py': 'from pkg.layer import Layer\n',
        'pyproject.toml': '[tool.mrbot]\nsource-roots = ["pkg"]\n',
    })
    assert _tests(repo, 'pkg/layer.py') == ['tests/test_layer.py']


def test_an_import_by_formatted_name_reaches_only_the_modules_its_literal_parts_allow(repo):
    # upstream's dispatch of early 2026 loaded `f'fla.ops.{operation}.backends'`: a backends package, not every module
    # of the library, so a kernel beside it reaches only the tests that import it
    repo.commit({
        'pkg/__init__.py': '', 'pkg/ops/__init__.py': '', 'pkg/ops/gla/__init__.py': '', 'pkg/ops/gla/chunk.py': '',
        'pkg/ops/gla/backends/__init__.py': '',
        'pkg/registry.py': 'def load(op):\n    return __import__(f"pkg.ops.{op}.backends", fromlist=[""])\n',
        'tests/test_registry.py': 'from pkg.registry import load\n', 'tests/test_gla.py': 'import pkg.ops.gla.chunk\n',
        'pyproject.toml': '[tool.mrbot]\nsource-roots = ["pkg"]\n',
    })
    assert _tests(repo, 'pkg/ops/gla/backends/__init__.py') == ['tests/test_registry.py']
    assert _tests(repo, 'pkg/ops/gla/chunk.py') == ['tests/test_gla.py']


def test_a_module_named_in_a_table_that_an_import_by_computed_name_reads_is_imported(repo):
    # a command-line entry point that imports its commands by name from a table of their modules
    repo.commit({
        'pkg/__init__.py': '', 'pkg/commands/__init__.py': '', 'pkg/commands/build.py': '', 'pkg/commands/clean.py': '',
        'pkg/cli.py': ("import importlib\n\nCOMMANDS = {'build': 'pkg.commands.build', 'clean': 'pkg.commands.clean'}\n"
                       "HELP = 'run pkg.tool build'\n\n\ndef main(name):\n"
                       "    return importlib.import_module(COMMANDS[name]).run()\n"),
        'tests/test_cli.py': 'from pkg.cli import main\n', 'tests/test_other.py': 'import pkg\n',
        'pyproject.toml': '[tool.mrbot]\nsource-roots = ["pkg"]\n',
    })
    assert _tests(repo, 'pkg/commands/build.py') == ['tests/test_cli.py']


def test_a_module_name_handed_to_the_import_through_a_function_or_a_variable_is_not_followed(repo):
    # a package that imports its optional parts through a wrapper, and a registry with a table and a fallback: both
    # may import anything, and following their strings would link every importer of the package to all of it
    repo.commit({
        'pkg/__init__.py': ("import importlib\n\n\ndef _optional(name):\n    return importlib.import_module(name)\n\n\n"
                            "_layers = _optional('pkg.layers')\n"),
        'pkg/layers/__init__.py': 'from .dense import Dense\n', 'pkg/layers/dense.py': 'class Dense:\n    pass\n',
        'pkg/registry.py': ("BACKENDS = {'dense': 'pkg.layers.dense'}\n\n\ndef load(name):\n"
                            "    path = BACKENDS.get(name, f'pkg.{name}')\n    return __import__(path, fromlist=[''])\n"),
        'pkg/util.py': 'ONE = 1\n',
        'tests/test_util.py': 'from pkg.util import ONE\n', 'tests/test_registry.py': 'from pkg.registry import load\n',
        'tests/test_dense.py': 'from pkg.layers import Dense\n',
        'pyproject.toml': '[tool.mrbot]\nsource-roots = ["pkg"]\n',
    })
    assert _tests(repo, 'pkg/layers/dense.py') == ['tests/test_dense.py']



def test_a_test_that_imports_its_subject_through_importorskip_depends_on_it(repo):
    repo.commit({
        'pkg/__init__.py': '', 'pkg/optional.py': '',
        'tests/test_optional.py': 'import pytest\n\noptional = pytest.importorskip("pkg.optional")\n',
        'pyproject.toml': '[tool.mrbot]\nsource-roots = ["pkg"]\n',
    })
    assert _tests(repo, 'pkg/optional.py') == ['tests/test_optional.py']


def test_directories_and_paths_relative_to_any_folder(library):
    root = library.root
    assert expand_paths(root, root / 'fla' / 'ops', ['kda']) == [
        'fla/ops/kda/__init__.py', 'fla/ops/kda/backends/__init__.py', 'fla/ops/kda/backends/flash.py',
        'fla/ops/kda/chunk.py']
    assert expand_paths(root, root / 'tests', ['../fla/utils.py']) == ['fla/utils.py']
    with pytest.raises(MrbotError, match=r'^\.\./\.\./elsewhere\.py: outside the repository '):
        expand_paths(root, root / 'fla', ['../../elsewhere.py'])


def test_the_index_is_cached_by_content_and_ignored_by_git(library):
    select(Workspace.load(library.root), ['fla/ops/kda/chunk.py'])
    cache = json.loads((library.root / CACHE_PATH).read_text())
    assert cache['files']['tests/ops/test_kda.py']['imports'] == [['fla.ops.kda', ['chunk_kda']]]
    assert library.git('status', '--porcelain') == ''
    # a changed file is re-parsed: the new import is seen through the cache
    library.write({'tests/ops/test_gdn.py': 'from fla.ops.kda.chunk import chunk_kda\n'})
    assert _tests(library, 'fla/ops/kda/chunk.py') == ['tests/ops/test_gdn.py', 'tests/ops/test_kda.py']


def test_an_index_a_commit_supplies_is_refused_before_it_is_read(library):
    # N5: a pull request that commits .mrbot/cache/selection-index.json (git add -f) was believed: the cache was read
    # before the check that refuses a tracked .mrbot/, so the change chose which tests it reached
    select(Workspace.load(library.root), ['fla/ops/kda/chunk.py'])
    forged = json.loads((library.root / CACHE_PATH).read_text())
    forged['files']['tests/ops/test_kda.py']['imports'] = []
    forged['digest'] = hashlib.sha1(json.dumps(forged['files'], sort_keys=True).encode()).hexdigest()
    (library.root / CACHE_PATH).write_text(json.dumps(forged))
    library.git('add', '-f', str(CACHE_PATH))
    library.git('commit', '-q', '-m', '[Test] A cache of my own')
    with pytest.raises(MrbotError, match=r"^\.mrbot/ holds files git tracks \(\.mrbot/cache/selection-index\.json, "
                                         r"\.\.\.\): it is mrbot's own cache"):
        select(Workspace.load(library.root), ['fla/ops/kda/chunk.py'])


def test_json_lists_each_test_with_its_chain(library):
    data = json.loads(format_selection(select(Workspace.load(library.root), ['fla/ops/kda/chunk.py']), 'json'))
    assert data == {'schema': 1, 'full_suite': False, 'changed': ['fla/ops/kda/chunk.py'], 'unselected': [],
                    'selected': [{'test': 'tests/ops/test_kda.py',
                                  'because': ['fla/ops/kda/chunk.py:chunk_kda']}]}


def test_selection_on_this_repository():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    workspace = Workspace.load(root)
    kernel = {t.test for t in select(workspace, ['fla/ops/simple_gla/chunk.py']).tests}
    assert 'tests/ops/test_simple_gla.py' in kernel
    # no bot test imports the library: `mrbot demo` runs its kernels in a clone, in other processes
    assert {t for t in kernel if t.startswith(('tests/mrbot/', 'tests/checks/'))} == set()
    render = {t.test for t in select(workspace, ['mrbot/render.py']).tests}
    assert render and not any(t.startswith('tests/ops/') for t in render)
    everything = {t.test for t in select(workspace, ['tests/conftest.py']).tests}
    assert everything == {p.relative_to(root).as_posix() for p in (root / 'tests').rglob('test_*.py')}


def test_excluded_tests_are_never_selected(repo):
    repo.commit({**LIBRARY, 'tests/models/test_modeling_mamba.py': 'from fla.ops.kda import chunk_kda\n',
                 'pyproject.toml': '[tool.mrbot]\nexclude-tests = ["tests/**/*mamba*"]\n'})
    assert _tests(repo, 'fla/ops/kda/chunk.py') == ['tests/ops/test_kda.py']
    assert 'tests/models/test_modeling_mamba.py' not in _tests(repo, 'pyproject.toml')


SIDE_EFFECTS = {
    # each: the package `__init__` at the base and at the head; tests/test_z_f.py calls `f` and sees the difference
    'an item assigned in os.environ': ('import os\nfrom .b import g\nfrom .a import f\nos.environ["P"] = "ieee"\n',
                                      'import os\nfrom .b import g\nfrom .a import f\nos.environ["P"] = "tf32"\n'),
    'a module imported for its effect': ('from .b import g\nfrom .a import f\nfrom . import patch\n',
                                         'from .b import g\nfrom .a import f\n'),
    'a star import added': ('from .b import g\nfrom .a import f\n', 'from .b import g\nfrom .a import f\nfrom .c import *\n'),
    'a module __getattr__': ('from .b import g\n\n\ndef __getattr__(name):\n    from . import a\n'
                             '    return getattr(a, name)\n',
                             'from .b import g\n\n\ndef __getattr__(name):\n    from . import c\n'
                             '    return getattr(c, name)\n'),
    'names exported by a loop': ('from .b import g\nfrom . import a, c\nS = {"f": a}\nfor n, m in S.items():\n'
                                 '    globals()[n] = getattr(m, n)\n',
                                 'from .b import g\nfrom . import a, c\nS = {"f": c}\nfor n, m in S.items():\n'
                                 '    globals()[n] = getattr(m, n)\n'),
}


@pytest.mark.parametrize('base, head', SIDE_EFFECTS.values(), ids=SIDE_EFFECTS.keys())
def test_an_init_change_that_acts_at_import_time_selects_every_importer(repo, base, head):
    repo.commit({'pyproject.toml': '[tool.mrbot]\nsource-roots = ["pkg"]\nglobal-paths = []\n',
                 'pkg/__init__.py': base, 'pkg/a.py': 'def f():\n    return 1\n', 'pkg/b.py': 'def g():\n    return 2\n',
                 'pkg/c.py': 'def f():\n    return 99\n', 'pkg/patch.py': 'import pkg.a\npkg.a.MODE = "fast"\n',
                 'tests/test_g.py': 'from pkg import g\n', 'tests/test_z_f.py': 'from pkg import f\n'})
    assert _selected_by_change(repo, {'pkg/__init__.py': head}) == ['tests/test_g.py', 'tests/test_z_f.py']


@pytest.mark.parametrize('added', ['def g(x, _=BLOCKS.append(128)):\n    return x\n',
                                   '@lru_cache(maxsize=BLOCKS.pop())\ndef g(x):\n    return x\n'],
                         ids=['call in a default', 'call in a decorator'])
def test_a_new_function_whose_def_runs_code_counts_as_a_change_of_its_module(repo, added):
    module = 'from functools import lru_cache\n\nBLOCKS = [32]\n\n\ndef f():\n    return BLOCKS[-1]\n'
    repo.commit({'pyproject.toml': '[tool.mrbot]\nsource-roots = ["pkg"]\nglobal-paths = []\n', 'pkg/__init__.py': '',
                 'pkg/a.py': module, 'tests/test_f.py': 'from pkg.a import f\n'})
    assert _selected_by_change(repo, {'pkg/a.py': module + '\n\n' + added}) == ['tests/test_f.py']


# a shared device-helper module: constants, a helper reading one of them, and kernels taking different names
HELPERS = {
    'pyproject.toml': '[tool.mrbot]\nsource-roots = ["pkg"]\nglobal-paths = []\n',
    'pkg/__init__.py': '',
    'pkg/common.py': ('import torch\n\nBT = 64\nSCALES = (\n    1.0,\n    0.5,\n)\nDTYPE = torch.float16\n\n\n'
                      'def tile(x):\n    return x[:BT]\n'),
    'pkg/chunk.py': 'from pkg.common import tile\n',
    'pkg/scaled.py': 'from pkg.common import SCALES\n',
    'pkg/typed.py': 'from pkg.common import DTYPE\n',
    'pkg/whole.py': 'import pkg.common\n',
    'tests/test_chunk.py': 'from pkg.chunk import tile\n',
    'tests/test_scaled.py': 'from pkg.scaled import SCALES\n',
    'tests/test_typed.py': 'from pkg.typed import DTYPE\n',
    'tests/test_whole.py': 'import pkg.whole\n',
}


@pytest.mark.parametrize('old, new, selected', [
    ('BT = 64', 'BT = 128', ['tests/test_chunk.py', 'tests/test_whole.py']),
    ('    0.5,\n', '    0.25,\n', ['tests/test_scaled.py', 'tests/test_whole.py']),
    ('DTYPE = torch.float16', 'DTYPE = torch.bfloat16', ['tests/test_typed.py', 'tests/test_whole.py']),
], ids=['read by a helper', 'inside a multi-line tuple', 'an attribute'])
def test_a_rebound_constant_selects_only_the_tests_of_the_names_that_read_it(repo, old, new, selected):
    repo.commit(HELPERS)
    assert _selected_by_change(repo, {'pkg/common.py': HELPERS['pkg/common.py'].replace(old, new)}) == selected


@pytest.mark.parametrize('old, new', [
    ('BT = 64', 'BT = int("64")'),
    ('BT = 64', 'BT = 128\nBT = BT // 2'),
    ('return x[:BT]', 'return x[:BT - 1]'),
    ('import torch\n', 'import torch\ntorch.manual_seed(0)\n'),
], ids=['computed by a call', 'bound twice', 'with a function edited', 'with a statement that runs code'])
def test_a_constant_change_that_does_more_counts_as_a_change_of_its_module(repo, old, new):
    repo.commit(HELPERS)
    changed = HELPERS['pkg/common.py'].replace(old, new).replace('BT = 64', 'BT = 32')
    assert _selected_by_change(repo, {'pkg/common.py': changed}) == [
        'tests/test_chunk.py', 'tests/test_scaled.py', 'tests/test_typed.py', 'tests/test_whole.py']

# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""SEL001: a Python change under a source root that no test reaches is reported, never silent."""

from __future__ import annotations

HEADER = '# Copyright (c) 2026, the mrbot authors.\n# SPDX-License-Identifier: MIT\n'


def test_a_module_no_test_imports_is_reported(repo):
    repo.commit({'fla/__init__.py': HEADER, 'tests/test_a.py': HEADER + 'import fla\n'})
    repo.write({'fla/orphan.py': HEADER + 'x = 1\n', 'docs/a.md': 'text\n', 'scripts/tool.py': HEADER})
    assert [(f.rule, f.severity, f.path, f.message) for f in repo.check('SEL001').findings] == [
        ('SEL001', 'warning', 'fla/orphan.py', 'no test uses this file, directly or through other modules')]


def test_a_module_a_package_re_exports_to_tests_that_take_none_of_its_names_is_reported(repo):
    repo.commit({'fla/__init__.py': HEADER, 'fla/ops/__init__.py': HEADER + 'from .matmul import matmul\n'
                 'from .cumsum import cumsum\n', 'fla/ops/matmul.py': HEADER + 'def matmul(a, b):\n    return a @ b\n',
                 'fla/ops/cumsum.py': HEADER + 'def cumsum(x):\n    return x\n',
                 'tests/test_cumsum.py': HEADER + 'from fla.ops import cumsum\n'})
    repo.write({'fla/ops/matmul.py': HEADER + 'def matmul(a, b):\n    return b @ a\n'})
    assert [(f.path, f.message) for f in repo.check('SEL001').findings] == [
        ('fla/ops/matmul.py', 'no test uses this file, directly or through other modules')]


def test_a_module_a_test_imports_is_fine(repo):
    repo.commit({'fla/__init__.py': HEADER, 'fla/used.py': HEADER, 'tests/test_used.py': HEADER + 'import fla.used\n'})
    repo.write({'fla/used.py': HEADER + 'x = 2\n'})
    assert repo.check('SEL001').findings == ()


def test_a_function_added_that_no_test_uses_is_reported_by_name(repo):
    used = HEADER + 'def old(x):\n    return x\n'
    repo.commit({'fla/__init__.py': HEADER, 'fla/used.py': used, 'tests/test_used.py': HEADER + 'from fla.used import old\n'})
    repo.write({'fla/used.py': used + '\n\ndef new(x):\n    return -x\n'})
    assert [f.message for f in repo.check('SEL001').findings] == [
        'no test uses what this change alters here (new), directly or through other modules']
    repo.write({'tests/test_used.py': HEADER + 'from fla.used import new, old\n'})
    assert repo.check('SEL001').findings == ()


def test_a_re_export_no_test_takes_by_name_is_still_run_by_every_importer(repo):
    repo.commit({'fla/__init__.py': HEADER, 'fla/ops.py': HEADER + 'def a(x):\n    return x\n\n\ndef b(x):\n    return x\n',
                 'tests/test_a.py': HEADER + 'from fla import a\n'})
    repo.write({'fla/__init__.py': HEADER + 'from fla.ops import b\n'})
    assert repo.check('SEL001').findings == ()


def test_a_module_renamed_or_deleted_is_not_reported_under_its_old_path(repo):
    body = HEADER + 'def f(x):\n    return x\n' + ''.join(f'\n\ndef g{n}(x):\n    return x + {n}\n' for n in range(8))
    repo.commit({'fla/__init__.py': HEADER, 'fla/old.py': body, 'fla/gone.py': HEADER + 'x = 1\n',
                 'tests/test_f.py': HEADER + 'from fla.old import f\n'})
    repo.write({'fla/old.py': None, 'fla/gone.py': None, 'fla/new.py': body,
                'tests/test_f.py': HEADER + 'from fla.new import f\n'})
    assert repo.check('SEL001').findings == ()

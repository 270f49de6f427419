# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""RUF:<code>: ruff's findings, on added lines only, under the repository's ruff settings."""

from __future__ import annotations

HEADER = '# Copyright (c) 2026, the mrbot authors.\n# SPDX-License-Identifier: MIT\n'
PYPROJECT = '[tool.ruff]\nline-length = 40\n[tool.ruff.lint]\nselect = ["E", "F"]\n'


def test_added_violations_only_with_the_repository_settings(repo):
    repo.commit({'pyproject.toml': PYPROJECT, 'a.py': HEADER + 'import os\n'})
    repo.write({'a.py': HEADER + 'import os\nimport sys\nlong_name_for_a_value = "forty-one characters"\n'})
    assert [(f.rule, f.line) for f in repo.check('RUF').findings] == [('RUF:F401', 4), ('RUF:E501', 5)]


def test_committed_head_is_checked_from_its_own_content(repo):
    repo.commit({'pyproject.toml': PYPROJECT, 'a.py': HEADER})
    repo.commit({'a.py': HEADER + 'import json\n'})
    repo.write({'a.py': HEADER})
    assert [(f.rule, f.line) for f in repo.check('RUF', base='HEAD~1', head='HEAD').findings] == [('RUF:F401', 3)]


def test_clean_change_has_no_findings(repo):
    repo.commit({'pyproject.toml': PYPROJECT, 'a.py': HEADER})
    repo.write({'a.py': HEADER + 'import os\n\nprint(os.sep)\n'})
    assert repo.check('RUF').findings == ()


def test_a_change_that_relaxes_ruff_is_checked_under_the_settings_it_relaxes(repo):
    repo.commit({'pyproject.toml': PYPROJECT, 'a.py': HEADER})
    repo.commit({'pyproject.toml': PYPROJECT.replace('select = ["E", "F"]', 'select = []'),
                 'ruff.toml': '[lint]\nignore = ["F401"]\n', 'a.py': HEADER + 'import json\n'})
    assert [(f.rule, f.line) for f in repo.check('RUF', base='HEAD~1', head='HEAD').findings] == [('RUF:F401', 3)]
    # in the working tree too
    repo.write({'a.py': HEADER + 'import os\n'})
    assert [(f.rule, f.line) for f in repo.check('RUF', base='HEAD~1').findings] == [('RUF:F401', 3)]


def test_imports_are_sorted_as_in_the_repository_where_its_folders_make_a_module_first_party(repo):
    """ruff counts `helpers` first-party because its folder is in the repository, though the change does not touch
    it; the copy ruff runs on must say the same, or a block sorted by the repository's own ruff is reported."""
    settings = '[tool.ruff.lint]\nselect = ["I"]\n'
    tool = HEADER + 'import json\n\nimport numpy\n\nfrom helpers.io import read\n\nprint(json, numpy, read)\n'
    repo.commit({'pyproject.toml': settings, 'helpers/__init__.py': HEADER, 'helpers/io.py': HEADER + 'read = 1\n',
                 'scripts/tool.py': HEADER})
    repo.write({'scripts/tool.py': tool})
    assert repo.check('RUF').findings == ()
    # the same blocks are unsorted where `helpers` is not the repository's own, so a third-party module like numpy
    repo.write({'scripts/tool.py': tool.replace('helpers', 'other')})
    assert [f.rule for f in repo.check('RUF').findings] == ['RUF:I001']

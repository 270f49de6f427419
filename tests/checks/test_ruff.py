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

# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""HDR001: the license header on added and modified source files, and its fix."""

from __future__ import annotations

from checks.header import with_header
from mrbot.config import Config

HEADER = '# Copyright (c) 2026, the mrbot authors.\n# SPDX-License-Identifier: MIT\n'


def _where(report):
    return [(f.path, f.line, f.message) for f in report.findings]


def test_missing_and_wrong_headers_on_touched_files(repo):
    repo.commit({'untouched.py': 'x = 1\n', 'fla/old.py': HEADER + 'x = 1\n'})
    repo.write({
        'fla/new.py': 'import torch\n',
        'fla/old.py': '# Copyright (c) 2025, someone else.\n# SPDX-License-Identifier: MIT\nx = 2\n',
        'fla/good.py': '#!/usr/bin/env python3\n' + HEADER + 'x = 1\n',
        'fla/empty.py': '',
        'notes.md': 'no header needed\n',
    })
    assert sorted(_where(repo.check('HDR001'))) == [
        ('fla/new.py', 1, 'license header missing'),
        ('fla/old.py', 1, "license header line 1 is '# Copyright (c) 2025, someone else.', expected "
                          "'# Copyright (c) 2026, the mrbot authors.'"),
    ]


def test_year_placeholder_for_repositories_whose_header_has_one(repo):
    repo.commit({'pyproject.toml': '[tool.mrbot]\nheader = ["# Copyright (c) 2023-{year}, Someone", "# MIT"]\n'})
    repo.write({'a.py': '# Copyright (c) 2023-2031, Someone\n# MIT\n', 'b.py': '# Copyright (c) 2023-20x1, Someone\n'})
    assert [f.path for f in repo.check('HDR001').findings] == ['b.py']


def test_fix_replaces_a_wrong_header_and_keeps_the_shebang():
    config = Config()
    assert with_header('#!/usr/bin/env python3\n# SPDX-License-Identifier: GPL\nimport os\n', config) == (
        '#!/usr/bin/env python3\n' + HEADER + 'import os\n')
    ours_with_a_wrong_license = HEADER.splitlines(keepends=True)[0] + '# SPDX-License-Identifier: GPL\nimport os\n'
    assert with_header(ours_with_a_wrong_license, config) == HEADER + 'import os\n'
    assert with_header('import os\n', config) == HEADER + 'import os\n'
    assert with_header(HEADER + 'import os\n', config) == HEADER + 'import os\n'


def test_fix_leaves_another_holders_copyright_line_alone():
    upstream = '# Copyright (c) 2023-2026, Songlin Yang, Yu Zhang, Zhiyuan Li\n#\n# MIT license\nimport os\n'
    assert with_header(upstream, Config()) == upstream


def test_fix_keeps_the_years_of_a_copyright_line_the_header_accepts():
    config = Config(header=('# Copyright (c) 2023-{year}, Someone', '# SPDX-License-Identifier: MIT'))
    assert with_header('# Copyright (c) 2023-2024, Someone\n# SPDX-License-Identifier: GPL\nimport os\n', config) == (
        '# Copyright (c) 2023-2024, Someone\n# SPDX-License-Identifier: MIT\nimport os\n')
    assert with_header(HEADER + 'import os\n', config) == HEADER + 'import os\n'

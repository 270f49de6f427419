# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The license header every source file starts with."""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator

from mrbot.config import Config
from mrbot.rules import Context, Violation, rule

_PREAMBLE = re.compile(r'^(#!|#.*coding[:=])')
LICENSE_LINE = re.compile(r'copyright|spdx-license-identifier', re.IGNORECASE)
COPYRIGHT = re.compile(r'copyright', re.IGNORECASE)


def _line_pattern(expected: str) -> re.Pattern:
    return re.compile(re.escape(expected).replace(re.escape('{year}'), r'\d{4}') + r'\s*$')


def _header_start(lines: list[str]) -> int:
    start = 0
    while start < len(lines) and start < 2 and _PREAMBLE.match(lines[start]):
        start += 1
    return start


def leading_comment(lines: list[str]) -> list[str]:
    """The comment lines a file starts with, after a shebang or coding line: where its license header stands."""
    start = _header_start(lines)
    end = start
    while end < len(lines) and lines[end].startswith('#'):
        end += 1
    return lines[start:end]


def with_header(text: str, config: Config) -> str:
    """`text` with the configured header in place of any leading license comment (after a shebang or coding line);
    unchanged when that comment holds a copyright line the header does not accept, which is its holder's to change."""
    lines = text.splitlines(keepends=True)
    start = _header_start([line.rstrip('\n') for line in lines])
    end = start
    while end < len(lines) and lines[end].startswith('#') and (LICENSE_LINE.search(lines[end]) or lines[end].strip() == '#'):
        end += 1
    patterns = [_line_pattern(line) for line in config.header]
    if any(COPYRIGHT.search(line) and not any(p.match(line.rstrip('\n')) for p in patterns) for line in lines[start:end]):
        return text
    year = str(datetime.date.today().year)
    present = [line.rstrip('\r\n') for line in lines[start:end]]
    # a line the setting already accepts stays as written: the years on a copyright line are its holder's to change
    header = [(present[i] if i < len(present) and pattern.match(present[i]) else line.replace('{year}', year)) + '\n'
              for i, (line, pattern) in enumerate(zip(config.header, patterns, strict=True))]
    return ''.join(lines[:start] + header + lines[end:])


@rule('HDR001', 'License header missing or wrong', 'error',
      'run `mrbot check --fix` to insert the header; it leaves another holder\'s copyright line alone', scope='file',
      fix=with_header)
def license_header(context: Context) -> Iterator[Violation]:
    """Checks that every added or modified source file starts with the repository's license header.

    The header states the license of each file on its own, which matters once files are copied elsewhere. It holds
    no year, so it never goes stale; a repository whose header has one writes `{year}` in the setting.

    Example: a new `fla/ops/kda/chunk.py` that starts with `import torch`.

    Instead: start it with the header lines of CONTRIBUTING.md (a shebang or coding line may come first).
    """
    expected = context.config.header
    patterns = [_line_pattern(line) for line in expected]
    for source in context.sources(*context.config.header_files):
        if source.file.status == 'deleted' or not source.text.strip():
            continue
        start = _header_start(source.lines)
        for offset, pattern in enumerate(patterns):
            number = start + offset + 1
            if not pattern.match(source.line(number)):
                found = source.line(number).strip()
                if offset == 0 and not LICENSE_LINE.search(found):
                    yield Violation(source.path, number, 'license header missing')
                else:
                    yield Violation(source.path, number, f'license header line {offset + 1} is {found!r}, expected '
                                                         f'{expected[offset]!r}')
                break

# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""What a stranger's Markdown can do once the bot posts it, judged by a CommonMark parser: nothing, and it all shows."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from mrbot.ci.inert import inert

JOINER = '\u2060'
MARKDOWN = MarkdownIt('commonmark').enable('table')
LINE_END = re.compile(r'\r\n|\r|\n')
# what a browser or a forge's filters would act on
TAG = re.compile(r'<(?=[A-Za-z/!?])(?!/?(?:details|summary|sub)>)')
MENTION = re.compile(r'@[A-Za-z0-9_-]')
REFERENCE = re.compile(r'&[#A-Za-z]')


def live(markdown: str) -> list[str]:
    """What `markdown` would do when posted: each raw HTML tag but the reports' own, mention, decoded `<`, HTML
    comment opener and quick action."""
    found = [f'{token.type}: {token.content!r}' for token in _tokens(MARKDOWN.parse(markdown))
             if (token.type in ('html_block', 'html_inline') and _live_html(token.content))
             or (token.type == 'text' and (MENTION.search(token.content) or TAG.search(token.content)))]
    found += ['<!--'] * ('<!--' in markdown)
    found += [f'quick action: {line!r}' for line in LINE_END.split(markdown) if line.lstrip(' \t').startswith('/')]
    return found


def _tokens(tokens: list[Token]) -> list[Token]:
    return [each for token in tokens for each in [token, *_tokens(token.children or [])]]


def _live_html(html: str) -> bool:
    # raw HTML reaches the browser and the mention filters as it is, its references decoded
    return bool(TAG.search(html) or MENTION.search(html) or REFERENCE.search(html))


def shown(markdown: str) -> str:
    return markdown.replace(JOINER, '')


@pytest.mark.parametrize('text', [
    pytest.param('\\`@everyone <img src=x onerror=alert(1)>`', id='escaped-backtick'),
    pytest.param('```a`b\n<img src=x>\n```\n', id='backtick-in-info-string'),
    pytest.param('<details>\n```\n<img src=x>\n```\n', id='fence-in-html-block'),
    pytest.param('`a\nb` <img src=x> `c`', id='code-span-across-lines'),
    pytest.param('| a | b | c |\n| - | - | - |\n| `x | <img src=x> | y` |\n', id='table-cells-before-code-spans'),
    pytest.param('a\u2028```\n<img src=x>\n```\n', id='u2028-ends-no-line'),
    pytest.param('a\x0c```\n<img src=x>\n```\n', id='form-feed-ends-no-line'),
    pytest.param('```\nx\n```\u00a0\n<p>\n```\n<img src=x>\n', id='nbsp-is-not-blank'),
])
def test_what_the_old_defuse_took_for_code_is_not_left_live(text):
    assert live(text)
    assert live(inert(text)) == []
    assert shown(inert(text)) == text


@pytest.mark.parametrize('text', [
    pytest.param('- a\n  ```\n<img src=x>\n  ```\n', id='indented-fence-in-list-item'),
    pytest.param('foo <details>\n```\n\n```\n<img src=x>\n', id='fence-after-tag-mid-line'),
    pytest.param('   ```\n```\n<img src=x>\n', id='indented-top-level-fence'),
])
def test_no_renderer_closes_a_fence_where_inert_keeps_it_open(text):
    assert live(text)
    assert live(inert(text)) == []


def test_a_byte_order_mark_opens_no_fence_for_a_renderer_that_drops_it_or_one_that_keeps_it():
    text = '\ufeff```\n```\n<img src=x>\n'
    out = inert(text)
    assert live(text.removeprefix('\ufeff'))
    assert live(out.removeprefix('\ufeff')) == [] and live(out) == []
    assert shown(out) == text


def test_a_marker_forged_in_a_title_is_no_comment_in_text_or_code():
    marker = '<!-- mrbot:accepted {"run": "1"} -->'
    text = f'### Fix the kernel {marker}\n\n```\n{marker}\n```\n'
    out = inert(text)
    assert '<!--' not in out
    assert live(out) == []
    assert shown(out) == text


@pytest.mark.parametrize('text', ['ping @all', '@octo-org/everyone', '&#64;all', '&commat;all', '@\\_bot', '[@all](x)'])
def test_nobody_is_mentioned(text):
    assert live(text)
    assert live(inert(text)) == []
    assert shown(inert(text)) == text


@pytest.mark.parametrize('text', [
    '<img src=x>', '<a href="javascript:x">x</a>', '<script>x</script>', '&lt;img src=x&gt;', '&#60;img src=x>',
    '<!DOCTYPE html>', '<?php x ?>', '<![CDATA[x]]>', '<details open>', '<DETAILS>', '\\<img src=x>',
])
def test_no_html_is_live_but_the_reports_own_tags(text):
    assert live(text)
    assert live(inert(text)) == []
    assert shown(inert(text)) == text


@pytest.mark.parametrize('text', ['/merge', '  /merge', 'see\n/merge\n', 'a\r/approve', '```\n/merge\n```\n',
                                  '```\n\t/merge\n```\n'])
def test_no_line_is_a_quick_action_in_text_or_code(text):
    assert live(text)
    assert live(inert(text)) == []
    assert shown(inert(text)) == text


REPORT = """### mrbot check

**2 errors** in 1 changed file.

| | Rule | Where | Message |
| --- | --- | --- | --- |
| ❌ error | `HDR001` | lib/a.py:1 | the file has no copyright header |
| ❌ error | `RUF:F401` | lib/a.py:4 | `json` imported but unused \\| twice |

<details><summary>lib/a.py (2)</summary>

- lib/a.py:1 `HDR001` the file has no copyright header

</details>

<sub>Evidence record: `.mrbot/evidence.json` (schema 1).</sub>
"""

TRACEBACK = """Traceback (most recent call last):
  File "tests/ops/test_simple_gla.py", line 12, in test_varlen
    @triton.jit
    def kernel(x, y): return x<y
/tmp/run/kernel.py:3: <!-- not a marker --> & &#64;all
AssertionError: mismatch @ index 3
"""


def test_the_reports_own_shapes_render_as_they_were():
    assert inert(REPORT) == REPORT
    rendered = MARKDOWN.render(REPORT)
    assert '<details><summary>lib/a.py (2)</summary>' in rendered and '<td><code>RUF:F401</code></td>' in rendered


def test_a_fenced_traceback_is_kept_but_for_comment_openers_and_quick_actions():
    text = f'The job failed:\n\n```text\n{TRACEBACK}```\n\nAsked by someone.\n'
    fences = [token for token in MARKDOWN.parse(inert(text)) if token.type == 'fence']
    expected = TRACEBACK.replace('\n/tmp', f'\n{JOINER}/tmp').replace('<!--', f'<{JOINER}!--')
    assert [fence.content for fence in fences] == [expected]
    assert live(inert(text)) == []


def test_gitlab_blocks_that_would_close_a_fence_early_open_nothing():
    # GitLab's >>> block would end at its second >>>, and the fence in it, leaving the img outside any code
    text = '>>>\n```\n>>>\n<img src=x>\n```\n>>> [!note] Heads up\n:::danger\n'
    assert inert(text) == f'>>>{JOINER}\n```\n>>>\n<img src=x>\n```\n>>>{JOINER} [!note] Heads up\n{JOINER}:::danger\n'


@pytest.mark.parametrize('text', ['---\ntitle: x\n---\n```\n---\n<img src=x>\n',
                                  '\n\n+++\nx = 1\n+++\n', '# -*- coding: utf-8 -*-\n\n;;;\n{}\n;;;\n'])
def test_gitlab_takes_no_line_for_the_start_of_front_matter(text):
    out = inert(text)
    first = next(line for line in LINE_END.split(out) if line.strip() and 'coding:' not in line)
    assert first.startswith(JOINER)
    assert shown(out) == text


def test_a_thematic_break_later_in_the_text_is_left_alone():
    text = 'Summary\n\n---\n\nMore\n'
    assert inert(text) == text


PIECES = ['`', '``', '```', '````', '~~~', '~~~~', '<', '>', '<details>', '</details>', '<summary>', '<sub>', '<!--',
          '-->', '@all', '&#64;', '&lt;', '|', '\\', '\n', '\r', '\r\n', '\u2028', '\u00a0', ' ', '   ', '\t',
          '/merge', '> ', '- ', 'a', 'b', '<img src=x>', '>>>', ':::', '---', '\ufeff', JOINER]
# where a line starts decides what block it is
STARTS = ['', '', '  ', '- a', '> ', '```', '  ```', '~~~', 'a <details>', '<details>', '<img src=x>', '>>>', '\ufeff']
LINE = st.tuples(st.sampled_from(STARTS), st.lists(st.sampled_from(PIECES), max_size=5).map(''.join),
                 st.sampled_from(['\n', '\r', '\r\n', '\n\n'])).map(''.join)
TEXT = st.one_of(st.lists(st.sampled_from(PIECES), max_size=40).map(''.join), st.lists(LINE, max_size=12).map(''.join))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(TEXT)
def test_any_mix_of_markdown_pieces_is_inert_and_all_shown(text):
    out = inert(text)
    # cmark-gfm drops a byte order mark, markdown-it keeps it
    assert live(out) == [] and live(out.removeprefix('\ufeff')) == []
    assert shown(out) == shown(text)


def test_a_megabyte_of_hostile_markdown_takes_well_under_a_second_or_two():
    parts = ['` `` ``` ', '<details>\n```\n', '```\n~~~\n', '\r\r', '<!-- @all &#64; /merge\n']
    text = ''.join(part * (250_000 // len(part)) for part in parts)
    assert len(text) >= 1_000_000
    start = time.perf_counter()
    out = inert(text)
    assert time.perf_counter() - start < 2
    assert shown(out) == text

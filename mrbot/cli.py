# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The command surface: builds the parser, hands each subcommand to the module that carries it out (its face in
`mrbot/commands/`, or the one module of a small command), and is the one place where an error becomes a line on stderr
and an exit code."""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import signal
import sys
import tempfile
import threading
import traceback
from pathlib import Path

from mrbot import version
from mrbot.config import CONFIG_VARIABLE
from mrbot.records import MrbotError

DESCRIPTION = '''\
mrbot checks a change to a GPU-kernel repository against its contribution rules, runs the tests the change
reaches, benchmarks the kernels it touches before and after on one GPU, and writes the pull request body with
the evidence. In CI it checks every pull request and answers /bench and /test comments.

Every setting lives in [tool.mrbot] of the repository's pyproject.toml (`mrbot config` shows them all).
Exit codes: 0 done (no errors found), 1 findings or failed tests, 2 bad input or a bug, 130 interrupted.'''

EXAMPLES = '''\
examples:
  mrbot check                      the change from the default branch, findings on the lines it adds
  mrbot check fla/ops/a.py         these files whole (the pre-commit hook's form)
  mrbot test --list                the tests the change needs, and why each
  mrbot bench --from-diff --base origin/main
                                   time the ops the change touches, base against head
  mrbot prepare                    all of it, then the PR body with the evidence
  mrbot help check                 the options of one command'''

# Subcommand -> the module whose `run(args)` carries it out, imported only when used.
COMMANDS = {'check': 'mrbot.check', 'test': 'mrbot.commands.test', 'bench': 'mrbot.commands.bench',
            'rules': 'mrbot.rules', 'prepare': 'mrbot.prepare', 'demo': 'mrbot.demo', 'action': 'mrbot.action',
            'compile': 'mrbot.commands.compile', 'init': 'mrbot.init', 'config': 'mrbot.settings',
            'cache': 'mrbot.cache', 'loop': 'mrbot.commands.loop', 'history': 'mrbot.history',
            'webhook': 'mrbot.ci.receiver'}

# Subcommand -> its one-line help; its arguments come from its module.
HELP = {'check': "check a change against the repository's contribution rules",
        'test': 'select the tests a change needs and run them, or list them',
        'bench': 'time the ops a change touches on base and head, interleaved, on one GPU',
        'compile': 'compile every kernel the change reaches for each GPU target, on the CPU',
        'rules': 'list the rules with their severities here, or print the documentation of some',
        'prepare': 'check, test and benchmark a change, then write its PR body',
        'action': 'the entry point in CI: check a PR, answer a command, post results',
        'webhook': 'serve GitLab note events: run the GPU job of a merge request for each /bench and /test note',
        'demo': 'run mrbot prepare on an example kernel change in a temporary clone',
        'init': 'append the [tool.mrbot] table this repository needs, derived from its files; --ci writes its CI files',
        'config': 'print the settings in effect, defaults included, as a [tool.mrbot] table',
        'cache': "remove what mrbot keeps under .mrbot/ (`mrbot cache clean`)",
        'loop': 'optimize one op try by try: frozen gate, gaming rules, interleaved timing, a claim or a no-go',
        'history': 'the recorded timings of loops and `mrbot bench --record` runs, as a table or a plot',
        'help': 'show the help of mrbot or of one command'}


def _common(top: bool) -> argparse.ArgumentParser:
    """The options every command takes, before or after its name; only the top level sets their defaults."""
    parser = argparse.ArgumentParser(add_help=False)
    default = (lambda value: value) if top else (lambda value: argparse.SUPPRESS)
    parser.add_argument('--color', choices=['auto', 'always', 'never'], default=default('auto'),
                        help='color in the output: auto (on a terminal, unless NO_COLOR is set; FORCE_COLOR forces '
                             'it), always or never')
    parser.add_argument('--config', metavar='FILE', default=default(None),
                        help="read the settings from FILE (a pyproject.toml, or a TOML file of the [tool.mrbot] keys "
                             "alone) instead of the repository's pyproject.toml")
    return parser


def build_parser(chosen: str | None = None) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser and each command's own, with the arguments of every command, or, with `chosen`, of that one only:
    a command imports only its own stage (`mrbot test --list` answers before Triton or an HTTP client loads)."""
    parser = argparse.ArgumentParser(prog='mrbot', description=DESCRIPTION, epilog=EXAMPLES, parents=[_common(True)],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--version', action='version', version=f'mrbot {version()}')
    commands = parser.add_subparsers(dest='command', required=True, metavar='COMMAND')
    parsers = {}
    for name, text in HELP.items():
        command = parsers[name] = commands.add_parser(name, help=text, description=text, parents=[_common(False)])
        if name == 'help':
            command.add_argument('topic', nargs='?', metavar='COMMAND', help='the command to show the help of')
        elif name != 'demo' and chosen in (None, name):
            importlib.import_module(COMMANDS[name]).add_arguments(command)
    return parser, parsers


def _chosen(words: list[str]) -> str | None:
    """The command named in `words`: the first word that is not an option or the value of one."""
    words = iter(words)
    for word in words:
        if word in ('--config', '--color'):
            next(words, None)
        elif not word.startswith('-'):
            return word
    return None


def _crash_report(error: BaseException) -> Path:
    """Write the traceback of a bug where its reporter can find it; the path."""
    handle, name = tempfile.mkstemp(prefix='mrbot-crash-', suffix='.txt')
    with os.fdopen(handle, 'w', encoding='utf-8') as out:
        out.write(f'mrbot {version()}, Python {sys.version.split()[0]}, {datetime.datetime.now().isoformat()}\n'
                  f'argv: {sys.argv}\n\n')
        out.write(''.join(traceback.format_exception(error)))
    return Path(name)


def _one_line(text: str) -> str:
    """`text` on one line, its control characters escaped: an error may quote what a stranger wrote, and a CI runner
    reads a line of its own that starts with `::` as a command (`::error::`, `::add-mask::`)."""
    return ''.join(char if char.isprintable() else ascii(char)[1:-1] for char in text)


def _terminate(signum: int, frame: object) -> None:
    # a stage cleans up on KeyboardInterrupt (children stopped, what finished saved): SIGTERM takes the same way out
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    chosen = _chosen(words)
    where = f'mrbot {chosen}' if chosen in COMMANDS else 'mrbot'
    # Python sets signal handlers in its main thread only; a test may call `main` from another
    handles_signals = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if handles_signals else None
    try:
        return _run(words, chosen)
    except MrbotError as error:
        print(f'{where}: error: {_one_line(str(error))}', file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:
        # what finished before the interrupt is kept where a command keeps it (a cache, a record), which it names
        print(f'{where}: interrupted' + (f': {_one_line(str(interrupt))}' if str(interrupt) else ''), file=sys.stderr)
        return 130
    except Exception as error:  # noqa: BLE001 - the one place a bug becomes a line and an exit code, not a traceback
        report = _crash_report(error)
        print(f'{where}: internal error: {type(error).__name__}: {_one_line(str(error))} (a bug in mrbot; the traceback '
              f'is in {report}: please report it with that file)', file=sys.stderr)
        return 2
    finally:
        if handles_signals:
            signal.signal(signal.SIGTERM, previous)


def _run(words: list[str], chosen: str | None) -> int:
    if chosen == 'help':
        # help names the command it explains: only that one's arguments are needed
        topic = _chosen(words[words.index('help') + 1:])
        chosen = topic if topic in COMMANDS else None
    parser, parsers = build_parser(chosen if chosen in COMMANDS else None)
    args = parser.parse_args(words)
    if args.command == 'help':
        if args.topic is not None and args.topic not in parsers:
            parser.error(f"no command '{args.topic}'; the commands are {', '.join(HELP)}")
        (parsers[args.topic] if args.topic else parser).print_help()
        return 0
    # the color and the settings reach every stage and every process a command starts
    if args.color != 'auto':
        os.environ.pop('NO_COLOR' if args.color == 'always' else 'FORCE_COLOR', None)
        os.environ['FORCE_COLOR' if args.color == 'always' else 'NO_COLOR'] = '1'
    if args.config is not None:
        os.environ[CONFIG_VARIABLE] = str(Path(args.config).resolve())
    return importlib.import_module(COMMANDS[args.command]).run(args)


if __name__ == '__main__':
    sys.exit(main())

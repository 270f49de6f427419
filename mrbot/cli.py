# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The command surface: builds the parser and hands each subcommand to the module of its stage."""

from __future__ import annotations

import argparse
import importlib
import sys

from mrbot.records import MrbotError

# Subcommand -> the module whose `run(args)` carries it out, imported only when used.
COMMANDS = {'check': 'mrbot.check', 'test': 'mrbot.testing', 'bench': 'mrbot.bench.command', 'rules': 'mrbot.rules',
            'prepare': 'mrbot.prepare', 'demo': 'mrbot.demo', 'action': 'mrbot.action',
            'compile': 'mrbot.compile.command', 'init': 'mrbot.init'}


# Subcommand -> its one-line help; its arguments come from its module.
HELP = {'check': "check a change against the repository's contribution rules",
        'test': 'select the tests a change needs and run them, or list them',
        'bench': 'time the ops a change touches on base and head, interleaved, on one GPU',
        'compile': 'compile every kernel the change reaches for each GPU target, on the CPU',
        'rules': 'list the rules, or print the documentation of one',
        'prepare': 'check, test and benchmark a change, then write its PR body',
        'action': 'the entry point in CI: check a PR, answer a command, post results',
        'demo': 'run mrbot prepare on an example kernel change in a temporary clone',
        'init': 'append the [tool.mrbot] table this repository needs, derived from its files'}


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or, with `chosen`, the arguments of that one only: a command imports only its
    own stage (`mrbot test --list` answers before Triton or an HTTP client would have loaded)."""
    parser = argparse.ArgumentParser(prog='mrbot', description=__doc__)
    commands = parser.add_subparsers(dest='command', required=True, metavar='COMMAND')
    for name, text in HELP.items():
        command = commands.add_parser(name, help=text)
        if name == 'rules':
            command.add_argument('id', nargs='?', help='a rule id such as TRI001')
        elif name != 'demo' and chosen in (None, name):
            importlib.import_module(COMMANDS[name]).add_arguments(command)
    return parser


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    chosen = next((word for word in words if not word.startswith('-')), None)
    args = build_parser(chosen if chosen in COMMANDS else None).parse_args(argv)
    try:
        return importlib.import_module(COMMANDS[args.command]).run(args)
    except MrbotError as error:
        print(f'mrbot {args.command}: error: {error}', file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # what finished before the interrupt is kept where a command keeps it (a cache, a record); the rest is not
        print(f'mrbot {args.command}: interrupted', file=sys.stderr)
        return 130


if __name__ == '__main__':
    sys.exit(main())

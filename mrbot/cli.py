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
            'compile': 'mrbot.compile.command'}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='mrbot', description=__doc__)
    commands = parser.add_subparsers(dest='command', required=True, metavar='COMMAND')
    check = commands.add_parser('check', help="check a change against the repository's contribution rules")
    importlib.import_module('mrbot.check').add_arguments(check)
    test = commands.add_parser('test', help='select the tests a change needs and run them, or list them')
    importlib.import_module('mrbot.testing').add_arguments(test)
    bench = commands.add_parser('bench', help='time the ops a change touches on base and head, interleaved, on one GPU')
    importlib.import_module('mrbot.bench.command').add_arguments(bench)
    compile_ = commands.add_parser('compile', help='compile every kernel the change reaches for each GPU target, on the CPU')
    importlib.import_module('mrbot.compile.command').add_arguments(compile_)
    rules = commands.add_parser('rules', help='list the rules, or print the documentation of one')
    rules.add_argument('id', nargs='?', help='a rule id such as TRI001')
    prepare = commands.add_parser('prepare', help='check, test and benchmark a change, then write its PR body')
    importlib.import_module('mrbot.prepare').add_arguments(prepare)
    action = commands.add_parser('action', help='the entry point in CI: check a PR, answer a command, post results')
    importlib.import_module('mrbot.action').add_arguments(action)
    commands.add_parser('demo', help='run mrbot prepare on an example kernel change in a temporary clone')
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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

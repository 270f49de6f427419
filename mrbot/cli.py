# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The command surface: builds the parser and hands each subcommand to the module of its stage."""

from __future__ import annotations

import argparse
import sys

from mrbot import demo


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='mrbot', description=__doc__)
    commands = parser.add_subparsers(dest='command', required=True, metavar='COMMAND')
    commands.add_parser('demo', help='show what mrbot does and run a kernel of the fla library here')
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handlers = {'demo': demo.run}
    return handlers[args.command](args)


if __name__ == '__main__':
    sys.exit(main())

# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Reading a record back from JSON: each field with its type checked, one error naming the file and the field."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mrbot.records import MrbotError

# The value of a field a record cannot do without: reading a record without it is an error.
_REQUIRED = object()


def _shown(value: object) -> str:
    """A JSON value as an error names it: `null`, `true`, `0`, `the string "fast"`, `a list`, `an object`."""
    if value is None or isinstance(value, (bool, int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return f'the string {json.dumps(value if len(value) <= 40 else value[:37] + "...")}'
    return 'a list' if isinstance(value, list) else 'an object'


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class JsonObject:
    """A JSON object being read into a record, and where it sits (`B.json`, `rows[2]`): each field is read with its
    type checked, so a malformed file is one error naming the file and the field, never a KeyError later."""

    data: dict
    source: str
    path: str = ''

    @classmethod
    def parse(cls, text: str, source: str, what: str) -> JsonObject:
        """The JSON object in `text`, the contents of `source`, which should hold `what` (`a bench record`)."""
        try:
            data = json.loads(text)
        # a document nested deeper than the parser's stack is refused the same way
        except (ValueError, RecursionError) as error:
            raise MrbotError(f'{source}: not JSON ({error}); expected a JSON object ({what})') from None
        if not isinstance(data, dict):
            raise MrbotError(f'{source}: expected a JSON object ({what}), got {_shown(data)}')
        return cls(data, source)

    @classmethod
    def load(cls, path: Path, what: str) -> JsonObject:
        """The JSON object in the file `path`, which should hold `what`."""
        try:
            text = path.read_text(encoding='utf-8')
        except OSError as error:
            raise MrbotError(f'{path}: cannot read it ({error.strerror or error}); expected {what}') from None
        except UnicodeDecodeError:
            raise MrbotError(f'{path}: not UTF-8 text; expected {what}') from None
        return cls.parse(text, str(path), what)

    def at(self, key: str) -> str:
        """The path of one of this object's fields, for an error about it: `rows[2].samples_ms`."""
        return f'{self.path}.{key}' if self.path else key

    def error(self, where: str, expected: str, value: object = _REQUIRED) -> MrbotError:
        if value is _REQUIRED:
            return MrbotError(f'{self.source}: {where}: missing, expected {expected}')
        return MrbotError(f'{self.source}: {where}: expected {expected}, got {_shown(value)}')

    def _get(self, key: str, expected: str, accepts: Callable[[object], bool], default: object) -> Any:
        value = self.data.get(key, _REQUIRED)
        if value is _REQUIRED:
            if default is _REQUIRED:
                raise self.error(self.at(key), expected)
            return default
        if not accepts(value):
            raise self.error(self.at(key), expected, value)
        return value

    def text(self, key: str, default: object = _REQUIRED) -> str:
        return self._get(key, 'a string', lambda v: isinstance(v, str), default)

    def optional_text(self, key: str) -> str | None:
        return self._get(key, 'a string or null', lambda v: v is None or isinstance(v, str), None)

    def number(self, key: str, default: object = _REQUIRED) -> float:
        return self._get(key, 'a number', is_number, default)

    def optional_number(self, key: str) -> float | None:
        return self._get(key, 'a number or null', lambda v: v is None or is_number(v), None)

    def integer(self, key: str, default: object = _REQUIRED) -> int:
        return self._get(key, 'a whole number', lambda v: isinstance(v, int) and not isinstance(v, bool), default)

    def optional_integer(self, key: str) -> int | None:
        return self._get(key, 'a whole number or null',
                         lambda v: v is None or isinstance(v, int) and not isinstance(v, bool), None)

    def flag(self, key: str, default: object = _REQUIRED) -> bool:
        return self._get(key, 'true or false', lambda v: isinstance(v, bool), default)

    def texts(self, key: str, default: object = _REQUIRED) -> tuple[str, ...]:
        values = self._get(key, 'a list of strings', lambda v: isinstance(v, list), default)
        for index, value in enumerate(values):
            if not isinstance(value, str):
                raise self.error(f'{self.at(key)}[{index}]', 'a string', value)
        return tuple(values)

    def times(self, key: str, default: object = _REQUIRED) -> tuple[float, ...]:
        """A list of times in ms: positive numbers."""
        values = self._get(key, 'a list of numbers', lambda v: isinstance(v, list), default)
        for index, value in enumerate(values):
            if not is_number(value) or value <= 0:
                raise self.error(f'{self.at(key)}[{index}]', 'a positive number of ms', value)
        return tuple(float(v) for v in values)

    def mapping(self, key: str, default: object = _REQUIRED) -> dict:
        """An object kept as the plain JSON it is (a section another stage wrote and reads)."""
        return self._get(key, 'an object', lambda v: isinstance(v, dict), default)

    def optional_mapping(self, key: str) -> dict | None:
        return self._get(key, 'an object or null', lambda v: v is None or isinstance(v, dict), None)

    def numbers(self, key: str) -> dict[str, float]:
        """An object of names to numbers (rates, ceilings), each kept as written."""
        values = self.mapping(key)
        for name, value in values.items():
            if not is_number(value):
                raise self.error(f'{self.at(key)}.{name}', 'a number', value)
        return dict(values)

    def optional_numbers(self, key: str) -> dict[str, float] | None:
        return None if self.optional_mapping(key) is None else self.numbers(key)

    def sequence(self, key: str, default: object = _REQUIRED) -> list:
        """A list kept as the plain JSON it is."""
        return self._get(key, 'a list', lambda v: isinstance(v, list), default)

    def object(self, key: str) -> JsonObject:
        return JsonObject(self.mapping(key), self.source, self.at(key))

    def optional_object(self, key: str) -> JsonObject | None:
        data = self.optional_mapping(key)
        return None if data is None else JsonObject(data, self.source, self.at(key))

    def objects(self, key: str, default: object = _REQUIRED) -> list[JsonObject]:
        values = self.sequence(key, default)
        for index, value in enumerate(values):
            if not isinstance(value, dict):
                raise self.error(f'{self.at(key)}[{index}]', 'an object', value)
        return [JsonObject(value, self.source, f'{self.at(key)}[{index}]') for index, value in enumerate(values)]

    def schema(self, version: int, what: str) -> int:
        """The record's `schema`, which must be `version`: a record of another version of `what` is not read."""
        return self._get('schema', f'{version} ({what})', lambda v: v == version and not isinstance(v, bool), _REQUIRED)

    def choice(self, key: str, choices: tuple[str, ...], default: object = _REQUIRED) -> str:
        return self._get(key, f"one of {', '.join(choices)}", lambda v: v in choices, default)

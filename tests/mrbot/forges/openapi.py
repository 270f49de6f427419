# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""GitHub's published REST description (npm `@octokit/openapi`, which `make test` installs), and the check of one
exchange with the GitHub fake against it.

A request must be one the description documents, with its path, query and body as documented; an answer must have a
status the operation documents and a body of its schema. Beyond the schemas, an object may carry only the fields the
description declares for it: the fake answers nothing GitHub would not, and the adapter sends nothing GitHub ignores.

The fake models only the fields the bot reads; `complete` fills every other field GitHub always sends with a value of
its documented type, so the adapter meets objects of GitHub's full shape.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jsonschema.exceptions import best_match
from openapi_core import Config, OpenAPI
from openapi_core.testing import MockRequest, MockResponse

NODE_MODULES = Path(__file__).resolve().parents[3] / 'node_modules'
DESCRIPTION = NODE_MODULES / '@octokit' / 'openapi' / 'generated' / 'api.github.com.json'
# The server the description names; the fake's address stands in for it.
SERVER = 'https://api.github.com'
# How much of a value a reason quotes.
_QUOTED = 120
# The keys that make a schema more than a free-form object.
_COMPOSED = {'properties', 'allOf', 'anyOf', 'oneOf'}
# GitHub answers these on any operation (a bad token, a token without access, a missing or hidden resource), though
# the description lists them on few; their body is the description's basic error.
_ANY_OPERATION = {401, 403, 404}
# A value of each string format a required field may have, where the fake leaves the field out.
_FORMATTED = {'date-time': '2026-01-01T00:00:00Z', 'uri': f'{SERVER}/', 'uri-template': f'{SERVER}/{{id}}',
              'email': 'noreply@github.com', 'date': '2026-01-01'}


@dataclass(frozen=True)
class Exchange:
    """One request to the fake and its answer; `status` None where the answer is not GitHub's to check."""

    method: str
    path: str
    query: Mapping[str, str]
    body: bytes
    status: int | None = None
    answer: Any = None


class Description:
    """The description of api.github.com, prepared once: the validators and each path template as a pattern."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.version = document['info']['version']
        self._api = OpenAPI.from_dict(document, config=Config(spec_validator_cls=None))
        # a template's literal segments outrank a parameter: /pulls/comments is not pull number "comments"
        self._templates = sorted(((re.compile(re.sub(r'\\\{[^}]+\\\}', '[^/]+', re.escape(template))), template)
                                  for template in document['paths']),
                                 key=lambda pair: -sum(not part.startswith('{') for part in pair[1].split('/')))

    def violations(self, exchange: Exchange) -> list[str]:
        """What in `exchange` GitHub's description does not allow, one line each naming the method and path."""
        where = f'{exchange.method} {exchange.path}'
        operation = self._operation(exchange.method, exchange.path)
        if operation is None:
            return [f'{where}: the description documents no such operation']
        request = MockRequest(SERVER, exchange.method, exchange.path, args=dict(exchange.query),
                              data=exchange.body or None)
        found = [f'{where}: request: {reason}' for error in self._api.iter_request_errors(request)
                 for reason in _reasons(error)]
        body = json.loads(exchange.body) if exchange.body else None
        request_schema = (operation.get('requestBody') or {}).get('content', {}).get('application/json', {}).get('schema')
        if request_schema is not None and body is not None:
            found += [f'{where}: request: {field}: not in the description' for field in self._undeclared(body, request_schema)]
        if exchange.status is None:
            return found
        answered = f'{where}: answer {exchange.status}'
        answer_schema = self._answer_schema(operation, exchange.status)
        if str(exchange.status) not in operation['responses'] and exchange.status in _ANY_OPERATION:
            basic_error = self.document['components']['schemas']['basic-error']
            found += [f'{answered}: {field}: not in the description'
                      for field in self._undeclared(exchange.answer, basic_error)]
            return found
        response = MockResponse(json.dumps(exchange.answer).encode(), status_code=exchange.status)
        found += [f'{answered}: {reason}' for error in self._api.iter_response_errors(request, response)
                  for reason in _reasons(error)]
        if answer_schema is not None:
            found += [f'{answered}: {field}: not in the description'
                      for field in self._undeclared(exchange.answer, answer_schema)]
        return found

    def complete(self, method: str, path: str, status: int, answer: Any) -> Any:
        """`answer` with each field its documented schema requires and it lacks, as a value of the documented type;
        the fields it has are kept as they are."""
        operation = self._operation(method, path)
        schema = None if operation is None else self._answer_schema(operation, status)
        return answer if schema is None else self._filled(answer, schema)

    def _answer_schema(self, operation: dict[str, Any], status: int) -> dict[str, Any] | None:
        documented = self._resolve(operation['responses'].get(str(status)) or {})
        return documented.get('content', {}).get('application/json', {}).get('schema')

    def _filled(self, value: Any, schema: dict[str, Any]) -> Any:
        if isinstance(value, list):
            items = [alternative['items'] for alternative in self._alternatives(schema) if 'items' in alternative]
            return [self._filled(item, items[0]) for item in value] if items else value
        if not isinstance(value, dict):
            return value
        discriminator = self._resolve(schema).get('discriminator')
        if discriminator and discriminator['propertyName'] not in value:
            # the kind of object whose declared fields the value has most of
            kind = max(discriminator['mapping'], key=lambda name: len(
                set(value) & set(self._object({'$ref': discriminator['mapping'][name]}, value)[0])))
            value = {**value, discriminator['propertyName']: kind}
        properties, required = self._object(schema, value)
        filled = {name: self._filled(field, properties[name]) if name in properties else field
                  for name, field in value.items()}
        filled.update({name: self._placeholder(properties.get(name, {})) for name in required if name not in value})
        return filled

    def _object(self, schema: dict[str, Any], value: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """The properties and required fields of an object schema for `value`: of the alternatives of a oneOf or anyOf,
        the one its discriminator names, else the one that declares most of its fields."""
        schema = self._resolve(schema)
        properties, required = dict(schema.get('properties', {})), list(schema.get('required', []))
        for part in schema.get('allOf', ()):
            part_properties, part_required = self._object(part, value)
            properties.update(part_properties)
            required += part_required
        parts = schema.get('oneOf', schema.get('anyOf', []))
        discriminator = schema.get('discriminator', {})
        named = discriminator.get('mapping', {}).get(value.get(discriminator.get('propertyName')))
        if named is not None:
            parts = [{'$ref': named}]
        objects = [choice for choice in (self._object(part, value) for part in parts) if choice[0]]
        if objects:
            chosen = max(objects, key=lambda choice: len(set(value) & set(choice[0])))
            properties.update(chosen[0])
            required += chosen[1]
        return properties, required

    def _placeholder(self, schema: dict[str, Any]) -> Any:
        """The simplest value of `schema`'s type; never null, as GitHub fills a nullable field where it can."""
        schema = self._resolve(schema)
        if 'enum' in schema:
            return schema['enum'][0]
        alternatives = schema.get('oneOf') or schema.get('anyOf')
        if alternatives:
            return self._placeholder(alternatives[0])
        kind = schema.get('type', 'object')
        if kind == 'string':
            return _FORMATTED.get(schema.get('format'), '')
        if kind in ('integer', 'number'):
            return schema.get('minimum', 0)
        if kind == 'boolean':
            return False
        if kind == 'array':
            return []
        return self._filled({}, schema)

    def _operation(self, method: str, path: str) -> dict[str, Any] | None:
        for pattern, template in self._templates:
            if pattern.fullmatch(path):
                return self.document['paths'][template].get(method.lower())
        return None

    def _resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while '$ref' in schema:
            _, section, kind, name = schema['$ref'].split('/')
            schema = self.document[section][kind][name]
        return schema

    def _alternatives(self, schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
        schema = self._resolve(schema)
        yield schema
        for combined in ('allOf', 'anyOf', 'oneOf'):
            for part in schema.get(combined, ()):
                yield from self._alternatives(part)

    def _undeclared(self, value: Any, schema: dict[str, Any], where: str = '') -> Iterator[str]:
        """The fields in `value` that no alternative of `schema` declares: an object schema with properties is closed
        unless it says additionalProperties."""
        alternatives = list(self._alternatives(schema))
        if isinstance(value, list):
            for index, item in enumerate(value):
                for alternative in alternatives:
                    if 'items' in alternative:
                        yield from self._undeclared(item, alternative['items'], f'{where}[{index}]')
            return
        if not isinstance(value, dict):
            return
        declared: dict[str, list[dict[str, Any]]] = {}
        for alternative in alternatives:
            for name, field in alternative.get('properties', {}).items():
                declared.setdefault(name, []).append(field)
        extra = [alternative['additionalProperties'] for alternative in alternatives
                 if alternative.get('additionalProperties', False) is not False]
        free_form = any(alternative.get('type') == 'object' and not _COMPOSED & set(alternative)
                        for alternative in alternatives)
        for name, field_value in value.items():
            path = f'{where}.{name}' if where else name
            if name in declared:
                fields = declared[name]
            elif extra or free_form:
                fields = [field for field in extra if isinstance(field, dict)]
            else:
                yield path
                continue
            for field in fields:
                yield from self._undeclared(field_value, field, path)


def _reasons(error: BaseException) -> Iterator[str]:
    """One line per thing openapi-core found wrong, naming the parameter or field it is in."""
    nested = getattr(error, 'errors', None) or getattr(error, 'context', None)
    if nested:
        for inner in nested:
            yield from _reasons(inner)
        return
    # a parameter's or a header's own name; a body's errors name their field
    subject = f"{getattr(error, 'location', 'header')} parameter {error.name}" if hasattr(error, 'name') else ''
    schema_errors = getattr(error, 'schema_errors', None) or getattr(error.__cause__, 'schema_errors', None)
    if not schema_errors:
        cause = error.__cause__
        yield f'{error}: {cause}' if cause is not None and str(cause) not in str(error) else str(error)
        return
    for schema_error in schema_errors:
        # of the alternatives of a oneOf or anyOf, the one that came closest
        closest = best_match(schema_error.context) if schema_error.context else schema_error
        field = '.'.join(map(str, closest.absolute_path))
        label = ': '.join(part for part in (subject, field) if part) or 'body'
        yield f'{label}: {closest.message[:_QUOTED]}'


@functools.cache
def description() -> Description:
    """GitHub's REST description, read once per process; without node_modules, one line saying how to get it."""
    if not DESCRIPTION.is_file():
        pytest.fail(f'{DESCRIPTION.relative_to(NODE_MODULES.parent)} is missing: the GitHub fake checks its traffic '
                    "against GitHub's REST description; run `make test`, or `npm ci` first", pytrace=False)
    return Description(json.loads(DESCRIPTION.read_text(encoding='utf-8')))

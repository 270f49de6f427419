# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Op declarations: declared in pyproject.toml or read from upstream's registry, validated, and their counts evaluated."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from mrbot.config import load_config
from mrbot.records import MrbotError
from mrbot.repo.ops import InputSpec, OpSpec, count_of, load_specs

UPSTREAM = Path('/work/upstream-fla')

CHUNK_SIMPLE_GLA = '''\
[tool.mrbot.bench.ops.chunk_simple_gla]
callable = "fla.ops.simple_gla:chunk_simple_gla"
gate = "tests/ops/test_simple_gla.py"
modes = ["fwd", "fwdbwd"]
varlen = true
default-shapes = ["B8-T2048-H16-K128", "B4-T4096-H32-K64", "varlen-T8192-N8-H16-K128"]

[tool.mrbot.bench.ops.chunk_simple_gla.inputs]
q = { shape = ["B", "T", "H", "K"], dtype = "bfloat16" }
k = { shape = ["B", "T", "H", "K"], dtype = "bfloat16" }
v = { shape = ["B", "T", "H", "V"], dtype = "bfloat16" }
g = { shape = ["B", "T", "H"], dtype = "float32", transform = "logsigmoid" }

[tool.mrbot.bench.ops.chunk_simple_gla.shapes]
B8-T2048-H16-K128 = { B = 8, T = 2048, H = 16, K = 128, V = 128 }
B4-T4096-H32-K64 = { B = 4, T = 4096, H = 32, K = 64, V = 64 }
varlen-T8192-N8-H16-K128 = { B = 1, T = 8192, N = 8, H = 16, K = 128, V = 128 }
tiny-T100 = { B = 1, T = 100, H = 2, K = 32, V = 32 }

# Bytes that must move: the forward reads q, k, v (bf16) and g (float32) and writes o (bf16); the backward reads
# them again with do and writes dq, dk, dv (bf16) and dg (float32).
[tool.mrbot.bench.ops.chunk_simple_gla.bytes]
fwd = "B*T*H*(2*K + 2*V)*2 + B*T*H*4"
fwdbwd = "2*(B*T*H*(2*K + 2*V)*2 + B*T*H*4) + B*T*H*((2*K + V)*2 + 4)"

# Matmul flops on 64-token chunks: the forward's q k^T, A v, q h and k^T v; the backward's ten (h recomputed).
[tool.mrbot.bench.ops.chunk_simple_gla.flops]
fwd = "2*B*T*H*64*(K + V) + 4*B*T*H*K*V"
fwdbwd = "8*B*T*H*64*(K + V) + 14*B*T*H*K*V"
'''

MINIMAL_OP = '''\
[tool.mrbot.bench.ops.op]
callable = "pkg.mod:fn"
{keys}
[tool.mrbot.bench.ops.op.inputs]
{inputs}
[tool.mrbot.bench.ops.op.shapes]
{shapes}
'''


def _specs(tmp_path: Path, pyproject: str) -> list[OpSpec]:
    (tmp_path / 'pyproject.toml').write_text(pyproject)
    return load_specs(tmp_path, load_config(tmp_path))


def _op(keys: str = '', inputs: str = 'x = { shape = ["B", "T"] }', shapes: str = 'small = { B = 2, T = 8 }') -> str:
    return MINIMAL_OP.format(keys=keys, inputs=inputs, shapes=shapes)


def test_the_chunk_simple_gla_declaration_reads_into_its_spec(tmp_path):
    [spec] = _specs(tmp_path, CHUNK_SIMPLE_GLA)
    assert spec == OpSpec(
        name='chunk_simple_gla', callable='fla.ops.simple_gla:chunk_simple_gla', source='config',
        inputs=(InputSpec('q', ('B', 'T', 'H', 'K')), InputSpec('k', ('B', 'T', 'H', 'K')),
                InputSpec('v', ('B', 'T', 'H', 'V')), InputSpec('g', ('B', 'T', 'H'), 'float32', 'logsigmoid')),
        modes=('fwd', 'fwdbwd'), varlen=True, gate='tests/ops/test_simple_gla.py',
        shapes={'B8-T2048-H16-K128': {'B': 8, 'T': 2048, 'H': 16, 'K': 128, 'V': 128},
                'B4-T4096-H32-K64': {'B': 4, 'T': 4096, 'H': 32, 'K': 64, 'V': 64},
                'varlen-T8192-N8-H16-K128': {'B': 1, 'T': 8192, 'N': 8, 'H': 16, 'K': 128, 'V': 128},
                'tiny-T100': {'B': 1, 'T': 100, 'H': 2, 'K': 32, 'V': 32}},
        default_shapes=('B8-T2048-H16-K128', 'B4-T4096-H32-K64', 'varlen-T8192-N8-H16-K128'),
        bytes={'fwd': 'B*T*H*(2*K + 2*V)*2 + B*T*H*4',
               'fwdbwd': '2*(B*T*H*(2*K + 2*V)*2 + B*T*H*4) + B*T*H*((2*K + V)*2 + 4)'},
        flops={'fwd': '2*B*T*H*64*(K + V) + 4*B*T*H*K*V', 'fwdbwd': '8*B*T*H*64*(K + V) + 14*B*T*H*K*V'})
    assert list(spec.shapes) == ['B8-T2048-H16-K128', 'B4-T4096-H32-K64', 'varlen-T8192-N8-H16-K128', 'tiny-T100']
    # the worker process gets the spec as JSON
    assert json.loads(json.dumps(asdict(spec)))['inputs'][3] == {
        'name': 'g', 'shape': ['B', 'T', 'H'], 'dtype': 'float32', 'transform': 'logsigmoid', 'requires_grad': True}


def test_the_chunk_simple_gla_counts_give_the_expected_bytes_and_flops(tmp_path):
    [spec] = _specs(tmp_path, CHUNK_SIMPLE_GLA)
    dims = spec.shapes['B8-T2048-H16-K128']
    tokens = 8 * 2048 * 16
    forward_bytes = tokens * (4 * 128 * 2 + 4)
    assert count_of(spec.bytes['fwd'], dims) == forward_bytes
    assert count_of(spec.bytes['fwdbwd'], dims) == 2 * forward_bytes + tokens * (3 * 128 * 2 + 4)
    assert count_of(spec.flops['fwd'], dims) == tokens * (2 * 64 * 256 + 4 * 128 * 128)
    assert count_of(spec.flops['fwdbwd'], dims) == tokens * (8 * 64 * 256 + 14 * 128 * 128)


def test_ops_keep_their_declaration_order_and_unset_keys_their_defaults(tmp_path):
    pyproject = _op().replace('ops.op', 'ops.zeta') + _op().replace('ops.op', 'ops.alpha')
    specs = _specs(tmp_path, pyproject)
    assert [s.name for s in specs] == ['zeta', 'alpha']
    assert specs[1] == OpSpec(name='alpha', callable='pkg.mod:fn', source='config', inputs=(InputSpec('x', ('B', 'T')),),
                              shapes={'small': {'B': 2, 'T': 8}})


def test_every_key_of_an_op_and_an_input_is_read(tmp_path):
    keys = ('modes = ["fwd"]\nkwargs = { scale = 0.5, heads = [1, 2], extra = { on = true } }\n'
            'bytes = { fwd = "B*T*4" }\nflops = { fwd = "2*B*T" }\ndefault-shapes = ["small"]\n')
    inputs = 'x = { shape = ["B", "T", 16], dtype = "float16", transform = "abs_neg", requires-grad = false }'
    [spec] = _specs(tmp_path, _op(keys, inputs, 'small = { B = 2, T = 8 }\nlarge = { B = 4, T = 64 }'))
    assert spec.inputs == (InputSpec('x', ('B', 'T', 16), 'float16', 'abs_neg', False),)
    assert spec.kwargs == {'scale': 0.5, 'heads': [1, 2], 'extra': {'on': True}}
    assert (spec.modes, spec.default_shapes, spec.bytes, spec.flops) == (
        ('fwd',), ('small',), {'fwd': 'B*T*4'}, {'fwd': '2*B*T'})


def test_no_declaration_and_no_registry_means_no_ops(tmp_path):
    assert load_specs(tmp_path, load_config(tmp_path)) == []
    assert _specs(tmp_path, '[tool.mrbot]\nsource-roots = ["fla"]\n') == []
    assert _specs(tmp_path, '[tool.mrbot.bench.ops]\n') == []


def test_a_pyproject_that_is_not_toml_is_an_error(tmp_path):
    with pytest.raises(MrbotError, match=r'pyproject\.toml: not valid TOML'):
        _specs(tmp_path, '[tool.mrbot.bench\n')


OP = '[tool.mrbot.bench.ops.op]'
INPUT_KEYS = 'shape, dtype, transform, requires-grad'


@pytest.mark.parametrize(('pyproject', 'message'), [
    pytest.param('[tool.mrbot]\nbench = 3\n', '[tool.mrbot] bench: expected a table [tool.mrbot.bench], got 3',
                 id='bench-not-a-table'),
    pytest.param('[tool.mrbot.bench]\nextra = 1\n', '[tool.mrbot.bench] extra: unknown key; known: ops', id='bench-key'),
    pytest.param('[tool.mrbot.bench]\nops = 3\n',
                 '[tool.mrbot.bench] ops: expected tables [tool.mrbot.bench.ops.<name>], got 3', id='ops-not-a-table'),
    pytest.param('[tool.mrbot.bench.ops]\nop = 3\n',
                 '[tool.mrbot.bench.ops] op: expected a table [tool.mrbot.bench.ops.op], got 3', id='op-not-a-table'),
    pytest.param(_op().replace('ops.op', 'ops."a b"'),
                 "[tool.mrbot.bench.ops] 'a b': expected an op name of letters, digits, - and _", id='op-name'),
    pytest.param(_op('speed = 1'), f'{OP} speed: unknown key; known: callable, gate, modes, varlen, kwargs, '
                 'default-shapes, inputs, shapes, bytes, flops', id='op-key'),
    pytest.param(_op().replace('pkg.mod:fn', 'pkg.mod.fn'),
                 f"{OP} callable: expected 'package.module:function', got 'pkg.mod.fn'", id='callable'),
    pytest.param(_op().replace('callable = "pkg.mod:fn"', ''),
                 f"{OP} callable: expected 'package.module:function', got None", id='callable-missing'),
    pytest.param(_op('gate = "../tests/test_op.py"'), f"{OP} gate: expected a repository-relative test file such as "
                 "'tests/ops/test_op.py', got '../tests/test_op.py'", id='gate'),
    pytest.param(_op('modes = ["fwd", "bwd"]'), f"{OP} modes: expected a non-empty list of distinct modes out of "
                 "fwd, fwdbwd, got ['fwd', 'bwd']", id='modes-unknown'),
    pytest.param(_op('modes = []'), f'{OP} modes: expected a non-empty list of distinct modes out of fwd, fwdbwd, got []',
                 id='modes-empty'),
    pytest.param(_op('varlen = "yes"'), f"{OP} varlen: expected true or false, got 'yes'", id='varlen-type'),
    pytest.param(_op('kwargs = 3'), f'{OP} kwargs: expected a table of argument = value, got 3', id='kwargs-type'),
    pytest.param(_op('kwargs = { x = 1 }'), f'{OP} kwargs.x: expected a keyword argument of the op that is neither '
                 'an input nor cu_seqlens', id='kwargs-input'),
    pytest.param(_op('kwargs = { when = 1979-05-27 }'), f'{OP} kwargs.when: expected a string, number, boolean, array '
                 'or table, got datetime.date(1979, 5, 27)', id='kwargs-date'),
    pytest.param(_op().replace('[tool.mrbot.bench.ops.op.inputs]\nx = { shape = ["B", "T"] }\n', ''),
                 f'{OP} inputs: expected a table of name = {{ shape = [...], dtype = ... }}, got None', id='inputs-missing'),
    pytest.param(_op(inputs='class = { shape = ["B"] }'),
                 f'{OP} inputs.class: expected a keyword argument name of the op', id='input-name'),
    pytest.param(_op(inputs='cu_seqlens = { shape = ["N"] }'), f'{OP} inputs.cu_seqlens: built from the packed shapes '
                 'of a varlen op; declare varlen = true instead', id='input-cu-seqlens'),
    pytest.param(_op(inputs='x = 3'), f'{OP} inputs.x: expected a table {{ shape = [...], dtype = ... }}, got 3',
                 id='input-not-a-table'),
    pytest.param(_op(inputs='x = { shape = ["B"], device = "cuda" }'),
                 f'{OP} inputs.x.device: unknown key; known: {INPUT_KEYS}', id='input-key'),
    pytest.param(_op(inputs='x = { dtype = "float32" }'),
                 f'{OP} inputs.x.shape: expected a non-empty list of dimension names and sizes, got None',
                 id='input-shape-missing'),
    pytest.param(_op(inputs='x = { shape = ["B", 0] }'),
                 f"{OP} inputs.x.shape: expected a non-empty list of dimension names and sizes, got ['B', 0]",
                 id='input-shape-size'),
    pytest.param(_op(inputs='x = { shape = ["B"], dtype = "bf16" }'),
                 f"{OP} inputs.x.dtype: expected one of bfloat16, float16, float32, got 'bf16'", id='input-dtype'),
    pytest.param(_op(inputs='x = { shape = ["B"], transform = "softplus" }'),
                 f"{OP} inputs.x.transform: expected one of logsigmoid, sigmoid, l2norm, abs_neg or '', got 'softplus'",
                 id='input-transform'),
    pytest.param(_op(inputs='x = { shape = ["B"], requires-grad = 1 }'),
                 f'{OP} inputs.x.requires-grad: expected true or false, got 1', id='input-requires-grad'),
    pytest.param(_op().replace('[tool.mrbot.bench.ops.op.shapes]\nsmall = { B = 2, T = 8 }\n', ''),
                 f'{OP} shapes: expected a table of name = {{ B = 8, T = 2048, ... }}, got None', id='shapes-missing'),
    pytest.param(_op(shapes='"a b" = { B = 2, T = 8 }'),
                 f'{OP} shapes.a b: expected a shape name of letters, digits, - and _', id='shape-name'),
    pytest.param(_op(shapes='small = {}'), f'{OP} shapes.small: expected a table of dimension = size, got {{}}',
                 id='shape-empty'),
    pytest.param(_op(shapes='small = { B = 2, T = 8, 2x = 1 }'),
                 f'{OP} shapes.small.2x: expected a dimension name usable in expressions', id='dimension-name'),
    pytest.param(_op(shapes='small = { B = 2, T = 0 }'), f'{OP} shapes.small.T: expected a positive integer, got 0',
                 id='dimension-zero'),
    pytest.param(_op(shapes='small = { B = 2, T = true }'),
                 f'{OP} shapes.small.T: expected a positive integer, got True', id='dimension-bool'),
    pytest.param(_op(shapes='small = { B = 2 }'), f'{OP} shapes.small: lacks dimension T used by inputs.x',
                 id='dimension-missing-for-input'),
    pytest.param(_op('bytes = { fwd = "B*T*K" }'), f'{OP} shapes.small: lacks dimension K used by bytes.fwd',
                 id='dimension-missing-for-expression'),
    pytest.param(_op(shapes='packed = { B = 1, T = 8, N = 2 }'), f'{OP} shapes.packed: packed (it has N) but the op is '
                 'not varlen; set varlen = true or drop N', id='packed-not-varlen'),
    pytest.param(_op('varlen = true', shapes='packed = { B = 2, T = 8, N = 2 }'),
                 f'{OP} shapes.packed: packed (it has N) so B must be 1, got B = 2', id='packed-batch'),
    pytest.param(_op('varlen = true', shapes='packed = { B = 1, T = 3, N = 4 }'), f'{OP} shapes.packed: packed (it has '
                 'N) so T must hold N sequences of at least one token, got T = 3, N = 4', id='packed-too-short'),
    pytest.param(_op('varlen = true'), f'{OP} varlen: true but no shape is packed; add one with B = 1, T tokens and '
                 'N sequences', id='varlen-without-packed-shape'),
    pytest.param(_op('bytes = "B*T"'), f"{OP} bytes: expected a table of mode = \"expression\", got 'B*T'",
                 id='bytes-not-a-table'),
    pytest.param(_op('bytes = { bwd = "B*T" }'), f'{OP} bytes.bwd: unknown mode; expected one of fwd, fwdbwd',
                 id='bytes-mode'),
    pytest.param(_op('modes = ["fwd"]\nflops = { fwdbwd = "B*T" }'),
                 f'{OP} flops.fwdbwd: the op has no mode fwdbwd (modes: fwd)', id='flops-mode-not-timed'),
    pytest.param(_op('bytes = { fwd = 1024 }'),
                 f'{OP} bytes.fwd: expected an arithmetic expression over dimension names as a string, got 1024',
                 id='bytes-number'),
    pytest.param(_op('flops = { fwd = "B * len(T)" }'), f"{OP} flops.fwd: expression 'B * len(T)': 'len(T)' is not "
                 'plain arithmetic; use numbers, dimension names, + - * / // ** and parentheses', id='flops-call'),
    pytest.param(_op('flops = { fwd = "B % T" }'), f"{OP} flops.fwd: expression 'B % T': 'B % T' is not plain "
                 'arithmetic; use numbers, dimension names, + - * / // ** and parentheses', id='flops-modulo'),
    pytest.param(_op('bytes = { fwd = "B *" }'),
                 f"{OP} bytes.fwd: expression 'B *': not valid arithmetic (invalid syntax)", id='bytes-syntax'),
    pytest.param(_op('default-shapes = "small"'), f"{OP} default-shapes: expected a list of shape names, got 'small'",
                 id='default-shapes-type'),
    pytest.param(_op('default-shapes = ["large"]'), f"{OP} default-shapes: unknown shape 'large'; shapes: small",
                 id='default-shapes-unknown'),
    pytest.param(_op('default-shapes = ["small", "small"]'),
                 f"{OP} default-shapes: expected distinct shape names, got ['small', 'small']", id='default-shapes-twice'),
])
def test_a_bad_declaration_is_a_one_line_error_naming_the_op_and_key(tmp_path, pyproject, message):
    with pytest.raises(MrbotError) as error:
        _specs(tmp_path, pyproject)
    assert str(error.value) == message


@pytest.mark.parametrize(('expression', 'value'), [
    ('B*T*H*(2*K + 2*V)*2 + B*T*H*4', 2 * 8 * 4 * (2 * 16 + 2 * 32) * 2 + 2 * 8 * 4 * 4),
    ('T // 3 + T / 4', 8 // 3 + 8 / 4),
    ('2 ** K - -B', 2 ** 16 + 2),
    ('0.5 * (T + +1)', 4.5),
])
def test_evaluate_computes_arithmetic_over_dimensions(expression, value):
    assert count_of(expression, {'B': 2, 'T': 8, 'H': 4, 'K': 16, 'V': 32}) == value


@pytest.mark.parametrize(('expression', 'message'), [
    ('B * X', "expression 'B * X': unknown dimension X; the shape has B, T"),
    ("__import__('os').getcwd()", "expression \"__import__('os').getcwd()\": \"__import__('os').getcwd()\" is not plain "
     'arithmetic; use numbers, dimension names, + - * / // ** and parentheses'),
    ('B.real', "expression 'B.real': 'B.real' is not plain arithmetic; use numbers, dimension names, + - * / // ** and "
     'parentheses'),
    ('B < T', "expression 'B < T': 'B < T' is not plain arithmetic; use numbers, dimension names, + - * / // ** and "
     'parentheses'),
    ('True * B', "expression 'True * B': 'True' is not plain arithmetic; use numbers, dimension names, + - * / // ** "
     'and parentheses'),
    ('T / (B - 2)', "expression 'T / (B - 2)': division by zero at {'B': 2, 'T': 8}"),
    ('9 ** 9 ** 9', "expression '9 ** 9 ** 9': exponent 387420489 is over 64 at {'B': 2, 'T': 8}"),
    ('(0 - B) ** 0.5', "expression '(0 - B) ** 0.5': the result is not a real number at {'B': 2, 'T': 8}"),
])
def test_evaluate_refuses_anything_but_arithmetic_naming_the_expression(expression, message):
    with pytest.raises(MrbotError) as error:
        count_of(expression, {'B': 2, 'T': 8})
    assert str(error.value) == message


REGISTRY = '''\
"""A registry in upstream's format: importing it would import torch, so it must be read as text."""
import torch_is_not_importable_here  # noqa
from dataclasses import dataclass

_qkv = {'q': TensorSpec(shape_BTHD), 'k': TensorSpec(shape_BTHD)}

SHAPE_CONFIGS = {
    'B4_T2048_H16_D128': {'B': 4, 'T': 2048, 'H': 16, 'D': 128},
    'B8_T1024_H8_D64': {'B': 8, 'T': 1024, 'H': 8, 'D': 64},
}

_layer_shapes = {'L8_B1_T8K_D2K': {'L': 8, 'B': 1, 'T': 8192, 'H': 1, 'D': 2048}}

register_op(OpConfig(name='chunk_gla', import_path='fla.ops.gla', inputs={**_qkv, 'g': TensorSpec(shape_BTHD)},
                     category='elem_gate'))

register_op(OpConfig(
    name='chunk_gdn',
    import_path='fla.ops.gated_delta_rule',
    inputs={**_qkv},
    func_name='chunk_gated_delta_rule',
    test_file='tests/ops/test_gdn.py',
    skip_backward=True,
))

register_op(OpConfig(name='fused_attnres', import_path='fla.ops.attnres', inputs=_qkv, default_shapes=_layer_shapes))
register_op(OpConfig(name='small_only', import_path='fla.ops.small', inputs=_qkv, dim_constraints={'D': [64]},
                     default_shapes={'tiny': {'B': 1, 'T': 64, 'H': 2, 'D': 64}, 'wide': {'B': 1, 'T': 64, 'H': 2, 'D': 256}}))
register_op(OpConfig(name=NAME_FROM_ELSEWHERE, import_path='fla.ops.unknown', inputs=_qkv))
for extra in ('a', 'b'):
    register_op(OpConfig(name=extra, import_path='fla.ops.extra', inputs=_qkv))
if True:
    register_op(OpConfig(name='chunk_gla', import_path='fla.ops.gla', func_name='chunk_gla_v2', inputs=_qkv))
'''


def test_the_registry_adapter_reads_upstreams_registrations_without_importing_them(tmp_path):
    (tmp_path / 'benchmarks' / 'ops').mkdir(parents=True)
    (tmp_path / 'benchmarks' / 'ops' / 'registry.py').write_text(REGISTRY)
    shape_configs = {'B4_T2048_H16_D128': {'B': 4, 'T': 2048, 'H': 16, 'D': 128},
                     'B8_T1024_H8_D64': {'B': 8, 'T': 1024, 'H': 8, 'D': 64}}
    assert load_specs(tmp_path, load_config(tmp_path)) == [
        # registered again further down: the later registration wins, in the first one's place
        OpSpec(name='chunk_gla', callable='fla.ops.gla:chunk_gla_v2', source='fla-registry',
               gate='tests/ops/test_gla.py', shapes=shape_configs),
        OpSpec(name='chunk_gdn', callable='fla.ops.gated_delta_rule:chunk_gated_delta_rule', source='fla-registry',
               modes=('fwd',), gate='tests/ops/test_gdn.py', shapes=shape_configs),
        OpSpec(name='fused_attnres', callable='fla.ops.attnres:fused_attnres', source='fla-registry',
               gate='tests/ops/test_attnres.py', shapes={'L8_B1_T8K_D2K': {'L': 8, 'B': 1, 'T': 8192, 'H': 1, 'D': 2048}}),
        OpSpec(name='small_only', callable='fla.ops.small:small_only', source='fla-registry',
               gate='tests/ops/test_small.py', shapes={'tiny': {'B': 1, 'T': 64, 'H': 2, 'D': 64}}),
    ]


def test_a_declaration_in_pyproject_wins_over_the_registry(tmp_path):
    (tmp_path / 'benchmarks' / 'ops').mkdir(parents=True)
    (tmp_path / 'benchmarks' / 'ops' / 'registry.py').write_text(REGISTRY)
    assert [s.name for s in _specs(tmp_path, CHUNK_SIMPLE_GLA)] == ['chunk_simple_gla']


def test_a_registry_that_does_not_parse_is_an_error(tmp_path):
    (tmp_path / 'benchmarks' / 'ops').mkdir(parents=True)
    (tmp_path / 'benchmarks' / 'ops' / 'registry.py').write_text('register_op(OpConfig(name=\n')
    with pytest.raises(MrbotError, match=r'registry\.py: cannot read the op registry'):
        load_specs(tmp_path, load_config(tmp_path))


@pytest.mark.skipif(not (UPSTREAM / 'benchmarks' / 'ops' / 'registry.py').is_file(), reason='no upstream checkout')
def test_the_registry_adapter_reads_upstream_flash_linear_attention():
    specs = {s.name: s for s in load_specs(UPSTREAM, load_config(UPSTREAM))}
    gla = specs['chunk_gla']
    assert (gla.callable, gla.source, gla.modes, gla.gate, gla.inputs) == (
        'fla.ops.gla:chunk_gla', 'fla-registry', ('fwd', 'fwdbwd'), 'tests/ops/test_gla.py', ())
    assert gla.shapes['B4_T2048_H16_D128'] == {'B': 4, 'T': 2048, 'H': 16, 'D': 128}
    assert specs['chunk_gdn'].callable == 'fla.ops.gated_delta_rule:chunk_gated_delta_rule'
    assert specs['chunk_gdn'].gate == 'tests/ops/test_gdn.py'
    # its shapes are a module-level dict that the registration names
    assert all('L' in dims for dims in specs['fused_attnres'].shapes.values())

# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Argument checks shared by the public ops: each raises a one-line ValueError naming the argument and what was expected."""

from __future__ import annotations

from itertools import pairwise

import torch
import triton

from fla.utils import IS_TRITON_INTERPRETER


def _shape(tensor: torch.Tensor) -> tuple[int, ...]:
    return tuple(tensor.shape)


def _check_float(name: str, tensor: torch.Tensor) -> None:
    if not tensor.is_floating_point():
        raise ValueError(f'{name}: expected a floating-point tensor, got dtype {tensor.dtype}')


def check_attention_inputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[int, int, int, int, int]:
    """Check `q, k: [B, T, H, K]` and `v: [B, T, H, V]` (one dtype, one device); return `(B, T, H, K, V)`."""
    for name, tensor, layout in (('q', q, '[B, T, H, K]'), ('k', k, '[B, T, H, K]'), ('v', v, '[B, T, H, V]')):
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f'{name}: expected a torch.Tensor of shape {layout}, got {type(tensor).__name__}')
        if tensor.dim() != 4:
            raise ValueError(f'{name}: expected a 4-D tensor {layout}, got shape {_shape(tensor)}')
        _check_float(name, tensor)
    if k.shape != q.shape:
        raise ValueError(f'k: expected the shape of q {_shape(q)} as [B, T, H, K], got {_shape(k)}')
    B, T, H, K = q.shape
    V = v.shape[3]
    if v.shape[:2] != q.shape[:2]:
        raise ValueError(f'v: expected [B, T] = {(B, T)} as in q, got shape {_shape(v)}')
    if v.shape[2] != H:
        raise ValueError(f'v: expected H={H} heads as in q, got {v.shape[2]} in shape {_shape(v)}')
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f'q, k, v: expected one dtype, got {q.dtype}, {k.dtype}, {v.dtype}')
    if len({q.device, k.device, v.device}) != 1:
        raise ValueError(f'q, k, v: expected one device, got {q.device}, {k.device}, {v.device}')
    check_kernel_device(q)
    return B, T, H, K, V


def _kernel_device_type() -> str | None:
    """The torch device type Triton's active driver launches on, or None when Triton has no driver here."""
    try:
        return triton.runtime.driver.active.get_active_torch_device().type
    except RuntimeError:
        return None


def check_kernel_device(q: torch.Tensor) -> None:
    """Triton kernels run on the device of Triton's driver, or on the CPU under the interpreter, which must be on
    before fla is imported."""
    if q.device.type == 'cpu' and not IS_TRITON_INTERPRETER and _kernel_device_type() != 'cpu':
        raise ValueError('q: tensors are on the CPU, where Triton kernels run only with TRITON_INTERPRET=1 set before import')


def check_scale(scale: float | None, K: int) -> float:
    """The query scale to use: `K ** -0.5` for None, else the given number."""
    if scale is None:
        return K ** -0.5
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise ValueError(f'scale: expected a float or None, got {type(scale).__name__}')
    return float(scale)


def check_tensor_shape(
    name: str, tensor: torch.Tensor | None, expected: tuple[int, ...], layout: str, device: torch.device
) -> None:
    """Check that an optional float tensor has the given shape and device, e.g. a gate `[B, T, H]`."""
    if tensor is None:
        return
    if not isinstance(tensor, torch.Tensor):
        raise ValueError(f'{name}: expected a torch.Tensor of shape {layout} = {expected}, got {type(tensor).__name__}')
    if _shape(tensor) != expected:
        raise ValueError(f'{name}: expected shape {layout} = {expected}, got {_shape(tensor)}')
    _check_float(name, tensor)
    if tensor.device != device:
        raise ValueError(f'{name}: expected to be on {device} with q, got {tensor.device}')


def check_cu_seqlens(cu_seqlens: torch.Tensor | None, B: int, T: int, device: torch.device) -> int:
    """Check packed-sequence offsets and return the number of sequences N (B when not packed).

    Values are checked on eager calls only; inside CUDA graph capture they are not read, since that needs a host sync.
    """
    if cu_seqlens is None:
        return B
    if not isinstance(cu_seqlens, torch.Tensor) or cu_seqlens.dim() != 1 or cu_seqlens.numel() < 2:
        got = _shape(cu_seqlens) if isinstance(cu_seqlens, torch.Tensor) else type(cu_seqlens).__name__
        raise ValueError(f'cu_seqlens: expected a 1-D tensor [N + 1] of sequence offsets, got {got}')
    if cu_seqlens.dtype not in (torch.int32, torch.int64):
        raise ValueError(f'cu_seqlens: expected dtype int32 or int64, got {cu_seqlens.dtype}')
    if cu_seqlens.device != device:
        raise ValueError(f'cu_seqlens: expected to be on {device} with q, got {cu_seqlens.device}')
    if B != 1:
        raise ValueError(f'cu_seqlens: packed sequences need B == 1 (shape [1, T, ...]), got B={B}')
    if not (cu_seqlens.is_cuda and torch.cuda.is_current_stream_capturing()):
        offsets = cu_seqlens.tolist()
        if offsets[0] != 0 or offsets[-1] != T:
            raise ValueError(f'cu_seqlens: expected to start at 0 and end at T={T}, got {offsets[0]} ... {offsets[-1]}')
        if any(b < a for a, b in pairwise(offsets)):
            raise ValueError(f'cu_seqlens: expected non-decreasing offsets, got {offsets}')
    return cu_seqlens.numel() - 1

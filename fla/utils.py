# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Platform helpers, the test comparison, input guards and the autotune helper shared by every op."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

import torch
import triton


def _detect_platform() -> str:
    if torch.cuda.is_available():
        return 'hip' if torch.version.hip else 'cuda'
    if hasattr(torch, 'xpu') and torch.xpu.is_available():
        return 'xpu'
    return 'cpu'


# Raw backend name: 'cuda', 'hip', 'xpu' or 'cpu'.
device_platform: str = _detect_platform()
# Torch device type to allocate on; AMD GPUs are addressed as 'cuda' by torch.
device: str = {'cuda': 'cuda', 'hip': 'cuda', 'xpu': 'xpu'}.get(device_platform, 'cpu')

IS_NVIDIA: bool = device_platform == 'cuda'
IS_AMD: bool = device_platform == 'hip'
IS_INTEL: bool = device_platform == 'xpu'
_capability_major = torch.cuda.get_device_capability(0)[0] if IS_NVIDIA else 0
IS_NVIDIA_HOPPER: bool = IS_NVIDIA and _capability_major == 9
IS_NVIDIA_BLACKWELL: bool = IS_NVIDIA and _capability_major in (10, 11, 12)
# Kernels decorated while this is set run in Triton's numpy interpreter instead of being compiled.
IS_TRITON_INTERPRETER: bool = os.environ.get('TRITON_INTERPRET', '0') == '1'


def nvidia_target(tensor: torch.Tensor) -> str | None:
    """The NVIDIA target (`sm_90`) that a kernel launched on `tensor` is compiled for, or None where there is none.

    A tensor on an NVIDIA GPU has its GPU's. On a machine without a GPU, it is the CUDA target Triton's active driver
    names, which only a stand-in driver does: the compile matrix's launch capture, which runs the tests on the CPU.
    """
    if tensor.is_cuda:
        if not IS_NVIDIA:
            return None
        major, minor = torch.cuda.get_device_capability(tensor.device)
        return f'sm_{major}{minor}'
    if device != 'cpu':
        return None
    from triton.runtime import driver

    try:
        target = driver.active.get_current_target()
    except Exception:
        return None
    return f'sm_{target.arch}' if target.backend == 'cuda' and isinstance(target.arch, int) else None


def _widen_interpreter_bf16_dots() -> None:
    """Make the interpreter's `tl.dot` on bf16 operands multiply values, as compiled code does, not raw bits.

    The interpreter stores bf16 as uint16 and hands those integers to numpy's matmul (seen in Triton 3.6 through 3.9).
    """
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import InterpreterBuilder, TensorHandle

    create_dot = InterpreterBuilder.create_dot

    def widen(operand: TensorHandle) -> TensorHandle:
        if operand.dtype.scalar != tl.bfloat16:
            return operand
        # a bf16 value is the upper half of the float32 with the same bits
        return TensorHandle((operand.data.astype(np.uint32) << 16).view(np.float32), tl.float32)

    def create_dot_widened(self, a, b, d, input_precision, max_num_imprecise_acc):
        return create_dot(self, widen(a), widen(b), d, input_precision, max_num_imprecise_acc)

    InterpreterBuilder.create_dot = create_dot_widened


if IS_TRITON_INTERPRETER:
    _widen_interpreter_bf16_dots()


def relative_rms_error(ref: torch.Tensor, tri: torch.Tensor, magnitude: torch.Tensor | None = None) -> float:
    """Root-mean-square of the difference over root-mean-square of `magnitude` (default: the reference), in float64."""
    ref64, tri64 = ref.detach().double(), tri.detach().double()
    diff_rms = (ref64 - tri64).square().mean().sqrt().item()
    scale_rms = (ref64 if magnitude is None else magnitude.detach().double()).square().mean().sqrt().item()
    return diff_rms / scale_rms if scale_rms > 0 else (0.0 if diff_rms == 0 else float('inf'))


def assert_close(prefix: str, ref: torch.Tensor, tri: torch.Tensor, ratio: float, atol: float = 1e-6,
                 magnitude: torch.Tensor | None = None) -> None:
    """Fail unless `tri` matches `ref` within a relative RMS error of `ratio`.

    Args:
        prefix (str):
            Name of the compared quantity, the first word of the failure message.
        ref (torch.Tensor):
            The reference result.
        tri (torch.Tensor):
            The result under test, same shape as `ref`.
        ratio (float):
            Largest accepted relative RMS error, `rms(ref - tri) / rms(ref)`.
        atol (float, Optional):
            A maximum absolute difference at or below this passes even when `ref` is all zeros.
            Default: `1e-6`.
        magnitude (torch.Tensor, Optional):
            What the error is relative to, shaped like `ref`: for a reference that sums terms of both signs, the sum
            of the terms' sizes, since cancellation makes the sum small but not its rounding error.
            Default: `None` (the reference).
    """
    if ref.shape != tri.shape:
        raise AssertionError(f"{prefix}: shape {tuple(tri.shape)} differs from the reference's {tuple(ref.shape)}")
    for name, tensor in (('reference', ref), ('result', tri)):
        nan_count = torch.isnan(tensor).sum().item()
        if nan_count:
            raise AssertionError(f"{prefix}: {nan_count} NaN value(s) in the {name} out of {tensor.numel()}")
    max_abs = (ref.detach().double() - tri.detach().double()).abs().max().item() if ref.numel() else 0.0
    if max_abs <= atol:
        return
    measured = relative_rms_error(ref, tri, magnitude)
    if not measured < ratio:
        raise AssertionError(
            f"{prefix}: relative RMS error {measured:.3e} is not below {ratio:.3e} (max abs diff {max_abs:.3e})"
        )


def _device_context(tensor: torch.Tensor | None) -> contextlib.AbstractContextManager:
    if tensor is None or tensor.device.type == 'cpu' or tensor.device.index is None:
        return contextlib.nullcontext()
    backend = getattr(torch, tensor.device.type, None)
    if backend is None or not hasattr(backend, 'device'):
        return contextlib.nullcontext()
    return backend.device(tensor.device.index)


def input_guard(fn: Callable) -> Callable:
    """Make every tensor argument contiguous and run `fn` on the device of the first one."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        args = tuple(a.contiguous() if isinstance(a, torch.Tensor) else a for a in args)
        kwargs = {k: (v.contiguous() if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}
        first = next((a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)), None)
        with _device_context(first):
            return fn(*args, **kwargs)

    return wrapper


def autotune(configs: Sequence[triton.Config], key: list[str], **kwargs: Any) -> Callable:
    """`triton.autotune` that keeps only the first config under the interpreter.

    There each config would run the kernel in numpy several times per new key. Elsewhere the whole space stays, so that
    `mrbot compile`, which captures launches without a GPU and without the interpreter, compiles every config.
    """
    if IS_TRITON_INTERPRETER:
        configs = list(configs)[:1]
    return triton.autotune(configs=list(configs), key=key, **kwargs)


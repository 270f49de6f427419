# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""What every KDA entry point does before its kernels: check the arguments, then turn the gate, beta and L2-norm
options into the core recurrence's inputs (log decay per key channel, beta in (0, 1), unit-norm q and k).

The prologue is PyTorch under autograd, so its gradients flow without kernels of their own; the kernels see only the
core recurrence.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from fla.ops.common.validation import check_cu_seqlens, check_kernel_device, check_scale, check_tensor_shape

L2NORM_EPS = 1e-6
LOWEST_LOWER_BOUND = -5.0


def _tensor(name: str, tensor: object, layout: str) -> torch.Tensor:
    if not isinstance(tensor, torch.Tensor):
        raise ValueError(f'{name}: expected a torch.Tensor of shape {layout}, got {type(tensor).__name__}')
    if not tensor.is_floating_point():
        raise ValueError(f'{name}: expected a floating-point tensor, got dtype {tensor.dtype}')
    return tensor


def check_kda_inputs(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, scale: float | None,
    initial_state: torch.Tensor | None, use_gate_in_kernel: bool, A_log: torch.Tensor | None,
    dt_bias: torch.Tensor | None, safe_gate: bool, lower_bound: float | None, cu_seqlens: torch.Tensor | None,
    triton: bool = True,
) -> float:
    """Check every argument of a KDA call before any launch; return the scale to use. `triton` says
    the call runs Triton kernels, which on the CPU need the interpreter."""
    for name, tensor, layout in (('q', q, '[B, T, H, K]'), ('k', k, '[B, T, H, K]'), ('v', v, '[B, T, HV, V]')):
        if _tensor(name, tensor, layout).dim() != 4:
            raise ValueError(f'{name}: expected a 4-D tensor {layout}, got shape {tuple(tensor.shape)}')
    if k.shape != q.shape:
        raise ValueError(f'k: expected the shape of q {tuple(q.shape)} as [B, T, H, K], got {tuple(k.shape)}')
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    if v.shape[:2] != q.shape[:2]:
        raise ValueError(f'v: expected [B, T] = {(B, T)} as in q, got shape {tuple(v.shape)}')
    if HV % H:
        raise ValueError(f'v: expected a multiple of H={H} value heads (grouped value attention), got HV={HV}')
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f'q, k, v: expected one dtype, got {q.dtype}, {k.dtype}, {v.dtype}')
    if triton:
        check_kernel_device(q)
    if K > 256:
        raise ValueError(f'q: expected a head size K of at most 256, got {K}')
    check_tensor_shape('g', _tensor('g', g, '[B, T, HV, K]'), (B, T, HV, K), '[B, T, HV, K]', q.device)
    check_tensor_shape('beta', _tensor('beta', beta, '[B, T, HV]'), (B, T, HV), '[B, T, HV]', q.device)
    N = check_cu_seqlens(cu_seqlens, B, T, q.device)
    check_tensor_shape('initial_state', initial_state, (N, HV, K, V), '[N, HV, K, V]', q.device)
    if use_gate_in_kernel:
        if A_log is None:
            raise ValueError('A_log: required with use_gate_in_kernel=True, of shape [HV]')
        check_tensor_shape('A_log', A_log, (HV,), '[HV]', q.device)
        check_tensor_shape('dt_bias', dt_bias, (HV * K,), '[HV * K]', q.device)
    elif A_log is not None or dt_bias is not None:
        raise ValueError('A_log, dt_bias: only used with use_gate_in_kernel=True; g is taken as log decay otherwise')
    if safe_gate:
        if not use_gate_in_kernel:
            raise ValueError('safe_gate: requires use_gate_in_kernel=True')
        if (isinstance(lower_bound, bool) or not isinstance(lower_bound, (int, float))
                or not LOWEST_LOWER_BOUND <= lower_bound < 0):
            raise ValueError(f'lower_bound: expected a number in [-5, 0) with safe_gate=True, got {lower_bound!r}')
    elif lower_bound is not None:
        raise ValueError('lower_bound: only used with safe_gate=True')
    return check_scale(scale, K)


def kda_gate(g: torch.Tensor, A_log: torch.Tensor, dt_bias: torch.Tensor | None, safe_gate: bool,
             lower_bound: float | None) -> torch.Tensor:
    """The log decay `[B, T, HV, K]` of a raw gate: `-exp(A_log) * softplus(g + dt_bias)`, or with the safe gate
    `lower_bound * sigmoid(exp(A_log) * (g + dt_bias))`, which stays in `[lower_bound, 0]`; float32."""
    HV, K = g.shape[2], g.shape[3]
    x = g.float() + (dt_bias.float().view(HV, K) if dt_bias is not None else 0)
    rate = A_log.float().exp()[:, None]
    return lower_bound * torch.sigmoid(rate * x) if safe_gate else -rate * F.softplus(x)


def prologue(
    q: torch.Tensor, k: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, use_qk_l2norm_in_kernel: bool,
    use_gate_in_kernel: bool, A_log: torch.Tensor | None, dt_bias: torch.Tensor | None, safe_gate: bool,
    lower_bound: float | None, use_beta_sigmoid_in_kernel: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """q, k (normalized when asked, in their dtype), the float32 log decay and the float32 beta of the core."""
    if use_qk_l2norm_in_kernel:
        q = (q.float() * torch.rsqrt(q.float().square().sum(-1, keepdim=True) + L2NORM_EPS)).to(q.dtype)
        k = (k.float() * torch.rsqrt(k.float().square().sum(-1, keepdim=True) + L2NORM_EPS)).to(k.dtype)
    g = kda_gate(g, A_log, dt_bias, safe_gate, lower_bound) if use_gate_in_kernel else g.float()
    beta = beta.float().sigmoid() if use_beta_sigmoid_in_kernel else beta.float()
    return q, k, g.contiguous(), beta.contiguous()


def run_kda(
    core: Callable[..., tuple[torch.Tensor, torch.Tensor | None]], q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
    g: torch.Tensor, beta: torch.Tensor, scale: float | None, initial_state: torch.Tensor | None,
    output_final_state: bool, use_qk_l2norm_in_kernel: bool, use_gate_in_kernel: bool, A_log: torch.Tensor | None,
    dt_bias: torch.Tensor | None, safe_gate: bool, lower_bound: float | None, use_beta_sigmoid_in_kernel: bool,
    cu_seqlens: torch.Tensor | None, triton: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """A public KDA op: check the arguments, run the prologue, then `core(q, k, v, g, beta, scale, initial_state,
    output_final_state, cu_seqlens)` on the core recurrence's inputs; `triton` is False for a PyTorch core."""
    scale = check_kda_inputs(q, k, v, g, beta, scale, initial_state, use_gate_in_kernel, A_log, dt_bias, safe_gate,
                                lower_bound, cu_seqlens, triton)
    q, k, g, beta = prologue(q, k, g, beta, use_qk_l2norm_in_kernel, use_gate_in_kernel, A_log, dt_bias, safe_gate,
                             lower_bound, use_beta_sigmoid_in_kernel)
    return core(q, k, v, g, beta, scale, initial_state, output_final_state, cu_seqlens)

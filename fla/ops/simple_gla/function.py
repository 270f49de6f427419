# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The autograd function and kernel launches shared by the chunked and the fused recurrent simple GLA.

Both algorithms have the same three kernels: a forward pass, a forward-direction pass for dq, and a reverse pass for
dk, dv, dg and the initial-state gradient. Each program owns one `[BK, BV]` block of the state; when K or V spans
several blocks, every output is a sum over blocks, written as partials and reduced here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import triton

from fla.ops.common.launch import reduce_partials
from fla.ops.common.validation import check_attention_inputs, check_cu_seqlens, check_scale, check_tensor_shape


@dataclass(frozen=True)
class KernelSet:
    """The kernels of one simple GLA algorithm and how it sizes their launches.

    `launch_config(K, V, dtype, backward)` returns the compile-time arguments of a launch: the state block `BK`, `BV`
    each program holds, plus any the algorithm adds.
    """

    fwd: Callable
    bwd_dq: Callable
    bwd_dkvg: Callable
    launch_config: Callable[[int, int, torch.dtype, bool], dict[str, Any]]


def simple_gla_fwd(
    kernels: KernelSet,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor | None,
    scale: float,
    initial_state: torch.Tensor | None,
    output_final_state: bool,
    cu_seqlens: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    B, T, H, K = q.shape
    V = v.shape[-1]
    N = B if cu_seqlens is None else cu_seqlens.numel() - 1
    config = kernels.launch_config(K, V, q.dtype, False)
    NK, NV = triton.cdiv(K, config['BK']), triton.cdiv(V, config['BV'])
    o = v.new_empty(B, T, H, NK, V, dtype=v.dtype if NK == 1 else torch.float32)
    final_state = q.new_empty(N, H, K, V, dtype=torch.float32) if output_final_state else None
    kernels.fwd[(N * H, NV, NK)](
        q, k, v, g, o, initial_state, final_state, cu_seqlens, scale, T,
        H=H, K=K, V=V, NK=NK,
        USE_G=g is not None,
        USE_INITIAL_STATE=initial_state is not None,
        STORE_FINAL_STATE=output_final_state,
        IS_VARLEN=cu_seqlens is not None,
        **config,
    )
    return reduce_partials(o, v.dtype), final_state


def simple_gla_bwd(
    kernels: KernelSet,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor | None,
    do: torch.Tensor,
    dht: torch.Tensor | None,
    scale: float,
    initial_state: torch.Tensor | None,
    final_state: torch.Tensor | None,
    cu_seqlens: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    B, T, H, K = q.shape
    V = v.shape[-1]
    N = B if cu_seqlens is None else cu_seqlens.numel() - 1
    config = kernels.launch_config(K, V, q.dtype, True)
    NK, NV = triton.cdiv(K, config['BK']), triton.cdiv(V, config['BV'])
    grid = (N * H, NV, NK)
    shared = {'H': H, 'K': K, 'V': V, 'USE_G': g is not None, 'USE_INITIAL_STATE': initial_state is not None,
              'IS_VARLEN': cu_seqlens is not None, **config}

    dq = q.new_empty(B, T, H, NV, K, dtype=q.dtype if NV == 1 else torch.float32)
    # dg is the reverse cumulative sum of q . dq - k . dk; one partial per state block
    q_dot_dq = q.new_empty(B, T, H, NK * NV, dtype=torch.float32) if g is not None else None
    kernels.bwd_dq[grid](q, k, v, g, do, dq, q_dot_dq, initial_state, cu_seqlens, scale, T, NK=NK, NV=NV, **shared)

    dk = k.new_empty(B, T, H, NV, K, dtype=k.dtype if NV == 1 else torch.float32)
    dv = v.new_empty(B, T, H, NK, V, dtype=v.dtype if NK == 1 else torch.float32)
    dg = q.new_empty(B, T, H, NK * NV, dtype=torch.float32) if g is not None else None
    dh0 = q.new_empty(N, H, K, V, dtype=torch.float32) if initial_state is not None else None
    kernels.bwd_dkvg[grid](
        q, k, v, g, do, q_dot_dq, final_state, dht, dk, dv, dg, dh0, cu_seqlens, scale, T,
        NK=NK, NV=NV, USE_FINAL_STATE_GRADIENT=dht is not None, **shared,
    )
    dq, dk, dv = reduce_partials(dq, q.dtype), reduce_partials(dk, k.dtype), reduce_partials(dv, v.dtype)
    if dg is not None:
        dg = dg.sum(-1).to(g.dtype)
    if dh0 is not None:
        dh0 = dh0.to(initial_state.dtype)
    return dq, dk, dv, dg, dh0


class SimpleGLAFunction(torch.autograd.Function):

    @staticmethod
    def forward(ctx, kernels, q, k, v, g, scale, initial_state, output_final_state, cu_seqlens):
        o, final_state = simple_gla_fwd(kernels, q, k, v, g, scale, initial_state, output_final_state, cu_seqlens)
        ctx.save_for_backward(q, k, v, g, initial_state, final_state, cu_seqlens)
        ctx.kernels, ctx.scale = kernels, scale
        return o, final_state

    @staticmethod
    def backward(ctx, do, dht):
        q, k, v, g, initial_state, final_state, cu_seqlens = ctx.saved_tensors
        dq, dk, dv, dg, dh0 = simple_gla_bwd(
            ctx.kernels, q, k, v, g, do.contiguous(), dht.contiguous() if dht is not None else None,
            ctx.scale, initial_state, final_state, cu_seqlens,
        )
        return None, dq, dk, dv, dg, None, dh0, None, None


def simple_gla(
    kernels: KernelSet,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor | None,
    scale: float | None,
    initial_state: torch.Tensor | None,
    output_final_state: bool,
    cu_seqlens: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Check the public arguments, then run `kernels` under autograd."""
    B, T, H, K, V = check_attention_inputs(q, k, v)
    check_tensor_shape('g', g, (B, T, H), '[B, T, H]', q.device)
    N = check_cu_seqlens(cu_seqlens, B, T, q.device)
    check_tensor_shape('initial_state', initial_state, (N, H, K, V), '[N, H, K, V]', q.device)
    return SimpleGLAFunction.apply(kernels, q, k, v, g, check_scale(scale, K), initial_state, output_final_state,
                                   cu_seqlens)

# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Chunked KDA: the delta rule with a decay per key channel, by chunks of 64 tokens in the WY form.

The kernels are in `chunk_fwd.py` (log decay, WY form, state pass, output) and `chunk_bwd.py` (state-gradient pass,
WY and intra-chunk gradients); this module holds the autograd function and the public op.
"""

from __future__ import annotations

import torch

from fla.ops.backends import dispatch
from fla.ops.kda.chunk_bwd import chunk_kda_bwd
from fla.ops.kda.chunk_fwd import ChunkLayout, ForwardKept, chunk_kda_fwd, chunk_layout
from fla.ops.kda.inputs import run_kda
from fla.utils import input_guard


class ChunkKDAFunction(torch.autograd.Function):

    @staticmethod
    def forward(ctx, q, k, v, g, beta, scale, initial_state, output_final_state, cu_seqlens):
        layout = chunk_layout(q.shape[0], q.shape[1], cu_seqlens)
        # without a gradient to take, the forward keeps nothing
        o, final_state, kept = chunk_kda_fwd(q, k, v, g, beta, scale, initial_state, output_final_state, layout,
                                             keep=any(ctx.needs_input_grad))
        if kept is not None:
            ctx.save_for_backward(q, k, v, kept.gk, kept.aqk, kept.akk_inv, beta, initial_state, cu_seqlens,
                                  layout.chunk_rows)
        ctx.scale, ctx.N = scale, layout.N
        return o, final_state

    @staticmethod
    def backward(ctx, do, dht):
        q, k, v, gk, aqk, akk_inv, beta, initial_state, cu_seqlens, chunk_rows = ctx.saved_tensors
        layout = ChunkLayout(q.shape[0], q.shape[1], ctx.N, cu_seqlens, chunk_rows)
        dq, dk, dv, dg, dbeta, dh0 = chunk_kda_bwd(
            q, k, v, ForwardKept(gk, aqk, akk_inv), beta, ctx.scale, initial_state, do.contiguous(),
            dht.contiguous() if dht is not None else None, layout,
        )
        return dq, dk, dv, dg, dbeta, None, dh0, None, None


@dispatch('kda')
@input_guard
def chunk_kda(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    use_qk_l2norm_in_kernel: bool = False,
    use_gate_in_kernel: bool = False,
    A_log: torch.Tensor | None = None,
    dt_bias: torch.Tensor | None = None,
    safe_gate: bool = False,
    lower_bound: float | None = None,
    use_beta_sigmoid_in_kernel: bool = False,
    cu_seqlens: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    r"""Kimi Delta Attention by chunks of 64: $S_t = (I - \beta_t k_t k_t^\top)\,\mathrm{diag}(e^{g_t}) S_{t-1}
    + \beta_t k_t v_t^\top$, $o_t = s\, S_t^\top q_t$, with a log decay $g_t$ per key channel.

    Args:
        q (torch.Tensor):
            Queries of shape `[B, T, H, K]`, K at most 256.
        k (torch.Tensor):
            Keys of shape `[B, T, H, K]`.
        v (torch.Tensor):
            Values of shape `[B, T, HV, V]`; grouped value attention when HV > H: HV a multiple of H, value head `i`
            reads query and key head `i // (HV // H)`.
        g (torch.Tensor):
            Log-space decay per value head, step and key channel, of shape `[B, T, HV, K]`, normally at most 0; with
            `use_gate_in_kernel` the raw gate the decay is computed from.
        beta (torch.Tensor):
            Delta-rule step size per value head and step, of shape `[B, T, HV]`; with `use_beta_sigmoid_in_kernel`
            the logits of it.
        scale (float, Optional):
            Query scale.
            Default: `K ** -0.5`.
        initial_state (torch.Tensor, Optional):
            State before the first token of each sequence, of shape `[N, HV, K, V]`, any float dtype.
            Default: `None` (zeros).
        output_final_state (bool, Optional):
            Whether to return the state after the last token of each sequence.
            Default: `False`.
        use_qk_l2norm_in_kernel (bool, Optional):
            Whether to scale q and k to unit L2 norm over K first.
            Default: `False`.
        use_gate_in_kernel (bool, Optional):
            Whether `g` is a raw gate: the log decay is then `-exp(A_log) * softplus(g + dt_bias)`.
            Default: `False`.
        A_log (torch.Tensor, Optional):
            Log decay rate per value head, of shape `[HV]`; required with `use_gate_in_kernel`, else `None`.
            Default: `None`.
        dt_bias (torch.Tensor, Optional):
            Gate bias of shape `[HV * K]`, only with `use_gate_in_kernel`.
            Default: `None`.
        safe_gate (bool, Optional):
            Whether the log decay is `lower_bound * sigmoid(exp(A_log) * (g + dt_bias))` instead, which stays in
            `[lower_bound, 0]` (as low as -320 over a chunk, which the kernels take without overflow); needs
            `use_gate_in_kernel`.
            Default: `False`.
        lower_bound (float, Optional):
            Lowest log decay per step with `safe_gate`, in `[-5, 0)`; only with `safe_gate`.
            Default: `None`.
        use_beta_sigmoid_in_kernel (bool, Optional):
            Whether to take `sigmoid(beta)` as the step size.
            Default: `False`.
        cu_seqlens (torch.Tensor, Optional):
            Cumulative lengths `[N + 1]` (int32 or int64) of sequences packed along T; then `B == 1`.
            Default: `None`.

    Returns:
        o (torch.Tensor):
            Outputs of shape `[B, T, HV, V]` in the dtype of `v`.
        final_state (torch.Tensor):
            Float32 states of shape `[N, HV, K, V]`, or `None` unless `output_final_state` is `True`.
    """
    return run_kda(ChunkKDAFunction.apply, q, k, v, g, beta, scale, initial_state, output_final_state,
                   use_qk_l2norm_in_kernel, use_gate_in_kernel, A_log, dt_bias, safe_gate, lower_bound,
                   use_beta_sigmoid_in_kernel, cu_seqlens)

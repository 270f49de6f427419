# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The ground truth for KDA: the token-by-token delta rule with a decay per key channel, float32, pure PyTorch.

It applies the gate, beta and L2-norm options itself, written out from their formulas rather than shared with the
kernels' prologue, so that a mistake in one is not a mistake in both.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def naive_kda_recurrence(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float,
    state: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One sequence per batch row: q, k `[B, T, H, K]`, v `[B, T, HV, V]`, log decay g `[B, T, HV, K]`, beta
    `[B, T, HV]`, state `[B, HV, K, V]`; all float32. Returns the outputs `[B, T, HV, V]` and the last state."""
    groups = v.shape[2] // q.shape[2]
    q, k = q.repeat_interleave(groups, dim=2), k.repeat_interleave(groups, dim=2)
    outputs = []
    for t in range(q.shape[1]):
        state = state * g[:, t].exp()[..., None]
        u = v[:, t] - torch.einsum('bhk,bhkv->bhv', k[:, t], state)
        state = state + beta[:, t, :, None, None] * k[:, t, :, :, None] * u[:, :, None, :]
        outputs.append(torch.einsum('bhk,bhkv->bhv', q[:, t] * scale, state))
    o = torch.stack(outputs, dim=1) if outputs else v.new_zeros(v.shape)
    return o, state


def naive_kda_gate(g: torch.Tensor, A_log: torch.Tensor, dt_bias: torch.Tensor | None, safe_gate: bool,
                   lower_bound: float | None) -> torch.Tensor:
    r"""The log decay `[B, T, HV, K]` that the in-kernel gate makes of the raw `g`: $-e^{A} \mathrm{softplus}(g + b)$,
    or with `safe_gate` $\text{lower\_bound} \cdot \sigma(e^{A} (g + b))$; A_log `[HV]`, dt_bias `[HV * K]`."""
    HV, K = g.shape[-2:]
    x = g.float() + (dt_bias.float().view(HV, K) if dt_bias is not None else 0)
    rate = A_log.float().exp()[:, None]
    return lower_bound * torch.sigmoid(rate * x) if safe_gate else -rate * F.softplus(x)


def naive_recurrent_kda(
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
    r"""KDA one token at a time: $S = \mathrm{diag}(e^{g_t}) S$, $u = v_t - S^\top k_t$, $S = S + \beta_t k_t u^\top$,
    $o_t = \text{scale}\, S^\top q_t$; arguments as in `fla.ops.kda.chunk_kda`. Inputs are not checked."""
    dtype, HV, K = v.dtype, v.shape[2], q.shape[-1]
    q, k, v, g, beta = (x.float() for x in (q, k, v, g, beta))
    if use_qk_l2norm_in_kernel:
        q = q * torch.rsqrt((q * q).sum(-1, keepdim=True) + 1e-6)
        k = k * torch.rsqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    if use_gate_in_kernel:
        g = naive_kda_gate(g, A_log, dt_bias, safe_gate, lower_bound)
    if use_beta_sigmoid_in_kernel:
        beta = beta.sigmoid()
    scale = K ** -0.5 if scale is None else scale
    bounds = [0, q.shape[1]] if cu_seqlens is None else cu_seqlens.tolist()
    N = q.shape[0] if cu_seqlens is None else len(bounds) - 1
    states = (initial_state.float() if initial_state is not None
              else q.new_zeros(N, HV, K, v.shape[-1]))
    if cu_seqlens is None:
        o, final = naive_kda_recurrence(q, k, v, g, beta, scale, states)
    else:
        pieces, finals = [], []
        for i, (bos, eos) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            o_i, final_i = naive_kda_recurrence(q[:, bos:eos], k[:, bos:eos], v[:, bos:eos], g[:, bos:eos],
                                                beta[:, bos:eos], scale, states[i:i + 1])
            pieces.append(o_i)
            finals.append(final_i)
        o, final = torch.cat(pieces, dim=1), torch.cat(finals, dim=0)
    return o.to(dtype), (final if output_final_state else None)

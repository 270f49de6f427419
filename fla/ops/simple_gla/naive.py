# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The ground truth for simple GLA: the token-by-token recurrence in float32, pure PyTorch."""

from __future__ import annotations

from itertools import pairwise

import torch


def _recurrence(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor | None,
    scale: float,
    state: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    # q, k: [B, T, H, K]; v: [B, T, H, V]; g: [B, T, H]; state: [B, H, K, V], all float32
    outputs = []
    for t in range(q.shape[1]):
        if g is not None:
            state = state * g[:, t].exp()[..., None, None]
        state = state + k[:, t, :, :, None] * v[:, t, :, None, :]
        outputs.append(torch.einsum('bhk,bhkv->bhv', q[:, t] * scale, state))
    o = torch.stack(outputs, dim=1) if outputs else v.new_zeros(v.shape)
    return o, state


def naive_recurrent_simple_gla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor | None = None,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    cu_seqlens: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    r"""Simple GLA computed one token at a time: $S_t = e^{g_t} S_{t-1} + k_t v_t^\top$, $o_t = \text{scale}\, S_t^\top q_t$.

    Args:
        q (torch.Tensor):
            Queries of shape `[B, T, H, K]`.
        k (torch.Tensor):
            Keys of shape `[B, T, H, K]`.
        v (torch.Tensor):
            Values of shape `[B, T, H, V]`.
        g (torch.Tensor, Optional):
            Log-space decay of shape `[B, T, H]`; `None` means no decay.
            Default: `None`.
        scale (float, Optional):
            Query scale.
            Default: `K ** -0.5`.
        initial_state (torch.Tensor, Optional):
            State before the first token, of shape `[N, H, K, V]`.
            Default: `None` (zeros).
        output_final_state (bool, Optional):
            Whether to return the state after the last token.
            Default: `False`.
        cu_seqlens (torch.Tensor, Optional):
            Cumulative sequence lengths of shape `[N + 1]` for packed sequences (then `B == 1`).
            Default: `None`.

    Returns:
        o (torch.Tensor):
            Outputs of shape `[B, T, H, V]`, in the dtype of `v`.
        final_state (torch.Tensor):
            State after the last token of each sequence, `[N, H, K, V]` float32, or `None`.
    """
    dtype = v.dtype
    B, T, H, K = q.shape
    V = v.shape[-1]
    scale = K ** -0.5 if scale is None else scale
    q, k, v = q.float(), k.float(), v.float()
    g = g.float() if g is not None else None
    if cu_seqlens is None:
        bounds = [(None, None)]
        N = B
    else:
        offsets = cu_seqlens.tolist()
        bounds = list(pairwise(offsets))
        N = len(bounds)
    states = initial_state.float() if initial_state is not None else q.new_zeros(N, H, K, V)

    outputs, finals = [], []
    for i, (bos, eos) in enumerate(bounds):
        part = slice(bos, eos)
        state = states if cu_seqlens is None else states[i:i + 1]
        o, state = _recurrence(
            q[:, part], k[:, part], v[:, part], g[:, part] if g is not None else None, scale, state
        )
        outputs.append(o)
        finals.append(state)
    o = torch.cat(outputs, dim=1).to(dtype)
    final_state = torch.cat(finals, dim=0) if output_final_state else None
    return o, final_state

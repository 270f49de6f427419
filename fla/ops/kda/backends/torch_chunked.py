# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""KDA in 64-token chunks with PyTorch matmuls: a forward-only backend for the CPU and for float32 inference.

Within a chunk the delta rule becomes one unit lower-triangular solve (the WY/UT form, see `fla/ops/kda/README.md`),
and the state passes from chunk to chunk as in the Triton op. Everything is computed in float32.
"""

from __future__ import annotations

import torch

from fla.ops.backends import BaseBackend
from fla.ops.kda.inputs import run_kda

CHUNK_SIZE = 64
# the largest K that `check_kda_inputs` lets through
MAX_HEAD_SIZE = 256


def _chunk(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, scale: float,
    state: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One chunk of `BT <= CHUNK_SIZE` tokens: q, k, g `[B, HV, BT, K]`, v `[B, HV, BT, V]`, beta `[B, HV, BT]` and the
    state `[B, HV, K, V]` before it; returns the chunk's output and the state after it."""
    BT = q.shape[2]
    G = g.cumsum(2)
    causal = torch.ones(BT, BT, dtype=torch.bool, device=q.device).tril()
    # G_i - G_j as the sum over the span (j, i] itself: a difference of two large prefix sums would cancel digits away
    span = (g[:, :, :, None] * causal.tril(-1)[:, :, None]).cumsum(2)  # [B, HV, BT, BT, K]
    # exp(span) <= 1 where i >= j; above the diagonal there is no term, and exp(-inf) = 0 keeps it out
    decay = span.masked_fill_(~causal[:, :, None], float('-inf')).exp_()
    decay_to_end = decay[:, :, -1].clone()
    # k_j * exp(G_i - G_j), in place: the [B, HV, BT, BT, K] tensors are the backend's largest
    k_decayed = decay.mul_(k[:, :, None])
    # the unit diagonal of I + A is implied by the solve below, so A keeps only the strictly lower part
    A = torch.einsum('bhik,bhijk->bhij', k * beta[..., None], k_decayed).tril(-1)
    qk = torch.einsum('bhik,bhijk->bhij', q, k_decayed)
    decay_from_start = G.exp()
    rhs = torch.cat([k * decay_from_start, v], dim=-1) * beta[..., None]
    w, u = torch.linalg.solve_triangular(A, rhs, upper=False, unitriangular=True).split([k.shape[-1], v.shape[-1]], -1)
    v_new = u - w @ state
    o = scale * ((q * decay_from_start) @ state + qk @ v_new)
    state = G[:, :, -1:].exp().transpose(-1, -2) * state + (k * decay_to_end).transpose(-1, -2) @ v_new
    return o, state


def _sequences(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, scale: float,
    state: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of sequences of one length, head-major (`[B, HV, T, *]`), chunk after chunk."""
    outputs = []
    for start in range(0, q.shape[2], CHUNK_SIZE):
        part = slice(start, start + CHUNK_SIZE)
        o, state = _chunk(q[:, :, part], k[:, :, part], v[:, :, part], g[:, :, part], beta[:, :, part], scale, state)
        outputs.append(o)
    return (torch.cat(outputs, dim=2) if outputs else v.new_zeros(v.shape)), state


def chunked_kda_core(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, scale: float,
    initial_state: torch.Tensor | None, output_final_state: bool, cu_seqlens: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The core recurrence of `run_kda`: q, k `[B, T, H, K]`, v `[B, T, HV, V]`, log decay g `[B, T, HV, K]` and beta
    `[B, T, HV]`. Returns o `[B, T, HV, V]` in v's dtype and, when asked, the float32 final states `[N, HV, K, V]`."""
    B, T, H, K = q.shape
    HV, V, dtype = v.shape[2], v.shape[3], v.dtype
    groups = HV // H
    with torch.no_grad():
        q, k = (x.float().repeat_interleave(groups, dim=2).transpose(1, 2) for x in (q, k))
        v, g, beta = (x.float().transpose(1, 2) for x in (v, g, beta))
        N = B if cu_seqlens is None else cu_seqlens.numel() - 1
        states = initial_state.float() if initial_state is not None else q.new_zeros(N, HV, K, V)
        if cu_seqlens is None:
            o, final = _sequences(q, k, v, g, beta, scale, states)
        else:
            bounds = cu_seqlens.tolist()
            pieces, finals = [], []
            for i, (bos, eos) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
                part = slice(bos, eos)
                o_i, final_i = _sequences(q[:, :, part], k[:, :, part], v[:, :, part], g[:, :, part],
                                          beta[:, :, part], scale, states[i:i + 1])
                pieces.append(o_i)
                finals.append(final_i)
            o, final = torch.cat(pieces, dim=2), torch.cat(finals, dim=0)
    return o.transpose(1, 2).to(dtype), (final if output_final_state else None)


class TorchChunkedBackend(BaseBackend):
    """`chunk_kda` in PyTorch for calls that need no gradient, on the CPU in any dtype and elsewhere in float32.

    Off by default, since it would otherwise take over forward-only calls from the Triton op, which is faster on a
    GPU and is what the op's tests check on the CPU under the interpreter; `FLA_KDA_TORCH_CHUNKED=1` turns it on.
    """

    backend_type = 'torch_chunked'
    env_var = 'FLA_KDA_TORCH_CHUNKED'
    default_enable = False

    def chunk_kda_verifier(
        self, q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False, use_qk_l2norm_in_kernel=False,
        use_gate_in_kernel=False, A_log=None, dt_bias=None, safe_gate=False, lower_bound=None,
        use_beta_sigmoid_in_kernel=False, cu_seqlens=None,
    ) -> tuple[bool, str | None]:
        """Accept a call that builds no autograd graph, with tensors on the CPU or in float32, and `K <= 256`."""
        tensors = (q, k, v, g, beta, initial_state, A_log, dt_bias)
        if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors):
            return False, 'an input requires grad and the torch_chunked backend has no backward'
        if q.device.type != 'cpu' and not (q.dtype == k.dtype == v.dtype == torch.float32):
            return False, f'{q.dtype} on {q.device.type}: off the CPU the torch_chunked backend serves float32 only'
        if q.shape[-1] > MAX_HEAD_SIZE:
            return False, f'head size K={q.shape[-1]} is over {MAX_HEAD_SIZE}, the largest chunk_kda accepts'
        return True, None

    def chunk_kda(
        self, q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False, use_qk_l2norm_in_kernel=False,
        use_gate_in_kernel=False, A_log=None, dt_bias=None, safe_gate=False, lower_bound=None,
        use_beta_sigmoid_in_kernel=False, cu_seqlens=None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        return run_kda(chunked_kda_core, q, k, v, g, beta, scale, initial_state, output_final_state,
                       use_qk_l2norm_in_kernel, use_gate_in_kernel, A_log, dt_bias, safe_gate, lower_bound,
                       use_beta_sigmoid_in_kernel, cu_seqlens, triton=False)

"""A one-pass attention forward for CUDA that returns a layer's output and, in the same pass over the keys, every
per-query sum the census detectors declare (:mod:`headlab.detectors.needs`), in Triton.

It is flash attention's forward (online softmax over key tiles, nothing ``(T, T)`` in memory) with more
accumulators beside the output's. Each accumulator is rescaled by the same factor as the normaliser when a
tile raises the running maximum, and divided by it at the end, so it holds a sum of final probabilities:

* ``keyset`` (B, H, T, m): ``Σ_j p_ij · keys_j`` for m indicator columns of keys (the ``/`` tokens, the sink);
* ``band`` (B, H, T, K + 1): ``p_{i, i − Δ}`` for Δ = 0..K (SlashScore(Δ), previous-token);
* ``match`` (B, H, T, S): ``Σ_{j < i, tok_j = tok_i} p_{i, j + s}`` for each shift s (duplicate 0, induction 1),
  from the token ids of the query tile and of the key tile shifted back by s;
* ``plogp`` (B, H, T): ``Σ_j p_ij log p_ij`` (the entropy detector's), from ``Σ_j e^{s_ij − m} s_ij``.

Grouped K/V are read through the head's group (``h // (H / H_kv)``), never repeated; causal, key-padding and
sliding-window masks are applied per tile, with no dense bias; fp16/bf16 inputs are accumulated in fp32.

Under ``TRITON_INTERPRET=1`` (set before triton is first imported: triton wraps its own library when it is) the
kernel runs on the CPU (numpy), which is how its parity tests run without a GPU.
The interpreter's bf16 ``tl.dot`` is wrong, so parity there is shown in fp32 and fp16.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

try:  # an optional dependency: only this route needs it
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - exercised where triton is absent
    triton = None


@dataclass(frozen=True)
class CensusSums:
    """What one pass returns beside the output, each a sum of final probabilities per query."""

    keyset: torch.Tensor | None  # (B, H, T, m) float32
    band: torch.Tensor | None    # (B, H, T, K + 1) float32
    match: torch.Tensor | None   # (B, H, T, S) float32
    plogp: torch.Tensor          # (B, H, T) float32


def available() -> bool:
    """Whether this route can run here: triton importable, and a CUDA device or the interpreter."""
    return triton is not None and (torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET") == "1")


if triton is not None:

    @triton.jit
    def _band(acc, p, rows, cols, bands, BAND: tl.constexpr):  # type: ignore[no-untyped-def]
        """Column d of ``acc`` += the tile's p[i, i − d], for d < BAND."""
        diff = rows[:, None] - cols[None, :]
        for d in tl.static_range(BAND):
            hit = tl.sum(tl.where(diff == d, p, 0.0), 1)
            acc = tl.where(bands[None, :] == d, acc + hit[:, None], acc)
        return acc

    @triton.jit
    def _matches(acc, p, rows, cols, shifts, ids_q, IDS, VALID, SHIFTS, b, T, N_SHIFTS):  # type: ignore[no-untyped-def]
        """Column t of ``acc`` += the tile's mass on keys j + s_t whose key j holds the query's token, j < i."""
        for t in range(N_SHIFTS):
            sh = tl.load(SHIFTS + t)
            src = cols - sh  # the key whose token is compared: key j + sh is attended for a match at j
            ids_k = tl.load(IDS + b * T + src, mask=(src >= 0) & (src < T), other=-2)
            ok_k = tl.load(VALID + b * T + src, mask=(src >= 0) & (src < T), other=0) != 0
            same = (ids_k[None, :] == ids_q[:, None]) & ok_k[None, :] & (src[None, :] < rows[:, None])
            hit = tl.sum(tl.where(same, p, 0.0), 1)
            acc = tl.where(shifts[None, :] == t, acc + hit[:, None], acc)
        return acc

    @triton.jit
    def _store(OUT, base, cols, values, row_ok, WIDTH: tl.constexpr):  # type: ignore[no-untyped-def]
        """Rows ``base`` of a (rows, WIDTH) float32 output."""
        tl.store(OUT + base[:, None] * WIDTH + cols[None, :], values, mask=row_ok[:, None])

    @triton.jit
    def _census_fwd(  # type: ignore[no-untyped-def]
        Q, K, V, O, KEYS, IDS, VALID, SHIFTS, KS_OUT, BAND_OUT, MATCH_OUT, PLOGP_OUT,
        T, H, GROUP, M_SETS, N_SHIFTS, scale, window, softcap,
        sq_b, sq_h, sq_t, sk_b, sk_h, sk_t, sv_b, sv_h, sv_t, so_b, so_h, so_t,
        CAUSAL: tl.constexpr, HAS_WINDOW: tl.constexpr, HAS_SOFTCAP: tl.constexpr, D: tl.constexpr,
        BLOCK_D: tl.constexpr,
        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, M_PAD: tl.constexpr, BAND: tl.constexpr,
        B_PAD: tl.constexpr, S_PAD: tl.constexpr, IEEE: tl.constexpr,
    ):
        bh = tl.program_id(1)
        b, h = bh // H, bh % H
        kvh = h // GROUP
        rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)  # (BLOCK_M,) query positions
        dims = tl.arange(0, BLOCK_D)
        row_ok = rows < T
        q = tl.load(Q + b * sq_b + h * sq_h + rows[:, None] * sq_t + dims[None, :],
                    mask=row_ok[:, None] & (dims[None, :] < D), other=0.0)
        ids_q = tl.load(IDS + b * T + rows, mask=row_ok, other=-1)
        sets, bands, shifts = tl.arange(0, M_PAD), tl.arange(0, B_PAD), tl.arange(0, S_PAD)
        m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
        l_i = tl.zeros((BLOCK_M,), tl.float32)
        e_i = tl.zeros((BLOCK_M,), tl.float32)  # Σ e^{s - m} s
        acc = tl.zeros((BLOCK_M, BLOCK_D), tl.float32)
        ks_acc = tl.zeros((BLOCK_M, M_PAD), tl.float32)
        band_acc = tl.zeros((BLOCK_M, B_PAD), tl.float32)
        match_acc = tl.zeros((BLOCK_M, S_PAD), tl.float32)
        hi = tl.minimum(T, (tl.program_id(0) + 1) * BLOCK_M) if CAUSAL else T
        lo = 0
        if HAS_WINDOW:
            lo = tl.maximum(0, tl.program_id(0) * BLOCK_M - window + 1) // BLOCK_N * BLOCK_N
        for start in range(lo, hi, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            col_ok = (cols < T) & (tl.load(VALID + b * T + cols, mask=cols < T, other=0) != 0)
            k = tl.load(K + b * sk_b + kvh * sk_h + cols[:, None] * sk_t + dims[None, :],
                        mask=(cols[:, None] < T) & (dims[None, :] < D), other=0.0)
            if IEEE:  # fp32 inputs multiplied as fp32 (a GPU's default, tf32, keeps 10 bits of the mantissa)
                s = tl.dot(q, tl.trans(k), input_precision="ieee").to(tl.float32) * scale  # (BLOCK_M, BLOCK_N)
            else:
                s = tl.dot(q, tl.trans(k)).to(tl.float32) * scale
            if HAS_SOFTCAP:  # softcap · tanh(s / softcap), tanh from exp (no tanh in every triton backend)
                s = softcap * (1.0 - 2.0 / (tl.exp(2.0 * s / softcap) + 1.0))
            keep = col_ok[None, :] & row_ok[:, None]
            if CAUSAL:
                keep = keep & (cols[None, :] <= rows[:, None])
            if HAS_WINDOW:
                keep = keep & (rows[:, None] - cols[None, :] < window)
            # a query always sees itself (AttentionSpec's rule): a padded query's row is never empty
            keep = keep | ((rows[:, None] == cols[None, :]) & row_ok[:, None])
            s = tl.where(keep, s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row with no key yet
            alpha = tl.exp(m_i - m_safe)
            p = tl.exp(s - m_safe[:, None])  # 0 where masked
            l_i = l_i * alpha + tl.sum(p, 1)
            e_i = e_i * alpha + tl.sum(p * tl.where(keep, s, 0.0), 1)
            v = tl.load(V + b * sv_b + kvh * sv_h + cols[:, None] * sv_t + dims[None, :],
                        mask=(cols[:, None] < T) & (dims[None, :] < D), other=0.0)
            if IEEE:
                acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
            else:
                acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v).to(tl.float32)
            ind = tl.load(KEYS + (b * T + cols[:, None]) * M_SETS + sets[None, :],
                          mask=(cols[:, None] < T) & (sets[None, :] < M_SETS), other=0.0)
            ks_acc = ks_acc * alpha[:, None] + tl.dot(p, ind, input_precision="ieee")
            band_acc = _band(band_acc * alpha[:, None], p, rows, cols, bands, BAND)
            match_acc = _matches(match_acc * alpha[:, None], p, rows, cols, shifts, ids_q, IDS, VALID, SHIFTS,
                                 b, T, N_SHIFTS)
            m_i = m_new
        inv = tl.where(l_i > 0, 1.0 / tl.where(l_i > 0, l_i, 1.0), 0.0)
        m_fin = tl.where(m_i == float("-inf"), 0.0, m_i)
        out = acc * inv[:, None]
        tl.store(O + b * so_b + h * so_h + rows[:, None] * so_t + dims[None, :], out.to(O.dtype.element_ty),
                 mask=row_ok[:, None] & (dims[None, :] < D))
        base = (b * H + h) * T + rows
        _store(KS_OUT, base, sets, ks_acc * inv[:, None], row_ok, M_PAD)
        _store(BAND_OUT, base, bands, band_acc * inv[:, None], row_ok, B_PAD)
        _store(MATCH_OUT, base, shifts, match_acc * inv[:, None], row_ok, S_PAD)
        # Σ p log p = Σ p (s − m − log l) = e / l − m − log l
        plogp = tl.where(l_i > 0, e_i * inv - m_fin - tl.log(tl.where(l_i > 0, l_i, 1.0)), 0.0)
        tl.store(PLOGP_OUT + base, plogp, mask=row_ok)


def _pad(n: int, least: int = 1) -> int:
    return max(least, 1 << max(0, n - 1).bit_length())


def census_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, scale: float, causal: bool = True,
    valid: torch.Tensor | None = None, window: int | None = None, keys: torch.Tensor | None = None,
    band: int | None = None, ids: torch.Tensor | None = None, shifts: tuple[int, ...] = (),
    softcap: float | None = None, block: int = 64,
) -> tuple[torch.Tensor, CensusSums]:
    """q (B, H, T, D), k and v (B, H_kv, T, D) with H a multiple of H_kv → the output (B, H, T, D) in q's dtype,
    and the declared sums (:class:`CensusSums`).

    ``valid`` (B, T) bool: real keys (padding: False; a query always sees itself, as
    :class:`~headlab.attention.routes.spec.AttentionSpec` says); ``window``: a key more than ``window − 1``
    positions before its query is masked; ``softcap``: logits become ``softcap · tanh(s / softcap)`` before the
    masks; ``keys`` (B, T, m) 0/1 key sets; ``band``: the largest Δ of the diagonals; ``ids`` (B, T) token ids
    with ``shifts`` for the token matches; ``block``: query and key rows of a tile (a power of two, 16 or more).
    """
    if triton is None:
        raise RuntimeError("the triton route needs triton (pip install triton==3.7.1)")
    B, H, T, D = q.shape
    Hkv = k.shape[1]
    if H % Hkv or k.shape != v.shape or k.shape[0] != B or k.shape[2] != T or k.shape[3] != D:
        raise ValueError(f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}: k and v (B, H_kv, T, D) "
                         "with H a multiple of H_kv")
    dev = q.device
    q, k, v = (x if x.stride(-1) == 1 else x.contiguous() for x in (q, k, v))
    valid_i = (valid if valid is not None else torch.ones(B, T, dtype=torch.bool, device=dev)).to(torch.int32)
    m_sets = 0 if keys is None else keys.shape[-1]
    keys_f = (keys.float() if keys is not None else torch.zeros(B, T, 1, device=dev)).contiguous()
    ids_i = (ids if ids is not None else torch.zeros(B, T, dtype=torch.long, device=dev)).to(torch.int32).contiguous()
    n_band = 0 if band is None else band + 1
    M_PAD, B_PAD, S_PAD = _pad(m_sets, 16), _pad(n_band, 2), _pad(len(shifts), 2)
    out = torch.empty(B, H, T, D, dtype=q.dtype, device=dev)
    ks = torch.zeros(B, H, T, M_PAD, device=dev)
    bd = torch.zeros(B, H, T, B_PAD, device=dev)
    mt = torch.zeros(B, H, T, S_PAD, device=dev)
    pl = torch.zeros(B, H, T, device=dev)
    sh = torch.tensor(shifts or (0,), dtype=torch.int32, device=dev)
    grid = (triton.cdiv(T, block), B * H)
    _census_fwd[grid](
        q, k, v, out, keys_f, ids_i, valid_i.contiguous(), sh, ks, bd, mt, pl,
        T, H, H // Hkv, max(1, m_sets), len(shifts), scale, window or 0, softcap or 1.0,
        q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
        v.stride(0), v.stride(1), v.stride(2), out.stride(0), out.stride(1), out.stride(2),
        CAUSAL=causal, HAS_WINDOW=window is not None, HAS_SOFTCAP=softcap is not None, D=D, BLOCK_D=_pad(D, 16),
        BLOCK_M=block, BLOCK_N=block,
        M_PAD=M_PAD, BAND=n_band, B_PAD=B_PAD, S_PAD=S_PAD,
        IEEE=q.dtype == torch.float32,
    )
    return out, CensusSums(ks[..., :m_sets] if keys is not None else None, bd[..., :n_band] if band is not None
                           else None, mt[..., :len(shifts)] if shifts else None, pl)

#!/usr/bin/env python3
"""Record a real PyTorch-profiler (Kineto) trace of a small transformer training loop on CPU.

Standard library + torch only; run it with the CPU build of torch (it never touches a device):

    python benchmarks/record_torch.py OUT.pt.trace.json.gz --steps 3 --blocks 2 --mlp-ratio 4

The model: a token embedding, ``--blocks`` pre-norm transformer blocks (RMSNorm, a fused QKV
``nn.Linear``, ``scaled_dot_product_attention`` (causal), an output projection, LayerNorm, an MLP
of two ``nn.Linear`` with GELU between), a final RMSNorm and a vocabulary head; cross-entropy
loss, backward, fused AdamW. Seeds fixed, ``torch.set_num_threads(1)``: two recordings with
the same arguments run the same ops on the same data; only their timings differ (timer and OS
noise). The trace is therefore not byte-reproducible.

Profiler: CPU activity, ``schedule(wait=1, warmup=1, active=STEPS)``, ``record_shapes``,
``with_modules`` and ``with_stack`` (eager ``nn.Module: ...`` scopes), ``profile_memory`` (the
``[memory]`` instants); ``prof.step()`` after every iteration, so the trace holds
``ProfilerStep#2`` .. ``ProfilerStep#(STEPS+1)``. The exported chrome trace is gzipped with
mtime 0 and no file name in the header.
"""
from __future__ import annotations

import argparse
import gzip
import os
import random
import shutil
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, dim: int, ratio: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, ratio * dim, bias=False)
        self.fc2 = nn.Linear(ratio * dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, mlp_ratio: int) -> None:
        super().__init__()
        self.norm1 = RMSNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim, mlp_ratio)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab: int, dim: int, heads: int, blocks: int, mlp_ratio: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, mlp_ratio) for _ in range(blocks))
        self.norm = RMSNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def gzip_deterministic(src: str, dst: str) -> None:
    """gzip ``src`` into ``dst`` with mtime 0 and no embedded file name (same bytes in, same out)."""
    tmp = dst + ".tmp"
    with open(src, "rb") as fin, open(tmp, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as fout:
            shutil.copyfileobj(fin, fout)
    os.replace(tmp, dst)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="output trace, *.pt.trace.json.gz (gzipped) or *.json (plain)")
    p.add_argument("--steps", type=int, default=3, help="profiled (active) steps (default 3)")
    p.add_argument("--blocks", type=int, default=2, help="transformer blocks (default 2)")
    p.add_argument("--mlp-ratio", type=int, default=4, help="MLP hidden width / dim (default 4)")
    p.add_argument("--batch", type=int, default=8, help="sequences per step (default 8)")
    p.add_argument("--seq", type=int, default=64, help="tokens per sequence (default 64)")
    p.add_argument("--dim", type=int, default=128, help="model width (default 128)")
    p.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    p.add_argument("--vocab", type=int, default=512, help="vocabulary size (default 512)")
    p.add_argument("--seed", type=int, default=0, help="seed of the weights and data (default 0)")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    a = p.parse_args(argv)
    if a.steps < 1 or a.blocks < 1 or a.mlp_ratio < 1 or a.dim % a.heads:
        p.error("--steps, --blocks and --mlp-ratio must be >= 1 and --dim a multiple of --heads")

    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    random.seed(a.seed)
    torch.manual_seed(a.seed)

    model = TinyLM(a.vocab, a.dim, a.heads, a.blocks, a.mlp_ratio)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, fused=True)
    gen = torch.Generator().manual_seed(a.seed + 1)
    total = 2 + a.steps  # wait + warmup + active
    batches = [torch.randint(0, a.vocab, (a.batch, a.seq + 1), generator=gen) for _ in range(total)]

    def train_step(tokens: torch.Tensor) -> float:
        opt.zero_grad(set_to_none=True)
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, a.vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        return loss.item()

    # One untraced step first, so lazy initialisation (AdamW state, allocator) is out of the way.
    train_step(batches[0])

    sched = torch.profiler.schedule(wait=1, warmup=1, active=a.steps, repeat=1)
    walls: list[float] = []
    losses: list[float] = []
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=sched,
        record_shapes=True,
        with_modules=True,
        with_stack=True,  # eager nn.Module scopes come from the Python tracer, which with_stack enables
        profile_memory=True,
    ) as prof:
        for i in range(total):
            t0 = time.perf_counter()
            losses.append(train_step(batches[i]))
            walls.append((time.perf_counter() - t0) * 1e3)
            prof.step()

    # Export next to the output under its uncompressed name (the trace's "traceName" records the
    # path it was exported to), then gzip it and drop the plain file.
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    if a.out.endswith(".gz"):
        raw = a.out[:-3]
        prof.export_chrome_trace(raw)
        gzip_deterministic(raw, a.out)
        os.remove(raw)
    else:
        prof.export_chrome_trace(a.out)

    active = walls[2:]
    print(f"torch {torch.__version__}, {a.threads} thread(s); wrote {a.out} ({os.path.getsize(a.out)} bytes)",
          file=sys.stderr)
    print("wall ms per step (wait, warmup, active...): " + ", ".join(f"{w:.2f}" for w in walls)
          + f"; active max/min {max(active) / min(active):.3f}", file=sys.stderr)
    print("loss per step: " + ", ".join(f"{x:.4f}" for x in losses), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

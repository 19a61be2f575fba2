"""The networks the harness trains: MONAI CNNs for 2D slices / 3D volumes and a compact GPT-2.

Standalone on purpose: this module imports PyTorch and MONAI only, so that it runs on a GPU node
that has nothing of the portal installed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

CNN_MODELS = ("densenet121", "densenet169", "resnet18", "resnet50")


@dataclass(frozen=True)
class GPTConfig:
    """Shape of a GPT-2 style decoder (minGPT layout: pre-LayerNorm blocks, untied head)."""

    n_layer: int
    n_head: int
    n_embd: int
    # The Turing benchmark trained minGPT character-level (vocabulary 65) with 128-token blocks;
    # its parameter counts (85.21M for GPT2 ...) are reproduced to 0.01M with these two values.
    vocab_size: int = 65
    block_size: int = 128


# Sizes from the Turing's "HPC Benchmarking" table (seed 004): layers, heads, embedding dim.
GPT_SIZES: dict[str, GPTConfig] = {
    "gpt2": GPTConfig(12, 12, 768),
    "gpt2-m": GPTConfig(24, 16, 1024),
    "gpt2-l": GPTConfig(36, 20, 1280),
    "gpt2-xl": GPTConfig(48, 25, 1600),
    "gpt2-xxl": GPTConfig(60, 30, 1920),
    "gpt2-xxxl": GPTConfig(84, 40, 2560),
    # Not from the table: a tiny shape so that tests and CPU smoke runs take milliseconds.
    "gpt2-tiny": GPTConfig(2, 2, 64, block_size=32),
}


class _Block(nn.Module):
    """One pre-LayerNorm transformer block with causal self-attention and a 4x MLP."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.n_head = cfg.n_head
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd)
        self.fc_out = nn.Linear(4 * cfg.n_embd, cfg.n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(c, dim=2)
        shape = (b, t, self.n_head, c // self.n_head)
        q, k, v = (z.view(shape).transpose(1, 2) for z in (q, k, v))
        # Fused attention: never materialises the t x t score matrix on GPUs that support it.
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.fc_out(F.gelu(self.fc(self.ln_2(x))))


class GPT(nn.Module):
    """A GPT-2 style language model; `forward(tokens)` returns logits (batch, time, vocab)."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.blocks = nn.ModuleList(_Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        for name, p in self.named_parameters():
            if name.endswith(("fc_out.weight", "proj.weight")):
                # GPT-2's scaled init of residual projections keeps early losses sane.
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.n_layer))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.wte(tokens) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))

    def transformer_parameters(self) -> int:
        """Parameters as minGPT (and so the Turing table) counts them: everything but the head."""
        return sum(p.numel() for n, p in self.named_parameters() if not n.startswith("head."))


def build_cnn(model: str, dims: int, in_channels: int = 1, num_classes: int = 2) -> nn.Module:
    """Return the MONAI network for `model` with `dims` spatial dimensions (2 or 3).

    ResNets use a stride-2 first convolution (MONAI's default is 1, MedicalNet style) so that
    they are the ImageNet ResNets whose published throughputs the recommender compares against.
    """
    from monai.networks import nets

    if dims not in (2, 3):
        raise ValueError(f"dims must be 2 or 3 for {model}, got {dims}")
    if model in ("densenet121", "densenet169"):
        cls = nets.DenseNet121 if model == "densenet121" else nets.DenseNet169
        return cls(spatial_dims=dims, in_channels=in_channels, out_channels=num_classes)
    if model in ("resnet18", "resnet50"):
        factory = nets.resnet18 if model == "resnet18" else nets.resnet50
        return factory(
            spatial_dims=dims,
            n_input_channels=in_channels,
            num_classes=num_classes,
            conv1_t_stride=2,
        )
    raise ValueError(f"unknown model {model!r}; choose from {CNN_MODELS + tuple(GPT_SIZES)}")


def build(model: str, dims: int) -> nn.Module:
    """Build any harness workload: a GPT-2 size when `model` is in GPT_SIZES, else a CNN."""
    if model in GPT_SIZES:
        return GPT(GPT_SIZES[model])
    return build_cnn(model, dims)


def make_batch(
    model: str, dims: int, image_size: int, batch_size: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """Synthetic inputs and targets for one step (no dataset is downloaded, ever).

    For GPT models `image_size` is the sequence length in tokens (0 means the block size).
    """
    gen = torch.Generator().manual_seed(0)
    if model in GPT_SIZES:
        cfg = GPT_SIZES[model]
        seq = image_size or cfg.block_size
        tokens = torch.randint(0, cfg.vocab_size, (batch_size, seq + 1), generator=gen)
        return tokens[:, :-1].to(device), tokens[:, 1:].to(device)
    shape = (batch_size, 1) + (image_size,) * dims
    x = torch.randn(shape, generator=gen)
    y = torch.randint(0, 2, (batch_size,), generator=gen)
    return x.to(device), y.to(device)

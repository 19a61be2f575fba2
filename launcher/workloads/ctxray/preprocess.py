"""Preprocessing (CT windowing, lung mask and crop, resize, normalise) and augmentation.

Everything here works on one sample, 2D (H, W) or 3D (D, H, W), so DataLoader workers can run it
in parallel. Augmentation draws from a generator seeded by (seed, epoch, sample): the same sample
in the same epoch is augmented the same way in any worker and after a resume.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

AIR_HU = -500.0  # below this is air or lung parenchyma, above is tissue
MASK_GRID = 96  # the lung mask is computed on a grid of at most this size (enough for a bbox)


def window(hu: np.ndarray, level: float, width: float) -> np.ndarray:
    """Map Hounsfield units to [0, 1] through a (level, width) window, clipping outside it."""
    low = level - width / 2.0
    return np.clip((hu - low) / width, 0.0, 1.0).astype(np.float32)


def _shifts(mask: np.ndarray) -> list[np.ndarray]:
    """The mask moved one pixel along each axis, both ways, with False entering at the edges."""
    out = []
    for axis in range(mask.ndim):
        for step in (1, -1):
            moved = np.roll(mask, step, axis=axis)
            edge: list[slice | int] = [slice(None)] * mask.ndim
            edge[axis] = 0 if step == 1 else -1
            moved[tuple(edge)] = False
            out.append(moved)
    return out


def _dilate(mask: np.ndarray) -> np.ndarray:
    out = mask.copy()
    for moved in _shifts(mask):
        out |= moved
    return out


def _erode(mask: np.ndarray) -> np.ndarray:
    out = mask.copy()
    for moved in _shifts(mask):
        out &= moved
    return out


def _border_connected(mask: np.ndarray) -> np.ndarray:
    """The part of mask connected to the image border (geodesic reconstruction by dilation)."""
    seed = np.zeros_like(mask)
    for axis in range(mask.ndim):
        for end in (0, -1):
            index: list[slice | int] = [slice(None)] * mask.ndim
            index[axis] = end
            seed[tuple(index)] = mask[tuple(index)]
    while True:
        grown = _dilate(seed) & mask
        if np.array_equal(grown, seed):
            return seed
        seed = grown


def lung_mask(hu: np.ndarray) -> np.ndarray:
    """Boolean lung mask on a coarse grid (each axis at most MASK_GRID), same ndim as hu.

    Lungs are the low-density voxels that are not connected to the air around the body, cleaned
    by a morphological opening (removes noise and thin airways) and closing (fills vessels).
    """
    step = max(1, math.ceil(max(hu.shape) / MASK_GRID))
    coarse = hu[tuple(slice(None, None, step) for _ in hu.shape)]
    low = coarse < AIR_HU
    lungs = low & ~_border_connected(low)
    lungs = _dilate(_erode(lungs))  # opening
    return _erode(_dilate(lungs))  # closing


def lung_box(
    hu: np.ndarray, margin: float = 0.05, min_fraction: float = 0.02
) -> tuple[slice, ...] | None:
    """Slices that crop hu to its lungs plus a margin, or None when no plausible lungs are found."""
    mask = lung_mask(hu)
    if mask.sum() < min_fraction * mask.size:
        return None
    box = []
    for axis, full in enumerate(hu.shape):
        scale = full / mask.shape[axis]
        hit = np.flatnonzero(mask.any(axis=tuple(a for a in range(mask.ndim) if a != axis)))
        pad = margin * full
        lo = max(0, int(hit[0] * scale - pad))
        hi = min(full, math.ceil((hit[-1] + 1) * scale + pad))
        box.append(slice(lo, hi))
    return tuple(box)


def resize(x: torch.Tensor, size: int) -> torch.Tensor:
    """Resize a (C, H, W) or (C, D, H, W) tensor so every spatial side is size."""
    spatial = x.ndim - 1
    mode = "bilinear" if spatial == 2 else "trilinear"
    out = F.interpolate(
        x[None], size=(size,) * spatial, mode=mode, align_corners=False, antialias=spatial == 2
    )
    return out[0]


def normalise(x: torch.Tensor) -> torch.Tensor:
    """Zero mean, unit variance per sample, so sources with different ranges look alike."""
    return (x - x.mean()) / x.std().clamp_min(1e-6)


def prepare(
    raw: np.ndarray, is_ct: bool, size: int, window_lw: tuple[float, float], lung_crop: bool
) -> torch.Tensor:
    """Raw pixels -> (1, size, size[, size]) float tensor, normalised. Deterministic."""
    if is_ct:
        box = lung_box(raw) if lung_crop else None
        if box is not None:
            raw = raw[box]
        img = window(raw, *window_lw)
    else:
        img = raw.astype(np.float32) / max(1.0, float(raw.max()))
    return normalise(resize(torch.from_numpy(np.ascontiguousarray(img))[None], size))


def sample_generator(seed: int, epoch: int, index: int) -> torch.Generator:
    """A generator that depends only on (seed, epoch, index), never on worker or process."""
    return torch.Generator().manual_seed((seed * 1_000_003 + epoch) * 1_000_033 + index)


def augment(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Random small rotation, scale, shift, contrast and noise (in-plane for volumes)."""
    u = torch.rand(6, generator=gen)
    angle = (u[0] - 0.5) * math.radians(20)
    scale = 0.9 + 0.2 * u[1]
    shift = (u[2:4] - 0.5) * 0.1
    cos, sin = torch.cos(angle) / scale, torch.sin(angle) / scale
    spatial = x.ndim - 1
    if spatial == 2:
        theta = torch.tensor([[cos, -sin, shift[0]], [sin, cos, shift[1]]])
    else:  # grid axes are (x, y, z): rotate in the (x, y) plane, keep z
        theta = torch.tensor(
            [[cos, -sin, 0.0, shift[0]], [sin, cos, 0.0, shift[1]], [0.0, 0.0, 1.0, 0.0]]
        )
    grid = F.affine_grid(theta[None], [1, *x.shape], align_corners=False)
    out = F.grid_sample(x[None], grid, mode="bilinear", padding_mode="border", align_corners=False)[
        0
    ]
    out = out * (0.9 + 0.2 * u[4]) + (u[5] - 0.5) * 0.2
    return out + 0.05 * torch.randn(out.shape, generator=gen)

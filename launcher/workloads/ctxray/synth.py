"""Deterministic synthetic chest X-rays, CT slices and CT volumes with COVID-like findings.

Each patient gets an anatomy (body, two lungs, heart, spine) drawn from a seeded generator, and
several images that jitter it. Positive patients carry ground-glass opacities (wide, faint rises
of lung density: -850 HU towards -500 HU) and consolidations (small, dense: towards 0 HU), mostly
peripheral, as in COVID-19 pneumonia. CT values are Hounsfield units (int16); X-rays are 8-bit.

The result is laid out the way ``train`` reads real data: ``OUT/<class>/<patient>__<k>.<ext>``
(patient id before the double underscore), with README.txt, labels.csv and dataset.json saying
plainly that the data are synthetic.
"""

from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import dataclass

import numpy as np

CLASSES = ("negative", "covid")
MODALITIES = ("xray", "ct")


@dataclass(frozen=True)
class Anatomy:
    """One patient's geometry in normalised coordinates ([-1, 1] on every axis)."""

    body: tuple[float, float]  # radii (y, x) of the body's cross-section
    lung_centre_y: float
    lung_offset_x: float
    lung_radii: tuple[float, float, float]  # (z, y, x)
    heart: tuple[float, float]  # radii (y, x)
    lesions: tuple[tuple[float, ...], ...]  # (z, y, x, sigma, strength, side, kind)


def _sample_anatomy(rng: np.random.Generator, positive: bool) -> Anatomy:
    lesions: list[tuple[float, ...]] = []
    if positive:
        for _ in range(int(rng.integers(2, 5))):
            kind = float(rng.random() < 0.35)  # 1 = consolidation, 0 = ground glass
            sigma = rng.uniform(0.05, 0.08) if kind else rng.uniform(0.08, 0.14)
            # Peripheral and lower-lobe predominance: push lesions outwards and downwards.
            lesions.append(
                (
                    rng.uniform(-0.5, 0.5),
                    rng.uniform(-0.1, 0.35),
                    rng.uniform(0.25, 0.8),
                    sigma,
                    rng.uniform(0.8, 1.2),
                    float(rng.choice([-1, 1])),
                    kind,
                )
            )
    return Anatomy(
        body=(rng.uniform(0.7, 0.8), rng.uniform(0.84, 0.94)),
        lung_centre_y=rng.uniform(-0.08, 0.0),
        lung_offset_x=rng.uniform(0.38, 0.45),
        lung_radii=(rng.uniform(0.75, 0.9), rng.uniform(0.42, 0.5), rng.uniform(0.25, 0.31)),
        heart=(rng.uniform(0.2, 0.27), rng.uniform(0.18, 0.25)),
        lesions=tuple(lesions),
    )


def _grid(size: int, dims: int) -> list[np.ndarray]:
    axis = np.linspace(-1.0, 1.0, size, dtype=np.float32)
    return list(np.meshgrid(*([axis] * dims), indexing="ij"))


def _inside(
    coords: list[np.ndarray], centre: tuple[float, ...], radii: tuple[float, ...]
) -> np.ndarray:
    """Points of an ellipse/ellipsoid; coords and centre/radii are aligned from the last axis."""
    total = np.zeros_like(coords[0])
    for c, m, r in zip(coords[::-1], centre[::-1], radii[::-1], strict=False):
        total += ((c - m) / r) ** 2
    return total <= 1.0


def _blob(coords: list[np.ndarray], centre: tuple[float, ...], sigma: float) -> np.ndarray:
    total = np.zeros_like(coords[0])
    for c, m in zip(coords[::-1], centre[::-1], strict=False):
        total += (c - m) ** 2
    return np.exp(-total / (2 * sigma * sigma))


def _structures(a: Anatomy, coords: list[np.ndarray], z: float) -> dict[str, np.ndarray]:
    """Boolean masks of each structure, for a slice at height z (2D) or a volume (3D)."""
    volume = len(coords) == 3
    lz = a.lung_radii[0]
    # In a 2D slice the lungs' cross-section shrinks away from their centre along z.
    shrink = 1.0 if volume else math.sqrt(max(0.15, 1 - (z / (lz + 0.1)) ** 2))
    lung_r = (lz, a.lung_radii[1] * shrink, a.lung_radii[2] * shrink)
    lungs = np.zeros(coords[0].shape, dtype=bool)
    for side in (-1, 1):
        centre = (0.0, a.lung_centre_y, side * a.lung_offset_x)
        lungs |= _inside(coords, centre if volume else centre[1:], lung_r if volume else lung_r[1:])
    heart = _inside(coords, (0.12, 0.08), a.heart)
    body = _inside(coords, (0.0, 0.0), a.body)
    # A chest wall always separates the lungs from the air outside the body.
    wall = _inside(coords, (0.0, 0.0), (a.body[0] - 0.12, a.body[1] - 0.12))
    return {
        "body": body,
        "lungs": lungs & ~heart & wall,
        "heart": heart & body,
        "spine": _inside(coords, (0.55, 0.0), (0.11, 0.09)),
        "inner": _inside(coords, (0.0, 0.0), (a.body[0] - 0.06, a.body[1] - 0.06)),
    }


def _lesion_map(
    a: Anatomy, coords: list[np.ndarray], z: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Ground-glass and consolidation intensity maps (0..~1), jittered for this image."""
    ggo = np.zeros_like(coords[0])
    cons = np.zeros_like(coords[0])
    for lz, ly, lx, sigma, strength, side, kind in a.lesions:
        centre: tuple[float, ...] = (
            lz,
            ly + rng.normal(0, 0.02),
            side * (a.lung_offset_x + (lx - 0.45) * 0.45) + rng.normal(0, 0.02),
        )
        if len(coords) == 2:  # a slice only shows the part of the lesion near its height
            strength *= math.exp(-((z - lz) ** 2) / (2 * (3 * sigma) ** 2))
            centre = centre[1:]
        target = cons if kind else ggo
        target += strength * rng.uniform(0.8, 1.2) * _blob(coords, centre, sigma)
    return np.minimum(ggo, 1.0), np.minimum(cons, 1.0)


def render_ct(a: Anatomy, size: int, dims: int, z: float, rng: np.random.Generator) -> np.ndarray:
    """A CT slice (dims=2, at height z) or volume (dims=3) in Hounsfield units, int16."""
    coords = _grid(size, dims)
    s = _structures(a, coords, z)
    hu = np.full(coords[0].shape, -1000.0, dtype=np.float32)
    hu[s["body"]] = -100.0  # subcutaneous fat
    hu[s["inner"]] = 40.0  # muscle and mediastinum
    hu[s["lungs"]] = -850.0
    hu[s["spine"]] = 650.0
    n_vessels = max(4, size // 5) * (1 if dims == 2 else 5)
    vessel_sigma = max(0.012, 1.2 / size)  # at least about a pixel, so small images stay clean
    lung_points = np.argwhere(s["lungs"])
    for idx in (
        lung_points[rng.integers(0, len(lung_points), n_vessels)] if len(lung_points) else []
    ):
        centre = tuple(float(coords[d][tuple(idx)]) for d in range(dims))
        hu += 500.0 * _blob(coords, centre, vessel_sigma) * s["lungs"]
    ggo, cons = _lesion_map(a, coords, z, rng)
    hu += s["lungs"] * (350.0 * ggo + 850.0 * cons)
    hu += rng.normal(0.0, 20.0, hu.shape).astype(np.float32)
    return np.clip(hu, -1024, 3071).astype(np.int16)


def render_xray(a: Anatomy, size: int, rng: np.random.Generator) -> np.ndarray:
    """A frontal chest radiograph, uint8 (lungs dark, mediastinum and bone bright)."""
    coords = _grid(size, 2)
    lung_radii = (0.0, a.lung_radii[0] * 0.75, a.lung_radii[2] * 1.05)
    heart = (a.heart[0] * 1.3, a.heart[1] * 1.2)  # the projected heart shadow is larger
    xray = Anatomy(a.body, a.lung_centre_y, a.lung_offset_x, lung_radii, heart, a.lesions)
    s = _structures(xray, coords, 0.0)
    img = np.full(coords[0].shape, 15.0, dtype=np.float32)
    img[s["body"]] = 150.0
    img[s["lungs"]] = 55.0
    img[s["heart"]] = 175.0
    img[np.abs(coords[1]) < 0.07] += 40.0 * s["body"][np.abs(coords[1]) < 0.07]  # spine
    ribs = 0.5 + 0.5 * np.cos(2 * math.pi * (coords[0] * 5.5 + 0.6 * coords[1] ** 2))
    img += 22.0 * ribs * s["lungs"]
    ggo, cons = _lesion_map(xray, coords, 0.0, rng)
    img += s["lungs"] * (60.0 * ggo + 100.0 * cons)
    img += rng.normal(0.0, 6.0, img.shape).astype(np.float32)
    return np.clip(img, 0, 255).astype(np.uint8)


def _write_png(path: str, pixels: np.ndarray) -> None:
    from PIL import Image  # imported here: only X-ray data needs Pillow

    Image.fromarray(pixels, mode="L").save(path)


def _write_nifti(path: str, array: np.ndarray) -> None:
    import nibabel as nib

    # Stored (x, y, z) as NIfTI expects; the loader transposes back to (z, y, x).
    data = array.T if array.ndim == 3 else array.T[:, :, None]
    nib.save(nib.Nifti1Image(np.ascontiguousarray(data), np.eye(4)), path)


def synthesize(
    out: str,
    modality: str,
    n: int,
    size: int,
    seed: int,
    volumes: bool = False,
    per_patient: int = 3,
) -> dict:
    """Write n images (slices, radiographs or volumes) to out; the same arguments give the same bytes.

    Returns the summary also written to dataset.json.
    """
    if modality not in MODALITIES:
        raise ValueError(f"modality must be one of {MODALITIES}")
    if volumes and modality != "ct":
        raise ValueError("--volumes needs --modality ct")
    per_patient = 1 if volumes else per_patient
    n_patients = max(2, math.ceil(n / per_patient))
    labels = np.random.default_rng([seed, 0]).permutation([i % 2 for i in range(n_patients)])
    rows = []
    for cls in CLASSES:
        os.makedirs(os.path.join(out, cls), exist_ok=True)
    for p in range(n_patients):
        rng = np.random.default_rng([seed, 1, p])
        anatomy = _sample_anatomy(rng, bool(labels[p]))
        patient = f"P{seed:03d}{p:05d}"
        for k in range(min(per_patient, n - p * per_patient) if p * per_patient < n else 1):
            rel = os.path.join(CLASSES[labels[p]], f"{patient}__{k}")
            if modality == "xray":
                rel += ".png"
                _write_png(os.path.join(out, rel), render_xray(anatomy, size, rng))
            else:
                rel += ".nii.gz"
                z = rng.uniform(-0.35, 0.35)
                _write_nifti(
                    os.path.join(out, rel), render_ct(anatomy, size, 3 if volumes else 2, z, rng)
                )
            rows.append((rel, int(labels[p]), CLASSES[labels[p]], patient))
    return _write_labels(
        out, rows, {"modality": modality, "volumes": volumes, "size": size, "seed": seed}
    )


def _write_labels(out: str, rows: list[tuple], params: dict) -> dict:
    with open(os.path.join(out, "labels.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["path", "label", "class", "patient"])
        writer.writerows(rows)
    summary = {
        "synthetic": True,
        "generator": "launcher.workloads.ctxray synth",
        **params,
        "images": len(rows),
        "patients": len({r[3] for r in rows}),
        "classes": list(CLASSES),
    }
    with open(os.path.join(out, "dataset.json"), "w") as f:
        json.dump(summary, f, indent=2)
    with open(os.path.join(out, "README.txt"), "w") as f:
        f.write(
            "SYNTHETIC DATA - NOT FROM ANY PATIENT.\n\n"
            "Generated by `python -m launcher.workloads.ctxray synth` for tests, demos and\n"
            "benchmarks. Positive ('covid') images carry drawn ground-glass opacities and\n"
            "consolidations; they say nothing about real disease. Do not use for clinical work.\n\n"
            f"Parameters: {json.dumps(params)}\n"
            "Layout: <class>/<patient>__<k>.<ext>; labels.csv lists every file.\n"
        )
    return summary

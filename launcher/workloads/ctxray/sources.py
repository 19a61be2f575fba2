"""Finding and reading training data: image folders, DICOM series, NIfTI and MedMNIST ``.npz``.

Layouts ``train`` accepts (``DATA`` is ``--data``):

* ``DATA/<class>/...`` with exactly two class folders, or ``DATA/{train,val,test}/<class>/...``
  when the data come already split. Inside a class folder: PNG/JPEG images, NIfTI files
  (``.nii``/``.nii.gz``, 2D or 3D) and DICOM series (one folder of ``.dcm`` files per series).
  The patient id is the file or series-folder name up to ``__`` (``P001__3.png`` is patient
  ``P001``); without ``__`` each file is its own patient.
* a MedMNIST ``.npz`` (``DATA`` is the file, or a folder holding one) with keys
  ``{train,val,test}_images`` and ``{train,val,test}_labels``; binary labels only.

The negative class is the folder named like normal/negative/healthy/non-covid/control/0, else
the first in alphabetical order. Volumes (3D NIfTI, DICOM series) are split into axial slices
for 2D models (``--dims 2``) or used whole for 3D models (``--dims 3``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, cast

import numpy as np

from .config import UsageError

if TYPE_CHECKING:
    from nibabel.spatialimages import SpatialImage

IMAGE_EXT = (".png", ".jpg", ".jpeg")
NIFTI_EXT = (".nii", ".nii.gz")
NEGATIVE_NAMES = {
    "normal",
    "negative",
    "healthy",
    "non-covid",
    "noncovid",
    "non_covid",
    "control",
    "0",
}
SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class Item:
    """One training sample: a file (or series folder), and which slice/row of it."""

    path: str
    label: int
    patient: str
    kind: str  # "image" | "nifti" | "dicom" | "npz"
    index: int = -1  # slice of a volume, or row of an npz array; -1 = the whole thing
    split: str = ""  # "train" | "val" | "test" when the data come split

    @property
    def is_ct(self) -> bool:
        """Whether the values are Hounsfield units (and CT windowing applies)."""
        return self.kind in ("nifti", "dicom")


@dataclass
class DataIndex:
    """Every sample found under --data, with the class names (index 0 = negative)."""

    items: list[Item]
    classes: tuple[str, str]


def discover(data: str, dims: int = 2, slices: int = 0) -> DataIndex:
    """List the samples under data, or raise UsageError saying what is wrong with the layout."""
    if not os.path.exists(data):
        raise UsageError(f"data not found: {data}")
    npz = _find_npz(data)
    if npz:
        return _discover_npz(npz, dims)
    split_dirs = [s for s in SPLITS if os.path.isdir(os.path.join(data, s))]
    roots = (
        [(os.path.join(data, s), s) for s in split_dirs] if "train" in split_dirs else [(data, "")]
    )
    classes = _classes(roots[0][0])
    items: list[Item] = []
    for root, split in roots:
        for label, name in enumerate(classes):
            folder = os.path.join(root, name)
            if os.path.isdir(folder):
                items += [replace(i, split=split) for i in _scan_class(folder, label, dims, slices)]
    if not items:
        raise UsageError(
            f"no images found under {data} (PNG/JPEG, NIfTI, DICOM series or MedMNIST .npz)"
        )
    return DataIndex(items=items, classes=classes)


def _find_npz(data: str) -> str | None:
    if os.path.isfile(data):
        if not data.endswith(".npz"):
            raise UsageError(f"--data must be a folder or a MedMNIST .npz file: {data}")
        return data
    found = [f for f in sorted(os.listdir(data)) if f.endswith(".npz")]
    return os.path.join(data, found[0]) if len(found) == 1 else None


def _classes(root: str) -> tuple[str, str]:
    names = sorted(
        d
        for d in os.listdir(root)
        if os.path.isdir(os.path.join(root, d)) and not d.startswith(".")
    )
    if len(names) != 2:
        raise UsageError(
            f"need exactly two class folders in {root} (e.g. negative/ and covid/), found {len(names)}: "
            f"{', '.join(names) or 'none'}"
        )
    negatives = [n for n in names if n.lower() in NEGATIVE_NAMES]
    negative = negatives[0] if negatives else names[0]
    return negative, next(n for n in names if n != negative)


def patient_of(name: str) -> str:
    """Patient id from a file or folder name: the part before '__', else the stem."""
    stem = name[:-7] if name.endswith(".nii.gz") else os.path.splitext(name)[0]
    return stem.split("__", 1)[0]


def _scan_class(folder: str, label: int, dims: int, slices: int) -> list[Item]:
    items: list[Item] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        files = sorted(f for f in filenames if not f.startswith("."))
        if any(f.lower().endswith(".dcm") for f in files):
            series = os.path.basename(dirpath) if dirpath != folder else "series"
            items += _volume_items(dirpath, "dicom", label, patient_of(series), dims, slices)
        for f in files:
            path = os.path.join(dirpath, f)
            if f.lower().endswith(IMAGE_EXT):
                if dims == 3:
                    raise UsageError(
                        f"--dims 3 needs volumes (NIfTI or DICOM series), found image {path}"
                    )
                items.append(Item(path, label, patient_of(f), "image"))
            elif f.lower().endswith(NIFTI_EXT):
                items += _volume_items(path, "nifti", label, patient_of(f), dims, slices)
    return items


def _volume_items(
    path: str, kind: str, label: int, patient: str, dims: int, slices: int
) -> list[Item]:
    depth = volume_depth(path, kind)
    if dims == 3:
        if depth < 2:
            raise UsageError(f"--dims 3 needs volumes, {path} is a single slice")
        return [Item(path, label, patient, kind)]
    if depth == 1:
        return [Item(path, label, patient, kind, index=0)]
    keep = (
        range(depth)
        if not slices or slices >= depth
        else range((depth - slices) // 2, (depth + slices) // 2)
    )
    return [Item(path, label, patient, kind, index=k) for k in keep]


def volume_depth(path: str, kind: str) -> int:
    """Number of axial slices of a NIfTI file or DICOM series, reading headers only."""
    if kind == "dicom":
        return len(_dicom_files(path))
    import nibabel as nib

    shape = cast("SpatialImage", nib.load(path)).shape  # NIfTI loads as a SpatialImage
    if len(shape) > 3 and any(s > 1 for s in shape[3:]):
        raise UsageError(f"{path} is a {len(shape)}D NIfTI; only 2D and 3D images are supported")
    return shape[2] if len(shape) >= 3 else 1


@lru_cache(maxsize=256)
def _dicom_files(folder: str) -> tuple[str, ...]:
    """The series' files in slice order (position along the patient axis, then instance number)."""
    import pydicom

    keyed = []
    for f in sorted(os.listdir(folder)):
        if f.lower().endswith(".dcm"):
            ds = pydicom.dcmread(os.path.join(folder, f), stop_before_pixels=True)
            position = getattr(ds, "ImagePositionPatient", None)
            z = float(position[2]) if position is not None else 0.0
            keyed.append((z, int(getattr(ds, "InstanceNumber", 0) or 0), f))
    return tuple(os.path.join(folder, f) for _, _, f in sorted(keyed))


def _discover_npz(path: str, dims: int) -> DataIndex:
    arrays = _npz_arrays(path)
    missing = [f"{s}_{k}" for s in SPLITS for k in ("images", "labels") if f"{s}_{k}" not in arrays]
    if missing:
        raise UsageError(f"{path} is not a MedMNIST file: missing {', '.join(missing)}")
    items = []
    for split in SPLITS:
        labels = np.asarray(arrays[f"{split}_labels"]).reshape(len(arrays[f"{split}_labels"]), -1)
        if labels.shape[1] != 1 or not set(np.unique(labels)) <= {0, 1}:
            raise UsageError(f"{path}: only binary labels (0/1) are supported")
        volume = arrays[f"{split}_images"].ndim == 4 and arrays[f"{split}_images"].shape[
            -1
        ] not in (1, 3)
        if (dims == 3) != volume:
            raise UsageError(
                f"{path}: holds {'3D' if volume else '2D'} images but --dims is {dims}"
            )
        items += [
            Item(path, int(y), f"{split}-{i}", "npz", i, split) for i, y in enumerate(labels[:, 0])
        ]
    return DataIndex(items=items, classes=("0", "1"))


@lru_cache(maxsize=4)
def _npz_arrays(path: str) -> dict[str, np.ndarray]:
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def read(item: Item) -> np.ndarray:
    """The sample's pixels as float32: (H, W) for images and slices, (D, H, W) for volumes.

    CT sources (NIfTI, DICOM) come back in Hounsfield units; others in their stored range.
    """
    if item.kind == "image":
        from PIL import Image

        with Image.open(item.path) as img:
            return np.asarray(img.convert("L"), dtype=np.float32)
    if item.kind == "npz":
        split = item.split
        img = np.asarray(_npz_arrays(item.path)[f"{split}_images"][item.index], dtype=np.float32)
        return img.mean(axis=-1) if img.ndim == 3 and img.shape[-1] in (1, 3) else img
    if item.kind == "dicom":
        files = _dicom_files(item.path)
        chosen = files if item.index < 0 else files[item.index : item.index + 1]
        vol = np.stack([_dicom_hu(f) for f in chosen])
        return vol if item.index < 0 else vol[0]
    return _nifti(item.path, item.index)


def _dicom_hu(path: str) -> np.ndarray:
    import pydicom

    ds = pydicom.dcmread(path)
    slope = float(getattr(ds, "RescaleSlope", 1) or 1)
    intercept = float(getattr(ds, "RescaleIntercept", 0) or 0)
    return ds.pixel_array.astype(np.float32) * slope + intercept


def _nifti(path: str, index: int) -> np.ndarray:
    import nibabel as nib

    # reads only the requested slice from disk (NIfTI loads as a SpatialImage)
    proxy = cast("SpatialImage", nib.load(path)).dataobj
    if len(proxy.shape) == 2:
        return np.asarray(proxy, dtype=np.float32).T
    if index >= 0:
        return np.asarray(proxy[:, :, index], dtype=np.float32).reshape(proxy.shape[:2]).T
    return np.asarray(proxy, dtype=np.float32).reshape(proxy.shape[:3]).transpose(2, 1, 0)

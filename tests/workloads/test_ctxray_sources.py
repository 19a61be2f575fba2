"""Each loader on real files: pydicom's and nibabel's shipped test data, PNG/JPEG, MedMNIST."""

import os
import shutil

import nibabel as nib
import numpy as np
import pydicom
import pytest
from nibabel.testing import data_path as nib_data
from PIL import Image
from pydicom.data import get_testdata_file

from launcher.workloads.ctxray.config import UsageError
from launcher.workloads.ctxray.sources import discover, read


def _dicom_series(folder, positions):
    """Copies of pydicom's CT_small.dcm as one series, written in shuffled slice order."""
    os.makedirs(folder)
    src = pydicom.dcmread(get_testdata_file("CT_small.dcm"))
    for n, z in enumerate(positions):
        ds = src.copy()
        ds.ImagePositionPatient = [0, 0, z]
        ds.InstanceNumber = n + 1
        ds.RescaleIntercept = -1024 + 10 * z  # tells the slices apart after loading
        ds.save_as(os.path.join(folder, f"img{n}.dcm"))


def test_dicom_series_are_read_in_slice_order_in_hounsfield_units(tmp_path):
    _dicom_series(tmp_path / "covid" / "P7__ct1", [30, 10, 20])
    os.makedirs(tmp_path / "normal")
    shutil.copy(os.path.join(nib_data, "anatomical.nii"), tmp_path / "normal" / "P8.nii")
    index = discover(str(tmp_path))
    assert index.classes == ("normal", "covid")
    slices = [i for i in index.items if i.kind == "dicom"]
    assert [i.patient for i in slices] == ["P7"] * 3 and all(i.label == 1 for i in slices)
    ref = pydicom.dcmread(get_testdata_file("CT_small.dcm"))
    raw = ref.pixel_array.astype(np.float32) * float(ref.RescaleSlope)
    for item, z in zip(slices, (10, 20, 30), strict=True):
        np.testing.assert_array_equal(read(item), raw + (-1024 + 10 * z))
    volume = next(i for i in discover(str(tmp_path), dims=3).items if i.kind == "dicom")
    assert read(volume).shape == (3, *ref.pixel_array.shape)


def test_nifti_volumes_become_slices_or_a_volume(tmp_path):
    for cls in ("negative", "covid"):
        os.makedirs(tmp_path / cls)
        shutil.copy(os.path.join(nib_data, "anatomical.nii"), tmp_path / cls / f"{cls}__a.nii")
    img = nib.load(os.path.join(nib_data, "anatomical.nii"))
    data = np.asarray(img.dataobj, dtype=np.float32)
    items = discover(str(tmp_path)).items
    assert len(items) == 2 * data.shape[2]
    k = items[5].index
    np.testing.assert_array_equal(read(items[5]), data[:, :, k].T)
    central = discover(str(tmp_path), slices=4).items
    middle = (data.shape[2] - 4) // 2
    assert len(central) == 8 and [i.index for i in central[:4]] == list(range(middle, middle + 4))
    vol = discover(str(tmp_path), dims=3).items[0]
    assert read(vol).shape == data.shape[::-1]


def test_four_dimensional_nifti_is_refused(tmp_path):
    for cls in ("negative", "covid"):
        os.makedirs(tmp_path / cls)
        shutil.copy(os.path.join(nib_data, "example4d.nii.gz"), tmp_path / cls / "x.nii.gz")
    with pytest.raises(UsageError, match="4D NIfTI"):
        discover(str(tmp_path))


def test_png_and_jpeg_folders_by_class(tmp_path):
    rng = np.random.default_rng(0)
    for cls, ext in (("normal", "png"), ("covid", "jpg")):
        os.makedirs(tmp_path / cls)
        for k in range(2):
            Image.fromarray(rng.integers(0, 255, (20, 30), dtype=np.uint8)).save(
                tmp_path / cls / f"Q{k}__v.{ext}"
            )
    items = discover(str(tmp_path)).items
    assert [(os.path.basename(i.path), i.label, i.patient) for i in items] == [
        ("Q0__v.png", 0, "Q0"),
        ("Q1__v.png", 0, "Q1"),
        ("Q0__v.jpg", 1, "Q0"),
        ("Q1__v.jpg", 1, "Q1"),
    ]
    png = np.asarray(Image.open(items[0].path), dtype=np.float32)
    np.testing.assert_array_equal(read(items[0]), png)
    assert read(items[2]).shape == (20, 30)
    with pytest.raises(UsageError, match="--dims 3 needs volumes"):
        discover(str(tmp_path), dims=3)


def test_medmnist_npz(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {}
    for split, n in (("train", 6), ("val", 2), ("test", 3)):
        arrays[f"{split}_images"] = rng.integers(0, 255, (n, 28, 28), dtype=np.uint8)
        arrays[f"{split}_labels"] = (np.arange(n) % 2).reshape(n, 1)
    np.savez(tmp_path / "pneumoniamnist.npz", **arrays)
    items = discover(str(tmp_path)).items
    assert [i.split for i in items].count("test") == 3 and len(items) == 11
    np.testing.assert_array_equal(read(items[7]), arrays["val_images"][1].astype(np.float32))
    assert items[7].label == 1
    np.savez(tmp_path / "broken.npz", train_images=arrays["train_images"])
    with pytest.raises(UsageError, match="missing"):
        discover(str(tmp_path / "broken.npz"))


@pytest.mark.parametrize(
    "folders, message",
    [(["covid"], "need exactly two class folders"), (["a", "b", "c"], "found 3")],
)
def test_layouts_without_two_classes_are_refused(tmp_path, folders, message):
    for f in folders:
        os.makedirs(tmp_path / f)
    with pytest.raises(UsageError, match=message):
        discover(str(tmp_path))

"""Synthetic data: deterministic by seed, labelled as synthetic, with learnable findings."""

import csv
import json

import numpy as np

from launcher.workloads.ctxray.sources import Item, discover, read
from launcher.workloads.ctxray.synth import synthesize


def _pixels(folder):
    index = discover(str(folder))
    return {i.path.split(str(folder))[1]: read(i) for i in index.items}


def test_same_seed_gives_the_same_images_and_another_seed_does_not(tmp_path):
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        synthesize(str(tmp_path / name), "xray", n=6, size=32, seed=seed)
    a, b, c = (_pixels(tmp_path / n) for n in "abc")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    assert (tmp_path / "a" / "labels.csv").read_bytes() == (
        tmp_path / "b" / "labels.csv"
    ).read_bytes()
    assert a.keys() != c.keys() or any(not np.array_equal(a[k], c[k]) for k in a)


def test_it_says_it_is_synthetic_and_groups_images_by_patient(ct_slices):
    assert "SYNTHETIC DATA" in (ct_slices / "README.txt").read_text()
    assert json.loads((ct_slices / "dataset.json").read_text())["synthetic"] is True
    with open(ct_slices / "labels.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 48 and len({r["patient"] for r in rows}) == 16
    assert {r["class"] for r in rows} == {"negative", "covid"}
    index = discover(str(ct_slices))
    assert index.classes == ("negative", "covid")
    assert {i.patient for i in index.items} == {r["patient"] for r in rows}


def test_ct_slices_are_hounsfield_units_and_positives_have_denser_lungs(ct_slices):
    index = discover(str(ct_slices))
    hu = [(read(i), i.label) for i in index.items]
    assert all(img.min() >= -1024 and img.max() < 3072 for img, _ in hu)
    assert min(img.min() for img, _ in hu) < -900  # air

    def lung_density(img):
        lung = img[(img > -950) & (img < -200)]
        return float(np.mean(lung))

    neg = np.mean([lung_density(img) for img, y in hu if y == 0])
    pos = np.mean([lung_density(img) for img, y in hu if y == 1])
    assert pos > neg + 20  # ground glass and consolidation raise lung density


def test_volumes_are_3d_nifti(tmp_path):
    synthesize(str(tmp_path), "ct", n=2, size=24, seed=0, volumes=True)
    items = discover(str(tmp_path), dims=3).items
    assert len(items) == 2 and all(isinstance(i, Item) and i.index == -1 for i in items)
    assert read(items[0]).shape == (24, 24, 24)
    assert len(discover(str(tmp_path), dims=2, slices=4).items) == 8

"""Preprocessing: CT windowing, the lung mask crop, resizing, normalising, augmentation."""

import numpy as np
import pydicom
import torch
from pydicom.data import get_testdata_file

from launcher.workloads.ctxray import preprocess as pre
from launcher.workloads.ctxray.synth import _sample_anatomy, render_ct


def test_window_maps_the_claire_window_to_unit_range():
    hu = np.array([-2000, -1250, -500, 250, 3000], dtype=np.float32)
    np.testing.assert_allclose(pre.window(hu, -500, 1500), [0, 0, 0.5, 1, 1])


def _slice(size=128):
    rng = np.random.default_rng(1)
    anatomy = _sample_anatomy(rng, positive=False)
    return render_ct(anatomy, size, 2, 0.0, rng).astype(np.float32), anatomy


def test_lung_box_crops_to_the_lungs_inside_the_body():
    hu, anatomy = _slice()
    rows, cols = pre.lung_box(hu, margin=0.0)
    # Lungs are centred at x = +-offset with half-width ~0.3 (in [-1, 1] units): expect the box to
    # span both lungs but stay off the air outside the body.
    to_px = lambda u: (u + 1) / 2 * 128  # noqa: E731
    lung_left = to_px(-anatomy.lung_offset_x - anatomy.lung_radii[2])
    lung_right = to_px(anatomy.lung_offset_x + anatomy.lung_radii[2])
    assert abs(cols.start - lung_left) < 6 and abs(cols.stop - lung_right) < 6
    assert rows.start > to_px(-anatomy.body[0]) and rows.stop < to_px(anatomy.body[0])
    lung = (hu > -940) & (hu < -700)  # parenchyma (-850 HU), not the air outside (-1000 HU)
    assert lung[rows, cols].mean() > 0.4 > lung.mean()  # mostly lung after the crop


def test_no_crop_without_lungs():
    tissue = np.full((64, 64), 40.0, dtype=np.float32)
    assert pre.lung_box(tissue) is None
    ct = pydicom.dcmread(get_testdata_file("CT_small.dcm"))
    hu = ct.pixel_array * float(ct.RescaleSlope) + float(ct.RescaleIntercept)
    box = pre.lung_box(hu)
    assert box is None or all(s.stop - s.start >= 8 for s in box)


def test_prepare_resizes_and_normalises_2d_and_3d():
    hu, _ = _slice(96)
    x = pre.prepare(hu, True, 32, (-500, 1500), True)
    assert x.shape == (1, 32, 32)
    assert abs(float(x.mean())) < 1e-4 and abs(float(x.std()) - 1) < 1e-3
    vol = np.random.default_rng(0).normal(-700, 200, (20, 40, 40)).astype(np.float32)
    assert pre.prepare(vol, True, 16, (-500, 1500), False).shape == (1, 16, 16, 16)
    xray = np.random.default_rng(0).integers(0, 255, (50, 70)).astype(np.float32)
    assert pre.prepare(xray, False, 24, (-500, 1500), True).shape == (1, 24, 24)


def test_augmentation_depends_only_on_seed_epoch_and_sample():
    x = torch.randn(1, 32, 32)
    a = pre.augment(x, pre.sample_generator(0, 3, 7))
    b = pre.augment(x, pre.sample_generator(0, 3, 7))
    c = pre.augment(x, pre.sample_generator(0, 4, 7))
    assert torch.equal(a, b) and not torch.equal(a, c) and a.shape == x.shape
    assert pre.augment(torch.randn(1, 8, 16, 16), pre.sample_generator(0, 0, 0)).shape == (
        1,
        8,
        16,
        16,
    )

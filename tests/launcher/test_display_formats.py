"""Numbers on the job and sweep pages are rounded for display only, never to zero, and money
carries its currency."""

from __future__ import annotations

from decimal import Decimal

from launcher.templatetags.launcher_format import gpu_hours, loss, metric, money


def test_loss_has_four_decimals_and_a_tiny_loss_is_not_zero():
    assert loss(0.512345678) == "0.5123"
    assert loss(0.00001234) == "0.000012"  # the one rule: two significant digits, no exponent
    assert loss(None) == "-"


def test_money_has_its_currency_and_small_amounts_keep_their_digits():
    assert money(Decimal("1234.5")) == "USD 1,234.50"
    assert money(Decimal("0.0012")) == "USD 0.0012"
    assert money(0) == "USD 0.00"


def test_gpu_hours_from_seconds():
    # 2 decimals, as the dashboard, project, allocation and report pages show GPU-hours.
    assert gpu_hours(118) == "0.03"
    assert gpu_hours(1) == "0.00028"
    assert gpu_hours(0) == "0.00"
    assert metric(0.98333) == "0.983"

"""The recommender's rows in the words of /recommend/: what each prediction rests on, said
plainly ("measured", "predicted from ..."), and a row's refusals apart from the rest of its
reasons. The API keeps the recommender's own field values (`method`: measured | flops_scaled
| roofline | none)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.recommender.core import REFUSED

#: The basis of a prediction, per the recommender's `method`: a short phrase that starts with
#: "Measured" or "Predicted" (the page's "What do these words mean?" says more).
BASIS = {
    "measured": "Measured: this model on this chip",
    "flops_scaled": "Predicted from another model measured on this chip",
    "roofline": "Predicted from this chip's peak speed (nothing measured on it)",
    "none": "No prediction",
}


@dataclass(frozen=True)
class RankedRow:
    """One ranked system as the page shows it."""

    result: Mapping[str, Any]  # the recommender's row (`Recommendation.as_dict()` and more)
    basis: str
    usable: bool  # eligible and fits in memory: it can be requested as described
    refusals: list[str]  # why it is not eligible, shown beside the verdict
    reasons: list[str]  # everything else: memory, prediction, price notes


def ranked_rows(results: Sequence[Mapping[str, Any]]) -> list[RankedRow]:
    """The page's rows, in the recommender's order."""
    return [
        RankedRow(
            result=r,
            basis=BASIS.get(r["method"], BASIS["none"]),
            usable=bool(r["eligible"] and r["fits_memory"]),
            refusals=[s.removeprefix(REFUSED) for s in r["reasons"] if s.startswith(REFUSED)],
            reasons=[s for s in r["reasons"] if not s.startswith(REFUSED)],
        )
        for r in results
    ]

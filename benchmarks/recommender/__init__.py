"""The benchmark-backed recommender: pure functions over plain dataclasses (no Django).

Typical use (the API does the same with database rows turned into these dataclasses):

    req = parse_request(payload, workloads)          # RecommendationInputError -> HTTP 400
    ranked = recommend(req, workloads, node_types, results)
    [r.as_dict() for r in ranked]
"""

from benchmarks.recommender.core import assess, pareto_front, recommend
from benchmarks.recommender.evaluate import LooCase, LooRow, leave_one_out, summarise
from benchmarks.recommender.types import (
    NEEDS,
    PRECISIONS,
    REQUEST_PRECISIONS,
    SENSITIVITY_TIERS,
    STRATEGIES,
    BenchmarkRecord,
    NodeTypeInfo,
    Recommendation,
    Workload,
    WorkloadRequest,
)
from benchmarks.recommender.validation import RecommendationInputError, parse_request

__all__ = [
    "NEEDS",
    "PRECISIONS",
    "REQUEST_PRECISIONS",
    "SENSITIVITY_TIERS",
    "STRATEGIES",
    "BenchmarkRecord",
    "LooCase",
    "LooRow",
    "NodeTypeInfo",
    "Recommendation",
    "RecommendationInputError",
    "Workload",
    "WorkloadRequest",
    "assess",
    "leave_one_out",
    "pareto_front",
    "parse_request",
    "recommend",
    "summarise",
]

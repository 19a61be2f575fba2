"""Include under /api/v1/: benchmarks/ (list, POST a result) and recommendations/ (POST)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter()
router.register("benchmarks", views.BenchmarkResultViewSet, basename="benchmark-result")

urlpatterns = [
    path("recommendations/", views.RecommendationView.as_view(), name="api-recommendations"),
    *router.urls,
]

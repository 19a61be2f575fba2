from rest_framework.routers import SimpleRouter

from . import placement, views

router = SimpleRouter()
router.register("jobs", views.JobViewSet, basename="job")
router.register("sweeps", views.SweepViewSet, basename="sweep")
router.register("placements", placement.PlacementViewSet, basename="placement")

urlpatterns = router.urls

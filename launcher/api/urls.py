from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter()
router.register("jobs", views.JobViewSet, basename="job")
router.register("sweeps", views.SweepViewSet, basename="sweep")

urlpatterns = router.urls

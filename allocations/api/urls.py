from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter()
router.register("facilities", views.FacilityViewSet, basename="facility")
router.register("projects", views.ProjectViewSet, basename="project")
router.register("requests", views.RequestViewSet, basename="request")
router.register("allocations", views.AllocationViewSet, basename="allocation")

urlpatterns = router.urls

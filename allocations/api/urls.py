from django.urls import path
from rest_framework.routers import SimpleRouter

from . import views
from .balances import OodBalancesView
from .datasets import DatasetViewSet

router = SimpleRouter()
router.register("facilities", views.FacilityViewSet, basename="facility")
router.register("projects", views.ProjectViewSet, basename="project")
router.register("requests", views.RequestViewSet, basename="request")
router.register("allocations", views.AllocationViewSet, basename="allocation")
router.register("datasets", DatasetViewSet, basename="dataset")

urlpatterns = [
    path("balances/ood.json", OodBalancesView.as_view(), name="ood-balances"),
    *router.urls,
]

from rest_framework.routers import SimpleRouter

from .api import NotebookViewSet

router = SimpleRouter()
router.register("notebooks", NotebookViewSet, basename="notebook")

urlpatterns = router.urls

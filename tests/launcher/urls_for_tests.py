"""The portal's URLs plus the launcher's, until portal/urls.py includes them (test-only)."""
from django.urls import include, path

from portal.urls import urlpatterns as portal_urlpatterns

urlpatterns = [
    path("api/v1/", include("launcher.api.urls")),
    path("", include("launcher.urls")),
    *portal_urlpatterns,
]

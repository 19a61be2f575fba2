from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from . import views
from .api import TokenView

api_patterns = [
    path("auth/token/", TokenView.as_view(), name="api-token"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include("allocations.api.urls")),
    path("", include("portal.onboarding.api_urls")),
    path("", include("portal.knowledge.api_urls")),
    path("", include("benchmarks.api.urls")),
    path("", include("launcher.api.urls")),
    path("", include("launcher.cloud.api_urls")),
]

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("healthz", views.healthz, name="healthz"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", include(api_patterns)),
    path("", include("allocations.urls")),
    path("", include("portal.onboarding.urls")),
    path("", include("portal.knowledge.urls")),
    path("", include("benchmarks.urls")),
    path("", include("launcher.urls")),
    path("", include("launcher.cloud.urls")),
]

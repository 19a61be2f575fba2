from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from . import views
from .api import TokenView
from .identity import views as identity_views
from .reports import views as report_views
from .staff import views as staff_views
from .tokens.api import LogoutView, MeView

api_patterns: list[URLPattern | URLResolver] = [
    path("auth/token/", TokenView.as_view(), name="api-token"),
    path("auth/me/", MeView.as_view(), name="api-me"),
    path("auth/logout/", LogoutView.as_view(), name="api-logout"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its start-up script as a file: the CSP allows no inline script.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("reports/usage/", report_views.UsageReportView.as_view(), name="api-usage-report"),
    path("", include("allocations.api.urls")),
    path("", include("portal.onboarding.api_urls")),
    path("", include("portal.knowledge.api_urls")),
    path("", include("benchmarks.api.urls")),
    path("", include("launcher.api.urls")),
    path("", include("launcher.cloud.api_urls")),
    path("", include("launcher.notebooks.api_urls")),
]

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("healthz", views.healthz, name="healthz"),
    path("staff/", staff_views.staff_home, name="staff-home"),
    path("reports/usage/", report_views.usage_report_page, name="usage-report"),
    path(
        "staff/allocations/<id:pk>/<slug:action>/",
        staff_views.staff_allocation_action,
        name="staff-allocation-action",
    ),
    path("accounts/login/", identity_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", identity_views.LogoutView.as_view(), name="logout"),
    path("", include("portal.identity.urls")),
    # The OpenID Connect provider JupyterHub signs users in with (portal/provider/).
    path("o/", include("portal.provider.urls")),
    path("admin/", admin.site.urls),
    path("api/v1/", include(api_patterns)),
    path("", include("allocations.urls")),
    path("", include("portal.onboarding.urls")),
    path("", include("portal.knowledge.urls")),
    path("", include("benchmarks.urls")),
    path("", include("launcher.urls")),
    path("", include("launcher.cloud.urls")),
    path("", include("launcher.notebooks.urls")),
    path("", include("portal.tokens.urls")),
]

# JSON under /api/, the usual pages elsewhere (portal/errors.py).
handler404 = "portal.errors.page_not_found"
handler500 = "portal.errors.server_error"

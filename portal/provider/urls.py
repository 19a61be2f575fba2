"""The provider's endpoints under /o/: authorize, token, revoke, and OpenID Connect's
discovery, keys, userinfo and logout. Not the toolkit's application-management pages (only
`manage.py hub_client` registers a client) nor its device flow."""

from django.urls import path, re_path
from oauth2_provider import views

from .views import LogoutView

app_name = "oauth2_provider"  # the namespace the toolkit reverses its own URLs in

urlpatterns = [
    path("authorize/", views.AuthorizationView.as_view(), name="authorize"),
    path("token/", views.TokenView.as_view(), name="token"),
    path("revoke_token/", views.RevokeTokenView.as_view(), name="revoke-token"),
    re_path(
        r"^\.well-known/openid-configuration/?$",
        views.ConnectDiscoveryInfoView.as_view(),
        name="oidc-connect-discovery-info",
    ),
    path(".well-known/jwks.json", views.JwksInfoView.as_view(), name="jwks-info"),
    path("userinfo/", views.UserInfoView.as_view(), name="user-info"),
    path("logout/", LogoutView.as_view(), name="rp-initiated-logout"),
]

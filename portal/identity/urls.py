from django.urls import path

from . import views

# Names as mozilla-django-oidc reverses them (the callback's redirect_uri).
urlpatterns = [
    path("oidc/authenticate/", views.AuthenticateView.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", views.CallbackView.as_view(), name="oidc_authentication_callback"),
]

from django.urls import path

from . import views

urlpatterns = [
    path("onboarding/", views.walk, name="onboarding"),
    path("onboarding/track/", views.track, name="onboarding-track"),
    path("onboarding/stats/", views.stats, name="onboarding-stats"),
    path("onboarding/stats/<id:pk>/", views.stats, name="onboarding-stats-chart"),
]

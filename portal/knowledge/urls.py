from django.urls import path

from . import views

urlpatterns = [
    path("knowledge/", views.index, name="knowledge"),
    path("knowledge/<slug:slug>/", views.page, name="knowledge-page"),
]

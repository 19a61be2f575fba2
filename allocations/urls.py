from django.urls import path

from . import views

urlpatterns = [
    path("requests/new/", views.request_new, name="request-new"),
    path("requests/<int:pk>/", views.request_detail, name="request-detail"),
    path("requests/<int:pk>/edit/", views.request_edit, name="request-edit"),
    path("requests/<int:pk>/<slug:action>/", views.request_action, name="request-action"),
    path("review/", views.review_queue, name="review-queue"),
    path("allocations/<int:pk>/", views.allocation_detail, name="allocation-detail"),
]

from django.urls import path

from . import account_views, dataset_views, list_views, project_views, views

urlpatterns = [
    path("requests/", list_views.request_list, name="request-list"),
    path("allocations/", list_views.allocation_list, name="allocation-list"),
    path("requests/new/", views.request_new, name="request-new"),
    path("requests/<id:pk>/", views.request_detail, name="request-detail"),
    path("requests/<id:pk>/edit/", views.request_edit, name="request-edit"),
    path("requests/<id:pk>/<slug:action>/", views.request_action, name="request-action"),
    path("review/", views.review_queue, name="review-queue"),
    path(
        "account/notifications/", account_views.notification_settings, name="notification-settings"
    ),
    path("projects/<id:pk>/", project_views.project_detail, name="project-detail"),
    path(
        "projects/<id:pk>/members/<slug:action>/",
        project_views.project_members,
        name="project-members",
    ),
    path("projects/<id:pk>/datasets/", dataset_views.project_datasets, name="project-datasets"),
    path(
        "projects/<id:pk>/datasets/<id:dataset_id>/",
        dataset_views.dataset_edit,
        name="dataset-edit",
    ),
    path(
        "projects/<id:pk>/datasets/<id:dataset_id>/delete/",
        dataset_views.dataset_delete,
        name="dataset-delete",
    ),
]

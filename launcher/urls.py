from django.urls import path

from . import views

urlpatterns = [
    path("allocations/<id:pk>/", views.allocation_detail, name="allocation-detail"),
    path("jobs/<id:pk>/", views.job_detail, name="job-detail"),
    path("jobs/<id:pk>/cancel/", views.job_cancel, name="job-cancel"),
    path("jobs/<id:pk>/rerun/", views.job_rerun, name="job-rerun"),
    path("sweeps/<id:pk>/", views.sweep_detail, name="sweep-detail"),
    path("sweeps/<id:pk>/cancel/", views.sweep_cancel, name="sweep-cancel"),
    path("allocations/<id:pk>/launch/", views.allocation_launch, name="allocation-launch"),
    path("allocations/<id:pk>/sweep/", views.allocation_sweep, name="allocation-sweep"),
]

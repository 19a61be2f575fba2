from django.urls import path

from . import views

urlpatterns = [
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
    path("jobs/<int:pk>/cancel/", views.job_cancel, name="job-cancel"),
    path("jobs/<int:pk>/rerun/", views.job_rerun, name="job-rerun"),
    path("sweeps/<int:pk>/", views.sweep_detail, name="sweep-detail"),
    path("allocations/<int:pk>/launch/", views.allocation_launch, name="allocation-launch"),
    path("allocations/<int:pk>/sweep/", views.allocation_sweep, name="allocation-sweep"),
]

from django.urls import path

from . import views

urlpatterns = [
    path("allocations/<id:pk>/notebook/", views.allocation_notebook, name="allocation-notebook"),
    path("notebooks/<id:pk>/", views.notebook_detail, name="notebook-detail"),
    path("notebooks/<id:pk>/stop/", views.notebook_stop, name="notebook-stop"),
]

from django.urls import path

from . import views

urlpatterns = [path("clusters/<id:pk>/", views.cluster_detail, name="cluster-detail")]

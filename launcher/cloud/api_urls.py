from django.urls import path

from . import api

urlpatterns = [
    path("clusters/", api.ClusterList.as_view(), name="api-clusters"),
    path("clusters/<int:pk>/", api.ClusterDetail.as_view(), name="api-cluster-detail"),
]

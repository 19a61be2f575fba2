"""Clusters and nodes on the API: `GET clusters/`, `GET clusters/{id}/` (others' are 404)."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework.generics import ListAPIView, RetrieveAPIView

from core import strict

from .models import CloudTask, Cluster, Node
from .selectors import visible_clusters


class NodeOut(strict.ModelSerializer):
    class Meta:
        model = Node
        fields = [
            "id",
            "role",
            "instance_id",
            "instance_type",
            "market",
            "zone",
            "gpus",
            "price_per_hour",
            "state",
            "state_reason",
            "running_at",
            "ended_at",
            "image_id",
            "image_source",
        ]


class TaskOut(strict.ModelSerializer):
    class Meta:
        model = CloudTask
        fields = [
            "id",
            "job_id",
            "state",
            "state_reason",
            "instance_type",
            "gpus",
            "attempt",
            "node",
            "progress",
            "estimate_cost",
            "created_at",
            "finished_at",
        ]


class ClusterOut(strict.ModelSerializer):
    nodes = NodeOut(many=True, read_only=True)
    tasks = TaskOut(many=True, read_only=True)
    project = strict.CharField(source="allocation.project.code", read_only=True)
    facility = strict.CharField(source="facility.slug", read_only=True)

    class Meta:
        model = Cluster
        fields = [
            "id",
            "allocation",
            "project",
            "facility",
            "state",
            "state_reason",
            "region",
            "allow_on_demand",
            "worker_idle_seconds",
            "idle_seconds",
            "idle_since",
            "instance_profile",
            "security_group_id",
            "created_at",
            "nodes",
            "tasks",
        ]


class ClusterList(ListAPIView):
    serializer_class = ClusterOut

    def get_queryset(self) -> QuerySet[Cluster]:
        return visible_clusters(self.request.user)


class ClusterDetail(RetrieveAPIView):
    serializer_class = ClusterOut

    def get_queryset(self) -> QuerySet[Cluster]:
        return visible_clusters(self.request.user)

"""Goals and sprints (with the sprint's current metrics)."""

from __future__ import annotations

from rest_framework import serializers

from boards.api.serializers.base import ReadOnlyModelSerializer
from boards.coordination.models.projects import Goal, Sprint
from boards.coordination.selectors.sprints import sprint_metrics_current


class GoalSerializer(ReadOnlyModelSerializer):
    id = serializers.CharField(source="goal_id", read_only=True)

    class Meta:
        model = Goal
        fields = ["id", "description", "spec_ref", "created", "status", "alignment_history"]


class SprintSerializer(ReadOnlyModelSerializer):
    id = serializers.CharField(source="sprint_id", read_only=True)
    goal = serializers.SlugRelatedField(slug_field="goal_id", read_only=True)
    planned = serializers.SlugRelatedField(slug_field="key", many=True, read_only=True)
    stretch = serializers.SlugRelatedField(slug_field="key", many=True, read_only=True)
    metrics = serializers.SerializerMethodField()

    class Meta:
        model = Sprint
        fields = [
            "id",
            "goal",
            "status",
            "planned",
            "stretch",
            "started",
            "deadline",
            "checkpoint_at",
            "ended",
            "metrics",
            "retrospective",
        ]

    def get_metrics(self, sprint: Sprint) -> dict:
        return sprint_metrics_current(sprint)

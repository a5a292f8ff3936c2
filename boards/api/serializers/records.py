"""The records around tasks: events, human notes, handoffs, anomalies, discoveries."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from boards.api.serializers.base import ReadOnlyModelSerializer
from boards.coordination.models.records import Anomaly, Event
from boards.coordination.models.tasks import Discovery, Handoff, HumanNote

# An event as a line of a task's timeline: in the API's answer (with its id, task and data) and
# under the task in the admin.
EVENT_FIELDS = (
    "timestamp",
    "actor_kind",
    "actor_id",
    "action",
    "from_status",
    "to_status",
    "outcome",
    "detail",
)


class EventSerializer(ReadOnlyModelSerializer):
    """An event; a config change of the escalation webhook reads "changed" unless the context
    says the reader is an admin (`admin`: True), who sees its URLs redacted (docs/security.md)."""

    task = serializers.SlugRelatedField(slug_field="key", read_only=True, allow_null=True)
    detail = serializers.CharField(source="shown_detail", read_only=True)
    data = serializers.SerializerMethodField()

    @extend_schema_field({"type": "object", "additionalProperties": True})
    def get_data(self, event: Event) -> dict:
        return event.shown_data(admin=bool(self.context.get("admin")))

    class Meta:
        model = Event
        fields = ["id", "task", *EVENT_FIELDS, "data"]


class HumanNoteSerializer(ReadOnlyModelSerializer):
    task = serializers.SlugRelatedField(slug_field="key", read_only=True, allow_null=True)
    author = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = HumanNote
        fields = ["timestamp", "task", "message", "author"]


class HandoffSerializer(ReadOnlyModelSerializer):
    class Meta:
        model = Handoff
        fields = [
            "agent",
            "context_used",
            "timestamp",
            "summary",
            "next_action",
            "approach",
            "blockers",
            "files_modified",
            "next_steps",
        ]


class AnomalySerializer(ReadOnlyModelSerializer):
    task = serializers.SlugRelatedField(slug_field="key", read_only=True, allow_null=True)

    class Meta:
        model = Anomaly
        fields = ["id", "timestamp", "task", "reporter", "type", "details"]


class DiscoverySerializer(ReadOnlyModelSerializer):
    id = serializers.CharField(source="disc_id", read_only=True)

    class Meta:
        model = Discovery
        fields = [
            "id",
            "by",
            "during",
            "description",
            "severity",
            "urgency",
            "recommendation",
            "created",
            "converted_to_task",
            "triage",
            "triage_note",
        ]

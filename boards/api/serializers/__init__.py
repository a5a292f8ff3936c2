"""API serializers: inputs are validated shapes only, outputs are plain reads (STYLE.md API).

No business logic lives here: views pass validated data to services. One module an entity:
`errors` (the error envelope), `tasks` (a task, its detail and reviews, `/work` and the claims'
answers), `records` (events, notes, handoffs, anomalies, discoveries), `planning` (goals,
sprints), `project` (settings, state, notification preferences, the inbox), `oversight` (alerts,
the circuit breaker); read as `from boards.api import serializers as s` … `s.TaskSerializer`.
"""

from __future__ import annotations

from boards.api.serializers.errors import (
    ErrorBodySerializer,
    ErrorSerializer,
)
from boards.api.serializers.oversight import (
    AlertSerializer,
    BreakerCheckSerializer,
    BreakerSerializer,
)
from boards.api.serializers.planning import (
    GoalSerializer,
    SprintSerializer,
)
from boards.api.serializers.project import (
    ConfigSerializer,
    InboxCheckpointSerializer,
    InboxDiscoverySerializer,
    InboxPauseSerializer,
    InboxSerializer,
    InboxTaskSerializer,
    NotificationsSerializer,
    ProjectStateSerializer,
)
from boards.api.serializers.records import (
    AnomalySerializer,
    DiscoverySerializer,
    EventSerializer,
    HandoffSerializer,
    HumanNoteSerializer,
)
from boards.api.serializers.tasks import (
    ClaimResultSerializer,
    ReviewClaimResultSerializer,
    ReviewSerializer,
    TaskDetailSerializer,
    TaskSerializer,
    WorkSerializer,
)

__all__ = [
    "AlertSerializer",
    "AnomalySerializer",
    "BreakerCheckSerializer",
    "BreakerSerializer",
    "ClaimResultSerializer",
    "ConfigSerializer",
    "DiscoverySerializer",
    "ErrorBodySerializer",
    "ErrorSerializer",
    "EventSerializer",
    "GoalSerializer",
    "HandoffSerializer",
    "HumanNoteSerializer",
    "InboxCheckpointSerializer",
    "InboxDiscoverySerializer",
    "InboxPauseSerializer",
    "InboxSerializer",
    "InboxTaskSerializer",
    "NotificationsSerializer",
    "ProjectStateSerializer",
    "ReviewClaimResultSerializer",
    "ReviewSerializer",
    "SprintSerializer",
    "TaskDetailSerializer",
    "TaskSerializer",
    "WorkSerializer",
]

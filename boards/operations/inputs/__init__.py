"""What each operation accepts: one validation of every input, whoever sends it.

The API validates request bodies with these serializers, the board's HTML forms and the Django
admin's action forms go through the same ones (boards.operations), so a bound, a required field
or a refused character is written once. A field a serializer does not know is a 400 naming it.

One module a group: `base` (what every input shares), `work`, `usage`, `oversight`, `planning`,
`settings`, `agents`; read as `from boards.operations import inputs as i` … `i.ClaimInput`.
"""

from __future__ import annotations

from boards.operations.inputs.agents import (
    AgentCreateInput,
    AvailabilityInput,
    EventQueryInput,
    HeartbeatInput,
    KeyInput,
    RegisterInput,
)
from boards.operations.inputs.base import (
    COMMIT,
    KEY,
    InputSerializer,
    InputSerializerSchema,
    ReasonInput,
    limit_field,
)
from boards.operations.inputs.oversight import (
    ANOMALY_DETAILS_MAX_CHARS,
    AnomalyInput,
    ApprovalInput,
    DeadlineInput,
    DecisionInput,
    DiscoveryInput,
    LimitsInput,
    LogInput,
    NoteInput,
    OverrideBlockInput,
)
from boards.operations.inputs.planning import (
    ConvertTaskInput,
    CreateTaskInput,
    DependenciesInput,
    GoalEditInput,
    GoalInput,
    InviteInput,
    NewTaskInput,
    ProjectInput,
    RescopeInput,
    SprintInput,
    TaskEditInput,
    TriageInput,
)
from boards.operations.inputs.settings import (
    ConfigInput,
    LimitsField,
    NotificationsInput,
    config_number,
)
from boards.operations.inputs.usage import (
    BudgetInput,
    ModelUsageInput,
    RoundedDecimalField,
    UsageInput,
)
from boards.operations.inputs.work import (
    BlockInput,
    ChangedFileInput,
    ChangeSummaryInput,
    ClaimInput,
    HandoffInput,
    MergeInput,
    QuotaPauseInput,
    RunFinishInput,
    RunOutputInput,
    RunStartInput,
    SubmitInput,
    VerdictInput,
)

__all__ = [
    "ANOMALY_DETAILS_MAX_CHARS",
    "COMMIT",
    "KEY",
    "AgentCreateInput",
    "AnomalyInput",
    "ApprovalInput",
    "AvailabilityInput",
    "BlockInput",
    "BudgetInput",
    "ChangeSummaryInput",
    "ChangedFileInput",
    "ClaimInput",
    "ConfigInput",
    "ConvertTaskInput",
    "CreateTaskInput",
    "DeadlineInput",
    "DecisionInput",
    "DependenciesInput",
    "DiscoveryInput",
    "EventQueryInput",
    "GoalEditInput",
    "GoalInput",
    "HandoffInput",
    "HeartbeatInput",
    "InputSerializer",
    "InputSerializerSchema",
    "InviteInput",
    "KeyInput",
    "LimitsField",
    "LimitsInput",
    "LogInput",
    "MergeInput",
    "ModelUsageInput",
    "NewTaskInput",
    "NoteInput",
    "NotificationsInput",
    "OverrideBlockInput",
    "ProjectInput",
    "QuotaPauseInput",
    "ReasonInput",
    "RegisterInput",
    "RescopeInput",
    "RoundedDecimalField",
    "RunFinishInput",
    "RunOutputInput",
    "RunStartInput",
    "SprintInput",
    "SubmitInput",
    "TaskEditInput",
    "TriageInput",
    "UsageInput",
    "VerdictInput",
    "config_number",
    "limit_field",
]

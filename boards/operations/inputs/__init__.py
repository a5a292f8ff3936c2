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
    EventQueryInput,
    HeartbeatInput,
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
from boards.operations.inputs.contract import contract_input
from boards.operations.inputs.oversight import (
    ANOMALY_DETAILS_MAX_CHARS,
    AnomalyInput,
    LogInput,
)
from boards.operations.inputs.planning import (
    ConvertTaskInput,
    CreateTaskInput,
    InviteInput,
    NewTaskInput,
    ProjectInput,
    RescopeInput,
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
    ChangedFileInput,
    ChangeSummaryInput,
    RunOutputInput,
    SubmitInput,
)

__all__ = [
    "ANOMALY_DETAILS_MAX_CHARS",
    "COMMIT",
    "KEY",
    "AgentCreateInput",
    "AnomalyInput",
    "BudgetInput",
    "ChangeSummaryInput",
    "ChangedFileInput",
    "ConfigInput",
    "ConvertTaskInput",
    "CreateTaskInput",
    "EventQueryInput",
    "HeartbeatInput",
    "InputSerializer",
    "InputSerializerSchema",
    "InviteInput",
    "LimitsField",
    "LogInput",
    "ModelUsageInput",
    "NewTaskInput",
    "NotificationsInput",
    "ProjectInput",
    "ReasonInput",
    "RegisterInput",
    "RescopeInput",
    "RoundedDecimalField",
    "RunOutputInput",
    "SubmitInput",
    "TriageInput",
    "UsageInput",
    "config_number",
    "contract_input",
    "limit_field",
]

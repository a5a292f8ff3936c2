"""Django's entry point for the `boards` app's rows: it imports every domain's models module, so
the app registry, migrations and the admin see them. Code imports a model from its domain
(`boards.coordination.models.tasks`, `boards.watch.models`), never from here.

Table names and the app label stay `boards` whatever domain a model lives in (no data migration).
"""

from boards.coordination.models.projects import *  # noqa: F403
from boards.coordination.models.projects import _default_retry_backoff  # noqa: F401 (0011)
from boards.coordination.models.records import *  # noqa: F403
from boards.coordination.models.tasks import *  # noqa: F403
from boards.watch.models import *  # noqa: F403

"""The figures' types and the period they cover (issue #13): percentiles as PostgreSQL's
`percentile_cont` computes them, a Spread of durations, a state's stays, an agent's and the
cost's figures; and `Epoch`, a moment as seconds in SQL."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from django.db.models import FloatField, Func

from boards import protocol as p
from boards.coordination.models.projects import Sprint
from boards.protocol import Action

DEFAULT_DAYS = 14
MAX_DAYS = 366  # one point a day: a year is 366 points, enough for a chart and a table
SLOWEST = 5  # the slowest stays listed per state

VERDICTS = (Action.APPROVED, Action.REJECTED)
CLAIMS = (Action.CLAIMED, Action.REASSIGNED)


def percentile(values: list[float], q: int, *, presorted: bool = False) -> float | None:
    """The q-th percentile (0–100) by linear interpolation between closest ranks; None if empty."""
    if not values:
        return None
    ordered = values if presorted else sorted(values)
    low, high, hundredths = _closest_ranks(len(ordered), q)
    return _interpolate(ordered[low], ordered[high], hundredths)


def _closest_ranks(n: int, q: int) -> tuple[int, int, int]:
    """The two ranks (from 0) the q-th percentile of n values lies between, and how far past
    the lower one in hundredths: whole numbers, so no binary fraction creeps into exact inputs
    (`FLOW_SQL` picks the same ranks)."""
    low, hundredths = divmod((n - 1) * q, 100)
    return low, min(low + 1, n - 1), hundredths


def _interpolate(low: float, high: float, hundredths: int) -> float:
    return low + (high - low) * hundredths / 100


@dataclass(frozen=True)
class Period:
    start: datetime
    end: datetime
    sprint: Sprint | None = None

    @property
    def days(self) -> list[date]:
        # A period ending at midnight ends with the day before it.
        last_moment = max(self.start, self.end - timedelta(microseconds=1))
        first, last = self.start.astimezone(UTC).date(), last_moment.astimezone(UTC).date()
        return [first + timedelta(days=i) for i in range((last - first).days + 1)]

    def samples(self) -> list[datetime]:
        """The CFD's moments: the end of each UTC day, the last one the period's end."""
        ends = [datetime.combine(d + timedelta(days=1), time(), UTC) for d in self.days]
        return [min(moment, self.end) for moment in ends]


def insights_period(
    *,
    now: datetime,
    sprint: Sprint | None = None,
    start: date | None = None,
    end: date | None = None,
) -> Period:
    """The period asked for: whole UTC days from `start` to `end` (inclusive, the last one up to
    now), else the sprint's run (started → ended or now), else the last 14 days."""
    if sprint is not None and start is None and end is None and sprint.started:
        return Period(sprint.started, min(sprint.ended or now, now), sprint)
    last = min(end or now.astimezone(UTC).date(), now.astimezone(UTC).date())
    first = start or last - timedelta(days=DEFAULT_DAYS - 1)
    first = max(first, last - timedelta(days=MAX_DAYS - 1))
    if first > last:
        first = last
    end_moment = min(datetime.combine(last + timedelta(days=1), time(), UTC), now)
    return Period(datetime.combine(first, time(), UTC), end_moment, sprint)


@dataclass(frozen=True)
class Stay:
    key: str
    state: str
    entered: datetime
    seconds: float
    ongoing: bool


@dataclass(frozen=True)
class Spread:
    """Percentiles of durations (seconds) or counts."""

    n: int
    p50: float | None
    p90: float | None
    max: float | None

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        ordered = sorted(values)
        return cls(
            len(ordered),
            percentile(ordered, 50, presorted=True),
            percentile(ordered, 90, presorted=True),
            ordered[-1] if ordered else None,
        )


@dataclass(frozen=True)
class StateTimes:
    state: str
    spread: Spread
    slowest: list[Stay]


def _percent(part: int, whole: int) -> float | None:
    """`part` as a percentage of `whole`; None when there is no whole to speak of."""
    return 100 * part / whole if whole else None


@dataclass
class AgentFigures:
    agent_id: str
    role: str = ""
    claims: int = 0
    blocks: int = 0
    lease_expiries: int = 0
    approvals_received: int = 0
    rejections_received: int = 0
    rounds_to_approval: list[int] = field(default_factory=list)
    approvals_given: int = 0
    rejections_given: int = 0

    @property
    def verdicts_received(self) -> int:
        return self.approvals_received + self.rejections_received

    @property
    def approval_rate(self) -> float | None:
        """Percentage of the verdicts on its work that approved it."""
        return _percent(self.approvals_received, self.verdicts_received)

    @property
    def rejection_rate(self) -> float | None:
        return _percent(self.rejections_received, self.verdicts_received)

    @property
    def mean_rounds_to_approval(self) -> float | None:
        rounds = self.rounds_to_approval
        return sum(rounds) / len(rounds) if rounds else None

    @property
    def verdicts_given(self) -> int:
        return self.approvals_given + self.rejections_given

    @property
    def given_approval_rate(self) -> float | None:
        return _percent(self.approvals_given, self.verdicts_given)

    @property
    def rubber_stamp(self) -> bool:
        return p.rubber_stamp(self.approvals_given, self.verdicts_given)


@dataclass(frozen=True)
class Cost:
    usd: Decimal = Decimal(0)
    tokens: int = 0


@dataclass(frozen=True)
class CostFigures:
    per_day: list[tuple[date, Cost]] = field(default_factory=list)
    per_agent: list[tuple[str, Cost]] = field(default_factory=list)  # most expensive first
    per_task: list[tuple[str, Cost]] = field(default_factory=list)  # "" for no task
    per_merged_task: list[tuple[str, Cost]] = field(default_factory=list)

    @property
    def total(self) -> Cost:
        return Cost(
            sum((c.usd for _, c in self.per_day), Decimal(0)),
            sum(c.tokens for _, c in self.per_day),
        )


class Epoch(Func):
    """A moment as seconds since 1970 (float8): 40,000 of them load several times faster than
    datetimes (psycopg parses each timestamptz from text), and the arithmetic is plain.

    `date_part`, not `EXTRACT`: since PostgreSQL 14 EXTRACT computes a numeric, which costs
    ~20-70 ms over the bench's 35,000 transitions; date_part divides the whole microseconds in
    float8, correctly rounded, the same value (`datetime.timestamp()`'s too)."""

    template = "date_part('epoch', %(expressions)s)"
    output_field = FloatField()


def epoch_moment(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def spread_of(n: int, values: list[float]) -> Spread:
    """The Spread of n durations from the ranks' values `FLOW_SQL` picked (p50's two closest
    ranks, p90's, the longest): `percentile`'s arithmetic, on the same values."""
    low50, high50, low90, high90, longest, _slowest = values
    p50 = _interpolate(low50, high50, _closest_ranks(n, 50)[2])
    p90 = _interpolate(low90, high90, _closest_ranks(n, 90)[2])
    return Spread(n, p50, p90, longest)

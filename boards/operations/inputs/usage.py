"""Usage reports (per model, a run's totals so far) and budgets (issue 24)."""

from __future__ import annotations

import decimal

from rest_framework import serializers

from boards import protocol as p
from boards.operations.inputs.base import InputSerializer


class RoundedDecimalField(serializers.DecimalField):
    """A decimal that takes more places than it keeps (a CLI's float cost, 0.12345678 USD):
    rounded half up to `decimal_places`, then checked as DRF checks any decimal."""

    def validate_precision(self, value):
        if value.is_finite() and value.adjusted() < self.max_digits:  # else: max_digits fails
            value = value.quantize(
                decimal.Decimal(1).scaleb(-self.decimal_places), rounding=decimal.ROUND_HALF_UP
            )
        return super().validate_precision(value)


def _tokens() -> serializers.IntegerField:
    return serializers.IntegerField(
        required=False, default=0, min_value=0, max_value=p.USAGE_TOKENS_MAX
    )


class ModelUsageInput(InputSerializer):
    """One model's usage in a run so far (issue 24): running totals, not increments."""

    model = serializers.CharField(required=False, default="", allow_blank=True, max_length=100)
    input_tokens = _tokens()
    output_tokens = _tokens()
    cache_read_tokens = _tokens()
    cache_write_tokens = _tokens()
    # A float from JSON, checked finite and bounded; stored as a decimal of 6 places.
    cost_usd = RoundedDecimalField(
        required=False,
        default=0,
        max_digits=14,
        decimal_places=6,
        min_value=0,
        max_value=p.USAGE_COST_MAX_USD,
        coerce_to_string=False,
    )


class UsageInput(InputSerializer):
    usage = ModelUsageInput(many=True, max_length=p.USAGE_MODELS_MAX, allow_empty=False)
    run = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=2**62,
        help_text="the run's id (its supervisor knows it); else the agent's running run",
    )


class BudgetInput(InputSerializer):
    scope = serializers.ChoiceField(choices=p.BUDGET_SCOPES)
    subject = serializers.CharField(
        required=False,
        default="",
        allow_blank=True,
        max_length=64,
        help_text="the goal, sprint, agent or task id; empty for the project",
    )
    limit_usd = RoundedDecimalField(
        required=False,
        allow_null=True,
        default=None,
        max_digits=14,
        decimal_places=2,
        min_value=p.BUDGET_BOUNDS["limit_usd"][0],
        max_value=p.BUDGET_BOUNDS["limit_usd"][1],
        coerce_to_string=False,
        help_text="USD; null or absent: no USD limit",
    )
    limit_tokens = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=p.BUDGET_BOUNDS["limit_tokens"][0],
        max_value=p.BUDGET_BOUNDS["limit_tokens"][1],
        help_text="tokens (input, output, cache read and write); null or absent: no token "
        "limit. With neither limit the budget is removed.",
    )

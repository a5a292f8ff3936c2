"""The reviewer's operations: claiming a review, its verdict, and reporting the approved task
merged (or failed to merge) into integration.
"""

from __future__ import annotations

from agents.client.contract.base import KEY, REASON, REVIEWER_ONLY, E, Endpoint, P
from agents.client.wire import VERDICTS

# One entry a row, its fields packed: `ruff format` would put each field on a line of its
# own (the table twice as long, no longer read as rows); so not formatted, here only.
# fmt: off
REVIEWS: tuple[Endpoint, ...] = (
    E("review_claim_next", "POST", "reviews/claim-next", "api-review-claim-next",
        "reviews_claim_next", result="next_review",
        client="review_claim_next", cli=("review", "claim-next"),
        description=(
            "Claim the best review open to this reviewer (READY_FOR_REVIEW by priority then age, "
            "the very slot rule of review/claim); a reviewer holding a live review gets it back. "
            "`review` and `task` are null when there is none."
        ),
    ),
    E("review_claim", "POST", "tasks/{key}/review/claim", "api-review-claim", "reviews_claim",
        result="review", status=201,
        params=(KEY,),
        client="review_claim", roles=REVIEWER_ONLY, cli=("review", "claim"),
        help="Claim the review of a READY_FOR_REVIEW task.",
    ),
    E("review_extend", "POST", "tasks/{key}/review/extend", "api-review-extend",
        "reviews_extend", result="review",
        params=(KEY,),
        client="review_extend", roles=REVIEWER_ONLY, cli=("review", "extend"),
        help="Extend your review lease.",
    ),
    E("review_release", "POST", "tasks/{key}/review/release", "api-review-release",
        "reviews_release", result="review",
        params=(
            KEY,
            P("reason", "string", max_length=2000, help="why you give it back"),
            P(
                "stopping", "boolean",
                help="your session is stopping (told to stop, your supervisor stopped), not "
                "your judgement that you cannot finish the review: you may be offered it again",
            ),
        ),
        client="review_release", roles=REVIEWER_ONLY, cli=("review", "release"),
        help=(
            "Give back your review claim before a verdict (you cannot finish it: out of context, "
            "the tooling broken, a conflict of interest): another reviewer can take it at once, "
            "not when your lease lapses; you are not offered it again until the coder "
            "resubmits, unless you give it back with `stopping`."
        ),
    ),
    E("review_verdict", "POST", "tasks/{key}/verdict", "api-verdict", "reviews_verdict",
        result="task",
        params=(
            KEY,
            P("verdict", "string", required=True, enum=VERDICTS, argument=True),
            P(
                "review_commit", "string", required=True, max_length=64, help="the commit reviewed",
                flag="--commit",
            ),
            P("reason", "string", max_length=5000, help="required to reject"),
        ),
        client="verdict", roles=REVIEWER_ONLY, cli=("review", "verdict"),
        help="Approve or reject the task you are reviewing, at the commit you reviewed.",
    ),
    E("task_report_merge", "POST", "tasks/{key}/merge", "api-merge", "tasks_report_merge",
        result="task",
        params=(KEY, P("merge_commit", "string", required=True, max_length=64, flag="--commit")),
        client="merge", roles=REVIEWER_ONLY, cli=("merge",),
        help="Report the APPROVED task merged into integration at a commit.",
    ),
    E("task_report_integration_failure", "POST", "tasks/{key}/integration-failure",
        "api-integration-failure", "tasks_report_integration_failure", result="task",
        params=(KEY, REASON),
        client="integration_failed", roles=REVIEWER_ONLY, cli=("integration-failed",),
        help="Report that the APPROVED task failed to merge, with the git error.",
    ),
)
# fmt: on

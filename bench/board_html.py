"""The board pages of an existing database, written to files at one fixed moment: run by two
versions of the code against one database (`bench/board.py --keep-db`), then `diff -r`, to
show that a change to how the page is assembled leaves its HTML byte for byte the same.

    .venv/bin/python bench/board_html.py --db liza_bench_board --out /tmp/board-after

Each project's board is rendered with and without its cards in the cache (the two must match),
plain, with the terminal columns opened and in each swimlane grouping. The page's CSRF token
(random per request) is written as `CSRF`; nothing else is rewritten.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

QUERIES = ("", "?open=MERGED&open=ABANDONED", "?lanes=goal", "?lanes=sprint", "?lanes=assignee")
CSRF = re.compile(r'(name="csrfmiddlewaretoken" value=")[^"]+(")')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True, help="the PostgreSQL database to read")
    parser.add_argument("--out", required=True, type=Path, help="the directory to write")
    parser.add_argument(
        "--at",
        help="the moment the pages are rendered at (ISO 8601; default: five minutes "
        "after the newest task was created, while the bench's leases are alive)",
    )
    args = parser.parse_args(argv)
    base = os.environ.get("LIZA_BENCH_PG", "postgres://postgres@127.0.0.1:5432")
    os.environ["DATABASE_URL"] = f"{base}/{args.db}"
    # This process's own memory as the cache: nothing shared, nothing left behind.
    os.environ["REDIS_URL"] = ""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "liza_site.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.cache import cache
    from django.middleware.csrf import get_token
    from django.test import RequestFactory
    from django.utils import timezone

    from boards.board.live import fragments
    from boards.board.web import board as views
    from boards.coordination.models.projects import Membership
    from boards.coordination.models.tasks import Task

    if args.at:
        moment = datetime.fromisoformat(args.at).astimezone(UTC)
    else:
        moment = Task.objects.latest("created").created + timedelta(minutes=5)
    timezone.now = lambda: moment  # every reader of the clock in the page calls timezone.now()
    factory = RequestFactory()
    args.out.mkdir(parents=True, exist_ok=True)
    admins = Membership.objects.filter(role="admin").select_related("project", "user")
    written = 0
    for membership in admins.order_by("project__slug"):
        project, user = membership.project, get_user_model().objects.get(pk=membership.user_id)
        for n, query in enumerate(QUERIES):
            pages = []
            for _cold_then_warm in range(2):
                if not pages:
                    fragments.forget_local()
                    cache.clear()
                request = factory.get(f"/p/{project.slug}/{query}")
                request.user = user
                get_token(request)  # the token the sign-out form shows
                html = views.board(request, slug=project.slug).content.decode()
                pages.append(CSRF.sub(r"\1CSRF\2", html))
            assert pages[0] == pages[1], f"{project.slug}{query}: cold and warm pages differ"
            (args.out / f"{project.slug}-{n}.html").write_text(pages[0])
            written += 1
    print(f"{written} pages written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

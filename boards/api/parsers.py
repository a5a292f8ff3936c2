"""Request parsing that answers 400 for every malformed body (SPEC §6: no 500 on any input)."""

from __future__ import annotations

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, except that absurdly deep nesting is a parse error, not a crash.

    `json.loads` raises RecursionError (not ValueError, which DRF catches) on input like
    `[[[[...]]]]` nested thousands deep.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError("JSON parse error - nested too deeply") from exc

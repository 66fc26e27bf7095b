"""Error answers, in the two shapes the real API sends.

- The Interactions service itself answers `{"error": {"code": "<lower-case
  code>", "message": ...}}`: `code` is a string (google-genai's
  `types/interactions/error.py`, parsed into `…ClientErrorData` /
  `…ServerErrorData`). `invalid_request` is the code seen from the real API
  (a 400 quoted in github.com/allenhutchison/gemini-cli-deep-research
  #73); `resource_exhausted` is what the SDK's own tests use for a quota
  error. The other codes below are not documented: the emulator's choice.
- Google's API front end answers before the service is reached (a missing
  or wrong key, a body it cannot parse) with a `google.rpc.Status`:
  `{"error": {"code": 400, "message", "status": "INVALID_ARGUMENT",
  "details": [...]}}`, an integer code. The SDK's error model does not fit
  that shape; it falls back to `GenAiDefaultError` and still raises the
  status class (`BadRequestError` …), as its own tests expect
  (tests/gaos/test_unknown_fields.py).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

__all__ = [
    "RETRY_AFTER_SECONDS",
    "ApiProblem",
    "api_error",
    "front_end_error",
    "problem_response",
]

#: Retry-After (seconds) on a 429, as a rate-limiting API sends it.
RETRY_AFTER_SECONDS = 1

_CODES = {
    400: "invalid_request",
    401: "unauthenticated",
    403: "permission_denied",
    404: "not_found",
    409: "conflict",
    429: "resource_exhausted",
    500: "api_error",
    503: "unavailable",
}
_RPC_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


class ApiProblem(Exception):
    """A request the emulated API refuses; `front_end` picks the rpc shape."""

    def __init__(self, status: int, message: str, *, front_end: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.front_end = front_end


def _headers(status: int) -> dict[str, str] | None:
    return {"Retry-After": str(RETRY_AFTER_SECONDS)} if status == 429 else None


def error_body(status: int, message: str) -> dict[str, Any]:
    """The Interactions service's error object (also the SSE `error` event's)."""
    return {"code": _CODES.get(status, "api_error"), "message": message}


def api_error(status: int, message: str) -> web.Response:
    """An error answered by the Interactions service."""
    body = {"error": error_body(status, message)}
    return web.json_response(body, status=status, headers=_headers(status))


def front_end_error(
    status: int, message: str, *, details: list[dict[str, Any]] | None = None
) -> web.Response:
    """An error answered by Google's API front end (`google.rpc.Status`)."""
    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": _RPC_STATUS.get(status, "UNKNOWN"),
    }
    if details:
        error["details"] = details
    return web.json_response({"error": error}, status=status, headers=_headers(status))


def problem_response(problem: ApiProblem) -> web.Response:
    if problem.front_end:
        return front_end_error(problem.status, problem.message)
    return api_error(problem.status, problem.message)

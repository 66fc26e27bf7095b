"""The Backend port on google-genai's `client.aio.interactions` (real API or emulator).

backend.py    GeminiBackend, and the JSON → RemoteInteraction conversion
answers.py    a 200 answer's JSON read as the SDK would dump it, without its models
errors.py     SDK and transport exceptions → the BackendError tree; key redaction
fastgate.py   the fast path's one door: `attach_fast_path`, what the backend calls
fastpath.py   the version-guarded fast path: memoized SDK helpers, `_FastCall`
fastcalls.py  `_FastGet` / `_FastCreate`, the stock get and create without overhead
fastsend.py   their requests built and answers decoded without httpx's per-call work
finder.py     `EmulatorFinder`: find by label through the emulator's admin API
"""

from reclaim_tui.core.gemini.backend import (
    EMULATOR_DEFAULT_KEY,
    GeminiBackend,
    interaction_from_json,
    resolve_api_key,
)

# The fast path's modules (fastgate.py and what it imports) are imported with
# the SDK, when the backend builds its client: not here (an idle tick).
__all__ = [
    "EMULATOR_DEFAULT_KEY",
    "GeminiBackend",
    "interaction_from_json",
    "resolve_api_key",
]

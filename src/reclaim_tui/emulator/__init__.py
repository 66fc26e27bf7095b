"""An emulator of the Gemini Interactions REST API (see DESIGN.md §4).

The real google-genai SDK talks to it through `base_url`; tests, the demo
and the benchmarks drive faults and read stats through `/_emulator/`. It
delivers webhooks as the real API does (webhooks.py, DESIGN.md §7).
"""

from reclaim_tui.emulator.app import make_app
from reclaim_tui.emulator.catalog import AGENTS, KNOWN_MODELS
from reclaim_tui.emulator.config import DEFAULT_API_KEY, EmulatorConfig
from reclaim_tui.emulator.faults import EndpointFaults, FaultConfig
from reclaim_tui.emulator.server import EmulatorServer, run_forever, serve
from reclaim_tui.emulator.webhook_settings import WebhookFaults, WebhookSettings

__all__ = [
    "AGENTS",
    "DEFAULT_API_KEY",
    "KNOWN_MODELS",
    "EmulatorConfig",
    "EmulatorServer",
    "EndpointFaults",
    "FaultConfig",
    "WebhookFaults",
    "WebhookSettings",
    "make_app",
    "run_forever",
    "serve",
]

"""What the emulated API knows by name: models, agents and the create body's fields.

Copied from google-genai 3.3.0 (`_gaos/types/interactions/model.py`,
`agentoption.py`, `createmodelinteraction.py`, `createagentinteraction.py`);
tests/contract/test_emulator_fidelity.py fails when the installed SDK's
lists drift from these. The run times of agents are not documented beyond
"several minutes" (Deep Research docs) and "minutes to tens of minutes"
(DESIGN.md §6): the values below are the emulator's choice, scaled by
`EmulatorConfig.agent_time_scale`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AGENTS", "CREATE_FIELDS", "KNOWN_MODELS", "AgentSpec", "agent_spec"]

#: The SDK's `Model` literal: the union over the verified versions (3.3.0 to
#: 3.6.1; 3.6 adds gemini-4-neon). The API also knows models the SDK does not
#: list; the emulator checks names against this list only when told to
#: (`EmulatorConfig.models`).
KNOWN_MODELS: frozenset[str] = frozenset(
    {
        "gemma-4-26b-a4b-it",
        "gemma-4-31b-it",
        "gemini-flash-latest",
        "gemini-flash-lite-latest",
        "gemini-pro-latest",
        "gemini-2.5-flash",
        "gemini-2.5-pro",
        "gemini-2.5-flash-lite",
        "gemini-3.5-flash-lite",
        "gemini-2.5-flash-image",
        "gemini-3-flash-preview",
        "gemini-3.1-pro-preview",
        "gemini-3.1-pro-preview-customtools",
        "gemini-3.1-flash-lite",
        "gemini-3.1-flash-lite-image",
        "gemini-3-pro-image",
        "nano-banana-pro-preview",
        "gemini-3.1-flash-image",
        "gemini-nano-banana-2.1",
        "gemini-3.1-flash-tts-preview",
        "gemini-3.5-flash",
        "gemini-3.6-flash",
        "gemini-3.7-flash",
        "gemini-3.8-flash",
        "gemini-4-argon",
        "gemini-4-carbon",
        "gemini-4-hydrogen",
        "gemini-4-neon",  # listed from google-genai 3.6
        "gemini-3.8-flash-tts",
        "gemini-3.8-flash-lite-tts",
        "gemini-3.5-transcribe",
        "lyria-3-clip-preview",
        "lyria-3-pro-preview",
        "gemini-robotics-er-1.6-preview",
        "gemini-robotics-er-2-preview",
        "lyria-3.5",
        "gemini-omni-1.2-flash",
        "gemini-omni-1.1-flash",
        "gemini-omni-flash-preview",
    }
)

#: Every field of `CreateModelInteraction` ∪ `CreateAgentInteraction`. Anything
#: else in a create body is refused the way Google's JSON front end refuses an
#: unknown field ("Invalid JSON payload received. Unknown name ...").
CREATE_FIELDS: frozenset[str] = frozenset(
    {
        "agent",
        "agent_config",
        "background",
        "cached_content",
        "continuation_token",
        "environment",
        "generation_config",
        "input",
        "labels",
        "model",
        "previous_interaction_id",
        "response_format",
        "response_mime_type",
        "response_modalities",
        "safety_settings",
        "service_tier",
        "store",
        "stream",
        "system_instruction",
        "tools",
        "webhook_config",
    }
)


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """One agent: its `agent_config.type`, whether it must run in the
    background, and its typical run time in seconds (before scaling)."""

    config_type: str
    background_only: bool
    base_seconds: float

    @property
    def researches(self) -> bool:
        return self.config_type == "deep-research"


#: The SDK's `AgentOption` literal (3.3.0). Deep Research "must use background
#: execution" (ai.google.dev/gemini-api/docs/deep-research); Antigravity is
#: shown there without `background` and emulated as a short agent run.
AGENTS: dict[str, AgentSpec] = {
    "deep-research-pro-preview-12-2025": AgentSpec("deep-research", True, 240.0),
    "deep-research-preview-04-2026": AgentSpec("deep-research", True, 240.0),
    "deep-research-max-preview-04-2026": AgentSpec("deep-research", True, 900.0),
    "antigravity-preview-05-2026": AgentSpec("antigravity", False, 60.0),
    "antigravity-preview-09-2026": AgentSpec("antigravity", False, 60.0),
}


def agent_spec(name: str) -> AgentSpec | None:
    return AGENTS.get(name)

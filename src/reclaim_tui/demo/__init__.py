"""`reclaim-tui demo`'s world: the embedded emulator, a webhook inbox, the
engine on them, seeded jobs and a trickle of new ones (world.py).

The demo wires the emulator to the product, so it is a room of its own
above both: the emulator imports nothing of the product, and the console
and the runner import no emulator. The console's side (tui/demo.py) takes
only the names below; the console's engine worker process imports world.py
by the name OPENER gives it.
"""

DEMO_MODELS = ("gemini-flash-latest", "gemini-pro-latest")
#: How a runner launch names `world.open_demo_engine` ("module:function").
OPENER = "reclaim_tui.demo.world:open_demo_engine"

__all__ = ["DEMO_MODELS", "OPENER"]

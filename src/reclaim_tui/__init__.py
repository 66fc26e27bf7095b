"""reclaim-tui: a durable reclaim ledger for Gemini background interactions."""

__version__ = "0.1.0"
__all__ = ["__version__"]

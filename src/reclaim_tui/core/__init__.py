"""The core: ledger, engine, backends and sinks. It never imports Textual."""

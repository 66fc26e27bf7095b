"""The Textual operator console: one client of the core (the CLI is another)."""

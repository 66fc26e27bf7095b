"""The ledger on PostgreSQL: the engine, its connection and session, its SQL,
text and group commit, its schema history, search path and grants. Nothing
here imports SQLite's room or the console's reads."""

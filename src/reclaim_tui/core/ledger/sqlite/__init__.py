"""The ledger on SQLite: the engine, its schema history, its group commit, the
generation a service keeps in the file, the idle tick's look and a new file's
refusal. Nothing here imports PostgreSQL's room or the console's reads."""

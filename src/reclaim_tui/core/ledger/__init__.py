"""The ledger: storage behind one port (SQLite and PostgreSQL), its schemas,
migrations, the console's queries, transfer and prune. It never imports the engine."""

"""The ledger: storage behind one port, in rooms. Here the port and what both
engines share; `sqlite/` and `postgres/` one room per engine (schema history,
connection, writes); `console/` the console's read side. It never imports the
engine."""

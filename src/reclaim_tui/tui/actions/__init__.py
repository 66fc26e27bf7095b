"""What the main screen's keys and messages do, one concern a module: the rows'
actions (rows.py), the views over the whole ledger and the bulk tools
(tools.py), moving through the ledger (view.py), showing what the reads found
(updates.py). Each is a plain function over the screen it is given, seen
through port.py's `MainPort`: screens import these, never the other way."""

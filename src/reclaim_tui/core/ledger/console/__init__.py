"""The console's read side: windowed, read-only queries over either engine,
the views (tab, sort, filter) they answer, their SQL and the filter's words.
The engines never import it."""

"""Runs the console's engine off the console's event loop; never imports Textual."""

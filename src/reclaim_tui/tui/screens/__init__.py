"""The console's modal screens: help, submit, confirm, adopt, export."""

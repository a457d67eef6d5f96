"""Widgets of the setup screen (new run, edit a preset)."""

"""The core: no Textual, no torch. Journal, run folders, presets, registry, process control."""

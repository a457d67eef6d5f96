"""What a run logged, as the screens and exports see it: the metric store, trainer_state.json
parsing, replay sources, the run data a screen shows, default panels, health rules, completions
and export. No Textual: replay parsing runs in a child process and exports run headless."""

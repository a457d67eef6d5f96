"""What a run is asked to do: presets (TRL CLI flat YAML plus `trainer:` and `cockpit:`), their
validation, the datasets they name, and configs written for older TRL (`migrate`)."""

"""Names vulture cannot see used: read by a library or a framework by name, never called from
cockpit's own code. The Textual conventions (`action_*`, `on_*`, `watch_*`, `compose`,
`BINDINGS`, ...), pytest's (`@pytest.fixture`, `pytestmark`) and `@on` handlers are in
pyproject.toml's [tool.vulture]; this file lists the rest, each with who reads it.
Checked by `.ci/run` (`python -m vulture`)."""

# Textual reads these attributes and calls these overrides.
_.sub_title  # Screen.sub_title, shown in the header
_.tooltip  # Widget.tooltip
_.cursor_position  # Input.cursor_position (a test puts the cursor at the start)
_.grid_size_columns  # Styles.grid_size_columns
_.column_span  # Styles.column_span (plot_grid: the last panel widens over a short row)
_.max_width  # Styles.max_width
_.max_height  # Styles.max_height
_.get_default_screen  # App.get_default_screen
_.handle_bindings_clash  # App.handle_bindings_clash
_.get_suggestion  # Suggester.get_suggestion
_.bubble  # Message.bubble: whether a message goes on to the parent
_.can_replace  # Message.can_replace: a queued message a newer one makes redundant
_.AUTO_FOCUS  # Screen.AUTO_FOCUS: the selector Textual focuses when the screen mounts
_.is_headless  # bench/frame_driver.py: Driver.is_headless
_._get_terminal_size  # bench/frame_driver.py: the driver's size
_.bytes_written  # bench/frame_driver.py: what the driver wrote, read by the bench
_.TEXTUAL_ANIMATIONS  # textual.constants.TEXTUAL_ANIMATIONS: App.__init__ reads it (tests/conftest.py sets it)
_.dont_write_bytecode  # sys.dont_write_bytecode: the import system and pytest's rewrite read it (tests/conftest.py sets it)
_.set_data  # importlib's SourceFileLoader.set_data: the import system calls it to cache bytecode (the hook's sitecustomize overrides it)

# numpy, tokenizers, transformers and TRL read these.
_.writeable  # ndarray.flags.writeable
_.normalizer  # tokenizers.Tokenizer
_.pre_tokenizer  # tokenizers.Tokenizer
_.decoder  # tokenizers.Tokenizer
_.generation_config  # PreTrainedModel.generation_config, saved with the demo model
_.should_save  # TrainerControl.should_save
arith_reward  # presets name it: reward_funcs: [cockpit.runner.rewards.arith_reward]
length_reward  # the same, by name in a preset

# Serialised by dataclasses.asdict (`cockpit checkpoints --json`).
_.has_chat_template

# The stdlib's http.server calls these (tests' webhook receiver).
_.do_POST
_.log_message

# A test's dataclass and enum: discovery's field description reads them.
_.SLOW
_.derived

# `cockpit/__init__.py`'s lazy `from cockpit import CockpitCallback` (PEP 562).
__getattr__

# textual-serve calls these overrides of its Server and AppService (cockpit/cli/serve.py).
_._open_app_process  # AppService._open_app_process
_._stdin  # AppService._stdin, written by the override
_.handle_websocket  # Server.handle_websocket

# pydantic: a rule's conditions are fields read by name (RuleSpec.to_rule: getattr(self, cond)).
_.is_  # RuleSpec.is_ (alias "is")
_.rises_pct  # RuleSpec.rises_pct
_.falls_pct  # RuleSpec.falls_pct
_.stalled_minutes  # RuleSpec.stalled_minutes
_.disk_free_gb_below  # RuleSpec.disk_free_gb_below
_.not_improved_evals  # RuleSpec.not_improved_evals
_.in_code  # CockpitSection.in_code: written by hook/public.py, read as data
_.dataset  # CockpitSection.dataset: validation reads the preset's mapping, the schema documents it

# Run by name in a child interpreter (`python -c`, replay_loader._CHILD_CODE).
_child_main  # cockpit/metrics/replay_loader.py: the replay parse child's entry

# Textual style properties set on a widget's styles, read by Textual's layout.
_.min_width  # Styles.min_width: the completions filter box as wide as its hint, the tabs overflow marker over a cut tab

# Textual reads it (a widget's reactive), set by the snapshot tests.
_.cursor_blink  # tests/ui/test_ui_snapshots.py: the Input and TextArea cursors drawn still, not mid-blink

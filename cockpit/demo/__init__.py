"""The offline demo's data: datasets in every format TRL takes, written without any download.
The tokenizer and tiny models are built by `cockpit.runner.assets` (they need torch).

The package is the demo's one interface (`from cockpit import demo`): `cache` says where the
demo lives and how it is built safely, `corpus` holds the questions, `datasets` writes the files.
"""

from cockpit.demo.cache import (
    COMPLETE_MARKER,
    DEMO_PREFIX,
    DEMO_VERSION,
    LOCK_NAME,
    MODEL_NAMES,
    demo_dir,
    demo_lock,
    demo_path,
    is_complete,
    mark_complete,
    model_dir,
    tokenizer_dir,
    write_file_atomic,
)
from cockpit.demo.corpus import QA, corpus_lines, qa_by_category, qa_rows
from cockpit.demo.datasets import (
    DATA_FORMATS,
    SPLITS,
    TEST_ROWS,
    TRAIN_ROWS,
    assets_complete,
    data_dir,
    dataset_rows,
    datasets_complete,
    ensure_datasets,
    format_row,
)

__all__ = [
    "COMPLETE_MARKER",
    "DATA_FORMATS",
    "DEMO_PREFIX",
    "DEMO_VERSION",
    "LOCK_NAME",
    "MODEL_NAMES",
    "QA",
    "SPLITS",
    "TEST_ROWS",
    "TRAIN_ROWS",
    "assets_complete",
    "corpus_lines",
    "data_dir",
    "dataset_rows",
    "datasets_complete",
    "demo_dir",
    "demo_lock",
    "demo_path",
    "ensure_datasets",
    "format_row",
    "is_complete",
    "mark_complete",
    "model_dir",
    "qa_by_category",
    "qa_rows",
    "tokenizer_dir",
    "write_file_atomic",
]

"""Names vulture must not report (tests/vulture.toml; tests/unit/test_dead_code.py).

vulture reads this file, never runs it: a name written here counts as used.
Hook families Textual and click call by name (`on_*`, `action_*`, `@*.command`)
are patterns in tests/vulture.toml; below are the single names, each with who
reads it. Anything dead that is not here is reported: delete it, or move what
only the tests use to tests/helpers.
"""

# ruff: noqa: B018, F821

# Attributes of ours that Textual reads (widget and app settings set at run time).
_.sub_title
_.border_title
_.border_subtitle
_.can_focus
_.display
_.cursor_position
# Textual's Line API hooks the console's table defines (tui/widgets/line_rows.py):
# the component classes its CSS styles, the line Textual asks it to draw.
_.COMPONENT_CLASSES
_.render_line
# Textual's hooks the detail's body and the loop log define (tui/widgets/detail_body.py,
# loop_log.py): the height Textual asks a widget for at a width (with the viewport's
# size, unused), and the scrollbar's window a new log line sets without a layout.
_.get_content_height
viewport
_.window_size
_.window_virtual_size
# Textual's scroll to the active tab, overridden, and the border title Textual
# draws, set without its whole repaint (tui/widgets/textual_private.py).
_._scroll_active_tab
_._border_title
# The table's reads the tests make (tests/tui/test_table_render.py, test_cancel_pending.py,
# test_console_smalls.py, test_keys_view.py): what a row shows, as DataTable's did.
_.row_keys
_.get_row
_.get_row_at
_.get_cell
# Parameters a signature must have: protocols (tui/actions/port.py), `__aexit__`
# (emulator/server.py, inbox/server.py) and an override of Textual's
# `Tabs._highlight_active` (tui/widgets/textual_private.py).
selector
class_names
container
exc_type
tb
animate
expect_type
delay
# aiohttp reads a response's content type when it is prepared (emulator/app.py).
_.content_type
# A column of the jobs table: rows are built from it positionally (core/models.py).
_.prev_owner

# Shipped for tests, scripts and benchmarks (no product code calls them):
# the in-memory fakes (core/clock.py, core/fakes.py),
_.advance
_.forget
_.handle_for
# the emulator's admin client (emulator/admin.py),
_.creates
_.set_faults
_.webhook_deliveries
# the ledger's settings as the durability tests read them (core/ledger/port.py),
_.pragmas
# and counters the tests read to see what a process or a widget did
# (runner/process.py; tui/widgets/ledger_table.py, detail_pane.py, follow_view.py;
# the SQLite write turn's waits, core/ledger/sqlite/turn.py, read by benchmarks/_processes.py).
_.worker_settings
_.restarts
_.last_death
_.renders
_.waits
_.shows
shows
# The Python API's public surface, read by users' programs (docs/python-api.md):
# Job fields no module of ours reads, the package's lazy `__getattr__` (PEP 562),
# and the `traceback` parameter of the context managers' exit methods.
_.possible_duplicates
_.cost_usd
_.job_spec
__getattr__
traceback
# io.RawIOBase's `writable`, asked by the io machinery around the service's log
# (runner/service_log.py).
_.writable
# Attributes of library objects set for the library to read: httpx2's
# response body (core/gemini/fastpath.py reads it as `aread` would) and the
# tabs' underline (tui/widgets/textual_private.py moves it as Tabs does).
_._content
_.show_highlight
_.highlight_start
_.highlight_end
# psycopg's connection setting, read by psycopg when it decides what to
# prepare (core/ledger/postgres/connect.py).
_.prepare_threshold
# psycopg's pipeline step, overridden: psycopg calls it as the pipeline
# exits (core/ledger/postgres/pipeline_end.py).
_._exit_gen
# An instance's class and a made function's docstring, set for Python to
# read (core/frozen_make.py).
_.__class__
_.__doc__

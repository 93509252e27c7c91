"""The CLI's one lazy place: the heavy third-party modules a command may need, loaded on first use.

Project modules are imported plainly at each module's top; only these, which cost start-up (tens of
milliseconds to seconds) and which a plain ``kfx dump``/``verify`` line never needs, are declared
here through :func:`specs.lazy.lazy` and used as ``heavy.rich_progress.Progress(...)``: the first
attribute asked imports the module, then it is an ordinary module attribute.
"""
from __future__ import annotations

from specs.lazy import lazy

#: rich: the consoles, tables and progress bars (a plain line prints without it, cli/plain.py)
rich_console = lazy("rich.console", globals())
rich_markup = lazy("rich.markup", globals())
rich_progress = lazy("rich.progress", globals())
rich_table = lazy("rich.table", globals())
rich_text = lazy("rich.text", globals())
#: typer: help and unusual lines only (cli/fastpath.py parses the plain ones)
typer = lazy("typer", globals())
#: pyspark: a scan that Spark runs
pyspark = lazy("pyspark", globals())
#: kfx's help format (cli/helpformat.py): typer's classes extended, so loaded with typer only
typer_help = lazy("cli.helpformat", globals())
#: the schema store and decoders of ``--decode`` (cli/schemas.py): urllib's HTTP client, protobuf,
#: fastavro and jsonschema, which no line without ``--decode`` needs
schemas = lazy("cli.schemas", globals())
#: the remote tier's reader (``--remote``), and ``kfx verify --remote``'s checks and ``kfx dump
#: --remote``'s walk of both tiers (inspect/both_tiers.py): the plugin's codecs, the tier's
#: reconciliation and hashlib's OpenSSL, ~15 ms a line without ``--remote`` never needs
remote_tier = lazy("kafkaforensics.log.remote", globals())
both_tiers = lazy("kafkaforensics.inspect.both_tiers", globals())

"""The ``kfx`` command line: a thin typer layer over :mod:`kafkaforensics`."""

"""``python -m kafkaforensics``: the same as the ``kfx`` command."""
from cli.main import main

main()

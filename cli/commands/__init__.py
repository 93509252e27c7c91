"""The kfx commands, a module each (cli/main.py registers them)."""

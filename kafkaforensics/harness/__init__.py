"""Damage on purpose: the fuzzing campaign and the damaged sample of the demo."""

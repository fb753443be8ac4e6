"""Sensors and renderers: what each robot perceives of its world."""

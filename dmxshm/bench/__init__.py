"""Benchmarks that measure dmxshm beside its peers in the same run."""

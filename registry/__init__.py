"""Broadcast Registry read API: the Flask side, the loader and the `registry` command."""

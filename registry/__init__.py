"""Broadcast Registry read API: the `registry` command over the api, loader, tokens and database."""

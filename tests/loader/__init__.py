"""Tests of `registry load` on a real PostgreSQL (a package, so module names stay unique)."""

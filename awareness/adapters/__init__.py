"""Adapters shipped with ToBe; each directory is loaded by path, not imported as a package."""

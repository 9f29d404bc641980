"""The package version, kept apart so that any layer can name it without importing the package."""
__version__ = "0.1.0"

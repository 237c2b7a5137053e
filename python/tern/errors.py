"""Errors the exporter raises at export time (never a surprise on the device)."""


class ExportError(Exception):
    """The model cannot be exported to a .tern file; the message says why and where."""

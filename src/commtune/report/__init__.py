"""What users see: terminal output, result tables, export formats."""

from commtune.report._console import UI, Bar

__all__ = ["UI", "Bar"]

"""Histories and alerts, comparisons, the archive, formats, schedules, notifications."""

"""Packed measurements and series, raw outputs as artifacts, retention."""
